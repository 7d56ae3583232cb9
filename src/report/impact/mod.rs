//! The impact scenario's report: a serde model built from load samples, SLO evaluation, and a markdown
//! renderer.
//!
//! Definitions (stated in the report too):
//! - latency percentiles, min, max and mean cover every request; a timeout counts at the moment it ended;
//! - latency = queueing delay (due → sent; a request that could not start waited its whole timeout) + service
//!   time (sent → the end of its body or its timeout, requests sent);
//! - errors = HTTP status ≥ 400 + transport errors + timeouts + requests that could not start (in-flight cap);
//! - a request counts towards an SLO only if it succeeded within the threshold;
//! - the scenario is Failed when any SLO is not met;
//! - phases, time to detect and to recover, burn rates and retry amplification: see [`phases`].

pub mod data;
mod markdown;
pub mod phases;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::load::{LoadReport, Samples};

pub use data::ReportData;
pub use markdown::render;
pub use phases::{
    ActiveWindow, Amplification, PhaseFigures, PhaseKind, PhaseSlo, PhaseUpstream, Recovery,
    UpstreamCounts, UpstreamSecond, UpstreamTally, WindowRecovery,
};

use super::{SecondFigures, ms, percent, quantile, ratio, round2, round4, sparklines};

/// A service level objective: `objective`% of requests succeed within `threshold_ms`, of one request of the
/// traffic mix when it names one, else of all traffic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Slo")]
pub struct LatencySlo {
    /// Share of requests (percent, 0 < objective < 100 or exactly 100) that must succeed within the threshold.
    pub objective: f64,
    /// Latency threshold in milliseconds.
    pub threshold_ms: f64,
    /// The request of the mix (its `name`) whose calls alone the SLO is judged on; `None`: all traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
}

impl LatencySlo {
    /// The guide's two rows: 99% @ 350ms and 95% @ 200ms.
    pub fn defaults() -> Vec<LatencySlo> {
        vec![
            LatencySlo {
                objective: 99.0,
                threshold_ms: 350.0,
                request: None,
            },
            LatencySlo {
                objective: 95.0,
                threshold_ms: 200.0,
                request: None,
            },
        ]
    }

    /// "99% @ 350ms", or "checkout: 99% @ 350ms" for an SLO of the request named "checkout".
    pub fn name(&self) -> String {
        let objective = format!(
            "{}% @ {}ms",
            trim_float(self.objective),
            trim_float(self.threshold_ms)
        );
        match &self.request {
            Some(request) => format!("{request}: {objective}"),
            None => objective,
        }
    }
}

fn trim_float(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Status {
    Passed,
    Failed,
}

/// The call the load generator made.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CallInfo {
    pub url: String,
    pub method: String,
    pub timeout_ms: u64,
    /// Header names sent (values are not echoed).
    pub headers: Vec<String>,
    pub has_body: bool,
}

/// One request of the traffic mix, as the scenario was given it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RequestInfo {
    /// Its name in the mix (`requests[].name`; the single-`url` form's is "METHOD /path").
    pub name: String,
    pub method: String,
    pub url: String,
    /// Its weight in the mix, as given (a call picks a request with probability weight / sum of weights).
    pub weight: f64,
    /// What counts as its success, in words (e.g. "a 2xx status", "status 200 or 404, body holding \"ok\"").
    pub expect: String,
    /// Header names sent (values are not echoed).
    pub headers: Vec<String>,
    pub has_body: bool,
}

impl RequestInfo {
    /// A request the load did not describe but a proxy saw pass, named "METHOD /path" (its group): no weight
    /// of its own, whatever status it got.
    pub fn observed(name: &str) -> Self {
        let (method, path) = name.split_once(' ').unwrap_or(("", name));
        Self {
            name: name.to_owned(),
            method: method.to_owned(),
            url: path.to_owned(),
            weight: 1.0,
            expect: "any answer (counted as the client saw it: a status below 400 is a success)"
                .into(),
            headers: Vec::new(),
            has_body: false,
        }
    }
}

