//! Latency figures of a set of calls, as every table of the MCP chaos report shows them: the latency itself,
//! and its two parts, queueing delay and service time.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::record::CallRecord;
use crate::report::{latency_histogram, ms, quantile, record_ms};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyFigures {
    pub calls: u64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

/// The latency (due → answer or cancel) of `records`.
pub fn latency<'a>(records: impl Iterator<Item = &'a CallRecord>) -> LatencyFigures {
    figures(records.map(|r| r.latency_ms))
}

/// The queueing delay (due → sent) of those of `records` whose schedule is known.
pub fn queueing<'a>(records: impl Iterator<Item = &'a CallRecord>) -> LatencyFigures {
    figures(records.filter_map(|r| r.queueing_ms))
}

/// The service time (sent → answer or cancel) of those of `records` that the scenario's client sent.
pub fn service<'a>(records: impl Iterator<Item = &'a CallRecord>) -> LatencyFigures {
    figures(records.filter_map(|r| r.service_ms))
}

fn figures(values_ms: impl Iterator<Item = f64>) -> LatencyFigures {
    let mut h = latency_histogram();
    for value in values_ms {
        record_ms(&mut h, value);
    }
    if h.is_empty() {
        return LatencyFigures::default();
    }
    let at = |q: f64| Some(ms(quantile(&h, q)));
    LatencyFigures {
        calls: h.len(),
        p50_ms: at(0.50),
        p95_ms: at(0.95),
        p99_ms: at(0.99),
        max_ms: Some(ms(h.max())),
    }
}
