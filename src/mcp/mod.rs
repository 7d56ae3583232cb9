//! The MCP surface: tool inputs, descriptions and result shaping. Domain work lives in the other modules.
//!
//! One file per tool family; each contributes a router that `FaultServer::new` adds together.

mod advice;
mod code;
mod index;
mod lenient;
mod mcp_chaos;
mod mcp_chaos_input;
mod scenario;
mod scenario_input;

use std::sync::Arc;

use rmcp::{
    RoleServer, ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, tool::ToolCallContext},
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
        CustomResult, ErrorCode, Implementation, JsonObject, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    tool_handler,
};
use serde::Serialize;
use serde_json::Value;

use crate::{
    index::StoreSettings,
    llm::LlmSettings,
    mcp_http::{Transport, TransportArgs},
};

const INSTRUCTIONS: &str = "fault gives you reliability tools for the code you write. \
Code: fault_list_function_names lists the functions of a file; fault_extract_code_block returns one function \
(`full` with signature and decorators, `body` without). \
Index: fault_index_source_code embeds a source tree so the LLM tools get context from it. \
LLM review: fault_score_performance / fault_score_reliability score a snippet 0..1 with an explanation; \
fault_suggest_better_function_performance / _reliability return a unified diff; \
fault_suggest_service_level_objectives_slo proposes SLOs; fault_make_reliability_and_perf_changes proposes a \
whole-file change; fault_function_reliability_deep_analysis reviews one function in depth. \
Impact scenarios: fault_run_{latency,jitter,packet_loss,bandwidth,blackhole,http_error}_impact_scenario put a \
fault-injecting proxy on the path to a URL (or on the `proxies` you map), send load, and return a markdown report \
with latency percentiles and SLO verdicts. \
MCP chaos: fault_run_mcp_chaos_scenario starts an MCP server behind fault mcp-proxy with a fault plan, drives tool \
calls with a client policy (timeout, retries, backoff) and reports availability, correctness against outputSchema, \
latency, recovery and blast radius. Paths must be absolute.";

/// Longest snippet the LLM tools take, in characters: one function or excerpt, not a whole tree.
pub(crate) const MAX_SNIPPET_CHARS: u32 = 200_000;
/// Longest function name, in characters.
pub(crate) const MAX_NAME_CHARS: u32 = 1_000;
/// Longest path, in characters (Linux's PATH_MAX).
pub(crate) const MAX_PATH_CHARS: u32 = 4_096;

/// What the agent's tools are built with: the models, where new indexes are kept, and scenario bounds.
#[derive(Debug, Clone, Default)]
pub struct AgentSettings {
    pub llm: LlmSettings,
    pub store: StoreSettings,
    /// The operator's bounds on impact scenarios: load caps and where proxies may listen.
    pub scenario: crate::scenario::Limits,
}

/// The `fault agent tool` MCP server.
#[derive(Clone)]
pub struct FaultServer {
    settings: Arc<AgentSettings>,
    tool_router: ToolRouter<Self>,
    /// One impact scenario at a time: they bind ports and measure latency.
    scenario_slot: scenario::ScenarioSlot,
}

impl FaultServer {
    pub fn new(settings: AgentSettings) -> Self {
        Self {
            settings: Arc::new(settings),
            tool_router: Self::code_router()
                + Self::advice_router()
                + Self::index_router()
                + Self::scenario_router()
                + Self::mcp_chaos_router(),
            scenario_slot: scenario::ScenarioSlot::default(),
        }
    }

