//! `fault mcp-test-server`: an MCP server (stdio or Streamable HTTP) whose tools fail, stall and answer on demand, so that
//! `fault mcp-proxy`, MCP clients and gateways can be tested against known behaviour.
//!
//! One file per tool family: `failure` (error, slow, flaky), `data` (echo, get_item, list_items: results
//! with an `outputSchema` and `structuredContent`), `orders` (create_order, a destructive write, and
//! orders_count, its count), `streaming` (progress), `tasks` (slow_job, fails_late, needs_input: tasks of the
//! MCP Tasks extension, and input asked for with input_required). `arguments` reads tool
//! arguments strictly; `roll` is the deterministic roll of `flaky`.

mod arguments;
mod data;
pub mod defects;
mod failure;
mod orders;
mod roll;
mod streaming;
mod tasks;

use std::{
    sync::{Arc, atomic::AtomicU64},
    time::Instant,
};

use clap::Args;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::{router::tool::ToolRouter, tool::ToolCallContext},
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, GetTaskParams,
        GetTaskResult, Implementation, JsonObject, ServerCapabilities, ServerConfig,
        UpdateTaskParams,
    },
    service::RequestContext,
    tool_handler,
};
use schemars::JsonSchema;

pub use failure::ErrorCategory;

use crate::serve::{Transport, TransportArgs};

use arguments::{ArgumentError, Arguments};

/// The code a handler ends with when the client cancels (LSP's RequestCancelled). rmcp sends no response for
/// a cancelled request, as MCP asks, so no client sees it; it only ends the handler.
const CANCELLED_CODE: i32 = -32800;

/// Options of `fault mcp-test-server`.
#[derive(Debug, Clone, Args)]
pub struct TestServerArgs {
    #[command(flatten)]
    pub transport: TransportArgs,

    /// Log every tool call (tool, arguments, outcome, duration) at info level to stderr (or --log-file).
    #[arg(long)]
    pub log_calls: bool,

    /// Also list the defect tools (set_volume, lookup_user, export_report, search_docs, get_price), with these
    /// defects planted: `all`, `none`, or names from lenient-range, null-crash, holds-others, saturates,
    /// wrong-output, separated by commas.
    #[arg(long, value_name = "DEFECTS")]
    pub defects: Option<defects::Defects>,

    /// List only these tools (names separated by commas), e.g. to show a scanner the defect tools alone.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub tools: Vec<String>,
}

const INSTRUCTIONS: &str = "fault mcp-test-server: tools with known failure modes, for testing MCP clients, \
proxies and gateways. error: a JSON-RPC error (code by category) or an isError result. slow: sleeps, ends on \
cancellation. flaky: fails with a probability, deterministic for a (seed, call_id). echo, get_item, list_items: \
results with an outputSchema and structuredContent. create_order: a write that creates a new order on every \
call; orders_count: how many it created. progress: sends notifications/progress. slow_job, fails_late, \
needs_input: called with the tasks extension (io.modelcontextprotocol/tasks), answered at once with a task; \
without it, plain tools. slow_job: runs `seconds`, its status message counting them, cancellable with \
tasks/cancel; fails_late: runs, then fails with a JSON-RPC error; needs_input: asks for a `value` \
(input_required: in the task, answered with tasks/update; on a plain 2026-07-28 call, answered by retrying it \
with inputResponses).";

/// The `fault mcp-test-server` MCP server.
#[derive(Clone)]
pub struct TestServer {
    tool_router: ToolRouter<Self>,
    log_calls: bool,
    /// Orders `create_order` created, shared by every session of the server.
    orders: Arc<AtomicU64>,
    /// The calls run as tasks, one store for every session of the server.
    tasks: crate::serve::tasks::Tasks,
    /// The planted defects (none when the defect tools are not listed).
    defects: defects::DefectState,
}

