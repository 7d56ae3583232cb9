//! The server's answers to MCP requests: `initialize`, the tool list (with the report view for MCP Apps
//! clients), the view's resource, tool calls (arguments read against the schema first, long tools as tasks,
//! scenario tools in the one slot), and tasks.

use rmcp::{
    RoleServer, ServerHandler,
    handler::server::tool::ToolCallContext,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CustomRequest, CustomResult,
        ErrorCode, GetTaskParams, GetTaskResult, Implementation, ListResourcesResult,
        ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
        ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
    tool_handler,
};

use super::{
    FaultServer,
    arguments::{malformed_call, missing_required, undeclared_field, wrong_field},
    instructions::instructions,
    scenario::{BUSY, declared_apps},
    tool_error,
};
use crate::{report::chart::app, serve::tasks};

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
            for tool in tools.iter_mut().filter(|t| self.facts(&t.name).report) {
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
        if tasks::declared(&context) && self.facts(&request.name).long_running {
            return self.start_task(request, context);
        }
        self.dispatch(request, context).await
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
                match server.dispatch(request, context).await? {
                    CallToolResponse::Complete(result) => Ok(result),
                    _ => Err(rmcp::ErrorData::internal_error(
                        "a task's tool answered with something other than a result",
                        None,
                    )),
                }
            }
        })
    }

    /// Calls the tool, in the scenario slot when its facts say it binds ports and measures latency: a second
    /// such call while one runs is refused (or waits briefly for a cancelled one to finish stopping).
    async fn dispatch(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let _slot = if self.facts(&request.name).slot {
            match self.scenario_slot.take(&context.ct).await {
                Some(permit) => Some(permit),
                None => return Ok(tool_error(BUSY).into()),
            }
        } else {
            None
        };
        let call = ToolCallContext::new(self, request, context);
        self.tool_router.call(call).await
    }
}
