//! Reports of both kinds of scenario, on one set of numerics: [`impact`] (an impact scenario: load through a
//! faulty TCP proxy, SLO verdicts) and [`chaos`] (an MCP chaos scenario or a live `fault mcp-proxy --report`
//! session: what faults in the tool-call plane did to a client).
//!
//! One latency definition for both, from one record ([`crate::load::Timing`]): a request's (or call's)
//! latency runs from when it was due on the load schedule to when its answer ended, so time spent waiting to
//! be sent counts (no coordinated omission); a request that could not start because its client was at its
//! in-flight cap counts with its timeout as its latency. Both reports split it into queueing delay (due →
//! sent; all of it for a request that could not start) and service time (sent → ended, requests sent).
//! Percentiles come from hdrhistogram (three significant figures), each value the middle of its bucket.

pub mod capacity;
pub mod chaos;
pub mod chart;
pub mod impact;
pub mod merge;
pub mod proxy;
pub mod result;

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The JSON Schemas of both reports' results, as the scenario tools give them in `outputSchema` (rmcp's
/// rendering of a tool's output type): each with its file under `docs/src/schemas/`, where the book publishes it.
pub fn result_schemas() -> Vec<(&'static str, serde_json::Value)> {
    use rmcp::handler::server::common::schema_for_output;
    let schema = |object: std::sync::Arc<rmcp::model::JsonObject>| {
        serde_json::Value::Object((*object).clone())
    };
    vec![
        (
            "impact-result.json",
            schema(schema_for_output::<impact::Report>()),
        ),
        (
            "chaos-result.json",
            schema(schema_for_output::<chaos::ChaosReport>()),
        ),
    ]
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SecondFigures {
    /// Second of the schedule (0-based).
    pub second: u32,
    pub requests: u64,
    pub errors: u64,
    /// Of the errors, requests (or calls) that timed out.
    #[serde(default)]
    pub timeouts: u64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    #[serde(default)]
    pub p99_ms: Option<f64>,
    /// Requests the schedule had due in this second (the offered rate); `None` where there is no schedule.
    #[serde(default)]
    pub offered: Option<u64>,
    /// Answers that ended in this second, whenever their requests were due (the achieved rate); `None` where
    /// not counted.
    #[serde(default)]
    pub achieved: Option<u64>,
}

/// Milliseconds of `d`, rounded to the microsecond.
pub fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

/// Latencies in µs (up to an hour; longer ones are clamped), three significant figures.
pub(crate) fn latency_histogram() -> hdrhistogram::Histogram<u64> {
    crate::load::histogram(3)
}

/// Records a latency of `ms` milliseconds into a [`latency_histogram`].
pub(crate) fn record_ms(histogram: &mut hdrhistogram::Histogram<u64>, ms: f64) {
    crate::load::record_us(histogram, (ms * 1000.0).round().max(1.0) as u64);
}

/// The value at `q`, as the middle of its histogram bucket rather than its upper edge.
pub(crate) fn quantile(histogram: &hdrhistogram::Histogram<u64>, q: f64) -> u64 {
    histogram.median_equivalent(histogram.value_at_quantile(q))
}

/// Milliseconds of `us` to two decimals, a half rounded up: divided by 10 first, so that the half is exact
/// (1,015 µs is 1.02 ms; 1.015 as an `f64` is a hair under, and would round down).
pub(crate) fn ms(us: u64) -> f64 {
    (us as f64 / 10.0).round() / 100.0
}

pub(crate) fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

/// A number for the reports' text, to two decimals without trailing zeros: "5", "2.5", "0.25".
pub(crate) fn trim_float(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

pub(crate) fn percent(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        round2(part as f64 * 100.0 / total as f64)
    }
}

pub(crate) fn round4(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}

/// `part` of `total` as a fraction (0 when there is nothing).
pub(crate) fn ratio(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        round4(part as f64 / total as f64)
    }
}

const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// p50 and p95 per second on one shared scale, so the two lines compare at a glance.
pub(crate) fn sparklines(per_second: &[SecondFigures]) -> (String, String) {
    let values = per_second
        .iter()
        .flat_map(|s| [s.p50_ms, s.p95_ms])
        .flatten();
    let (low, high) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let block = |value: Option<f64>| match value {
        None => ' ',
        Some(_) if high - low <= f64::EPSILON => BLOCKS[0],
        Some(v) => {
            let index = ((v - low) / (high - low) * (BLOCKS.len() - 1) as f64).round() as usize;
            BLOCKS[index.min(BLOCKS.len() - 1)]
        }
    };
    (
        per_second.iter().map(|s| block(s.p50_ms)).collect(),
        per_second.iter().map(|s| block(s.p95_ms)).collect(),
    )
}

/// The shared scale of the per-second p50/p95 sparklines: the lowest and highest value, `None` without any.
pub(crate) fn latency_scale(
    seconds: impl Iterator<Item = (Option<f64>, Option<f64>)>,
) -> Option<(f64, f64)> {
    seconds
        .flat_map(|(p50, p95)| [p50, p95])
        .flatten()
        .fold(None, |range, v| match range {
            None => Some((v, v)),
            Some((low, high)) => Some((f64::min(low, v), f64::max(high, v))),
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_half_hundredth_of_a_millisecond_rounds_up() {
        assert_eq!(super::ms(1_015), 1.02);
        assert_eq!(super::ms(1_014), 1.01);
        assert_eq!(super::ms(2_005), 2.01);
        assert_eq!(super::ms(0), 0.0);
    }
}
