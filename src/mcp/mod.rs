//! The MCP surface: tool inputs, descriptions and result shaping. Domain work lives in the other modules.
//!
//! One file per tool family; each contributes a router that `FaultServer::new` adds together.

mod advice;
mod capacity;
mod code;
mod impact;
mod impact_input;
mod index;
mod mcp_chaos;
mod mcp_chaos_input;
mod scan;
pub mod scenario_fields;

use std::sync::Arc;

use rmcp::{
    RoleServer, ServerHandler,
    handler::server::{router::tool::ToolRouter, tool::ToolCallContext},
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, CustomResult,
        ErrorCode, GetTaskParams, GetTaskResult, Implementation, JsonObject, ListResourcesResult,
        ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
        ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    tool_handler,
};
use serde_json::Value;

use crate::{
    index::StoreSettings,
    llm::LlmSettings,
    report::chart::app,
    serve::{
        ServeError, Transport, TransportArgs, serve_on,
        tasks::{self, Tasks},
    },
};
// The result shaping every tool family uses.
pub(crate) use crate::serve::{
    json_and_structured, output_schema, text_and_structured, tool_error, with_chart, with_page,
    with_result_file, with_view,
};

/// What the server tells a client at `initialize`: its tools by family, the impact-scenario tools as the TCP
/// fault registry names them.
fn instructions() -> String {
    format!(
        "fault gives you reliability tools for the code you write. \
Code: fault_list_function_names lists the functions of a file; fault_extract_code_block returns one function \
(`full` with signature and decorators, `body` without). \
Index: fault_index_source_code embeds a source tree so the LLM tools get context from it. \
LLM review: fault_score_performance / fault_score_reliability score a snippet 0..1 with an explanation; \
fault_suggest_better_function_performance / fault_suggest_better_function_reliability return a unified diff; \
fault_suggest_service_level_objectives_slo proposes SLOs; fault_make_reliability_and_perf_changes proposes a \
whole-file change; fault_function_reliability_deep_analysis reviews one function in depth. \
Impact scenarios: {} put a fault-injecting proxy on the path to a URL (or on the `proxies` you map), send \
load, and return a markdown report with latency percentiles and SLO verdicts; a fault's `sched` limits it to \
windows, and the report then judges the phases before, during and after them, with time to detect and to \
recover, error budget burn and retry amplification; fault_run_impact_scenario takes several faults at once; fault_run_capacity_scenario raises the rate in steps to \
find the highest one that meets the SLOs, without and with the faults, and what they cost. \
MCP chaos: fault_run_mcp_chaos_scenario starts an MCP server behind fault mcp-proxy with a fault plan, drives \
tool calls with a client policy (timeout, retries, backoff) and reports availability, correctness against \
outputSchema, latency, recovery and blast radius; fault_scan_mcp_server scans an MCP server (schema hygiene, \
baseline latency, saturation, its contract probed with invalid input, lost replies) and returns a scored verdict \
with every finding, the change that fixes it and how to reproduce it. Paths must be absolute.",
        impact::tool_names().join(", ")
    )
}

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
    pub scenario: crate::impact::Limits,
}

/// The `fault agent tool` MCP server.
#[derive(Clone)]
pub struct FaultServer {
    settings: Arc<AgentSettings>,
    tool_router: ToolRouter<Self>,
    /// One impact scenario at a time: they bind ports and measure latency.
    impact_slot: impact::ImpactSlot,
    /// The calls run as tasks, one store for every session of this process.
    tasks: Tasks,
}

impl FaultServer {
    pub fn new(settings: AgentSettings) -> Self {
        let mut tool_router = Self::families()
            .into_iter()
            .fold(ToolRouter::new(), |all, family| all + family);
        for route in tool_router.map.values_mut() {
            let mut schema = Value::Object((*route.attr.input_schema).clone());
            close_objects(&mut schema);
            if let Value::Object(schema) = schema {
                route.attr.input_schema = Arc::new(schema);
            }
        }
        Self {
            settings: Arc::new(settings),
            tool_router,
            impact_slot: impact::ImpactSlot::default(),
            tasks: Tasks::default(),
        }
    }

    /// The tools, one router per family.
    fn families() -> [ToolRouter<Self>; 7] {
        [
            Self::code_router(),
            Self::index_router(),
            Self::advice_router(),
            Self::impact_router(),
            Self::capacity_router(),
            Self::mcp_chaos_router(),
            Self::scan_router(),
        ]
    }

