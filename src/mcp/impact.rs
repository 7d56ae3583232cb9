//! MCP tools of the impact scenarios: `fault_run_<fault>_impact_scenario`, one per registered TCP fault
//! ([`crate::proxy::faults`]), and `fault_run_impact_scenario`, whose `faults` list takes any of them at once,
//! each in its own windows. Their inputs, parsed and validated into an [`ImpactSpec`], are in
//! [`super::impact_input`].

use futures::future::BoxFuture;
use rmcp::{
    RoleServer,
    handler::server::{
        router::tool::{ToolRoute, ToolRouter},
        tool::ToolCallContext,
    },
    model::{CallToolResponse, CallToolResult, Tool, ToolAnnotations},
    service::RequestContext,
};

use super::impact_input::{
    InputError, RunFiles, compound_schema, compound_spec, impact_spec, input_schema,
};
use super::scenario::ScenarioReport;
use super::{FaultServer, output_schema, text_and_structured, tool_error, with_chart, with_view};
use crate::{
    impact::{self, ImpactSpec},
    proxy::faults::{self, EachFault, TcpFaultSpec},
    report::{
        chart::{self, ChartError, impact::ImpactFigure},
        impact::Report,
    },
};

impl ScenarioReport for Report {
    fn result(&self, apps: bool) -> CallToolResult {
        let result = with_chart(
            text_and_structured(crate::report::impact::render(self), self),
            &ImpactFigure::all(self),
        );
        with_view(result, apps, "impact", || chart::page::impact_body(self))
    }

    fn page(&self) -> Result<String, ChartError> {
        chart::page::impact_page(self)
    }
}

impl FaultServer {
    /// Validates, runs, and shapes the report; progress each second if asked.
    async fn run_impact(
        &self,
        spec: Result<(ImpactSpec, RunFiles), InputError>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let (spec, files) = match spec {
            Ok(spec) => spec,
            Err(e) => return Ok(tool_error(e)),
        };
        let total = (spec.planned_requests(), "requests");
        self.run_scenario(files, context, total, async |cancel, progress| {
            impact::run(&spec, cancel, progress).await
        })
        .await
    }
}

impl FaultServer {
    /// One `fault_run_<fault>_impact_scenario` tool per registered TCP fault, then the compound tool.
    pub(super) fn impact_router() -> ToolRouter<Self> {
        let mut tools = ImpactTools(ToolRouter::new());
        faults::for_each(&mut tools);
        let compound = Tool::new(COMPOUND_TOOL, COMPOUND_DESCRIPTION, compound_schema())
            .with_raw_output_schema(output_schema::<Report>())
            .with_annotations(annotations());
        tools
            .0
            .add_route(ToolRoute::new_dyn(compound, call_compound));
        tools.0
    }
}

/// The tool whose `faults` list takes several TCP faults at once.
pub(super) const COMPOUND_TOOL: &str = "fault_run_impact_scenario";

const COMPOUND_DESCRIPTION: &str = "Evaluate an endpoint's reliability under several TCP faults at once, as real \
outages come (latency with some packet loss, an error burst inside a slow period). Each item of `faults` is one \
fault of `fault run`, named by `type`, with that fault's own fields (as its fault_run_<type>_impact_scenario tool \
takes them) and its own `sched` window(s). Puts a fault-injecting proxy on the path to `url` (or runs the `proxies` \
you map in front of its upstream), sends open-model load, and returns a markdown report naming every fault and \
how often it acted, with phases before, during and after the windows, time to detect and to recover, error budget \
burn and retry amplification; structuredContent holds every figure.";

/// What the impact tools do: they start listeners and send the load you configure (any method and body, so
/// possibly writes) to the target, which may be remote; each call sends new load.
fn annotations() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(false)
        .destructive(true)
        .idempotent(false)
        .open_world(true)
}

/// The impact-scenario tools, built fault by fault.
struct ImpactTools(ToolRouter<FaultServer>);

impl EachFault for ImpactTools {
    fn fault<S: TcpFaultSpec>(&mut self) {
        let tool = Tool::new(
            tool_name::<S>(),
            tool_description::<S>(),
            input_schema::<S>(),
        )
        .with_raw_output_schema(output_schema::<Report>())
        .with_annotations(annotations());
        self.0.add_route(ToolRoute::new_dyn(tool, call::<S>));
    }
}

/// The names of the impact-scenario tools: one per fault in registration order, then the compound tool.
pub(super) fn tool_names() -> Vec<String> {
    struct Names(Vec<String>);
    impl EachFault for Names {
        fn fault<S: TcpFaultSpec>(&mut self) {
            self.0.push(tool_name::<S>());
        }
    }
    let mut names = Names(Vec::new());
    faults::for_each(&mut names);
    names.0.push(COMPOUND_TOOL.to_owned());
    names.0
}

/// The description of fault `S`'s tool, with its fields' defaults.
pub(super) fn tool_description<S: TcpFaultSpec>() -> String {
    match faults::defaults_text::<S>() {
        defaults if defaults.is_empty() => S::TOOL_DESCRIPTION.to_owned(),
        defaults => format!("{} Defaults: {defaults}.", S::TOOL_DESCRIPTION),
    }
}

/// The name of fault `S`'s tool.
pub(super) fn tool_name<S: TcpFaultSpec>() -> String {
    format!("fault_run_{}_impact_scenario", S::KIND)
}

fn call<S: TcpFaultSpec>(
    call: ToolCallContext<'_, FaultServer>,
) -> BoxFuture<'_, Result<CallToolResponse, rmcp::ErrorData>> {
    Box::pin(async move {
        let arguments = call.arguments.unwrap_or_default();
        let server = call.service;
        let spec = impact_spec::<S>(&arguments, &server.settings.scenario);
        server
            .run_impact(spec, call.request_context)
            .await
            .map(CallToolResponse::from)
    })
}

fn call_compound(
    call: ToolCallContext<'_, FaultServer>,
) -> BoxFuture<'_, Result<CallToolResponse, rmcp::ErrorData>> {
    Box::pin(async move {
        let arguments = call.arguments.unwrap_or_default();
        let server = call.service;
        let spec = compound_spec(&arguments, &server.settings.scenario);
        server
            .run_impact(spec, call.request_context)
            .await
            .map(CallToolResponse::from)
    })
}
