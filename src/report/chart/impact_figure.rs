//! The impact report's figure and its charts, what every chart file draws on: which charts a report has and
//! their ids, heights and series, and what the time charts share (the run's length, each fault's windows,
//! detection and recovery marked, the SLOs over all traffic).

use plotters::{coord::types::RangedCoordf64, prelude::*};

use super::{
    WIDTH,
    error::ChartError,
    palette::*,
    series::{fault_window, time_mark},
};
use crate::report::{
    impact::{Recovery, Report, RunFigures, SloVerdict},
    trim_float,
};

/// The charts of an impact report, each drawable on its own (the HTML views) or stacked (the image block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImpactChart {
    LatencyOverTime,
    /// Per request of a traffic mix ([`super::impact_requests`]).
    Requests,
    Distribution,
    ErrorsOverTime,
    /// Offered and achieved rate per second ([`super::impact_rate`]).
    Rate,
}

impl ImpactChart {
    pub const ALL: [ImpactChart; 5] = [
        ImpactChart::LatencyOverTime,
        ImpactChart::Requests,
        ImpactChart::Distribution,
        ImpactChart::ErrorsOverTime,
        ImpactChart::Rate,
    ];

    /// The charts `report` has figures for, in [`Self::ALL`]'s order: the one per request with a mix of
    /// several, the rate where its seconds count it.
    pub fn of(report: &Report) -> Vec<ImpactChart> {
        Self::ALL
            .into_iter()
            .filter(|chart| match chart {
                ImpactChart::Requests => has_requests(report),
                ImpactChart::Rate => has_rate(report),
                _ => true,
            })
            .collect()
    }

    fn height(self) -> u32 {
        match self {
            ImpactChart::LatencyOverTime => 330,
            ImpactChart::Requests => 300,
            ImpactChart::Distribution => 300,
            ImpactChart::ErrorsOverTime => 220,
            ImpactChart::Rate => 220,
        }
    }

    /// The series the HTML views can hide and show: name and colour.
    pub fn series(self) -> Vec<(&'static str, RGBColor)> {
        match self {
            ImpactChart::LatencyOverTime => vec![
                ("p50", P50),
                ("p95", P95),
                ("p99", P99),
                ("baseline p50", BASELINE),
                ("baseline p99", BASELINE_TAIL),
            ],
            ImpactChart::Distribution => vec![("with the fault", P99), ("baseline", BASELINE)],
            ImpactChart::ErrorsOverTime => vec![
                ("errors", ERRORS),
                ("timeouts", TIMEOUTS),
                ("baseline errors", BASELINE),
            ],
            ImpactChart::Rate => vec![("offered", OFFERED), ("achieved", ACHIEVED)],
            // One per request of the mix: see [`Self::series_of`].
            ImpactChart::Requests => Vec::new(),
        }
    }

    /// The series of this chart for `report`: [`Self::series`], or each request of the mix.
    pub fn series_of(self, report: &Report) -> Vec<(String, RGBColor)> {
        match self {
            ImpactChart::Requests => request_series(report),
            _ => self
                .series()
                .into_iter()
                .map(|(name, colour)| (name.to_owned(), colour))
                .collect(),
        }
    }

    /// The chart's id in the HTML views.
    pub fn id(self) -> &'static str {
        match self {
            ImpactChart::LatencyOverTime => "latency",
            ImpactChart::Distribution => "distribution",
            ImpactChart::ErrorsOverTime => "errors",
            ImpactChart::Rate => "rate",
            ImpactChart::Requests => "requests",
        }
    }
}

/// Charts of `report`, under a header that names the run, its status and the fault.
pub struct ImpactFigure<'a> {
    pub report: &'a Report,
    pub charts: Vec<ImpactChart>,
    /// Whether the header (title, status, fault, inconclusive) is drawn above the charts.
    pub with_header: bool,
}

impl<'a> ImpactFigure<'a> {
    /// Every chart of the report under the header: the tool result's image.
    pub fn all(report: &'a Report) -> Self {
        Self {
            report,
            charts: ImpactChart::of(report),
            with_header: true,
        }
    }

