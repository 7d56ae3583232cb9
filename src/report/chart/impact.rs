//! The impact scenario's charts, from its [`Report`]: latency over time (p50, p95 and p99 per second, the
//! baseline's beside them, each fault's active windows shaded and labelled, detection and recovery marked, the
//! SLO thresholds), the latency distribution (latency at each percentile, on a scale of "nines" so the tail gets
//! room; log latency when the tail is far above the median), and errors and timeouts per second (the windows,
//! detection and recovery again). The header names each phase with its figures.

use plotters::{
    coord::{Shift, types::RangedCoordf64},
    prelude::*,
    style::text_anchor::{HPos, Pos, VPos},
};

use super::{
    WIDTH,
    columns::per_column,
    figure::{ChartError, Figure, PlotFrame, drawing},
    font::FAMILY,
    impact_rate, impact_requests, impact_text,
    layout::{chart_on, stack, stacked_height},
    legend::{self, Legend},
    palette::*,
    series::{fault_window, series_line, time_mark},
    value_axis::value_axis,
};
use crate::report::{
    SecondFigures,
    impact::{CurvePoint, Recovery, Report, RunFigures, SloVerdict},
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
                ImpactChart::Requests => impact_requests::has_requests(report),
                ImpactChart::Rate => impact_rate::has_rate(report),
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
            ImpactChart::Requests => impact_requests::series(report),
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

    fn chart_heights(&self) -> Vec<u32> {
        self.charts.iter().map(|c| c.height()).collect()
    }

    /// The SLOs the charts of all traffic draw: those over all traffic, and with one request its own too (its
    /// figures are the run's); a mix's request SLOs are on its chart per request.
    fn run_slos(&self) -> impl Iterator<Item = &SloVerdict> {
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

    fn draw_latency<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<PlotFrame, ChartError> {
        let report = self.report;
        let seconds = self.seconds();
        let series = |run: &RunFigures, pick: fn(&SecondFigures) -> Option<f64>| {
            let points: Vec<(f64, f64)> = run
                .per_second
                .iter()
                .filter_map(|s| pick(s).map(|v| (f64::from(s.second) + 0.5, v)))
                .collect();
            per_column(&points, (0.0, seconds), PLOT_COLUMNS)
        };
        let p50 = series(&report.run, |s| s.p50_ms);
        let p95 = series(&report.run, |s| s.p95_ms);
        let p99 = series(&report.run, |s| s.p99_ms);
        let base = report.baseline.as_ref();
        let base_p50 = base.map(|b| series(b, |s| s.p50_ms)).unwrap_or_default();
        let base_p99 = base.map(|b| series(b, |s| s.p99_ms)).unwrap_or_default();
        let thresholds: Vec<f64> = self.run_slos().map(|s| s.threshold_ms).collect();
        let axis = value_axis(
            [&p50, &p95, &p99, &base_p50, &base_p99]
                .iter()
                .flat_map(|s| s.iter().map(|p| p.1))
                .chain(thresholds.iter().copied()),
        );
        let mut chart = chart_on(area, "Latency over time", 64, 0.0..seconds, axis.range())?;
        let y_label = |v: &f64| axis.label(*v);
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .y_labels(axis.plotter_labels())
            .x_desc("time since the run started (s)")
            .y_desc(axis.description("latency"))
            .y_label_formatter(&y_label)
            .label_style((FAMILY, 12).into_font().color(&TEXT))
            .axis_desc_style((FAMILY, 13).into_font().color(&TEXT))
            .draw()
            .map_err(drawing)?;
        axis.draw_ticks(&mut chart, (0.0, seconds))?;
        self.draw_windows(&mut chart, axis.bounds(), true)?;
        for slo in self.run_slos() {
            let colour = if slo.passed { SLO } else { SLO_MISSED };
            let y = axis.at(slo.threshold_ms);
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, y), (seconds, y)],
                    6,
                    4,
                    colour.stroke_width(1),
                ))
                .map_err(drawing)?;
            chart
                .draw_series([Text::new(
                    format!(
                        "SLO {} ({})",
                        slo.name,
                        if slo.passed { "met" } else { "missed" }
                    ),
                    (seconds * 0.995, y),
                    (FAMILY, 12)
                        .into_font()
                        .color(&colour)
                        .pos(Pos::new(HPos::Right, VPos::Bottom)),
                )])
                .map_err(drawing)?;
        }
        let mut line = |points: &[(f64, f64)], colour: RGBColor, name: &str, dashed: bool| {
            let mapped = points.iter().map(|&(x, y)| (x, axis.at(y))).collect();
            series_line(&mut chart, mapped, colour, name, dashed)
        };
        line(&base_p50, BASELINE, "baseline p50", true)?;
        line(&base_p99, BASELINE_TAIL, "baseline p99", true)?;
        line(&p50, P50, "p50", false)?;
        line(&p95, P95, "p95", false)?;
        line(&p99, P99, "p99", false)?;
        legend::finish(
            &mut chart,
            Legend::InPlot,
            ImpactChart::LatencyOverTime.id(),
            (0.0, seconds),
        )
    }

    fn draw_distribution<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<PlotFrame, ChartError> {
        let report = self.report;
        let curve = |points: &[CurvePoint]| -> Vec<(f64, f64)> {
            points
                .iter()
                .map(|p| (nines(p.percentile), p.latency_ms))
                .collect()
        };
        let fault = curve(&report.run.latency_curve);
        let base = report
            .baseline
            .as_ref()
            .map(|b| curve(&b.latency_curve))
            .unwrap_or_default();
        let axis = value_axis(
            fault
                .iter()
                .chain(&base)
                .map(|p| p.1)
                .chain(self.run_slos().map(|s| s.threshold_ms)),
        );
        let mut chart = chart_on(
            area,
            "Latency distribution",
            64,
            0.0..MAX_NINES,
            axis.range(),
        )?;
        let y_label = |v: &f64| axis.label(*v);
        let x_label = |v: &f64| nines_label(*v);
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .y_labels(axis.plotter_labels())
            .x_labels(12)
            .x_label_formatter(&x_label)
            .x_desc("percentile of requests (scale of nines: p90, p99, p99.9, ...)")
            .y_desc(axis.description("latency"))
            .y_label_formatter(&y_label)
            .label_style((FAMILY, 12).into_font().color(&TEXT))
            .axis_desc_style((FAMILY, 13).into_font().color(&TEXT))
            .draw()
            .map_err(drawing)?;
        axis.draw_ticks(&mut chart, (0.0, MAX_NINES))?;
        for slo in self.run_slos() {
            let colour = if slo.passed { SLO } else { SLO_MISSED };
            let at = (nines(slo.objective), axis.at(slo.threshold_ms));
            chart
                .draw_series([Cross::new(at, 6, colour.stroke_width(2))])
                .map_err(drawing)?;
            chart
                .draw_series([Text::new(
                    format!(
                        "SLO {} ({})",
                        slo.name,
                        if slo.passed { "met" } else { "missed" }
                    ),
                    (at.0 + 0.06, at.1),
                    (FAMILY, 12)
                        .into_font()
                        .color(&colour)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                )])
                .map_err(drawing)?;
        }
        let mapped = |points: &[(f64, f64)]| points.iter().map(|&(x, y)| (x, axis.at(y))).collect();
        series_line(&mut chart, mapped(&base), BASELINE, "baseline", true)?;
        series_line(&mut chart, mapped(&fault), P99, "with the fault", false)?;
        legend::finish(
            &mut chart,
            Legend::InPlot,
            ImpactChart::Distribution.id(),
            (0.0, MAX_NINES),
        )
    }

    fn draw_errors<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<PlotFrame, ChartError> {
        let report = self.report;
        let seconds = self.seconds();
        let series = |run: &RunFigures, pick: fn(&SecondFigures) -> u64| {
            let points: Vec<(f64, f64)> = run
                .per_second
                .iter()
                .map(|s| (f64::from(s.second) + 0.5, pick(s) as f64))
                .collect();
            per_column(&points, (0.0, seconds), PLOT_COLUMNS)
        };
        let errors = series(&report.run, |s| s.errors);
        let timeouts = series(&report.run, |s| s.timeouts);
        let base_errors = report
            .baseline
            .as_ref()
            .map(|b| series(b, |s| s.errors))
            .unwrap_or_default();
        let top = (errors
            .iter()
            .chain(&base_errors)
            .map(|p| p.1)
            .fold(0.0, f64::max)
            .max(4.0)
            * 1.15)
            .ceil();
        let mut chart = chart_on(
            area,
            "Errors and timeouts per second",
            64,
            0.0..seconds,
            0.0..top,
        )?;
        let y_label = |v: &f64| format!("{v:.0}");
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .y_labels((top as usize + 1).min(6))
            .x_desc("time since the run started (s)")
            .y_desc("requests per second")
            .y_label_formatter(&y_label)
            .label_style((FAMILY, 12).into_font().color(&TEXT))
            .axis_desc_style((FAMILY, 13).into_font().color(&TEXT))
            .draw()
            .map_err(drawing)?;
        self.draw_windows(&mut chart, (0.0, top), false)?;
        if report.run.errors == 0 {
            chart
                .draw_series([Text::new(
                    "no errors and no timeouts with the fault",
                    (seconds * 0.35, top * 0.5),
                    (FAMILY, 14).into_font().color(&TEXT),
                )])
                .map_err(drawing)?;
        }
        let mut line = |points: &[(f64, f64)], colour: RGBColor, name: &str, dashed: bool| {
            series_line(&mut chart, points.to_vec(), colour, name, dashed)
        };
        line(&base_errors, BASELINE, "baseline errors", true)?;
        line(&errors, ERRORS, "errors (timeouts included)", false)?;
        line(&timeouts, TIMEOUTS, "timeouts", false)?;
        legend::finish(
            &mut chart,
            Legend::InPlot,
            ImpactChart::ErrorsOverTime.id(),
            (0.0, seconds),
        )
    }
}

