//! MCP tool `fault_run_mcp_chaos_scenario`: a server behind `fault mcp-proxy`, calls driven with a client
//! policy, and the MCP chaos report. Input in [`super::mcp_chaos_input`], the run in [`crate::mcp_chaos`].

use rmcp::{
    RoleServer,
    model::{CallToolResult, JsonObject},
    service::RequestContext,
    tool, tool_router,
};

use super::impact_input::RunFiles;
use super::mcp_chaos_input::{chaos_input_schema, chaos_spec};
use super::scenario::ScenarioReport;
use super::{FaultServer, output_schema, text_and_structured, tool_error, with_chart, with_view};
use crate::{
    mcp_chaos,
    report::{
        chaos::{self, ChaosReport},
        chart::{self, ChartError, chaos::ChaosFigure},
    },
};

#[tool_router(router = mcp_chaos_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(
        description = "Evaluate how an MCP server, and a client with a given retry policy, cope with faults in \
the tool-call plane. Starts `server` (stdio) behind `fault mcp-proxy` with the fault `plan` (hang, latency, \
error, flaky, recover_after, rate_limit, malformed, schema_drift, partial_result, ...), makes the `calls` \
(repeat times; or an open-model load: num_clients sessions each starting rps calls per second for duration) \
with the `client` policy (timeout_ms then cancel, retries, backoff_ms), and returns a markdown report: per tool \
and overall outcomes, faults injected, \
availability A, correctness C (results validated against the tool's own outputSchema), A×C, latency \
percentiles with and without injection, retries, time to detect, time to recovery, runaways, duplicates, \
tasks and blast radius, latency per second, calls that could not start, and whether slow calls delayed others \
(head-of-line blocking); structuredContent holds every figure. `baseline: true` runs the calls without faults \
first and adds a with/without table. `server: {url, headers}` instead of a command calls a running Streamable \
HTTP MCP server directly (no plan: it measures the server as it is). `as_tasks: true` calls the tools as tasks \
(MCP Tasks extension), each followed with tasks/get to its end.",
        input_schema = chaos_input_schema(),
        output_schema = output_schema::<ChaosReport>(),
        // Runs the given server command and calls its tools, which may change anything they touch.
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn fault_run_mcp_chaos_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let (spec, page) = match chaos_spec(&arguments, &self.settings.scenario) {
            Ok(spec) => spec,
            Err(e) => return Ok(tool_error(e)),
        };
        let total =
            spec.planned_calls() * (u64::from(spec.sessions) + if spec.baseline { 1 } else { 0 });
        let files = RunFiles { page, result: None };
        self.run_scenario(
            files,
            context,
            (total, "calls"),
            async |cancel, progress| mcp_chaos::run(&spec, cancel, progress).await,
        )
        .await
    }
}

impl ScenarioReport for ChaosReport {
    fn result(&self, apps: bool) -> CallToolResult {
        let result = with_chart(
            text_and_structured(chaos::render(self), self),
            &ChaosFigure::all(self),
        );
        with_view(result, apps, "chaos", || chart::page::chaos_body(self))
    }

    fn page(&self) -> Result<String, ChartError> {
        chart::page::chaos_page(self)
    }
}
