//! The report built from the faulted run and, optionally, the baseline: every figure, the phases, each
//! window's detection and recovery, and the retry amplification.

use super::comparison::comparison;
use super::data::ReportData;
use super::figures::{figures, per_second_figures, request_figures};
use super::mix::RequestInfo;
use super::phases::{self, Amplification, PhaseKind, UpstreamCounts};
use super::report::{CallInfo, FaultInfo, Report, SCHEMA_VERSION, Status, StrategyInfo};
use super::slo::{Judged, LatencySlo, samples_of};
use crate::load::{LoadReport, Samples};
use crate::report::{SecondFigures, ratio};

/// What the scenario knows besides the samples.
pub struct ReportInput {
    /// The first request of the mix (the only one of the single-`url` form).
    pub call: CallInfo,
    /// Every request of the mix, in its order (as the load's `per_request`).
    pub requests: Vec<RequestInfo>,
    pub strategy: StrategyInfo,
    pub faults: Vec<FaultInfo>,
    pub slos: Vec<LatencySlo>,
    /// N of time to recover: seconds in a row that must hold every SLO (see [`phases`]).
    pub recovery_seconds: u32,
    /// The proxies' counts per second and per phase of the faulted run, when they were read.
    pub upstream: Option<UpstreamCounts>,
}

/// Default N of time to recover.
pub const DEFAULT_RECOVERY_SECONDS: u32 = 3;

/// N of time to recover, as every face that takes it declares it (the impact tools, `fault run`).
pub const RECOVERY_SECONDS: crate::fields::Field = crate::fields::Field::number(
    "recovery_seconds",
    "Seconds in a row that must hold every SLO, with errors back to the share before the fault's window, \
     for the service to count as recovered (time to recover, in the report's phases)",
    crate::lenient::Number::from_to(1.0, 60.0).whole(),
    crate::fields::Unit::Seconds,
)
.default("3");

/// Builds the report from the faulted run and, optionally, a baseline run without faults.
pub fn build(input: ReportInput, run: &LoadReport, baseline: Option<&LoadReport>) -> Report {
    let data = ReportData::of(&input.slos, run, baseline, input.upstream.as_ref());
    let run_figures = figures(run, &input.slos);
    let requests = request_figures(run, &input.requests, &run_figures.slos);
    // The seconds each SLO of a request is judged on: that request's.
    let unsent = Samples::new(0);
    let request_seconds: Vec<Option<Vec<SecondFigures>>> = input
        .slos
        .iter()
        .map(|slo| {
            slo.request
                .as_ref()
                .map(|_| samples_of(run, slo).map_or_else(Vec::new, |s| per_second_figures(s, &[])))
        })
        .collect();
    let judged: Vec<Judged> = input
        .slos
        .iter()
        .zip(&request_seconds)
        .map(|(slo, seconds)| Judged {
            slo,
            samples: samples_of(run, slo).unwrap_or(&unsent),
            per_second: seconds.as_deref().unwrap_or(&run_figures.per_second),
        })
        .collect();
    let merged = phases::merge_windows(input.faults.iter().flat_map(|f| f.windows.iter().copied()));
    let phases = phases::phase_figures(
        &run.samples.phases,
        &merged,
        &judged,
        input.upstream.as_ref(),
    );
    let recovery = if phases.is_empty() {
        Vec::new()
    } else {
        // The usual error share: the before phase's; the baseline's when a window starts the run.
        let usual = match phases.first() {
            Some(first) if first.kind == PhaseKind::Before => ratio(first.errors, first.requests),
            _ => baseline.map_or(0.0, |b| ratio(b.samples.errors(), b.samples.requests())),
        };
        phases::recoveries(
            &merged,
            &run_figures.per_second,
            &judged,
            usual,
            input.recovery_seconds,
            input.strategy.duration_s,
        )
    };
    let upstream = input
        .upstream
        .as_ref()
        .map(|counts| Amplification::of(counts, &run_figures.per_second, run_figures.requests));
    let baseline_figures = baseline.map(|b| figures(b, &input.slos));
    let comparison = baseline
        .zip(baseline_figures.as_ref())
        .map(|(load, figures)| comparison(&run_figures, figures, &requests, load));
    let status = if run_figures.slo_failures == 0 {
        Status::Passed
    } else {
        Status::Failed
    };
    let started_at = baseline
        .map_or(run.started_at, |b| b.started_at.min(run.started_at))
        .to_string();
    Report {
        schema_version: SCHEMA_VERSION,
        title: "Scenarios Report".into(),
        started_at,
        ended_at: run.ended_at.to_string(),
        status,
        call: input.call,
        strategy: input.strategy,
        faults: input.faults,
        requests,
        run: run_figures,
        baseline: baseline_figures,
        comparison,
        proxy: None,
        inconclusive: None,
        phases,
        recovery,
        recovery_seconds: input.recovery_seconds,
        upstream,
        engine: None,
        data,
    }
}
