//! The MCP chaos report's charts, from its [`ChaosReport`]: the per-tool call timeline (each call a mark
//! coloured by how it ended, from the report's bounded [`CallTimeline`]), and availability A, correctness C
//! and A×C per tool; the header gives time to detect and time to recover.

use plotters::{
    coord::Shift,
    prelude::*,
    style::text_anchor::{HPos, Pos, VPos},
};

use super::{
    error::{ChartError, drawing},
    figure::{Figure, PlotFrame},
    font::FAMILY,
    header,
    layout::{chart_on, stack, stacked_height},
    legend::{self, Legend},
    palette::*,
};
use crate::report::chaos::{
    ChaosReport, ToolFigures,
    timeline::{CallTimeline, MarkKind},
};

/// The charts of a chaos report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChaosChart {
    Timeline,
    Availability,
}

impl ChaosChart {
    pub const ALL: [ChaosChart; 2] = [ChaosChart::Timeline, ChaosChart::Availability];

    /// The series the HTML views can hide and show: name and colour.
    pub fn series(self) -> Vec<(&'static str, RGBColor)> {
        match self {
            ChaosChart::Timeline => MarkKind::ALL
                .into_iter()
                .map(|kind| (kind.label(), mark_colour(kind)))
                .collect(),
            ChaosChart::Availability => AVAILABILITY_BARS
                .iter()
                .map(|(name, colour, _)| (*name, *colour))
                .collect(),
        }
    }

    /// The chart's id in the HTML views.
    pub fn id(self) -> &'static str {
        match self {
            ChaosChart::Timeline => "timeline",
            ChaosChart::Availability => "availability",
        }
    }
}

/// The availability chart's bars: name, colour, value (0..1).
type Bar = (&'static str, RGBColor, fn(&ToolFigures) -> f64);
const AVAILABILITY_BARS: [Bar; 3] = [
    ("availability A", P50, |t| t.availability),
    ("correctness C", SLO, |t| t.correctness),
    ("A×C", P99, |t| t.effective_availability),
];

/// Room on the availability chart's x axis past 100%, for the value of a full bar.
const BAR_ROOM: f64 = 112.0;
/// Width of the tool names left of both charts.
const LABEL_AREA: u32 = 170;

/// Tools whose verdict the image's header spells out.
const MAX_TOOL_VERDICTS: usize = 4;

/// Height of one tool's row in both charts.
const ROW: u32 = 30;
/// Height of a chart beyond its rows (caption, axis, legend).
const FRAME: u32 = 140;

/// Charts of `report`, under a header with the run's figures.
pub struct ChaosFigure<'a> {
    pub report: &'a ChaosReport,
    pub charts: &'a [ChaosChart],
    pub with_header: bool,
}

impl<'a> ChaosFigure<'a> {
    pub fn all(report: &'a ChaosReport) -> Self {
        Self {
            report,
            charts: &ChaosChart::ALL,
            with_header: true,
        }
    }

    pub fn one(report: &'a ChaosReport, chart: &'a ChaosChart) -> Self {
        Self {
            report,
            charts: std::slice::from_ref(chart),
            with_header: false,
        }
    }

    fn timeline(&self) -> &CallTimeline {
        &self.report.run.timeline
    }

    fn chart_height(&self, chart: ChaosChart) -> u32 {
        let rows = match chart {
            ChaosChart::Timeline => self.timeline().tools.len(),
            ChaosChart::Availability => self.report.run.tools.len(),
        };
        FRAME + ROW * rows.max(1) as u32
    }

    fn chart_heights(&self) -> Vec<u32> {
        self.charts.iter().map(|&c| self.chart_height(c)).collect()
    }

