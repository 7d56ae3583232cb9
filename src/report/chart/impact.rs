//! The impact scenario's charts, from its [`Report`](crate::report::impact::Report): latency over time (p50, p95 and p99 per second, the
//! baseline's beside them, each fault's active windows shaded and labelled, detection and recovery marked, the
//! SLO thresholds), the latency distribution (latency at each percentile, on a scale of "nines" so the tail gets
//! room; log latency when the tail is far above the median), and errors and timeouts per second (the windows,
//! detection and recovery again); and the figure drawn whole, the charts stacked under the header that names
//! each phase with its figures ([`super::impact_text`]).

use plotters::{
    coord::Shift,
    prelude::*,
    style::text_anchor::{HPos, Pos, VPos},
};

pub use super::impact_figure::{ImpactChart, ImpactFigure};
use super::{
    columns::per_column,
    error::{ChartError, drawing},
    figure::{Figure, PlotFrame},
    font::FAMILY,
    impact_figure::PLOT_COLUMNS,
    impact_text,
    layout::{chart_on, stack, stacked_height},
    legend::{self, Legend},
    palette::*,
    series::series_line,
    value_axis::value_axis,
};
use crate::report::{
    SecondFigures,
    impact::{CurvePoint, RunFigures},
};

impl ImpactFigure<'_> {
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