/// The load shape.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StrategyInfo {
    pub duration_s: f64,
    pub num_clients: u32,
    /// Requests per second per client, at a constant rate; 0 when the rate followed `stages`.
    pub rps: u32,
    /// The stages the rate (over all clients) followed, in order; empty at a constant rate.
    #[serde(default)]
    pub stages: Vec<StageInfo>,
}

/// One stage of a ramp: the rate over all clients moved linearly from `from_rps` to `to_rps`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageInfo {
    /// When it started, in seconds from the run's start.
    pub from_s: f64,
    pub duration_s: f64,
    pub from_rps: f64,
    pub to_rps: f64,
}

/// One fault applied during the run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FaultInfo {
    /// latency, jitter, packet_loss, bandwidth, blackhole, http_error, reset, limit_data or corrupt.
    pub kind: String,
    /// Human description of its parameters.
    pub description: String,
    /// Its schedule as given (`sched`); `None`: active for the whole run.
    pub sched: Option<String>,
    /// When it was active, in seconds from the run's start, in time order (the whole run without a schedule).
    pub windows: Vec<ActiveWindow>,
    /// Where it was applied, e.g. "proxy 127.0.0.1:34000 → 127.0.0.1:8080 (server side, ingress)".
    pub applied_on: String,
    /// Times it acted during the run, in the unit of its kind (messages delayed, segments lost, responses
    /// replaced, …); `None` when the proxy's counts were not read.
    pub applications: Option<u64>,
}

/// Requests by outcome.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct OutcomeCounts {
    pub success: u64,
    /// Responses with a status of 400 or more.
    pub http_error: u64,
    /// Counts per HTTP status code (as text keys).
    pub http_error_by_status: BTreeMap<String, u64>,
    pub transport_error: u64,
    pub timeout: u64,
    /// Requests that could not start: their client already had its cap of requests in flight (the service
    /// held earlier ones). Counted in latency at the timeout.
    pub not_started: u64,
    /// Up to five distinct transport error messages.
    pub transport_error_examples: Vec<String>,
}