    /// Every tool as `tools/list` gives it to a client without MCP Apps, family by family.
    pub fn tools() -> Vec<rmcp::model::Tool> {
        let server = Self::new(AgentSettings::default());
        Self::tool_names()
            .iter()
            .filter_map(|name| server.tool_router.get(name).cloned())
            .collect()
    }

    /// The names of every tool, family by family.
    pub fn tool_names() -> Vec<String> {
        Self::families()
            .iter()
            .flat_map(ToolRouter::list_all)
            .map(|tool| tool.name.into_owned())
            .collect()
    }

    pub fn settings(&self) -> &AgentSettings {
        &self.settings
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for FaultServer {
    fn get_info(&self) -> ServerConfig {
        // Resources: the MCP App view of the scenario reports (`ui://fault/report`).
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("fault", env!("CARGO_PKG_VERSION")))
        .with_instructions(instructions())
    }

    /// The tools; for a client that declared MCP Apps, the scenario tools name their report view.
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, rmcp::ErrorData> {
        let mut tools = self.tool_router.list_all();
        if declared_apps(&context) {
            for tool in tools.iter_mut().filter(|t| shows_report(&t.name)) {
                tool.meta = Some(app::tool_meta());
            }
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, rmcp::ErrorData> {
        let view = Resource::new(app::VIEW_URI, "fault_report")
            .with_title("fault scenario report")
            .with_description(
                "The charts and report of an impact or MCP chaos scenario, with the values under the pointer \
                 (an MCP App view)",
            )
            .with_mime_type(app::MIME_TYPE);
        Ok(ListResourcesResult::with_all_items(vec![view]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, rmcp::ErrorData> {
        if request.uri != app::VIEW_URI {
            return Err(rmcp::ErrorData::resource_not_found(
                format!(
                    "no resource {}; the one resource is {}",
                    request.uri,
                    app::VIEW_URI
                ),
                None,
            ));
        }
        let contents =
            ResourceContents::text(app::view_html(), app::VIEW_URI).with_mime_type(app::MIME_TYPE);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    /// Every required field the call lacks is named in one error, before the tool reads its input.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        if let Some(tool) = self.tool_router.get(&request.name) {
            if let Some(arguments) = &request.arguments
                && let Some(unknown) = undeclared_field(&tool.input_schema, arguments)
            {
                return Ok(tool_error(unknown).into());
            }
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
        // The cheap check first: most calls come from clients without the extension.
        if tasks::declared(&context) && runs_as_task(&request.name) {
            return self.start_task(request, context);
        }
        let call = ToolCallContext::new(self, request, context);
        self.tool_router.call(call).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, rmcp::ErrorData> {
        self.tasks.get(&request)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), rmcp::ErrorData> {
        self.tasks.cancel(&request.task_id)
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

impl FaultServer {
    /// Runs a validated call as a task: the same tool on the same arguments, with the task's own
    /// cancellation and its status line in place of progress notifications (the request is answered at once).
    fn start_task(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let server = self.clone();
        self.tasks.start(move |cancel, status| {
            context.ct = cancel;
            context.meta.remove("progressToken");
            context.extensions.insert(status);
            async move {
                let call = ToolCallContext::new(&server, request, context);
                match server.tool_router.call(call).await? {
                    CallToolResponse::Complete(result) => Ok(result),
                    _ => Err(rmcp::ErrorData::internal_error(
                        "a task's tool answered with something other than a result",
                        None,
                    )),
                }
            }
        })
    }
}

/// Whether calls of tool `name` run as tasks for a request that declares the extension: the long ones (the
/// scenarios run up to minutes; indexing a large tree through a remote embeddings API can too).
fn runs_as_task(name: &str) -> bool {
    name == "fault_run_mcp_chaos_scenario"
        || name == "fault_index_source_code"
        || name == scan::TOOL
        || name == capacity::TOOL
        || impact::tool_names().iter().any(|tool| tool == name)
}

/// Whether the client of `context` declared MCP Apps with HTML views.
pub(crate) fn declared_apps(context: &RequestContext<RoleServer>) -> bool {
    context
        .peer
        .peer_info()
        .is_some_and(|info| app::declared(&info.capabilities))
}

/// Whether tool `name`'s results are a scenario report (and so have a view).
fn shows_report(name: &str) -> bool {
    name == "fault_run_mcp_chaos_scenario"
        || name == capacity::TOOL
        || impact::tool_names().iter().any(|t| t == name)
}

/// `schema` with every object schema that declares its properties closed to others (`additionalProperties:
/// false`), so that clients and models see that a field it does not name is refused. Maps (such as `headers`)
/// say what their values are instead and stay open.
fn close_objects(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    if object.contains_key("properties") && !object.contains_key("additionalProperties") {
        object.insert("additionalProperties".into(), Value::Bool(false));
    }
    for (key, value) in object.iter_mut() {
        match key.as_str() {
            "properties" | "$defs" | "definitions" => {
                if let Value::Object(children) = value {
                    children.values_mut().for_each(close_objects);
                }
            }
            "items" | "anyOf" | "oneOf" | "allOf" => match value {
                Value::Array(children) => children.iter_mut().for_each(close_objects),
                child => close_objects(child),
            },
            _ => {}
        }
    }
}

/// The first field of `arguments`, at any depth, that its closed object schema does not declare, as an error
/// naming it (with its path) and the closest declared name.
fn undeclared_field(schema: &JsonObject, arguments: &JsonObject) -> Option<String> {
    members(schema, schema, arguments, "")
}

/// [`undeclared_field`] for the members of one object.
fn members(
    root: &JsonObject,
    schema: &JsonObject,
    given: &JsonObject,
    path: &str,
) -> Option<String> {
    let schema = resolve(root, schema);
    if let Some(Value::Object(properties)) = schema.get("properties") {
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        for (name, member) in given {
            let field = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            match properties.get(name).and_then(Value::as_object) {
                Some(property) => {
                    if let Some(error) = value(root, property, member, &field) {
                        return Some(error);
                    }
                }
                None if closed && !properties.contains_key(name) => {
                    let declared: Vec<&str> = properties.keys().map(String::as_str).collect();
                    let message = crate::fields::unknown_field(name, &declared);
                    return Some(if path.is_empty() {
                        message
                    } else {
                        format!("{path}: {message}")
                    });
                }
                None => {}
            }
        }
    }
    None
}

/// [`undeclared_field`] for one value of the schema `schema` (an object, a list of them, an optional one).
fn value(root: &JsonObject, schema: &JsonObject, given: &Value, path: &str) -> Option<String> {
    let schema = resolve(root, schema);
    match given {
        Value::Object(object) => {
            if schema.contains_key("properties") {
                return members(root, schema, object, path);
            }
            alternatives(root, schema, given, path)
        }
        Value::Array(elements) => {
            let items = schema.get("items").and_then(Value::as_object);
            match items {
                Some(items) => elements
                    .iter()
                    .enumerate()
                    .find_map(|(i, element)| value(root, items, element, &format!("{path}[{i}]"))),
                None => alternatives(root, schema, given, path),
            }
        }
        _ => None,
    }
}

/// For a schema of alternatives, [`value`] through the one that applies: of those that declare properties or
/// items, the one whose constant properties the value holds when they are told apart that way (a tagged list
/// such as the compound impact tool's `faults`, by `type`; none when the tag names no alternative, which the
/// tool then refuses by name), else the first (an optional object: `anyOf: [{$ref}, {type: null}]`).
fn alternatives(
    root: &JsonObject,
    schema: &JsonObject,
    given: &Value,
    path: &str,
) -> Option<String> {
    let candidates: Vec<&JsonObject> = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|key| schema.get(*key).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_object)
        .map(|alternative| resolve(root, alternative))
        .filter(|alternative| {
            alternative.contains_key("properties") || alternative.contains_key("items")
        })
        .collect();
    let constants = |alternative: &JsonObject| -> Vec<(String, Value)> {
        alternative
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(name, property)| Some((name.clone(), property.get("const")?.clone())))
            .collect()
    };
    let tagged = candidates.iter().any(|a| !constants(a).is_empty());
    let chosen = if tagged {
        candidates.into_iter().find(|alternative| {
            constants(alternative)
                .iter()
                .all(|(name, constant)| given.get(name) == Some(constant))
        })
    } else {
        candidates.into_iter().next()
    };
    chosen.and_then(|alternative| value(root, alternative, given, path))
}

/// `schema`, or the definition its `$ref` points at (`#/$defs/Name`).
fn resolve<'a>(root: &'a JsonObject, schema: &'a JsonObject) -> &'a JsonObject {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| {
            let (folder, name) = reference.strip_prefix("#/")?.split_once('/')?;
            root.get(folder)?.get(name)?.as_object()
        })
        .unwrap_or(schema)
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
        // Whether a number is whole and within range is its reader's to say, with its range.
        "integer" => value.is_number(),
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