    fn header_lines(&self) -> Vec<(String, RGBColor)> {
        let run = &self.report.run;
        let all = &run.overall;
        let client = &all.client;
        let mut lines = vec![
            (self.report.title.clone(), TEXT),
            (
                format!(
                    "{} calls, {} faults injected · A {:.1}% · C {:.1}% · A×C {:.1}% · {} retries",
                    all.calls,
                    all.faults_injected,
                    all.availability * 100.0,
                    all.correctness * 100.0,
                    all.effective_availability * 100.0,
                    client.retries,
                ),
                TEXT,
            ),
            (
                format!(
                    "Detect: {} · recover: {}",
                    mean_max(client.detect_mean_ms, client.detect_max_ms),
                    match (client.recovery_mean_ms, client.recovery_mean_calls) {
                        (Some(ms), Some(calls)) => format!(
                            "mean {ms:.0} ms ({calls:.1} calls), max {}; {} unrecovered",
                            client
                                .recovery_max_ms
                                .map_or("-".into(), |m| format!("{m:.0} ms")),
                            client.unrecovered
                        ),
                        _ => format!(
                            "no recovery ({} failures never recovered)",
                            client.unrecovered
                        ),
                    }
                ),
                TEXT,
            ),
        ];
        if let Some(why) = self.inconclusive() {
            lines.push((format!("Inconclusive: {why}"), WARNING));
        }
        if let Some(gates) = &self.report.gates {
            let colour = if gates.passed { TEXT } else { WARNING };
            lines.push((format!("Gates: {}", gates.summary()), colour));
        }
        let judgement = &run.judgement;
        let colour = if judgement.handled_well {
            TEXT
        } else {
            WARNING
        };
        lines.push((format!("Judgement: {}", judgement.verdict), colour));
        // The tools the client mishandled, by name; the rest are in the report.
        for tool in judgement
            .tools
            .iter()
            .filter(|t| t.verdicts.iter().any(|v| v.kind.is_mishandling()))
            .take(MAX_TOOL_VERDICTS)
        {
            lines.push((tool.sentence.replace('`', ""), WARNING));
        }
        header::wrapped(lines)
    }

    /// Why the run says nothing about the faults: some were planned and none was injected.
    fn inconclusive(&self) -> Option<&'static str> {
        (!self.report.faults.is_empty() && self.report.run.overall.faults_injected == 0)
            .then_some("no fault of the plan was injected during the run")
    }

    fn draw_timeline<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<PlotFrame, ChartError> {
        let timeline = self.timeline();
        let rows = timeline.tools.len().max(1);
        let (area, below) = area.split_vertically(area.dim_in_pixel().1 - legend::HEIGHT);
        let area = &area;
        let seconds = (self.report.run.duration_ms / 1000.0)
            .max(
                timeline
                    .marks
                    .iter()
                    .map(|m| m.start_ms / 1000.0)
                    .fold(0.0, f64::max),
            )
            .max(0.001)
            * 1.02;
        let mut chart = chart_on(
            area,
            "Calls per tool over time, by outcome",
            LABEL_AREA,
            0.0..seconds,
            rows as f64..0.0,
        )?;
        let y_label = |y: &f64| row_label(&timeline.tools, *y);
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .disable_y_mesh()
            .y_labels(rows * 2 + 1)
            .y_label_formatter(&y_label)
            .x_desc("time since the run started (s); a mark is a call at the time it was due")
            .label_style((FAMILY, 12).into_font().color(&TEXT))
            .axis_desc_style((FAMILY, 13).into_font().color(&TEXT))
            .draw()
            .map_err(drawing)?;
        for kind in MarkKind::ALL {
            let marks: Vec<(f64, f64)> = timeline
                .marks
                .iter()
                .filter(|m| m.kind == kind)
                .map(|m| (m.start_ms / 1000.0, m.tool as f64 + 0.5))
                .collect();
            if marks.is_empty() {
                continue;
            }
            let colour = mark_colour(kind);
            chart
                .draw_series(marks.iter().map(|&(x, y)| {
                    // A filled bar a few pixels wide: a zero-width rectangle has no outline in a browser.
                    EmptyElement::at((x, y)) + Rectangle::new([(-1, -9), (2, 9)], colour.filled())
                }))
                .map_err(drawing)?;
        }
        let present: Vec<(&str, RGBColor)> = MarkKind::ALL
            .into_iter()
            .filter(|kind| timeline.marks.iter().any(|m| m.kind == *kind))
            .map(|kind| (kind.label(), mark_colour(kind)))
            .collect();
        legend::finish(
            &mut chart,
            Legend::Below {
                area: &below,
                left: LABEL_AREA as i32 + 10,
                items: &present,
            },
            ChaosChart::Timeline.id(),
            (0.0, seconds),
        )
    }

    fn draw_availability<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
    ) -> Result<PlotFrame, ChartError> {
        let tools: &[ToolFigures] = &self.report.run.tools;
        let names: Vec<String> = tools.iter().map(|t| t.tool.clone()).collect();
        let rows = tools.len().max(1);
        let (area, below) = area.split_vertically(area.dim_in_pixel().1 - legend::HEIGHT);
        let area = &area;
        let mut chart = chart_on(
            area,
            "Availability and correctness per tool",
            LABEL_AREA,
            0.0..BAR_ROOM,
            rows as f64..0.0,
        )?;
        let y_label = |y: &f64| row_label(&names, *y);
        let x_label = |x: &f64| {
            if *x <= 100.0 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .disable_y_mesh()
            .y_labels(rows * 2 + 1)
            .y_label_formatter(&y_label)
            .x_label_formatter(&x_label)
            .x_desc("share of calls (%): A answered, C valid of answered, A×C valid")
            .label_style((FAMILY, 12).into_font().color(&TEXT))
            .axis_desc_style((FAMILY, 13).into_font().color(&TEXT))
            .draw()
            .map_err(drawing)?;
        let bars = AVAILABILITY_BARS;
        let value_style = (FAMILY, 11)
            .into_font()
            .color(&TEXT)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (i, (_, colour, value)) in bars.iter().enumerate() {
            let offset = 0.2 + 0.22 * i as f64;
            chart
                .draw_series(tools.iter().enumerate().map(|(row, t)| {
                    let y = row as f64 + offset;
                    Rectangle::new([(0.0, y), (value(t) * 100.0, y + 0.18)], colour.filled())
                }))
                .map_err(drawing)?;
            chart
                .draw_series(tools.iter().enumerate().map(|(row, t)| {
                    Text::new(
                        format!("{:.1}%", value(t) * 100.0),
                        (value(t) * 100.0 + 1.0, row as f64 + offset + 0.09),
                        value_style.clone(),
                    )
                }))
                .map_err(drawing)?;
        }
        let items: Vec<(&str, RGBColor)> = bars
            .iter()
            .map(|(name, colour, _)| (*name, *colour))
            .collect();
        legend::finish(
            &mut chart,
            Legend::Below {
                area: &below,
                left: LABEL_AREA as i32 + 10,
                items: &items,
            },
            ChaosChart::Availability.id(),
            (0.0, BAR_ROOM),
        )
    }
}