impl OutcomeCounts {
    /// The outcomes of `samples`' requests.
    pub fn of(samples: &Samples) -> Self {
        Self {
            success: samples.success,
            http_error: samples.http_error_count(),
            http_error_by_status: samples
                .http_errors
                .iter()
                .map(|(status, count)| (status.to_string(), *count))
                .collect(),
            transport_error: samples.transport_errors,
            timeout: samples.timeouts,
            not_started: samples.not_started,
            transport_error_examples: samples.transport_error_examples.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PercentileRow {
    /// e.g. "p95".
    pub name: String,
    /// 0..100.
    pub percentile: f64,
    pub latency_ms: f64,
    /// Requests at or below this latency.
    pub requests_at_or_below: u64,
    pub percent_of_total: f64,
}

/// Percentiles of one part of the latency (queueing delay or service time) over a run's requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyPart {
    /// Requests the figures cover.
    pub requests: u64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl LatencyPart {
    fn of(histogram: &hdrhistogram::Histogram<u64>) -> Self {
        if histogram.is_empty() {
            return Self::default();
        }
        let at = |q: f64| ms(quantile(histogram, q));
        Self {
            requests: histogram.len(),
            p50_ms: at(0.50),
            p95_ms: at(0.95),
            p99_ms: at(0.99),
            max_ms: ms(histogram.median_equivalent(histogram.max())),
        }
    }
}

/// One point of the latency distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CurvePoint {
    /// 0..100.
    pub percentile: f64,
    pub latency_ms: f64,
}

/// Steps of the distribution per decade of "nines" (90%, 99%, 99.9%, ...).
const CURVE_STEPS_PER_NINE: u32 = 10;
/// Nines the curve goes down to (99.99%); the maximum closes it.
const CURVE_NINES: u32 = 4;

/// The percentiles of [`RunFigures::latency_curve`]: 1 − 10^(−k/10) for k = 0..=40, then 100.
fn curve_percentiles() -> impl Iterator<Item = f64> {
    (0..=CURVE_STEPS_PER_NINE * CURVE_NINES)
        .map(|k| {
            round4(100.0 * (1.0 - 10f64.powf(-f64::from(k) / f64::from(CURVE_STEPS_PER_NINE))))
        })
        .chain(std::iter::once(100.0))
}

/// The latency at each of [`curve_percentiles`] (empty without requests).
pub(crate) fn latency_curve(histogram: &hdrhistogram::Histogram<u64>) -> Vec<CurvePoint> {
    if histogram.is_empty() {
        return Vec::new();
    }
    curve_percentiles()
        .map(|percentile| CurvePoint {
            percentile,
            latency_ms: ms(quantile(histogram, percentile / 100.0)),
        })
        .collect()
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SloVerdict {
    /// e.g. "99% @ 350ms", "checkout: 99% @ 350ms" for an SLO of one request.
    pub name: String,
    /// The request of the mix it was judged on; `None`: all traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    pub objective: f64,
    pub threshold_ms: f64,
    pub passed: bool,
    /// Requests that succeeded within the threshold.
    pub good_requests: u64,
    /// Requests over the threshold or not successful.
    pub bad_requests: u64,
    pub bad_percent: f64,
    /// Observed latency at the objective's percentile (all requests).
    pub latency_at_objective_ms: f64,
    /// threshold − latency at the objective: positive means below the threshold by this much.
    pub margin_ms: f64,
}

/// Every figure of one load run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunFigures {
    /// Requests the schedule started.
    pub requests: u64,
    /// Requests the schedule planned (num_clients × rps × duration).
    pub planned_requests: Option<u64>,
    /// HTTP errors + transport errors + timeouts + requests that could not start.
    pub errors: u64,
    pub error_percent: f64,
    pub outcomes: OutcomeCounts,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Arithmetic mean of all latencies.
    pub mean_ms: f64,
    pub total_time_ms: f64,
    pub achieved_rps: f64,
    pub connections_opened: u64,
    pub body_bytes: u64,
    /// True when in-flight requests had to be cut after duration + timeout + grace.
    pub cut_short: bool,
    pub percentiles: Vec<PercentileRow>,
    /// Of the latency, the queueing delay: from when each request was due to when it was sent (a request
    /// that could not start waited its whole timeout).
    #[serde(default)]
    pub queueing: LatencyPart,
    /// Of the latency, the service time: from when each request was sent to the end of its body or its
    /// timeout (requests that were sent).
    #[serde(default)]
    pub service: LatencyPart,
    pub slos: Vec<SloVerdict>,
    /// Number of SLOs not met.
    pub slo_failures: u64,
    pub per_second: Vec<SecondFigures>,
    /// The latency distribution: the latency at each of a fixed set of percentiles (denser towards the
    /// tail), empty without requests.
    #[serde(default)]
    pub latency_curve: Vec<CurvePoint>,
    /// p50 per second as Unicode blocks (space = no request that second).
    pub sparkline_p50: String,
    pub sparkline_p95: String,
    pub started_at: String,
    pub ended_at: String,
}

/// Every figure of one request of the traffic mix, over the faulted run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RequestFigures {
    /// Its name in the mix.
    pub name: String,
    pub method: String,
    pub url: String,
    /// Its weight in the mix, as given.
    pub weight: f64,
    /// What counts as its success, in words.
    pub expect: String,
    /// Header names sent (values are not echoed).
    pub headers: Vec<String>,
    pub has_body: bool,
    /// Its share of the run's requests (percent): what the seeded picks gave, near its weight's share.
    pub share_percent: f64,
    pub requests: u64,
    /// HTTP errors + transport errors + timeouts + requests that could not start, of this request.
    pub errors: u64,
    pub error_percent: f64,
    pub outcomes: OutcomeCounts,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Arithmetic mean of its latencies.
    pub mean_ms: f64,
    /// The verdicts of the SLOs that name this request, judged on its requests alone.
    pub slos: Vec<SloVerdict>,
}

/// One request of the mix with and without the fault.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RequestComparison {
    pub name: String,
    pub baseline_p50_ms: f64,
    pub baseline_p95_ms: f64,
    pub baseline_p99_ms: f64,
    pub baseline_errors: u64,
    pub fault_p50_ms: f64,
    pub fault_p95_ms: f64,
    pub fault_p99_ms: f64,
    pub fault_errors: u64,
}

