//! One step of the search: a constant offered rate, its figures read from its impact report, and why it
//! broke if it did.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::report::impact::{Report, SloVerdict};
use crate::report::round2;

/// How far the achieved rate may fall short of the offered one, in percent, before the step breaks.
pub const MAX_SHORTFALL_PERCENT: f64 = 10.0;

/// What the search was asked to do.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SearchInfo {
    /// The first rate offered, requests per second.
    pub start_rps: u64,
    /// The highest rate the search may offer, requests per second.
    pub max_rps: u64,
    /// How long each step lasts, in seconds.
    pub step_duration_s: f64,
    /// Each rate of the climb is the previous one times this.
    pub growth: f64,
    /// Errors a step may have, in percent of its requests.
    pub error_budget_percent: f64,
    /// The refinement stops when the lowest rate that broke is within this share (percent) of the highest that
    /// held.
    pub precision_percent: f64,
    /// How far achieved may fall short of offered, in percent ([`MAX_SHORTFALL_PERCENT`]).
    pub max_shortfall_percent: f64,
}

/// Why a step broke.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Break {
    /// An SLO was not met (its name, e.g. "99% @ 50ms").
    Slo { slo: String },
    /// Errors were over the budget.
    Errors { percent: f64, budget_percent: f64 },
    /// The achieved rate fell short of the offered one.
    Shortfall { achieved_rps: f64, offered_rps: f64 },
}

impl std::fmt::Display for Break {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Break::Slo { slo } => write!(f, "SLO {slo} missed"),
            Break::Errors {
                percent,
                budget_percent,
            } => write!(f, "errors {percent}% > budget {budget_percent}%"),
            Break::Shortfall {
                achieved_rps,
                offered_rps,
            } => write!(f, "achieved {achieved_rps} of {offered_rps} req/s"),
        }
    }
}

/// Whether a step was part of the climb or of the refinement between the last rate that held and the first
/// that broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepPart {
    Climb,
    Refine,
}

/// One step: a constant offered rate for the step's duration, with its figures from its impact report.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StepFigures {
    /// Its place in the order the steps ran (1-based, per side).
    pub number: u32,
    pub part: StepPart,
    /// The rate the schedule offered, requests per second.
    pub offered_rps: u64,
    /// Answers that ended per second, from the step's second second on (all of it for a one-second step).
    pub achieved_rps: f64,
    pub requests: u64,
    pub errors: u64,
    pub error_percent: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub slos: Vec<SloVerdict>,
    /// Why it broke; empty when it held.
    pub breaks: Vec<Break>,
}

impl StepFigures {
    /// Whether the step held: every SLO met, errors within budget, achieved close to offered.
    pub fn held(&self) -> bool {
        self.breaks.is_empty()
    }

    /// The step's figures from its impact report `report`, judged against `search`.
    pub fn from_report(
        number: u32,
        part: StepPart,
        offered_rps: u64,
        report: &Report,
        search: &SearchInfo,
    ) -> Self {
        let run = &report.run;
        let percentile = |name: &str| {
            run.percentiles
                .iter()
                .find(|row| row.name == name)
                .map_or(0.0, |row| row.latency_ms)
        };
        // The first second's answers are still arriving (latency after its first requests): counted from the
        // second one on when the step has one.
        let counted: Vec<_> = run
            .per_second
            .iter()
            .skip(usize::from(run.per_second.len() > 1))
            .collect();
        let seconds = counted.len().max(1) as f64;
        let achieved =
            counted.iter().map(|s| s.achieved.unwrap_or(0)).sum::<u64>() as f64 / seconds;
        let offered = counted.iter().map(|s| s.offered.unwrap_or(0)).sum::<u64>() as f64 / seconds;
        let mut breaks: Vec<Break> = run
            .slos
            .iter()
            .filter(|verdict| !verdict.passed)
            .map(|verdict| Break::Slo {
                slo: verdict.name.clone(),
            })
            .collect();
        if run.error_percent > search.error_budget_percent {
            breaks.push(Break::Errors {
                percent: run.error_percent,
                budget_percent: search.error_budget_percent,
            });
        }
        if offered > 0.0 && achieved < offered * (1.0 - search.max_shortfall_percent / 100.0) {
            breaks.push(Break::Shortfall {
                achieved_rps: round2(achieved),
                offered_rps: round2(offered),
            });
        }
        Self {
            number,
            part,
            offered_rps,
            achieved_rps: round2(achieved),
            requests: run.requests,
            errors: run.errors,
            error_percent: run.error_percent,
            p50_ms: percentile("p50"),
            p95_ms: percentile("p95"),
            p99_ms: percentile("p99"),
            slos: run.slos.clone(),
            breaks,
        }
    }
}