fn mean_max(mean: Option<f64>, max: Option<f64>) -> String {
    match (mean, max) {
        (Some(mean), Some(max)) => format!("mean {mean:.0} ms, max {max:.0} ms"),
        _ => "no cancel".into(),
    }
}

/// The tool name at the middle of a row ("" elsewhere), cut to fit the label area.
fn row_label(names: &[String], y: f64) -> String {
    let row = y - 0.5;
    if (row - row.round()).abs() > 0.01 || row < 0.0 {
        return String::new();
    }
    names
        .get(row.round() as usize)
        .map_or_else(String::new, |name| {
            if name.chars().count() > 24 {
                let mut kept: String = name.chars().take(23).collect();
                kept.push('…');
                kept
            } else {
                name.clone()
            }
        })
}

fn mark_colour(kind: MarkKind) -> RGBColor {
    match kind {
        MarkKind::Ok => RGBColor(0, 158, 115),
        MarkKind::OkAfterRetry => RGBColor(86, 180, 233),
        MarkKind::SchemaInvalid => RGBColor(240, 228, 66),
        MarkKind::Error => RGBColor(120, 60, 30),
        MarkKind::InjectedError => RGBColor(213, 94, 0),
        MarkKind::Timeout => RGBColor(0, 0, 0),
        MarkKind::Cancelled => RGBColor(204, 121, 167),
        MarkKind::NotStarted => RGBColor(160, 160, 160),
    }
}

impl Figure for ChaosFigure<'_> {
    fn height(&self) -> u32 {
        let header = self.with_header.then(|| self.header_lines().len());
        stacked_height(header, &self.chart_heights())
    }

    fn alt_text(&self) -> String {
        let run = &self.report.run;
        let mut text = format!(
            "Charts of the MCP chaos scenario on {}: each call on a per-tool timeline coloured by outcome, and \
             availability and correctness per tool. {} calls, {} faults injected; A {:.1}%, C {:.1}%, A×C \
             {:.1}%.",
            self.report.server,
            run.overall.calls,
            run.overall.faults_injected,
            run.overall.availability * 100.0,
            run.overall.correctness * 100.0,
            run.overall.effective_availability * 100.0
        );
        for t in &run.tools {
            text.push_str(&format!(
                " {}: {} calls, {} ok, {} timeouts, {} errors, A×C {:.1}%.",
                t.tool,
                t.calls,
                t.outcomes.ok,
                t.outcomes.timeout,
                t.outcomes.tool_error + t.outcomes.protocol_error + t.outcomes.malformed,
                t.effective_availability * 100.0
            ));
        }
        if let Some(why) = self.inconclusive() {
            text.push_str(&format!(" Inconclusive: {why}."));
        }
        text
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<Vec<PlotFrame>, ChartError> {
        let header = self.with_header.then(|| self.header_lines());
        stack(
            root,
            header.as_deref(),
            &self.chart_heights(),
            |i, area| match self.charts[i] {
                ChaosChart::Timeline => self.draw_timeline(area),
                ChaosChart::Availability => self.draw_availability(area),
            },
        )
    }
}