impl TestServer {
    /// The server; `defects`: list the defect tools, with these planted.
    pub fn new(log_calls: bool, planted: Option<defects::Defects>) -> Self {
        let mut tool_router = Self::failure_router()
            + Self::data_router()
            + Self::orders_router()
            + Self::streaming_router()
            + Self::tasks_router();
        if planted.is_some() {
            tool_router += Self::defects_router();
        }
        Self {
            tool_router,
            log_calls,
            orders: Arc::new(AtomicU64::new(0)),
            tasks: crate::serve::tasks::Tasks::new(tasks::limits()),
            defects: defects::DefectState::new(planted.unwrap_or_default()),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new(
            "fault-mcp-test-server",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(INSTRUCTIONS)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.clone();
        let arguments = request.arguments.clone();
        let request_id = context.id.clone();
        let started = Instant::now();
        // A task tool called by a request that declared the tasks extension runs as a task.
        let job = crate::serve::tasks::declared(&context)
            .then(|| tasks::Job::read(&tool, arguments.clone().unwrap_or_default()))
            .flatten();
        // With `holds-others` planted, every call waits while `export_report` runs.
        let _reading = if self.defects.planted.has(defects::Defect::HoldsOthers)
            && tool != defects::Defect::HoldsOthers.tool()
        {
            Some(self.defects.hold.clone().read_owned().await)
        } else {
            None
        };
        let outcome = match job {
            Some(job) => self.start_task(job, &context),
            None => {
                self.tool_router
                    .call(ToolCallContext::new(self, request, context))
                    .await
            }
        };
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        let outcome_text = match &outcome {
            Ok(CallToolResponse::Complete(result)) if result.is_error == Some(true) => {
                "tool error".to_owned()
            }
            Ok(CallToolResponse::Task(created)) => format!("task {}", created.task.task_id),
            Ok(CallToolResponse::InputRequired(_)) => "input required".to_owned(),
            Ok(_) => "ok".to_owned(),
            Err(e) => format!("JSON-RPC error {}: {}", e.code.0, e.message),
        };
        let arguments = serde_json::Value::Object(arguments.unwrap_or_default());
        if self.log_calls {
            tracing::info!(%request_id, %tool, %arguments, outcome = %outcome_text, elapsed_ms, "tool call");
        } else {
            tracing::debug!(%request_id, %tool, %arguments, outcome = %outcome_text, elapsed_ms, "tool call");
        }
        outcome
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks.get(&request)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.update(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel(&request.task_id)
    }
}

impl TestServer {
    /// A call of a task tool from a request that declared the tasks extension, its arguments read: refused
    /// as a plain call's are, or started as a task and answered at once.
    fn start_task(
        &self,
        job: Result<tasks::Job, arguments::ArgumentError>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match job {
            Ok(job) => {
                if matches!(job, tasks::Job::NeedsInput { .. }) && !tasks::can_ask(context) {
                    return Err(tasks::missing_elicitation());
                }
                tasks::start(&self.tasks, job)
            }
            Err(refusal) => Ok(invalid_arguments(refusal).into()),
        }
    }
}

/// Serves the test tools on stdin/stdout until the client closes stdin, or over Streamable HTTP until
/// SIGINT/SIGTERM.
pub async fn serve(args: TestServerArgs) -> Result<(), crate::serve::ServeError> {
    if args.transport.transport == Transport::Stdio
        && args.transport.http_only_flag_given().is_none()
    {
        tracing::info!(
            version = env!("CARGO_PKG_VERSION"),
            ?args,
            "fault mcp-test-server: serving MCP on stdio"
        );
    }
    let mut server = TestServer::new(args.log_calls, args.defects);
    if !args.tools.is_empty() {
        let listed: Vec<String> = server
            .tool_router
            .map
            .keys()
            .map(|k| k.to_string())
            .collect();
        if let Some(unknown) = args.tools.iter().find(|t| !listed.contains(t)) {
            let listed: Vec<&str> = listed.iter().map(String::as_str).collect();
            return Err(crate::serve::ServeError::Start(format!(
                "--tools: {}",
                crate::fields::unknown_field(unknown, &listed)
            )));
        }
        server
            .tool_router
            .map
            .retain(|name, _| args.tools.iter().any(|t| t == name));
    }
    crate::serve::serve_on("fault mcp-test-server", &args.transport, server).await
}

/// The input schema of a tool whose arguments are read by [`Arguments`] and documented by `T`.
fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_type::<T>()
}

/// Reads a call's arguments with `read`, refusing unknown ones.
fn read_arguments<T>(
    raw: JsonObject,
    read: impl FnOnce(&mut Arguments) -> Result<T, ArgumentError>,
) -> Result<T, ArgumentError> {
    let mut arguments = Arguments::new(raw);
    let value = read(&mut arguments)?;
    arguments.finish()?;
    Ok(value)
}

/// A refusal of a call's arguments: an `isError` result naming the field (input validation is an execution
/// error in MCP, not a protocol error).
fn invalid_arguments(error: ArgumentError) -> CallToolResult {
    crate::serve::tool_error(format!("invalid arguments: {error}"))
}