/// With/without the fault, so the impact is a number.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Comparison {
    pub baseline_p50_ms: f64,
    pub baseline_p95_ms: f64,
    pub baseline_p99_ms: f64,
    pub baseline_errors: u64,
    pub fault_p50_ms: f64,
    pub fault_p95_ms: f64,
    pub fault_p99_ms: f64,
    pub fault_errors: u64,
    /// The same per request of the mix, in its order; empty with one request (its figures are the run's).
    #[serde(default)]
    pub requests: Vec<RequestComparison>,
}

/// What the proxy saw during the faulted run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProxyFigures {
    /// Connections the proxies accepted.
    pub connections: u64,
    /// Connections closed because the upstream could not be reached.
    pub upstream_failures: u64,
    pub bytes_to_upstream: u64,
    pub bytes_to_client: u64,
    /// Chunks the fault acted on (delayed, dropped, replaced or closed on).
    pub fault_applications: u64,
    /// Connections whose traffic was not HTTP/1 (`fault run` measuring what passes), counted apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_streams: Option<StreamFigures>,
}

/// Connections a measuring proxy could not frame as HTTP/1 (TLS from the client, another protocol).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StreamFigures {
    pub connections: u64,
    pub bytes_to_upstream: u64,
    pub bytes_to_client: u64,
    /// How long they were open.
    pub duration_p50_ms: f64,
    pub duration_p95_ms: f64,
    pub duration_max_ms: f64,
}

impl StreamFigures {
    /// `connections` that carried `bytes` (to the upstream, to the client), open for `durations_us`.
    pub fn of(
        connections: u64,
        (bytes_to_upstream, bytes_to_client): (u64, u64),
        durations_us: &hdrhistogram::Histogram<u64>,
    ) -> Self {
        let part = LatencyPart::of(durations_us);
        Self {
            connections,
            bytes_to_upstream,
            bytes_to_client,
            duration_p50_ms: part.p50_ms,
            duration_p95_ms: part.p95_ms,
            duration_max_ms: part.max_ms,
        }
    }
}

/// The version of the impact result's format ([`Report`] as JSON, `docs/src/schemas/impact-result.json`): raised
/// when a field changes meaning or a required one is added, so that a reader (`fault report merge`) refuses a
/// result it would misread.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole report; the markdown is rendered from it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// The version of this format (1).
    pub schema_version: u32,
    pub title: String,
    pub started_at: String,
    pub ended_at: String,
    pub status: Status,
    pub call: CallInfo,
    pub strategy: StrategyInfo,
    pub faults: Vec<FaultInfo>,
    /// Each request of the traffic mix over the faulted run, in the mix's order (one row with one request).
    #[serde(default)]
    pub requests: Vec<RequestFigures>,
    /// The run with the faults applied.
    pub run: RunFigures,
    /// The same load without faults, when `baseline` was asked for.
    pub baseline: Option<RunFigures>,
    pub comparison: Option<Comparison>,
    /// Proxy counters of the faulted run.
    pub proxy: Option<ProxyFigures>,
    /// Set when the status says nothing about the fault: why (the fault never acted during the run).
    pub inconclusive: Option<String>,
    /// The faulted run cut at the faults' windows: before, during, between and after, each judged on its own;
    /// empty when the faults held for the whole run.
    #[serde(default)]
    pub phases: Vec<PhaseFigures>,
    /// Time to detect and time to recover of each window (the faults' windows merged where they overlap);
    /// empty when the faults held for the whole run.
    #[serde(default)]
    pub recovery: Vec<WindowRecovery>,
    /// N of time to recover: seconds in a row that must hold every SLO, back at the before phase's errors.
    pub recovery_seconds: u32,
    /// What the proxies sent upstream against the load's requests (retry amplification), over the run and
    /// per second; `None` when the proxy's counts were not read.
    #[serde(default)]
    pub upstream: Option<Amplification>,
    /// The external engine that sent the load (Locust), with its users and each worker's share; `None`: fault's
    /// own generator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineInfo>,
    /// What the report was built from (the runs' samples with their histograms in HdrHistogram's encoding,
    /// the SLOs, the upstream counts): enough to build it again, alone or added to other runs of the same
    /// scenario (`fault report merge`).
    pub data: ReportData,
}

