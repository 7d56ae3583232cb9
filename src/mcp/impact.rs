//! MCP tools of the scenario family: `fault_run_*_impact_scenario`. Their inputs, parsed and validated
//! into a [`ImpactSpec`], are in [`super::impact_input`].

use std::{sync::Arc, time::Duration};

use rmcp::{
    RoleServer,
    model::{CallToolResult, JsonObject, ProgressNotificationParam},
    service::RequestContext,
    tool, tool_router,
};

use super::impact_input::{
    BandwidthInput, BlackholeInput, HttpErrorInput, InputError, JitterInput, LatencyInput,
    PacketLossInput, input_schema, scenario_spec,
};
use super::{FaultServer, output_schema, text_and_structured, tool_error};
use crate::{
    impact::{self, ImpactSpec},
    load,
    report::Report,
};

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
    async fn take(
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

impl FaultServer {
    /// Validates, takes the scenario slot, runs, and shapes the report; progress each second if asked.
    async fn run_scenario(
        &self,
        spec: Result<ImpactSpec, InputError>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let spec = match spec {
            Ok(spec) => spec,
            Err(e) => return Ok(tool_error(e)),
        };
        let Some(_slot) = self.impact_slot.take(&context.ct).await else {
            return Ok(tool_error(
                "another impact scenario is running; they run one at a time (they bind ports and measure \
                 latency). Try again when it has finished.",
            ));
        };
        let progress = Arc::new(load::LoadProgress::default());
        let ticker = progress_ticker(
            &context,
            progress.clone(),
            spec.planned_requests(),
            "requests",
        );
        let outcome = impact::run(&spec, &context.ct, progress).await;
        if let Some(ticker) = ticker {
            ticker.abort();
        }
        match outcome {
            Ok(report) => Ok(text_and_structured(crate::report::render(&report), &report)),
            Err(e) => Ok(tool_error(e)),
        }
    }
}

/// Sends `notifications/progress` each second while a run goes on, when the client asked for progress:
/// `completed` of `total` `unit` done, and how many failed.
pub(super) fn progress_ticker(
    context: &RequestContext<RoleServer>,
    progress: Arc<load::LoadProgress>,
    total: u64,
    unit: &'static str,
) -> Option<tokio::task::JoinHandle<()>> {
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
            let note = ProgressNotificationParam::new(token.clone(), done as f64)
                .with_total(total as f64)
                .with_message(format!("{done} of {total} {unit} done, {errors} errors"));
            if peer.notify_progress(note).await.is_err() {
                break;
            }
        }
    }))
}

// Annotations of every scenario tool: they start listeners and send the load you configure (any method and
// body, so possibly writes) to the target, which may be remote; each call sends new load.
#[tool_router(router = impact_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(
        description = "Evaluate an endpoint's reliability while latency is added on a TCP path. Puts a \
fault-injecting proxy on the path to `url` (or runs the `proxies` you map in front of its upstream), sends \
open-model load (num_clients × rps requests per second for duration), and returns a markdown report (latency \
percentiles, errors by outcome, SLO verdicts, per-second sparkline); structuredContent holds every figure. \
Defaults: side server, direction ingress (responses).",
        input_schema = input_schema::<LatencyInput>(),
        output_schema = output_schema::<Report>(),
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn fault_run_latency_impact_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run_scenario(
            scenario_spec::<LatencyInput>(&arguments, &self.settings.scenario),
            context,
        )
        .await
    }

    #[tool(
        description = "Evaluate an endpoint's reliability during jitter (random extra delays up to `amplitude` \
ms, `frequency` spikes per second) on a TCP path. Same topology, load and report as the latency scenario. \
Defaults: side server, direction ingress.",
        input_schema = input_schema::<JitterInput>(),
        output_schema = output_schema::<Report>(),
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn fault_run_jitter_impact_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run_scenario(
            scenario_spec::<JitterInput>(&arguments, &self.settings.scenario),
            context,
        )
        .await
    }

    #[tool(
        description = "Evaluate an endpoint's reliability during packet loss on a TCP path (lost segments are \
retransmitted late, as TCP would, so bytes arrive intact but slower). Same topology, load and report as the \
latency scenario. Defaults: side server, direction egress, loss_rate 0.05.",
        input_schema = input_schema::<PacketLossInput>(),
        output_schema = output_schema::<Report>(),
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn fault_run_packet_loss_impact_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run_scenario(
            scenario_spec::<PacketLossInput>(&arguments, &self.settings.scenario),
            context,
        )
        .await
    }

    #[tool(
        description = "Evaluate an endpoint's reliability when a TCP path's bandwidth is capped to `rate` `unit` \
(bytes per second; each connection has its own cap by default, `scope` \"proxy\" makes all connections share \
one). Same topology, load and report as the latency scenario. \
Defaults: side server, direction ingress (the response flow, where bodies travel), unit bps.",
        input_schema = input_schema::<BandwidthInput>(),
        output_schema = output_schema::<Report>(),
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn fault_run_bandwidth_impact_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run_scenario(
            scenario_spec::<BandwidthInput>(&arguments, &self.settings.scenario),
            context,
        )
        .await
    }

    #[tool(
        description = "Evaluate an endpoint's reliability during a blackhole: bytes on a TCP path are swallowed \
and connections stay open, so callers wait until their timeout. Same topology, load and report as the latency \
scenario. Defaults: side server, direction egress.",
        input_schema = input_schema::<BlackholeInput>(),
        output_schema = output_schema::<Report>(),
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn fault_run_blackhole_impact_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run_scenario(
            scenario_spec::<BlackholeInput>(&arguments, &self.settings.scenario),
            context,
        )
        .await
    }

    #[tool(
        description = "Evaluate an endpoint's reliability when its upstream answers with HTTP errors: the proxy \
replaces HTTP/1.1 responses with `status_code` and `error_body`, with `probability`, keeping keep-alive framing \
intact. Acts on the response flow. Same topology, load and report as the latency scenario.",
        input_schema = input_schema::<HttpErrorInput>(),
        output_schema = output_schema::<Report>(),
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn fault_run_http_error_impact_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run_scenario(
            scenario_spec::<HttpErrorInput>(&arguments, &self.settings.scenario),
            context,
        )
        .await
    }
}
