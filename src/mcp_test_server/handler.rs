//! The test server's answers to MCP requests: `initialize` (its instructions built from the tools it lists),
//! tool calls (a task tool as a task when the request declares the extension), and tasks.

use std::time::Instant;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::{router::tool::ToolRouter, tool::ToolCallContext},
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
        Implementation, ServerCapabilities, ServerConfig, UpdateTaskParams,
    },
    service::RequestContext,
    tool_handler,
};

use super::{TestServer, arguments, defects, invalid_arguments, tasks};

/// What the server tells a client at `initialize`: what it is for, then each tool it lists with the first
/// sentence of its description, so the list is the router's and cannot drift from it.
fn instructions(router: &ToolRouter<TestServer>) -> String {
    let mut tools = router.list_all();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    let each: Vec<String> = tools
        .iter()
        .map(|tool| {
            let description = tool.description.as_deref().unwrap_or_default();
            let first = description
                .split_once(". ")
                .map_or(description, |(first, _)| first)
                .trim_end_matches('.');
            format!("{}: {first}.", tool.name)
        })
        .collect();
    format!(
        "fault mcp-test-server: tools with known failure modes, for testing MCP clients, proxies and gateways. \
A task tool called with the MCP Tasks extension declared is answered at once with a task. {}",
        each.join(" ")
    )
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
        .with_instructions(instructions(&self.tool_router))
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