    /// One chart alone: a panel of the HTML views.
    pub fn one(report: &'a Report, chart: &ImpactChart) -> Self {
        Self {
            report,
            charts: vec![*chart],
            with_header: false,
        }
    }

    pub(super) fn chart_heights(&self) -> Vec<u32> {
        self.charts.iter().map(|c| c.height()).collect()
    }

    /// The SLOs the charts of all traffic draw: those over all traffic, and with one request its own too (its
    /// figures are the run's); a mix's request SLOs are on its chart per request.
    pub(super) fn run_slos(&self) -> impl Iterator<Item = &SloVerdict> {
        let one_request = self.report.requests.len() <= 1;
        self.report
            .run
            .slos
            .iter()
            .filter(move |slo| one_request || slo.request.is_none())
    }

    /// Each fault's active windows, in seconds of the run, with the fault's kind.
    fn fault_windows(&self) -> Vec<(f64, f64, &str)> {
        self.report
            .faults
            .iter()
            .flat_map(|f| {
                f.windows
                    .iter()
                    .map(move |w| (w.from_s, w.until_s, f.kind.as_str()))
            })
            .collect()
    }

    /// Where detection and recovery are marked on the time charts: (x in seconds, label).
    fn marks(&self) -> Vec<(f64, String)> {
        let report = self.report;
        let mut marks = Vec::new();
        for window in &report.recovery {
            if let Some(detect) = window.detect_s {
                marks.push((window.from_s + detect, "detected".to_owned()));
            }
            match window.recovery {
                Recovery::Recovered { recover_s, .. } => {
                    marks.push((window.until_s + recover_s, "recovered".to_owned()));
                }
                Recovery::NotRecovered { after_s, .. } => {
                    marks.push((window.until_s + after_s, "not recovered".to_owned()));
                }
                Recovery::HeldToTheEnd => {}
            }
        }
        marks
    }

    /// Shades every fault's windows and marks detection and recovery on a time chart over `low..high`.
    pub(super) fn draw_windows<'c, DB: DrawingBackend + 'c>(
        &self,
        chart: &mut ChartContext<'c, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
        (low, high): (f64, f64),
        labelled: bool,
    ) -> Result<(), ChartError> {
        for (from, until, kind) in self.fault_windows() {
            let label = if labelled {
                format!(
                    "{kind} active ({}–{} s)",
                    trim_float(from),
                    trim_float(until)
                )
            } else {
                format!("{kind} active")
            };
            fault_window(chart, (from, until), (low, high), &label)?;
        }
        // Labelled on the latency chart; the errors chart below, whose legend sits where they would, repeats
        // the lines alone.
        let seconds = self.seconds();
        for (x, label) in self.marks() {
            let label = labelled.then_some(label.as_str());
            time_mark(chart, x, (low, high), label, x > seconds * 0.85)?;
        }
        Ok(())
    }

    /// The x range of the time charts: the run's length, or the seconds recorded if longer.
    pub(super) fn seconds(&self) -> f64 {
        let recorded = |r: &RunFigures| r.per_second.len() as f64;
        let baseline = self.report.baseline.as_ref().map_or(0.0, recorded);
        self.report
            .strategy
            .duration_s
            .max(recorded(&self.report.run))
            .max(baseline)
            .max(1.0)
    }
}

/// Points per series at most: about one per pixel column of the plot.
pub(super) const PLOT_COLUMNS: usize = (WIDTH - 100) as usize;

/// Whether `report` has a chart per request: a mix of several.
pub(super) fn has_requests(report: &Report) -> bool {
    report.requests.len() > 1
}

/// Each request's name and colour, in the mix's order: the chart's series.
fn request_series(report: &Report) -> Vec<(String, RGBColor)> {
    report
        .requests
        .iter()
        .enumerate()
        .map(|(index, request)| (request.name.clone(), request_colour(index)))
        .collect()
}

/// Whether `report` has a rate to draw: a run whose seconds count what was offered or achieved.
fn has_rate(report: &Report) -> bool {
    report
        .run
        .per_second
        .iter()
        .any(|s| s.offered.is_some() || s.achieved.is_some())
}
