//! A capacity search: how much load the service takes, and how much of that a fault costs. The offered rate
//! climbs in steps (each an impact scenario of its own at a constant rate, [`impact::run`]) until a step breaks
//! (an SLO missed, errors over the budget, achieved short of offered), then is refined by bisection between
//! the last rate that held and the first that broke; first without the fault, then with it held for the whole
//! of each step. Each step's figures are its impact report's ([`StepFigures::from_report`]).
//!
//! The search stops as soon as the answer is known: a side whose first step breaks has no capacity to refine,
//! and a fault is taken not to raise the capacity, so the side with it offers no rate at or above the first
//! rate that broke without it. Its length is bounded before it starts ([`SearchSpec::steps_at_most`]).

use std::{sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use crate::{
    impact::{self, ImpactError, ImpactSpec},
    load::LoadProgress,
    report::{
        capacity::{
            CapacityReport, Cost, MAX_SHORTFALL_PERCENT, SCHEMA_VERSION, SearchInfo, SideFigures,
            StepFigures, StepPart, WITH_FAULT, WITHOUT_FAULT,
        },
        impact::{FaultInfo, Report},
    },
};

/// Requests per second one virtual client of the load generator starts at most; higher rates are spread
/// over several clients.
const MAX_RPS_PER_CLIENT: u64 = 10_000;

/// How the search climbs and when it stops.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchSpec {
    /// The first rate offered, requests per second.
    pub start_rps: u64,
    /// The highest rate offered, requests per second.
    pub max_rps: u64,
    /// How long each step lasts.
    pub step: Duration,
    /// Each rate of the climb is the previous one times this (> 1).
    pub growth: f64,
    /// Errors a step may have, in percent of its requests.
    pub error_budget_percent: f64,
    /// The refinement stops once the first break is within this share (percent) of the last rate that held.
    pub precision_percent: f64,
}

impl SearchSpec {
    /// The climb's rates: `start_rps`, then each times `growth` (at least one more), up to `max_rps`, which
    /// closes it.
    pub fn ladder(&self) -> Vec<u64> {
        let mut rates = Vec::new();
        let mut rate = self.start_rps.clamp(1, self.max_rps.max(1));
        loop {
            rates.push(rate);
            if rate >= self.max_rps {
                return rates;
            }
            let next = ((rate as f64 * self.growth).ceil() as u64).max(rate + 1);
            rate = next.min(self.max_rps);
        }
    }

    /// Refinement steps at most between a rate that held and the next rate of the climb, which broke: each
    /// halves the gap, from `growth - 1` times the rate that held down to the precision (one more for the
    /// rounding to whole rates).
    pub fn refine_steps_at_most(&self) -> u64 {
        let gap = (self.growth - 1.0) / (self.precision_percent / 100.0);
        if gap <= 1.0 {
            return 1;
        }
        gap.log2().ceil() as u64 + 1
    }

    /// Steps at most for `sides` sides: each climbs the whole ladder and refines once.
    pub fn steps_at_most(&self, sides: u64) -> u64 {
        (self.ladder().len() as u64 + self.refine_steps_at_most()) * sides
    }

    /// The longest the search's load can run for `sides` sides.
    pub fn longest(&self, sides: u64) -> Duration {
        self.step
            .saturating_mul(u32::try_from(self.steps_at_most(sides)).unwrap_or(u32::MAX))
    }

    /// Requests the search starts at most for `sides` sides (for progress).
    pub fn requests_at_most(&self, sides: u64) -> u64 {
        let climb: u64 = self.ladder().iter().sum();
        let refine = self.refine_steps_at_most() * self.max_rps;
        ((climb + refine) as f64 * self.step.as_secs_f64()).ceil() as u64 * sides
    }

    fn info(&self) -> SearchInfo {
        SearchInfo {
            start_rps: self.start_rps,
            max_rps: self.max_rps,
            step_duration_s: self.step.as_secs_f64(),
            growth: self.growth,
            error_budget_percent: self.error_budget_percent,
            precision_percent: self.precision_percent,
            max_shortfall_percent: MAX_SHORTFALL_PERCENT,
        }
    }

    /// Whether the gap between `held` and `broke` is within the precision (or cannot be split).
    fn close_enough(&self, held: u64, broke: u64) -> bool {
        broke <= held + 1 || (broke - held) as f64 <= held as f64 * self.precision_percent / 100.0
    }
}

