//! The faulted run against the same load without the fault (the baseline), over all traffic and per request.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::figures::{RequestFigures, RunFigures};
use super::latency::latency_at;
use crate::load::{LoadReport, Samples};

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
pub(super) fn comparison(
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
