//! The capacity search's report: for each side (without the fault, then with it) the steps of offered load it
//! ran, each judged from its impact report's figures (not measured a second time), the highest rate that met
//! every SLO, the knee, and what the fault cost.
//!
//! Definitions (stated in the report too):
//! - a step breaks when an SLO is not met, its errors are over the error budget, or the rate achieved falls
//!   more than [`MAX_SHORTFALL_PERCENT`] short of the rate offered;
//! - the achieved rate is the answers that ended per second, counted from the step's second second on (the
//!   first second's answers are still arriving), the offered rate what the schedule had due in those seconds;
//! - the capacity is the highest rate that held below the lowest rate that broke;
//! - the knee is the first step, in rate order, whose p99 is at least twice the first step's.

mod markdown;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use markdown::render;

use super::impact::{CallInfo, FaultInfo, LatencySlo, Report, SloVerdict};
use super::round2;

/// The side without the fault's name.
pub const WITHOUT_FAULT: &str = "without the fault";
/// The side with the fault's name.
pub const WITH_FAULT: &str = "with the fault";

/// The version of this model; a reader checks it before it reads the rest.
pub const SCHEMA_VERSION: u32 = 1;

/// How far the achieved rate may fall short of the offered one, in percent, before the step breaks.
pub const MAX_SHORTFALL_PERCENT: f64 = 10.0;

/// How many times the first step's p99 marks the knee.
pub const KNEE_FACTOR: f64 = 2.0;

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

/// One side of the search: without the fault, or with it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SideFigures {
    /// "without the fault" or "with the fault".
    pub name: String,
    /// The steps in the order they ran.
    pub steps: Vec<StepFigures>,
    /// The highest rate that held below the lowest rate that broke (requests per second); `None` when the
    /// first step broke.
    pub capacity_rps: Option<u64>,
    /// The lowest rate that broke, run on this side or known from the side without the fault (`None`: none
    /// broke up to `max_rps`).
    pub first_break_rps: Option<u64>,
    /// True when every rate up to the highest tried held: the capacity is at least `capacity_rps`.
    pub at_least: bool,
    /// The knee: the offered rate of the first step, in rate order, whose p99 is at least twice the first
    /// step's; `None` when p99 never doubled.
    pub knee_rps: Option<u64>,
    /// Why the search of this side stopped, in words.
    pub stopped: String,
}

impl SideFigures {
    /// The side's figures from its steps; `known_break` is a rate known to break without running it (the side
    /// without the fault's first break, for the side with it).
    pub fn from_steps(
        name: &str,
        steps: Vec<StepFigures>,
        known_break: Option<u64>,
        stopped: String,
    ) -> Self {
        let first_break_rps = steps
            .iter()
            .filter(|step| !step.held())
            .map(|step| step.offered_rps)
            .chain(known_break)
            .min();
        let capacity_rps = steps
            .iter()
            .filter(|step| step.held() && first_break_rps.is_none_or(|bad| step.offered_rps < bad))
            .map(|step| step.offered_rps)
            .max();
        let mut by_rate: Vec<&StepFigures> = steps.iter().collect();
        by_rate.sort_by_key(|step| step.offered_rps);
        let knee_rps = by_rate.first().and_then(|first| {
            by_rate
                .iter()
                .skip(1)
                .find(|step| first.p99_ms > 0.0 && step.p99_ms >= KNEE_FACTOR * first.p99_ms)
                .map(|step| step.offered_rps)
        });
        Self {
            name: name.to_owned(),
            at_least: first_break_rps.is_none() && capacity_rps.is_some(),
            steps,
            capacity_rps,
            first_break_rps,
            knee_rps,
            stopped,
        }
    }

    /// The capacity in words: "780 req/s", "at least 1000 req/s", "below 50 req/s".
    pub fn capacity_text(&self) -> String {
        match (self.capacity_rps, self.at_least) {
            (Some(rate), true) => format!("at least {rate} req/s"),
            (Some(rate), false) => format!("{rate} req/s"),
            (None, _) => match self.first_break_rps {
                Some(rate) => format!("below {rate} req/s"),
                None => "not measured".to_owned(),
            },
        }
    }
}

/// What the fault cost: the capacity without it and with it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Cost {
    pub without_fault_rps: u64,
    pub with_fault_rps: u64,
    /// (with − without) / without, in percent: negative when the fault lowers the capacity.
    pub change_percent: f64,
    /// In words, e.g. "capacity 780 → 410 req/s, −47 %".
    pub summary: String,
}

