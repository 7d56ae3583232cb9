//! The impact report's chart per request of a traffic mix: each request's p50, p95 and p99 over the run in its
//! own colour (a bar from p50 to p99, a mark at each), beside the thresholds of the SLOs that name it (a dashed
//! line over its column, green when met, red when missed) and those of the SLOs over all traffic (across the
//! chart). Drawn only for a mix of several requests.

use plotters::{
    coord::Shift,
    prelude::*,
    style::text_anchor::{HPos, Pos, VPos},
};

use super::{
    error::{ChartError, drawing},
    figure::PlotFrame,
    font::FAMILY,
    impact_figure::{ImpactChart, ImpactFigure, has_requests},
    layout::chart_on,
    palette::{GRID, SLO, SLO_MISSED, TEXT, request_colour},
    value_axis::value_axis,
};
use crate::report::impact::{Report, SloVerdict};

/// The chart in words, for the text alternative.
pub(super) fn alt_text(report: &Report) -> String {
    if !has_requests(report) {
        return String::new();
    }
    let mut text = String::from(" Per request of the mix:");
    for request in &report.requests {
        let slos: Vec<String> = request
            .slos
            .iter()
            .map(|slo| format!("SLO {} {}", slo.name, met(slo)))
            .collect();
        let slos = if slos.is_empty() {
            String::new()
        } else {
            format!(", {}", slos.join(", "))
        };
        text.push_str(&format!(
            " {} ({} requests, {} errors) p50 {} ms, p95 {} ms, p99 {} ms{slos};",
            request.name,
            request.requests,
            request.errors,
            request.p50_ms,
            request.p95_ms,
            request.p99_ms
        ));
    }
    text.pop();
    text.push('.');
    text
}

fn met(slo: &SloVerdict) -> &'static str {
    if slo.passed { "met" } else { "missed" }
}

/// The label at `x` of a chart with one column per name: the name under the middle of its column.
fn column_label(names: &[String], x: f64) -> String {
    let column = x - 0.5;
    if (column - column.round()).abs() > 0.01 || column < 0.0 {
        return String::new();
    }
    names
        .get(column.round() as usize)
        .map_or_else(String::new, |name| {
            if name.chars().count() > 18 {
                let mut kept: String = name.chars().take(17).collect();
                kept.push('…');
                kept
            } else {
                name.clone()
            }
        })
}

impl ImpactFigure<'_> {
    pub(super) fn draw_requests<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<PlotFrame, ChartError> {
        let report = self.report;
        let requests = &report.requests;
        let columns = requests.len().max(1);
        let names: Vec<String> = requests.iter().map(|r| r.name.clone()).collect();
        let all_traffic: Vec<&SloVerdict> = report
            .run
            .slos
            .iter()
            .filter(|slo| slo.request.is_none())
            .collect();
        let axis = value_axis(
            requests
                .iter()
                .flat_map(|r| {
                    [r.p50_ms, r.p95_ms, r.p99_ms]
                        .into_iter()
                        .chain(r.slos.iter().map(|s| s.threshold_ms))
                })
                .chain(all_traffic.iter().map(|s| s.threshold_ms)),
        );
        let width = columns as f64;
        let mut chart = chart_on(
            area,
            "Latency per request (p50, p95, p99) against its SLOs",
            64,
            0.0..width,
            axis.range(),
        )?;
        let y_label = |v: &f64| axis.label(*v);
        let x_label = |x: &f64| column_label(&names, *x);
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .disable_x_mesh()
            .x_labels(columns * 2 + 1)
            .x_label_formatter(&x_label)
            .y_labels(axis.plotter_labels())
            .x_desc("request of the mix")
            .y_desc(axis.description("latency"))
            .y_label_formatter(&y_label)
            .label_style((FAMILY, 12).into_font().color(&TEXT))
            .axis_desc_style((FAMILY, 13).into_font().color(&TEXT))
            .draw()
            .map_err(drawing)?;
        axis.draw_ticks(&mut chart, (0.0, width))?;
        let label_style = |colour: RGBColor, anchor: HPos| {
            (FAMILY, 12)
                .into_font()
                .color(&colour)
                .pos(Pos::new(anchor, VPos::Bottom))
        };
        // SLOs over all traffic: across the chart.
        for slo in &all_traffic {
            let colour = if slo.passed { SLO } else { SLO_MISSED };
            let y = axis.at(slo.threshold_ms);
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, y), (width, y)],
                    6,
                    4,
                    colour.stroke_width(1),
                ))
                .map_err(drawing)?;
            chart
                .draw_series([Text::new(
                    format!("SLO {} (all traffic, {})", slo.name, met(slo)),
                    (width * 0.995, y),
                    label_style(colour, HPos::Right),
                )])
                .map_err(drawing)?;
        }
        for (index, request) in requests.iter().enumerate() {
            let colour = request_colour(index);
            let middle = index as f64 + 0.5;
            // Its own SLOs: over its column.
            for slo in &request.slos {
                let slo_colour = if slo.passed { SLO } else { SLO_MISSED };
                let y = axis.at(slo.threshold_ms);
                chart
                    .draw_series(DashedLineSeries::new(
                        [(index as f64 + 0.08, y), (index as f64 + 0.92, y)],
                        5,
                        3,
                        slo_colour.stroke_width(2),
                    ))
                    .map_err(drawing)?;
                let objective = slo
                    .name
                    .rsplit_once(": ")
                    .map_or(slo.name.as_str(), |(_, objective)| objective);
                chart
                    .draw_series([Text::new(
                        format!("{objective} {}", met(slo)),
                        (index as f64 + 0.1, y),
                        label_style(slo_colour, HPos::Left),
                    )])
                    .map_err(drawing)?;
            }
            if request.requests == 0 {
                continue;
            }
            let (p50, p95, p99) = (
                axis.at(request.p50_ms),
                axis.at(request.p95_ms),
                axis.at(request.p99_ms),
            );
            chart
                .draw_series([Rectangle::new(
                    [(middle - 0.05, p50), (middle + 0.05, p99)],
                    colour.mix(0.35).filled(),
                )])
                .map_err(drawing)?;
            chart
                .draw_series([
                    EmptyElement::at((middle, p50)) + Circle::new((0, 0), 5, colour.filled())
                ])
                .map_err(drawing)?;
            chart
                .draw_series([EmptyElement::at((middle, p95))
                    + TriangleMarker::new((0, 0), 6, colour.filled())])
                .map_err(drawing)?;
            chart
                .draw_series([EmptyElement::at((middle, p99))
                    + Rectangle::new([(-5, -5), (5, 5)], colour.filled())])
                .map_err(drawing)?;
            let value_style = (FAMILY, 11)
                .into_font()
                .color(&TEXT)
                .pos(Pos::new(HPos::Left, VPos::Center));
            // Labelled from the tail down, a label too close to one above it left out (the marks stay).
            let (low, high) = axis.bounds();
            let mut labelled: Vec<f64> = Vec::with_capacity(3);
            for (name, y, value) in [
                ("p99", p99, request.p99_ms),
                ("p95", p95, request.p95_ms),
                ("p50", p50, request.p50_ms),
            ] {
                if labelled
                    .iter()
                    .any(|&above| (above - y).abs() < (high - low) * 0.06)
                {
                    continue;
                }
                labelled.push(y);
                chart
                    .draw_series([EmptyElement::at((middle, y))
                        + Text::new(format!("{name} {value} ms"), (9, 0), value_style.clone())])
                    .map_err(drawing)?;
            }
        }
        Ok(PlotFrame::of(
            &chart,
            ImpactChart::Requests.id(),
            (0.0, width),
        ))
    }
}
