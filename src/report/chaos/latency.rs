//! Latency figures of a set of calls, as every table of the MCP chaos report shows them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::record::CallRecord;
use crate::report::{latency_histogram, ms, quantile};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyFigures {
    pub calls: u64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

pub fn latency<'a>(records: impl Iterator<Item = &'a CallRecord>) -> LatencyFigures {
    let mut h = latency_histogram();
    for r in records {
        h.saturating_record((r.latency_ms * 1000.0).round().max(1.0) as u64);
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
