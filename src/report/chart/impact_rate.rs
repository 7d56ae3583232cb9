//! The impact report's rate chart: per second of the faulted run, the rate the schedule offered (requests due
//! that second) against the rate achieved (answers that ended that second), with the faults' windows, so a
//! ramp shows as a slope and a service that falls behind as the gap between the two lines.

use plotters::{coord::Shift, prelude::*};

use super::{
    columns::per_column,
    error::{ChartError, drawing},
    figure::PlotFrame,
    font::FAMILY,
    impact_figure::{ImpactChart, ImpactFigure, PLOT_COLUMNS},
    layout::chart_on,
    legend::{self, Legend},
    palette::{ACHIEVED, GRID, OFFERED, TEXT},
    series::series_line,
};
use crate::report::{SecondFigures, impact::Report};

/// The rate chart in words, for the text alternative.
pub(super) fn alt_text(report: &Report) -> String {
    let seconds = &report.run.per_second;
    let total = |pick: fn(&SecondFigures) -> Option<u64>| -> Option<u64> {
        seconds.iter().map(pick).sum::<Option<u64>>()
    };
    let peak = |pick: fn(&SecondFigures) -> Option<u64>| seconds.iter().filter_map(pick).max();
    match (total(|s| s.offered), total(|s| s.achieved)) {
        (Some(offered), Some(achieved)) => format!(
            " Rate per second: {offered} requests offered (at most {} in a second), {achieved} answers \
             achieved (at most {} in a second).",
            peak(|s| s.offered).unwrap_or(0),
            peak(|s| s.achieved).unwrap_or(0)
        ),
        (None, Some(achieved)) => format!(
            " Rate per second: {achieved} answers achieved (at most {} in a second).",
            peak(|s| s.achieved).unwrap_or(0)
        ),
        _ => String::new(),
    }
}

impl ImpactFigure<'_> {
    pub(super) fn draw_rate<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<PlotFrame, ChartError> {
        let report = self.report;
        let seconds = self.seconds();
        let series = |pick: fn(&SecondFigures) -> Option<u64>| {
            let points: Vec<(f64, f64)> = report
                .run
                .per_second
                .iter()
                .filter_map(|s| pick(s).map(|v| (f64::from(s.second) + 0.5, v as f64)))
                .collect();
            per_column(&points, (0.0, seconds), PLOT_COLUMNS)
        };
        let offered = series(|s| s.offered);
        let achieved = series(|s| s.achieved);
        let top = (offered
            .iter()
            .chain(&achieved)
            .map(|p| p.1)
            .fold(0.0, f64::max)
            .max(4.0)
            * 1.2)
            .ceil();
        let mut chart = chart_on(
            area,
            "Offered and achieved rate per second",
            64,
            0.0..seconds,
            0.0..top,
        )?;
        let y_label = |v: &f64| format!("{v:.0}");
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .y_labels(6)
            .x_desc("time since the run started (s)")
            .y_desc("requests per second")
            .y_label_formatter(&y_label)
            .label_style((FAMILY, 12).into_font().color(&TEXT))
            .axis_desc_style((FAMILY, 13).into_font().color(&TEXT))
            .draw()
            .map_err(drawing)?;
        self.draw_windows(&mut chart, (0.0, top), false)?;
        series_line(
            &mut chart,
            offered,
            OFFERED,
            "offered (due by the schedule)",
            true,
        )?;
        series_line(
            &mut chart,
            achieved,
            ACHIEVED,
            "achieved (answers that ended)",
            false,
        )?;
        legend::finish(
            &mut chart,
            Legend::InPlot,
            ImpactChart::Rate.id(),
            (0.0, seconds),
        )
    }
}