/// A validated capacity search: the scenario (request, proxies, faults, SLOs, seed, timeout) and the search.
#[derive(Debug, Clone)]
pub struct CapacitySpec {
    /// The scenario each step runs, at the step's rate and for its duration; its faults are the side with
    /// them's.
    pub scenario: ImpactSpec,
    pub search: SearchSpec,
}

impl CapacitySpec {
    /// The scenario of one step at `rate` requests per second, with the faults or without.
    fn step(&self, rate: u64, with_faults: bool) -> (ImpactSpec, u64) {
        let clients = rate.div_ceil(MAX_RPS_PER_CLIENT).max(1);
        let per_client = (rate / clients).max(1);
        let mut spec = self.scenario.clone();
        spec.num_clients = u32::try_from(clients).unwrap_or(u32::MAX);
        spec.pace = crate::load::Pace::Open {
            rps: u32::try_from(per_client).unwrap_or(u32::MAX),
        };
        spec.duration = self.search.step;
        spec.baseline = false;
        if !with_faults {
            spec.faults = Vec::new();
        }
        (spec, clients * per_client)
    }
}

/// The steps one side ran, with their impact reports.
struct Side {
    steps: Vec<StepFigures>,
    reports: Vec<Report>,
    stopped: String,
}

/// Runs the search: the side without the fault, then the side with it; proxies are stopped (ports freed) after
/// every step, cancellation included.
pub async fn run(
    spec: &CapacitySpec,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<CapacityReport, ImpactError> {
    let search = spec.search.info();
    let without = run_side(spec, false, None, cancel, progress.clone()).await?;
    let without_figures = SideFigures::from_steps(
        WITHOUT_FAULT,
        without.steps.clone(),
        None,
        without.stopped.clone(),
    );
    let mut notes = Vec::new();
    let with = if without_figures.capacity_rps.is_none() {
        notes.push(format!(
            "The side with the fault was not searched: without it the service already broke at the first rate, \
             {} req/s; lower start_rps to find its capacity.",
            spec.search.start_rps
        ));
        None
    } else {
        Some(
            run_side(
                spec,
                true,
                without_figures.first_break_rps,
                cancel,
                progress,
            )
            .await?,
        )
    };
    let with_figures = with.as_ref().map(|side| {
        SideFigures::from_steps(
            WITH_FAULT,
            side.steps.clone(),
            without_figures.first_break_rps,
            side.stopped.clone(),
        )
    });
    let faults = with
        .as_ref()
        .map(|side| faults_over(&side.reports))
        .unwrap_or_default();
    if faults.iter().any(|fault| fault.applications == Some(0)) {
        notes.push(
            "A fault never acted during the steps with it: the side with the fault says nothing about it (is \
             the service calling its upstream through the proxies?)."
                .to_owned(),
        );
    }
    let reports = || {
        without
            .reports
            .iter()
            .chain(with.iter().flat_map(|side| side.reports.iter()))
    };
    let first = reports().next();
    let call = first.map(|r| r.call.clone()).unwrap_or_else(|| {
        // Every side runs at least one step; this is only the shape of an empty search.
        crate::report::impact::CallInfo {
            url: spec.scenario.target().url.to_string(),
            method: spec.scenario.target().method.to_string(),
            timeout_ms: spec.scenario.timeout.as_millis() as u64,
            headers: Vec::new(),
            has_body: !spec.scenario.target().body.is_empty(),
        }
    });
    let started_at = first.map(|r| r.started_at.clone()).unwrap_or_default();
    let ended_at = reports()
        .last()
        .map(|r| r.ended_at.clone())
        .unwrap_or_default();
    let kinds: Vec<&str> = spec.scenario.faults.iter().map(|f| f.kind()).collect();
    let cost = with_figures
        .as_ref()
        .and_then(|with| Cost::between(&without_figures, with));
    Ok(CapacityReport {
        schema_version: SCHEMA_VERSION,
        title: format!(
            "Capacity of {} {}, without and with {}",
            call.method,
            call.url,
            kinds.join(" + ")
        ),
        started_at,
        ended_at,
        call,
        faults,
        slos: spec.scenario.slos.clone(),
        search,
        without_fault: without_figures,
        with_fault: with_figures,
        cost,
        notes,
    })
}

/// The faults as the first step with them described them, with how often each acted over every such step.
fn faults_over(reports: &[Report]) -> Vec<FaultInfo> {
    let Some(first) = reports.first() else {
        return Vec::new();
    };
    first
        .faults
        .iter()
        .enumerate()
        .map(|(index, fault)| FaultInfo {
            applications: reports
                .iter()
                .map(|report| report.faults.get(index).and_then(|f| f.applications))
                .sum(),
            ..fault.clone()
        })
        .collect()
}

/// One side: the climb until a step breaks (or `ceiling`, a rate known to break, is reached), then the
/// refinement between the last rate that held and the first that broke.
async fn run_side(
    spec: &CapacitySpec,
    with_faults: bool,
    ceiling: Option<u64>,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<Side, ImpactError> {
    let search = &spec.search;
    let mut side = Side {
        steps: Vec::new(),
        reports: Vec::new(),
        stopped: String::new(),
    };
    let mut held: Option<u64> = None;
    let mut broke: Option<u64> = ceiling;
    for rate in search.ladder() {
        if ceiling.is_some_and(|ceiling| rate >= ceiling) {
            break;
        }
        let step = run_step(
            spec,
            rate,
            with_faults,
            StepPart::Climb,
            &mut side,
            cancel,
            &progress,
        );
        if step.await? {
            held = Some(rate);
        } else {
            broke = Some(rate);
            break;
        }
    }
    let Some(mut low) = held else {
        side.stopped = match (broke, side.steps.first()) {
            (Some(_), Some(first)) => format!(
                "Stopped at the first step: {} req/s already broke, so the capacity is below it.",
                first.offered_rps
            ),
            _ => "No rate below the first break without the fault was left to try.".to_owned(),
        };
        return Ok(side);
    };
    let Some(mut high) = broke else {
        side.stopped = format!(
            "Every rate up to the highest allowed, {} req/s, held: the capacity is at least that.",
            search.max_rps
        );
        return Ok(side);
    };
    while !search.close_enough(low, high) {
        let middle = low + (high - low) / 2;
        let step = run_step(
            spec,
            middle,
            with_faults,
            StepPart::Refine,
            &mut side,
            cancel,
            &progress,
        );
        if step.await? {
            low = middle;
        } else {
            high = middle;
        }
    }
    side.stopped = format!(
        "Refined between {low} req/s (held) and {high} req/s (broke{}), within {}%.",
        if ceiling == Some(high) {
            " without the fault"
        } else {
            ""
        },
        search.precision_percent
    );
    Ok(side)
}

/// Runs one step at `rate` and adds it to `side`; whether it held.
async fn run_step(
    spec: &CapacitySpec,
    rate: u64,
    with_faults: bool,
    part: StepPart,
    side: &mut Side,
    cancel: &CancellationToken,
    progress: &Arc<LoadProgress>,
) -> Result<bool, ImpactError> {
    let (step, offered) = spec.step(rate, with_faults);
    tracing::info!(
        rate = offered,
        with_faults,
        "capacity step {}",
        side.steps.len() + 1
    );
    let report = impact::run(&step, cancel, progress.clone()).await?;
    let figures = StepFigures::from_report(
        side.steps.len() as u32 + 1,
        part,
        offered,
        &report,
        &spec.search.info(),
    );
    let held = figures.held();
    side.steps.push(figures);
    side.reports.push(report);
    Ok(held)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(start: u64, max: u64, growth: f64, precision: f64) -> SearchSpec {
        SearchSpec {
            start_rps: start,
            max_rps: max,
            step: Duration::from_secs(2),
            growth,
            error_budget_percent: 1.0,
            precision_percent: precision,
        }
    }

    #[test]
    fn the_climb_multiplies_and_ends_at_the_highest_rate() {
        assert_eq!(
            search(100, 2000, 2.0, 5.0).ladder(),
            [100, 200, 400, 800, 1600, 2000]
        );
        assert_eq!(search(1, 3, 1.1, 5.0).ladder(), [1, 2, 3]);
        assert_eq!(search(500, 500, 2.0, 5.0).ladder(), [500]);
    }

    #[test]
    fn the_bound_counts_the_whole_climb_and_one_refinement_per_side() {
        let spec = search(100, 2000, 2.0, 5.0);
        // (2 - 1) / 5% = 20: five halvings, one more for the rounding.
        assert_eq!(spec.refine_steps_at_most(), 6);
        assert_eq!(spec.steps_at_most(2), 24);
        assert_eq!(spec.longest(2), Duration::from_secs(48));
        assert!(spec.close_enough(780, 800));
        assert!(!spec.close_enough(700, 800));
        assert!(spec.close_enough(1, 2));
    }
}