    pub fn settings(&self) -> &AgentSettings {
        &self.settings
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for FaultServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("fault", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    /// Every required field the call lacks is named in one error, before the tool reads its input.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        if let Some(tool) = self.tool_router.get(&request.name) {
            let missing = missing_required(&tool.input_schema, request.arguments.as_ref());
            if !missing.is_empty() {
                let noun = if missing.len() == 1 {
                    "field"
                } else {
                    "fields"
                };
                return Ok(
                    tool_error(format!("missing required {noun}: {}", missing.join(", "))).into(),
                );
            }
            if let Some(wrong) = request
                .arguments
                .as_ref()
                .and_then(|arguments| wrong_field(&tool.input_schema, arguments))
            {
                return Ok(tool_error(wrong).into());
            }
        }
        let call = ToolCallContext::new(self, request, context);
        self.tool_router.call(call).await
    }

    /// rmcp hands a `tools/call` whose params it cannot read (e.g. `arguments` not an object) here as a
    /// custom request; answer with what is wrong rather than "method not found".
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, rmcp::ErrorData> {
        let message = match request.method.as_str() {
            "tools/call" => malformed_call(request.params.as_ref()),
            other => format!("method not found: {other}"),
        };
        let code = match request.method.as_str() {
            "tools/call" => ErrorCode::INVALID_PARAMS,
            _ => ErrorCode::METHOD_NOT_FOUND,
        };
        Err(rmcp::ErrorData::new(code, message, None))
    }
}

/// The fields `schema` lists as required that `arguments` lacks or holds as null.
fn missing_required(schema: &JsonObject, arguments: Option<&JsonObject>) -> Vec<String> {
    let Some(Value::Array(required)) = schema.get("required") else {
        return Vec::new();
    };
    required
        .iter()
        .filter_map(Value::as_str)
        // A blank string is left to the tool, which says what an empty value means for it.
        .filter(|field| {
            matches!(
                arguments.and_then(|a| a.get(*field)),
                None | Some(Value::Null)
            )
        })
        .map(str::to_owned)
        .collect()
}

/// The first top-level field whose value has a JSON type or a length its schema does not accept, as an error
/// naming it. Null and "" are left to the tool: they mean "use the default" for optional fields.
fn wrong_field(schema: &JsonObject, arguments: &JsonObject) -> Option<String> {
    let properties = schema.get("properties")?.as_object()?;
    arguments.iter().find_map(|(field, value)| {
        let field_schema = properties.get(field)?;
        if value.is_null() || value.as_str().is_some_and(|text| text.trim().is_empty()) {
            return None;
        }
        let types: Vec<&str> = match field_schema.get("type") {
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| has_type(value, t)) {
            let expected = types
                .iter()
                .filter(|t| **t != "null")
                .copied()
                .collect::<Vec<_>>()
                .join(" or ");
            return Some(format!(
                "{field}: expected {expected}, got {}",
                json_kind(value)
            ));
        }
        let max = field_schema.get("maxLength").and_then(Value::as_u64)?;
        let length = value.as_str()?.chars().count() as u64;
        (length > max).then(|| format!("{field}: {length} characters; accepted: at most {max}"))
    })
}

/// Whether `value` is of JSON Schema type `name`.
fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// What is wrong with `tools/call` params rmcp could not read.
fn malformed_call(params: Option<&Value>) -> String {
    let Some(Value::Object(params)) = params else {
        return "tools/call: params must be an object with `name` (the tool) and `arguments` (an object)"
            .into();
    };
    match (params.get("name"), params.get("arguments")) {
        (Some(Value::String(_)), Some(arguments)) => format!(
            "arguments: expected an object of the tool's input fields by name (e.g. {{\"path\": \"/abs/file.py\"}}), got {}",
            json_kind(arguments)
        ),
        (Some(Value::String(_)), None) => "tools/call: params could not be read".into(),
        (Some(other), _) => format!(
            "name: expected the tool's name as a string, got {}",
            json_kind(other)
        ),
        (None, _) => "name: is required (the tool to call)".into(),
    }
}

