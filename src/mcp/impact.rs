//! MCP tools of the impact scenarios: `fault_run_<fault>_impact_scenario`, one per registered TCP fault
//! ([`crate::proxy::faults`]), and `fault_run_impact_scenario`, whose `faults` list takes any of them at once,
//! each in its own windows. Their inputs, parsed and validated into an [`ImpactSpec`], are in
//! [`super::impact_input`].

use std::{sync::Arc, time::Duration};

use futures::future::BoxFuture;
use rmcp::{
    RoleServer,
    handler::server::{
        router::tool::{ToolRoute, ToolRouter},
        tool::ToolCallContext,
    },
    model::{CallToolResponse, CallToolResult, ProgressNotificationParam, Tool, ToolAnnotations},
    service::RequestContext,
};

use super::impact_input::{
    InputError, RunFiles, compound_schema, compound_spec, impact_spec, input_schema,
};
use super::{
    FaultServer, output_schema, text_and_structured, tool_error, with_chart, with_page,
    with_result_file, with_view,
};
use crate::{
    impact::{self, ImpactSpec},
    load,
    proxy::faults::{self, EachFault, TcpFaultSpec},
    report::{
        chart::{self, ChartError, impact::ImpactFigure},
        impact::Report,
    },
    serve::tasks::TaskStatusLine,
};
use tokio_util::sync::CancellationToken;

/// How long a new scenario waits for a cancelled one to finish stopping (its proxies closing).
const STOPPING_WAIT: Duration = Duration::from_secs(5);

/// One impact scenario at a time. A second one is refused, unless the running one was cancelled: it is
/// then only closing connections and freeing ports, and the new one waits for that.
#[derive(Clone)]
pub(super) struct ImpactSlot {
    permit: Arc<tokio::sync::Semaphore>,
    /// Cancellation of the scenario that holds the permit (the last one that took it).
    holder: Arc<std::sync::Mutex<Option<tokio_util::sync::CancellationToken>>>,
}

impl Default for ImpactSlot {
    fn default() -> Self {
        Self {
            permit: Arc::new(tokio::sync::Semaphore::new(1)),
            holder: Arc::default(),
        }
    }
}

impl ImpactSlot {
    /// The slot for a scenario cancelled by `cancel`, or `None` when another scenario is running.
    pub(super) async fn take(
        &self,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let holder = || self.holder.lock().unwrap_or_else(|p| p.into_inner());
        let permit = match self.permit.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let stopping = holder().as_ref().is_some_and(|c| c.is_cancelled());
                if !stopping {
                    return None;
                }
                tokio::time::timeout(STOPPING_WAIT, self.permit.clone().acquire_owned())
                    .await
                    .ok()?
                    .ok()?
            }
        };
        *holder() = Some(cancel.clone());
        Some(permit)
    }
}

/// A scenario's report as the tool answers it: markdown and structuredContent with its chart, the MCP App view
/// for a client that declared MCP Apps, and its HTML page.
pub(super) trait ScenarioReport: serde::Serialize {
    /// The tool's result: the markdown, structuredContent, the chart and, when `apps`, the App view.
    fn result(&self, apps: bool) -> CallToolResult;
    /// The self-contained HTML page (`report_path`).
    fn page(&self) -> Result<String, ChartError>;
}

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
    /// Validates, takes the scenario slot, runs, and shapes the report; progress each second if asked.
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
        self.run_in_slot(files, context, total, async |cancel, progress| {
            impact::run(&spec, cancel, progress).await
        })
        .await
    }

    /// Takes the one scenario slot, runs `run` with progress each second if asked (`total` of a unit), and
    /// answers its report, writing the files asked for; the files are removed when there is no report.
    pub(super) async fn run_in_slot<R: ScenarioReport, E: std::fmt::Display>(
        &self,
        files: RunFiles,
        context: RequestContext<RoleServer>,
        (total, unit): (u64, &'static str),
        run: impl AsyncFnOnce(&CancellationToken, Arc<load::LoadProgress>) -> Result<R, E>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let Some(_slot) = self.impact_slot.take(&context.ct).await else {
            files.discard();
            return Ok(tool_error(
                "another impact scenario is running; they run one at a time (they bind ports and measure \
                 latency). Try again when it has finished.",
            ));
        };
        let progress = Arc::new(load::LoadProgress::default());
        let ticker = progress_ticker(&context, progress.clone(), total, unit);
        let apps = super::declared_apps(&context);
        let outcome = run(&context.ct, progress).await;
        if let Some(ticker) = ticker {
            ticker.abort();
        }
        match outcome {
            Ok(report) => {
                let result = with_result_file(report.result(apps), files.result, &report);
                Ok(with_page(result, files.page, || report.page()))
            }
            Err(e) => {
                files.discard();
                Ok(tool_error(e))
            }
        }
    }
}

/// The run's note (what it waits for), as the end of a progress message.
fn noted(progress: &load::LoadProgress) -> String {
    match progress.note() {
        note if note.is_empty() => String::new(),
        note => format!("; {note}"),
    }
}

/// "5 of 20 calls", or "5 calls" when the total is not known ahead (0).
fn of_total(done: u64, total: u64, unit: &str) -> String {
    if total == 0 {
        format!("{done} {unit}")
    } else {
        format!("{done} of {total} {unit}")
    }
}

/// Tells how far a run is each second: as the task's status message when the call runs as a task, else as
/// `notifications/progress` when the client asked for progress: `completed` of `total` `unit` done (`total`
/// 0: not known ahead), and how many failed.
pub(super) fn progress_ticker(
    context: &RequestContext<RoleServer>,
    progress: Arc<load::LoadProgress>,
    total: u64,
    unit: &'static str,
) -> Option<tokio::task::JoinHandle<()>> {
    if let Some(status) = context.extensions.get::<TaskStatusLine>().cloned() {
        return Some(tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let done = progress
                    .completed
                    .load(std::sync::atomic::Ordering::Relaxed);
                let errors = progress.errors.load(std::sync::atomic::Ordering::Relaxed);
                status.set(format!(
                    "{} s in, {} done, {errors} errors{}",
                    started.elapsed().as_secs(),
                    of_total(done, total, unit),
                    noted(&progress)
                ));
            }
        }));
    }
    let token = context.meta.get_progress_token()?;
    let peer = context.peer.clone();
    Some(tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.tick().await;
        loop {
            tick.tick().await;
            let done = progress
                .completed
                .load(std::sync::atomic::Ordering::Relaxed);
            let errors = progress.errors.load(std::sync::atomic::Ordering::Relaxed);
            let mut note =
                ProgressNotificationParam::new(token.clone(), done as f64).with_message(format!(
                    "{} done, {errors} errors{}",
                    of_total(done, total, unit),
                    noted(&progress)
                ));
            if total > 0 {
                note = note.with_total(total as f64);
            }
            if peer.notify_progress(note).await.is_err() {
                break;
            }
        }
    }))
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
