//! The figures of a run and of each request of its mix, from the load's samples: outcomes, percentiles, the
//! latency's parts and its distribution, the SLO verdicts, each second; and the proxy's counters.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::latency::{latency_at, max_latency, mean_latency};
use super::mix::RequestInfo;
use super::slo::{LatencySlo, SloVerdict, verdicts};
use crate::load::{LoadReport, Samples};
use crate::report::{SecondFigures, ms, percent, quantile, round2, round4, sparklines, trim_float};

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

const PERCENTILES: [f64; 5] = [25.0, 50.0, 75.0, 95.0, 99.0];

/// The per-second figures of `samples`, with the schedule's `offered` requests of each second where known.
pub(super) fn per_second_figures(samples: &Samples, offered: &[u64]) -> Vec<SecondFigures> {
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
pub(super) fn request_figures(
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