/// Points per series at most: about one per pixel column of the plot.
pub(super) const PLOT_COLUMNS: usize = (WIDTH - 100) as usize;

/// The x of the distribution's last point (the maximum), past p99.99.
const MAX_NINES: f64 = 4.6;

/// `percentile` on the scale of nines: p0 → 0, p90 → 1, p99 → 2, p99.9 → 3, ...; the maximum (p100) at
/// [`MAX_NINES`].
fn nines(percentile: f64) -> f64 {
    if percentile >= 100.0 {
        return MAX_NINES;
    }
    (-(1.0 - percentile / 100.0).log10()).clamp(0.0, MAX_NINES)
}

/// The tick label at `x` of the scale of nines ("" between the decades).
fn nines_label(x: f64) -> String {
    const LABELS: [&str; 5] = ["p0", "p90", "p99", "p99.9", "p99.99"];
    if (x - MAX_NINES).abs() < 0.05 {
        return "max".into();
    }
    let nearest = x.round();
    if (x - nearest).abs() > 0.05 || nearest < 0.0 {
        return String::new();
    }
    LABELS
        .get(nearest as usize)
        .map_or_else(String::new, |l| (*l).to_owned())
}

impl Figure for ImpactFigure<'_> {
    fn height(&self) -> u32 {
        let header = self
            .with_header
            .then(|| impact_text::header_lines(self.report).len());
        stacked_height(header, &self.chart_heights())
    }

    fn alt_text(&self) -> String {
        impact_text::alt_text(self.report)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<Vec<PlotFrame>, ChartError> {
        let header = self
            .with_header
            .then(|| impact_text::header_lines(self.report));
        stack(
            root,
            header.as_deref(),
            &self.chart_heights(),
            |i, area| match self.charts[i] {
                ImpactChart::LatencyOverTime => self.draw_latency(area),
                ImpactChart::Distribution => self.draw_distribution(area),
                ImpactChart::ErrorsOverTime => self.draw_errors(area),
                ImpactChart::Rate => self.draw_rate(area),
                ImpactChart::Requests => self.draw_requests(area),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_of_nines_puts_each_decade_one_apart() {
        assert_eq!(nines(0.0), 0.0);
        assert!((nines(90.0) - 1.0).abs() < 1e-9);
        assert!((nines(99.9) - 3.0).abs() < 1e-9);
        assert_eq!(nines(100.0), MAX_NINES);
        assert_eq!(nines_label(2.0), "p99");
        assert_eq!(nines_label(2.5), "");
    }
}