impl Cost {
    /// The cost when both sides have a capacity.
    pub fn between(without: &SideFigures, with: &SideFigures) -> Option<Self> {
        let (before, after) = (without.capacity_rps?, with.capacity_rps?);
        let change = if before == 0 {
            0.0
        } else {
            (after as f64 - before as f64) / before as f64 * 100.0
        };
        let sign = if change < 0.0 { "−" } else { "+" };
        let at_least = |side: &SideFigures| if side.at_least { "≥ " } else { "" };
        Some(Self {
            without_fault_rps: before,
            with_fault_rps: after,
            change_percent: round2(change),
            summary: format!(
                "capacity {}{before} → {}{after} req/s, {sign}{:.0} %",
                at_least(without),
                at_least(with),
                change.abs()
            ),
        })
    }
}

/// The whole report; the markdown is rendered from it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CapacityReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    pub title: String,
    pub started_at: String,
    pub ended_at: String,
    pub call: CallInfo,
    /// The faults, held for the whole of each step of the side with them.
    pub faults: Vec<FaultInfo>,
    pub slos: Vec<LatencySlo>,
    pub search: SearchInfo,
    /// The side without the fault.
    pub without_fault: SideFigures,
    /// The side with the fault; `None` when it was not searched (see `notes`).
    pub with_fault: Option<SideFigures>,
    /// What the fault cost; `None` when a side has no capacity.
    pub cost: Option<Cost>,
    /// What the reader should know about how the search ended.
    pub notes: Vec<String>,
}

impl CapacityReport {
    /// The sides that ran, without the fault first.
    pub fn sides(&self) -> impl Iterator<Item = &SideFigures> {
        std::iter::once(&self.without_fault).chain(self.with_fault.as_ref())
    }

    /// The report's verdict in one line: the cost, or each side's capacity.
    pub fn summary(&self) -> String {
        match &self.cost {
            Some(cost) => cost.summary.clone(),
            None => self
                .sides()
                .map(|side| format!("{}: {}", side.name, side.capacity_text()))
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(number: u32, rate: u64, p99: f64, held: bool) -> StepFigures {
        StepFigures {
            number,
            part: StepPart::Climb,
            offered_rps: rate,
            achieved_rps: rate as f64,
            requests: rate,
            errors: 0,
            error_percent: 0.0,
            p50_ms: p99 / 2.0,
            p95_ms: p99,
            p99_ms: p99,
            slos: Vec::new(),
            breaks: if held {
                Vec::new()
            } else {
                vec![Break::Slo {
                    slo: "99% @ 50ms".into(),
                }]
            },
        }
    }

    #[test]
    fn the_capacity_is_the_highest_rate_that_held_below_the_lowest_that_broke() {
        let steps = vec![
            step(1, 100, 10.0, true),
            step(2, 200, 12.0, true),
            step(3, 400, 300.0, false),
            step(4, 300, 25.0, true),
            step(5, 350, 90.0, false),
        ];
        let side = SideFigures::from_steps("without the fault", steps, None, String::new());
        assert_eq!(side.capacity_rps, Some(300));
        assert_eq!(side.first_break_rps, Some(350));
        assert!(!side.at_least);
        // 25 ms ≥ 2 × 10 ms: the knee is at 300 req/s, the first step in rate order that doubled.
        assert_eq!(side.knee_rps, Some(300));
        assert_eq!(side.capacity_text(), "300 req/s");
    }

    #[test]
    fn a_rate_known_to_break_bounds_the_side_and_the_cost_is_signed() {
        let without = SideFigures::from_steps(
            "without the fault",
            vec![step(1, 780, 10.0, true), step(2, 800, 90.0, false)],
            None,
            String::new(),
        );
        let with = SideFigures::from_steps(
            "with the fault",
            vec![step(1, 410, 20.0, true), step(2, 420, 90.0, false)],
            Some(800),
            String::new(),
        );
        let cost = Cost::between(&without, &with).unwrap();
        assert_eq!(cost.change_percent, -47.44);
        assert_eq!(cost.summary, "capacity 780 → 410 req/s, −47 %");
        let first_broke =
            SideFigures::from_steps("x", vec![step(1, 50, 10.0, false)], None, String::new());
        assert_eq!(first_broke.capacity_rps, None);
        assert_eq!(first_broke.capacity_text(), "below 50 req/s");
        let never_broke =
            SideFigures::from_steps("x", vec![step(1, 50, 10.0, true)], None, String::new());
        assert_eq!(never_broke.capacity_text(), "at least 50 req/s");
    }
}
