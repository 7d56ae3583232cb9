//! The `fault run` report's charts, from its [`ProxyReport`]: new connections and fault applications per
//! second, and bytes per second each way, with each fault's active window shaded.

use plotters::{
    coord::{Shift, types::RangedCoordf64},
    prelude::*,
};

use super::{
    WIDTH,
    columns::per_column,
    error::{ChartError, drawing},
    figure::{Figure, PlotFrame},
    font::FAMILY,
    header,
    layout::{chart_on, stack, stacked_height},
    legend::{self, Legend},
    palette::*,
    series::{fault_window, series_line},
};
use crate::report::proxy::{ProxyReport, ProxySecond};

/// The charts of a proxy report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyChart {
    Traffic,
    Bytes,
}

impl ProxyChart {
    pub const ALL: [ProxyChart; 2] = [ProxyChart::Traffic, ProxyChart::Bytes];

    /// The chart's id in the HTML page.
    pub fn id(self) -> &'static str {
        match self {
            ProxyChart::Traffic => "traffic",
            ProxyChart::Bytes => "bytes",
        }
    }

    /// The series the HTML page can hide and show: name and colour.
    pub fn series(self) -> Vec<(&'static str, RGBColor)> {
        match self {
            ProxyChart::Traffic => {
                vec![("connections opened", P50), ("fault applications", ERRORS)]
            }
            ProxyChart::Bytes => vec![("to upstream", P50), ("to clients", P95)],
        }
    }
}

const CHART_HEIGHT: u32 = 280;
/// Points per series at most: about one per pixel column of the plot.
const PLOT_COLUMNS: usize = (WIDTH - 100) as usize;

/// Charts of `report`, under a header naming the proxies and faults.
pub struct ProxyFigure<'a> {
    pub report: &'a ProxyReport,
    pub charts: &'a [ProxyChart],
    pub with_header: bool,
}

impl<'a> ProxyFigure<'a> {
    pub fn one(report: &'a ProxyReport, chart: &'a ProxyChart) -> Self {
        Self {
            report,
            charts: std::slice::from_ref(chart),
            with_header: false,
        }
    }

    fn header_lines(&self) -> Vec<(String, RGBColor)> {
        let report = self.report;
        let mut lines = vec![
            (report.title.clone(), TEXT),
            (
                format!(
                    "{} · {} connections, {} fault applications in {} s",
                    report.mappings.join(", "),
                    report.connections,
                    report.fault_applications.values().sum::<u64>(),
                    report.duration_s
                ),
                TEXT,
            ),
        ];
        for fault in &report.faults {
            lines.push((format!("Fault: {}", fault.description), FAULT_LABEL));
        }
        header::wrapped(lines)
    }

    fn seconds(&self) -> f64 {
        self.report
            .duration_s
            .max(self.report.per_second.len() as f64)
            .max(1.0)
    }

    fn draw_chart<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        chart_kind: ProxyChart,
    ) -> Result<PlotFrame, ChartError> {
        let seconds = self.seconds();
        let series = |pick: fn(&ProxySecond) -> f64| {
            let points: Vec<(f64, f64)> = self
                .report
                .per_second
                .iter()
                .map(|s| (f64::from(s.second) + 0.5, pick(s)))
                .collect();
            per_column(&points, (0.0, seconds), PLOT_COLUMNS)
        };
        let (caption, y_desc, lines) = match chart_kind {
            ProxyChart::Traffic => (
                "Connections and fault applications per second",
                "per second",
                vec![
                    series(|s| s.connections_opened as f64),
                    series(|s| s.fault_applications as f64),
                ],
            ),
            ProxyChart::Bytes => (
                "Bytes per second through the proxy",
                "KiB per second",
                vec![
                    series(|s| s.bytes_to_upstream as f64 / 1024.0),
                    series(|s| s.bytes_to_client as f64 / 1024.0),
                ],
            ),
        };
        let top = lines
            .iter()
            .flatten()
            .map(|p| p.1)
            .fold(0.0, f64::max)
            .max(1.0)
            * 1.15;
        let mut chart = chart_on(area, caption, 64, 0.0..seconds, 0.0..top)?;
        // Small values keep a decimal, so that no two ticks read the same.
        let decimals = usize::from(top < 10.0);
        let y_label = |v: &f64| format!("{v:.decimals$}");
        chart
            .configure_mesh()
            .max_light_lines(0)
            .bold_line_style(GRID)
            .y_labels(6)
            .x_desc("time since the proxy started (s)")
            .y_desc(y_desc)
            .y_label_formatter(&y_label)
            .label_style((FAMILY, 12).into_font().color(&TEXT))
            .axis_desc_style((FAMILY, 13).into_font().color(&TEXT))
            .draw()
            .map_err(drawing)?;
        fault_windows(&mut chart, self.report, seconds, top)?;
        for (points, (name, colour)) in lines.into_iter().zip(chart_kind.series()) {
            series_line(&mut chart, points, colour, name, false)?;
        }
        legend::finish(&mut chart, Legend::InPlot, chart_kind.id(), (0.0, seconds))
    }
}

/// Each fault's active window, shaded and labelled.
fn fault_windows<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    report: &ProxyReport,
    seconds: f64,
    top: f64,
) -> Result<(), ChartError> {
    for window in report.faults.iter().flat_map(|fault| &fault.windows) {
        let span = (
            window.active_from_s,
            window.active_until_s.unwrap_or(seconds),
        );
        fault_window(chart, span, (0.0, top), "fault active")?;
    }
    Ok(())
}

impl Figure for ProxyFigure<'_> {
    fn height(&self) -> u32 {
        let header = self.with_header.then(|| self.header_lines().len());
        stacked_height(header, &vec![CHART_HEIGHT; self.charts.len()])
    }

    fn alt_text(&self) -> String {
        let report = self.report;
        let mut text = format!(
            "Charts of a fault proxy session of {} s ({}): connections and fault applications per second, and \
             bytes per second each way. {} connections, {} bytes to upstream, {} bytes to clients.",
            report.duration_s,
            report.mappings.join(", "),
            report.connections,
            report.bytes_to_upstream,
            report.bytes_to_client
        );
        for fault in &report.faults {
            text.push_str(&format!(" Fault: {}.", fault.description));
        }
        for (kind, n) in &report.fault_applications {
            text.push_str(&format!(" {kind} acted {n} times."));
        }
        text
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<Vec<PlotFrame>, ChartError> {
        let header = self.with_header.then(|| self.header_lines());
        let heights = vec![CHART_HEIGHT; self.charts.len()];
        stack(root, header.as_deref(), &heights, |i, area| {
            self.draw_chart(area, self.charts[i])
        })
    }
}