/// The external engine that sent a run's load: its results are the report's samples.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EngineInfo {
    /// "locust".
    pub engine: String,
    pub version: String,
    /// Its users over all workers (a closed model: each waits for its answer before its next request).
    pub users: u32,
    /// Users started per second until all ran.
    pub spawn_rate: f64,
    /// Each worker's share of the requests, in the order they first reported.
    pub workers: Vec<WorkerInfo>,
    /// Whose latencies these are and what the model means for them.
    pub note: String,
}

/// One worker of an external engine and the requests it sent.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WorkerInfo {
    pub id: String,
    pub requests: u64,
    /// Its share of all requests, in percent.
    pub percent: f64,
}

impl Report {
    /// Says which external engine sent the load.
    pub fn with_engine(mut self, engine: EngineInfo) -> Self {
        self.engine = Some(engine);
        self
    }

    /// Adds the proxy's counters; a fault that acted 0 times makes the run inconclusive, whatever its status.
    pub fn with_proxy(mut self, proxy: ProxyFigures) -> Self {
        let idle: Vec<&str> = self
            .faults
            .iter()
            .filter(|fault| fault.applications == Some(0))
            .map(|fault| fault.kind.as_str())
            .collect();
        let why = |subject: String| {
            format!(
                "{subject} 0 times during the run, so this status says nothing about it: check that the traffic \
                 goes through the proxy, that the fault's side and direction match it and that its window sees \
                 traffic"
            )
        };
        if proxy.fault_applications == 0 {
            self.inconclusive = Some(why("the fault acted".into()));
        } else if !idle.is_empty() {
            self.inconclusive = Some(why(format!(
                "the fault {} acted",
                idle.join(" and the fault ")
            )));
        }
        self.proxy = Some(proxy);
        self
    }

    /// The faults' windows merged where they overlap or touch, in time order.
    pub fn merged_windows(&self) -> Vec<ActiveWindow> {
        phases::merge_windows(self.faults.iter().flat_map(|f| f.windows.iter().copied()))
    }
}

const PERCENTILES: [f64; 5] = [25.0, 50.0, 75.0, 95.0, 99.0];

/// The samples `slo` is judged on in `load`: its request's when it names one, all traffic's otherwise; `None`
/// for a request the load did not send (the input refuses an SLO naming no request of the mix).
fn samples_of<'a>(load: &'a LoadReport, slo: &LatencySlo) -> Option<&'a Samples> {
    match &slo.request {
        None => Some(&load.samples),
        Some(name) => load
            .per_request
            .iter()
            .find(|request| &request.name == name)
            .map(|request| &request.samples),
    }
}

/// The per-second figures of `samples`, with the schedule's `offered` requests of each second where known.
fn per_second_figures(samples: &Samples, offered: &[u64]) -> Vec<SecondFigures> {
    samples
        .per_second
        .iter()
        .enumerate()
        .map(|(second, s)| {
            let at = |q: f64| (s.requests > 0).then(|| ms(quantile(&s.latency_us, q)));
            SecondFigures {
                second: second as u32,
                requests: s.requests,
                errors: s.errors,
                timeouts: s.timeouts,
                p50_ms: at(0.50),
                p95_ms: at(0.95),
                p99_ms: at(0.99),
                offered: offered.get(second).copied(),
                achieved: Some(s.answered),
            }
        })
        .collect()
}

/// The latency at `q` of every request of `samples` (0 without requests).
fn latency_at(samples: &Samples, q: f64) -> f64 {
    if samples.requests() == 0 {
        0.0
    } else {
        ms(quantile(&samples.all_us, q))
    }
}

fn max_latency(samples: &Samples) -> f64 {
    if samples.requests() == 0 {
        0.0
    } else {
        ms(samples.all_us.median_equivalent(samples.all_us.max()))
    }
}

