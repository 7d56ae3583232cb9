//! The SLOs: what one asks, how a run's requests are judged against it, and the traffic each is judged on.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::latency::latency_at;
use crate::load::{LoadReport, Samples};
use crate::report::{SecondFigures, percent, round2, trim_float};

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

/// The samples `slo` is judged on in `load`: its request's when it names one, all traffic's otherwise; `None`
/// for a request the load did not send (the input refuses an SLO naming no request of the mix).
pub(super) fn samples_of<'a>(load: &'a LoadReport, slo: &LatencySlo) -> Option<&'a Samples> {
    match &slo.request {
        None => Some(&load.samples),
        Some(name) => load
            .per_request
            .iter()
            .find(|request| &request.name == name)
            .map(|request| &request.samples),
    }
}

/// Each SLO judged on `load`: on its request's samples when it names one, on all traffic otherwise.
pub(super) fn verdicts(load: &LoadReport, slos: &[LatencySlo]) -> Vec<SloVerdict> {
    let unsent = Samples::new(0);
    slos.iter()
        .map(|slo| evaluate(slo, samples_of(load, slo).unwrap_or(&unsent)))
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
