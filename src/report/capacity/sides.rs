//! One side of the search (without the fault, then with it): its capacity, its knee, and what the fault cost
//! between the two.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::steps::StepFigures;
use crate::report::round2;

/// The side without the fault's name.
pub const WITHOUT_FAULT: &str = "without the fault";

/// The side with the fault's name.
pub const WITH_FAULT: &str = "with the fault";

/// How many times the first step's p99 marks the knee.
pub const KNEE_FACTOR: f64 = 2.0;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::capacity::steps::{Break, StepPart};

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