fn mean_latency(samples: &Samples) -> f64 {
    let total = samples.requests();
    if total == 0 {
        0.0
    } else {
        round2(samples.sum_us as f64 / total as f64 / 1000.0)
    }
}

/// Each SLO judged on `load`: on its request's samples when it names one, on all traffic otherwise.
fn verdicts(load: &LoadReport, slos: &[LatencySlo]) -> Vec<SloVerdict> {
    let unsent = Samples::new(0);
    slos.iter()
        .map(|slo| evaluate(slo, samples_of(load, slo).unwrap_or(&unsent)))
        .collect()
}

/// Figures of one load run against `slos`.
pub fn figures(load: &LoadReport, slos: &[LatencySlo]) -> RunFigures {
    let samples = &load.samples;
    let total = samples.requests();
    let errors = samples.errors();
    let percentiles = PERCENTILES
        .iter()
        .map(|&p| {
            let latency = if total == 0 {
                0
            } else {
                quantile(&samples.all_us, p / 100.0)
            };
            let at_or_below = if total == 0 {
                0
            } else {
                samples.all_us.count_between(0, latency)
            };
            PercentileRow {
                name: format!("p{}", trim_float(p)),
                percentile: p,
                latency_ms: ms(latency),
                requests_at_or_below: at_or_below,
                percent_of_total: percent(at_or_below, total),
            }
        })
        .collect();
    let slo_verdicts = verdicts(load, slos);
    let per_second = per_second_figures(samples, &load.offered_per_second);
    let (sparkline_p50, sparkline_p95) = sparklines(&per_second);
    let elapsed_s = load.elapsed.as_secs_f64();
    RunFigures {
        requests: total,
        planned_requests: load.planned,
        errors,
        error_percent: percent(errors, total),
        outcomes: OutcomeCounts::of(samples),
        min_ms: if total == 0 {
            0.0
        } else {
            ms(samples.all_us.median_equivalent(samples.all_us.min()))
        },
        max_ms: max_latency(samples),
        mean_ms: mean_latency(samples),
        total_time_ms: round2(elapsed_s * 1000.0),
        achieved_rps: if elapsed_s > 0.0 {
            round2(total as f64 / elapsed_s)
        } else {
            0.0
        },
        connections_opened: load.connections_opened,
        body_bytes: samples.body_bytes,
        cut_short: load.cut_short,
        percentiles,
        queueing: LatencyPart::of(&samples.queueing_us),
        service: LatencyPart::of(&samples.service_us),
        slo_failures: slo_verdicts.iter().filter(|v| !v.passed).count() as u64,
        slos: slo_verdicts,
        per_second,
        latency_curve: latency_curve(&samples.all_us),
        sparkline_p50,
        sparkline_p95,
        started_at: load.started_at.to_string(),
        ended_at: load.ended_at.to_string(),
    }
}

/// The figures of each request of `load`'s mix, described by `requests` (by position; a request the input
/// does not describe keeps its name alone), with the `verdicts` of the SLOs that name it.
fn request_figures(
    load: &LoadReport,
    requests: &[RequestInfo],
    verdicts: &[SloVerdict],
) -> Vec<RequestFigures> {
    let run_total = load.samples.requests();
    load.per_request
        .iter()
        .enumerate()
        .map(|(index, measured)| {
            let info = requests.get(index);
            let samples = &measured.samples;
            let total = samples.requests();
            let errors = samples.errors();
            RequestFigures {
                name: measured.name.clone(),
                method: info.map_or_else(String::new, |i| i.method.clone()),
                url: info.map_or_else(String::new, |i| i.url.clone()),
                weight: info.map_or(1.0, |i| i.weight),
                expect: info.map_or_else(String::new, |i| i.expect.clone()),
                headers: info.map_or_else(Vec::new, |i| i.headers.clone()),
                has_body: info.is_some_and(|i| i.has_body),
                share_percent: percent(total, run_total),
                requests: total,
                errors,
                error_percent: percent(errors, total),
                outcomes: OutcomeCounts::of(samples),
                p50_ms: latency_at(samples, 0.50),
                p95_ms: latency_at(samples, 0.95),
                p99_ms: latency_at(samples, 0.99),
                max_ms: max_latency(samples),
                mean_ms: mean_latency(samples),
                slos: verdicts
                    .iter()
                    .filter(|v| v.request.as_deref() == Some(measured.name.as_str()))
                    .cloned()
                    .collect(),
            }
        })
        .collect()
}

