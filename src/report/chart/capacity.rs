//! The capacity search's chart, from its [`CapacityReport`]: p50 and p99 against the offered rate for both
//! sides (solid with the fault, dashed without), the SLO thresholds, and each side's capacity marked.

use plotters::{coord::Shift, prelude::*};

use super::{
    error::{ChartError, drawing},
    figure::{Figure, PlotFrame},
    font::FAMILY,
    header,
    layout::{chart_on, stack, stacked_height},
    legend::{self, Legend},
    palette::*,
    series::{series_line, time_mark},
    value_axis::value_axis,
};
use crate::report::capacity::{CapacityReport, SideFigures};

const CHART_HEIGHT: u32 = 360;

/// The chart's id in the HTML views.
pub const CHART_ID: &str = "capacity";

/// The series the HTML views can hide and show: name and colour.
pub fn series() -> Vec<(&'static str, RGBColor)> {
    vec![
        ("p50 without the fault", P50),
        ("p99 without the fault", P99),
        ("p50 with the fault", P95),
        ("p99 with the fault", FAULT_LABEL),
    ]
}

/// Latency against offered rate, under a header with the verdict (`with_header`).
pub struct CapacityFigure<'a> {
    pub report: &'a CapacityReport,
    pub with_header: bool,
}

impl<'a> CapacityFigure<'a> {
    /// The chart with its header, for a tool result's image.
    pub fn all(report: &'a CapacityReport) -> Self {
        Self {
            report,
            with_header: true,
        }
    }

    fn header_lines(&self) -> Vec<(String, RGBColor)> {
        let report = self.report;
        let mut lines = vec![(report.title.clone(), TEXT), (report.summary(), TEXT)];
        for fault in &report.faults {
            lines.push((format!("Fault: {}", fault.description), FAULT_LABEL));
        }
        header::wrapped(lines)
    }

    fn header_len(&self) -> Option<usize> {
        self.with_header.then(|| self.header_lines().len())
    }

    /// The points of `pick` over `side`'s steps, by rate.
    fn points(
        side: &SideFigures,
        pick: fn(&crate::report::capacity::StepFigures) -> f64,
    ) -> Vec<(f64, f64)> {
        let mut points: Vec<(f64, f64)> = side
            .steps
            .iter()
            .map(|step| (step.offered_rps as f64, pick(step)))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        points
    }

    fn draw_chart<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<PlotFrame, ChartError> {
        let report = self.report;
        let steps = || report.sides().flat_map(|side| side.steps.iter());
        let top_rate = steps()
            .map(|step| step.offered_rps)
            .max()
            .unwrap_or(report.search.max_rps)
            .max(1) as f64
            * 1.05;
        let x = (0.0, top_rate);
        let axis = value_axis(
            steps()
                .flat_map(|step| [step.p50_ms, step.p99_ms])
                .chain(report.slos.iter().map(|slo| slo.threshold_ms)),
        );
        let mut chart = chart_on(
            area,
            "Latency against offered rate",
            64,
            x.0..x.1,
            axis.range(),
        )?;
        let y_label = |v: &f64| axis.label(*v);
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .y_labels(axis.plotter_labels())
            .x_desc("offered rate (requests per second)")
            .y_desc(axis.description("latency"))
            .y_label_formatter(&y_label)
            .label_style((FAMILY, 12).into_font().color(&TEXT))
            .axis_desc_style((FAMILY, 13).into_font().color(&TEXT))
            .draw()
            .map_err(drawing)?;
        axis.draw_ticks(&mut chart, x)?;
        for slo in &report.slos {
            let y = axis.at(slo.threshold_ms);
            chart
                .draw_series(DashedLineSeries::new(
                    [(x.0, y), (x.1, y)],
                    6,
                    4,
                    SLO.stroke_width(1),
                ))
                .map_err(drawing)?;
            chart
                .draw_series([Text::new(
                    format!("SLO {}", slo.name()),
                    (x.0, y),
                    (FAMILY, 12).into_font().color(&SLO),
                )])
                .map_err(drawing)?;
        }
        let colours = [(P50, P99), (P95, FAULT_LABEL)];
        for (side, (p50, p99)) in report.sides().zip(colours) {
            let dashed = side.name == crate::report::capacity::WITHOUT_FAULT;
            let at = |points: Vec<(f64, f64)>| -> Vec<(f64, f64)> {
                points.into_iter().map(|(x, y)| (x, axis.at(y))).collect()
            };
            series_line(
                &mut chart,
                at(Self::points(side, |s| s.p50_ms)),
                p50,
                &format!("p50 {}", side.name),
                dashed,
            )?;
            series_line(
                &mut chart,
                at(Self::points(side, |s| s.p99_ms)),
                p99,
                &format!("p99 {}", side.name),
                dashed,
            )?;
            if let Some(capacity) = side.capacity_rps {
                time_mark(
                    &mut chart,
                    capacity as f64,
                    axis.bounds(),
                    Some(&format!("capacity {} {capacity}", side.name)),
                    capacity as f64 > top_rate * 0.6,
                )?;
            }
        }
        legend::finish(&mut chart, Legend::InPlot, CHART_ID, x)
    }
}

impl Figure for CapacityFigure<'_> {
    fn height(&self) -> u32 {
        stacked_height(self.header_len(), &[CHART_HEIGHT])
    }

    fn alt_text(&self) -> String {
        let report = self.report;
        let mut text = format!(
            "Latency (p50 and p99) against the offered rate of {} {}, without the fault and with it, with the \
             SLO thresholds. {}.",
            report.call.method,
            report.call.url,
            report.summary()
        );
        for side in report.sides() {
            text.push_str(&format!(
                " {}: {} steps, capacity {}{}.",
                side.name,
                side.steps.len(),
                side.capacity_text(),
                side.knee_rps
                    .map(|knee| format!(", knee at {knee} req/s"))
                    .unwrap_or_default()
            ));
        }
        text
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<Vec<PlotFrame>, ChartError> {
        let header = self.with_header.then(|| self.header_lines());
        stack(root, header.as_deref(), &[CHART_HEIGHT], |_, area| {
            self.draw_chart(area)
        })
    }
}