/// The JSON type of `value`, for errors.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("MCP session failed to start: {0}")]
    Start(String),
    #[error("MCP session ended with an error: {0}")]
    Run(String),
    #[error("{0} needs --transport http")]
    HttpFlagWithStdio(&'static str),
    #[error(transparent)]
    Http(#[from] crate::mcp_http::HttpServeError),
}

/// Serves the fault tools on the transport of `transport`: stdin/stdout until the client closes stdin, or
/// Streamable HTTP until SIGINT/SIGTERM.
pub async fn serve(settings: AgentSettings, transport: &TransportArgs) -> Result<(), ServeError> {
    if transport.transport == Transport::Stdio && transport.http_only_flag_given().is_none() {
        tracing::info!(
            version = env!("CARGO_PKG_VERSION"),
            "fault agent tool: serving MCP on stdio"
        );
    }
    crate::index::store::vectors::set_cache_ceiling(settings.store.vector_cache_bytes);
    serve_on("fault agent tool", transport, FaultServer::new(settings)).await
}

/// Serves `server` on the transport of `transport`. Over HTTP every session gets a clone of `server`, so
/// what its clones share (e.g. the one impact-scenario slot) is shared by all sessions.
pub async fn serve_on<S>(name: &str, transport: &TransportArgs, server: S) -> Result<(), ServeError>
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    match transport.transport {
        Transport::Stdio => match transport.http_only_flag_given() {
            Some(flag) => Err(ServeError::HttpFlagWithStdio(flag)),
            None => serve_stdio(server).await,
        },
        Transport::Http => {
            Ok(crate::mcp_http::serve(name, transport, move || server.clone()).await?)
        }
    }
}

/// A large file's function listing is a few hundred KiB on one line: through the default 64 KiB pipe the
/// server writes it in turns with the client's reads. With 1 MiB (Linux's default maximum without privileges) it goes out
/// in one write. Stdout that is not a pipe, or a refusal, leaves things as they are.
fn widen_stdout_pipe() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::pipe::fcntl_setpipe_size(std::io::stdout(), 1 << 20) {
        tracing::debug!(error = %e, "stdout keeps its pipe size");
    }
}

/// Serves `server` over MCP on stdin/stdout until the client closes stdin.
pub async fn serve_stdio<S: ServerHandler>(server: S) -> Result<(), ServeError> {
    widen_stdout_pipe();
    let service = match server.serve(rmcp::transport::stdio()).await {
        Ok(service) => service,
        // The client went away before the handshake (e.g. a config check): a clean end, not a failure.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(when)) => {
            tracing::info!(%when, "stdin closed before the MCP handshake");
            return Ok(());
        }
        Err(e) => return Err(ServeError::Start(e.to_string())),
    };
    let reason = service
        .waiting()
        .await
        .map_err(|e| ServeError::Run(e.to_string()))?;
    tracing::info!(?reason, "MCP session closed");
    Ok(())
}

/// A tool result flagged `isError`, with a message a person or a model can act on.
pub(crate) fn tool_error(message: impl std::fmt::Display) -> CallToolResult {
    let message = message.to_string();
    tracing::debug!(%message, "tool error");
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A successful result whose text content is `text` and whose `structuredContent` is `structured`.
pub(crate) fn text_and_structured(
    text: impl Into<String>,
    structured: &impl Serialize,
) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    match serde_json::to_value(structured) {
        Ok(value) => result.structured_content = Some(value),
        Err(e) => return tool_error(format!("internal error: cannot encode the result: {e}")),
    }
    result
}

/// A successful result whose text content is the JSON encoding of `text_value`.
pub(crate) fn json_and_structured(
    text_value: &impl Serialize,
    structured: &impl Serialize,
) -> CallToolResult {
    match serde_json::to_string(text_value) {
        Ok(text) => text_and_structured(text, structured),
        Err(e) => tool_error(format!("internal error: cannot encode the result: {e}")),
    }
}

/// The JSON Schema of `T`, for a tool's `outputSchema`.
pub(crate) fn output_schema<T: schemars::JsonSchema + 'static>() -> Arc<rmcp::model::JsonObject> {
    rmcp::handler::server::common::schema_for_output::<T>()
}