/// Of the requests in `all` (`success` of them successful, with latencies `successes`), those within `slo`'s
/// threshold (good), the others (bad), and whether enough were good.
pub(crate) fn slo_counts(
    slo: &LatencySlo,
    all: &hdrhistogram::Histogram<u64>,
    successes: &hdrhistogram::Histogram<u64>,
    success: u64,
) -> (u64, u64, bool) {
    let total = all.len();
    let threshold_us = (slo.threshold_ms * 1000.0).round().max(0.0) as u64;
    let good = if success == 0 {
        0
    } else {
        successes.count_between(0, threshold_us)
    };
    let bad = total - good.min(total);
    let passed = total > 0 && (good as f64) * 100.0 >= slo.objective * total as f64;
    (good, bad, passed)
}

fn evaluate(slo: &LatencySlo, samples: &Samples) -> SloVerdict {
    let total = samples.requests();
    let (good, bad, passed) =
        slo_counts(slo, &samples.all_us, &samples.success_us, samples.success);
    let latency_at_objective = latency_at(samples, (slo.objective / 100.0).clamp(0.0, 1.0));
    SloVerdict {
        name: slo.name(),
        request: slo.request.clone(),
        objective: slo.objective,
        threshold_ms: slo.threshold_ms,
        passed,
        good_requests: good,
        bad_requests: bad,
        bad_percent: percent(bad, total),
        latency_at_objective_ms: latency_at_objective,
        margin_ms: round2(slo.threshold_ms - latency_at_objective),
    }
}

/// An SLO with the traffic it is judged on: its request's samples and seconds when it names one, all
/// traffic's otherwise.
pub struct Judged<'a> {
    pub slo: &'a LatencySlo,
    pub samples: &'a Samples,
    pub per_second: &'a [SecondFigures],
}

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

/// The method a proxy's result names for its call: it measured whatever passed through it (`fault run
/// --result`), not a load it sent.
pub const PASSTHROUGH_METHOD: &str = "*";

/// The p50, p95 and p99 of a run's percentile rows.
fn headline(figures: &RunFigures) -> (f64, f64, f64) {
    let p = |name: &str| {
        figures
            .percentiles
            .iter()
            .find(|row| row.name == name)
            .map_or(0.0, |row| row.latency_ms)
    };
    (p("p50"), p("p95"), p("p99"))
}

/// The run against the baseline, over all traffic and, with several requests, per request.
fn comparison(
    run: &RunFigures,
    baseline: &RunFigures,
    requests: &[RequestFigures],
    baseline_load: &LoadReport,
) -> Comparison {
    let (fault_p50_ms, fault_p95_ms, fault_p99_ms) = headline(run);
    let (baseline_p50_ms, baseline_p95_ms, baseline_p99_ms) = headline(baseline);
    let per_request = if requests.len() > 1 {
        requests
            .iter()
            .map(|request| {
                let base = baseline_load
                    .per_request
                    .iter()
                    .find(|b| b.name == request.name)
                    .map(|b| &b.samples);
                let at = |q: f64| base.map_or(0.0, |b| latency_at(b, q));
                RequestComparison {
                    name: request.name.clone(),
                    baseline_p50_ms: at(0.50),
                    baseline_p95_ms: at(0.95),
                    baseline_p99_ms: at(0.99),
                    baseline_errors: base.map_or(0, Samples::errors),
                    fault_p50_ms: request.p50_ms,
                    fault_p95_ms: request.p95_ms,
                    fault_p99_ms: request.p99_ms,
                    fault_errors: request.errors,
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    Comparison {
        baseline_p50_ms,
        baseline_p95_ms,
        baseline_p99_ms,
        baseline_errors: baseline.errors,
        fault_p50_ms,
        fault_p95_ms,
        fault_p99_ms,
        fault_errors: run.errors,
        requests: per_request,
    }
}

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
