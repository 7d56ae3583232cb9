//! A report as one self-contained HTML page: the markdown report rendered, the charts as inline SVG with
//! their text alternative, the report's figures as JSON, and a small script that shows the values under the
//! pointer and hides or shows a series. Everything is inline and the page's Content-Security-Policy allows
//! no fetch at all, so it opens from disk, offline, and inside a sandboxed frame.

use base64::Engine;
use plotters::style::RGBColor;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde::Serialize;
use sha2::Digest;

use super::{
    capacity::{self, CapacityFigure},
    chaos::{ChaosChart, ChaosFigure},
    error::ChartError,
    figure::{Figure, PlotFrame, svg},
    impact::{ImpactChart, ImpactFigure},
    proxy::{ProxyChart, ProxyFigure},
};
use crate::report::{
    capacity::CapacityReport, chaos::ChaosReport, impact::Report, proxy::ProxyReport,
};

const STYLE: &str = include_str!("page.css");
/// Defines `faultCharts(report)`, which wires the charts on the page to `report`'s figures.
pub(super) const SCRIPT: &str = include_str!("page.js");

/// One chart of a page.
struct Panel {
    id: &'static str,
    series: Vec<(String, RGBColor)>,
    svg: String,
    frame: Option<PlotFrame>,
    alt: String,
}

/// What the page's script reads: the report's kind and figures, and where each plot is.
#[derive(Serialize)]
struct PageData<'a, R: Serialize> {
    kind: &'static str,
    report: &'a R,
}

/// The standalone page of an impact report.
pub fn impact_page(report: &Report) -> Result<String, ChartError> {
    let data = PageData {
        kind: "impact",
        report,
    };
    page(&impact_body(report)?, &report.title, &data)
}

/// The standalone page of an MCP chaos report.
pub fn chaos_page(report: &ChaosReport) -> Result<String, ChartError> {
    let data = PageData {
        kind: "chaos",
        report,
    };
    page(&chaos_body(report)?, &report.title, &data)
}

/// What a page shows of an impact report (title, charts, the report), without its scripts: the standalone
/// page's body, and what the MCP App view puts in its frame.
pub fn impact_body(report: &Report) -> Result<String, ChartError> {
    let panels = ImpactChart::of(report)
        .iter()
        .map(|chart| {
            panel(
                &ImpactFigure::one(report, chart),
                chart.id(),
                chart.series_of(report),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    body(
        &report.title,
        &crate::report::impact::render(report),
        &panels,
    )
}

/// The standalone page of a capacity search.
pub fn capacity_page(report: &CapacityReport) -> Result<String, ChartError> {
    let data = PageData {
        kind: "capacity",
        report,
    };
    page(&capacity_body(report)?, &report.title, &data)
}

/// What a page shows of a capacity search, as [`impact_body`].
pub fn capacity_body(report: &CapacityReport) -> Result<String, ChartError> {
    let figure = CapacityFigure {
        report,
        with_header: false,
    };
    let panels = [panel(&figure, capacity::CHART_ID, capacity::series())?];
    body(
        &report.title,
        &crate::report::capacity::render(report),
        &panels,
    )
}

/// The standalone page of a `fault run` session.
pub fn proxy_page(report: &ProxyReport) -> Result<String, ChartError> {
    let panels = ProxyChart::ALL
        .iter()
        .map(|chart| panel(&ProxyFigure::one(report, chart), chart.id(), chart.series()))
        .collect::<Result<Vec<_>, _>>()?;
    let body = body(
        &report.title,
        &crate::report::proxy::render(report),
        &panels,
    )?;
    let data = PageData {
        kind: "proxy",
        report,
    };
    page(&body, &report.title, &data)
}

/// What a page shows of an MCP chaos report, as [`impact_body`].
pub fn chaos_body(report: &ChaosReport) -> Result<String, ChartError> {
    let panels = ChaosChart::ALL
        .iter()
        .map(|chart| panel(&ChaosFigure::one(report, chart), chart.id(), chart.series()))
        .collect::<Result<Vec<_>, _>>()?;
    body(
        &report.title,
        &crate::report::chaos::render(report),
        &panels,
    )
}

fn panel(
    figure: &impl Figure,
    id: &'static str,
    series: Vec<(impl Into<String>, RGBColor)>,
) -> Result<Panel, ChartError> {
    let (svg, frames) = svg(figure)?;
    Ok(Panel {
        id,
        series: series
            .into_iter()
            .map(|(name, colour)| (name.into(), colour))
            .collect(),
        svg,
        frame: frames.into_iter().next(),
        alt: figure.alt_text(),
    })
}

/// The interaction script with the call that starts it on the page's own figures.
fn standalone_script() -> String {
    format!(
        "{SCRIPT}\nfaultCharts(JSON.parse(document.getElementById(\"figures\").textContent).report);\n"
    )
}

/// The page's Content-Security-Policy: nothing from anywhere, inline styles, data: images, and `script`
/// alone as a script.
pub(super) fn content_security_policy(script: &str) -> String {
    let hash =
        base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script.as_bytes()));
    format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; \
         img-src data:; script-src 'sha256-{hash}'\">\n"
    )
}

/// The document around `body` and `script`.
pub(super) fn document(title: &str, body: &str, script: &str, after_body: &str) -> String {
    let mut out = String::with_capacity(body.len() + script.len() + STYLE.len() + 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&content_security_policy(script));
    out.push_str(&format!("<title>{}</title>\n", escape(title)));
    out.push_str(&format!("<style>\n{STYLE}</style>\n</head>\n<body>\n"));
    out.push_str("<main id=\"view\">\n");
    out.push_str(body);
    out.push_str("</main>\n<div id=\"tip\" role=\"status\" hidden></div>\n");
    out.push_str(after_body);
    out.push_str(&format!("<script>{script}</script>\n</body>\n</html>\n"));
    out
}

fn page(body: &str, title: &str, data: &impl Serialize) -> Result<String, ChartError> {
    let json = serde_json::to_string(data)
        .map_err(|e| ChartError::Draw(format!("cannot encode the figures: {e}")))?;
    let figures = format!(
        "<script type=\"application/json\" id=\"figures\">{}</script>\n",
        script_safe(&json)
    );
    Ok(document(title, body, &standalone_script(), &figures))
}

fn body(title: &str, markdown: &str, panels: &[Panel]) -> Result<String, ChartError> {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str(&format!(
        "<h1>{}</h1>\n<section class=\"charts\">\n",
        escape(title)
    ));
    for panel in panels {
        write_panel(&mut out, panel)?;
    }
    out.push_str("</section>\n<section class=\"report\">\n");
    out.push_str(&markdown_html(markdown));
    out.push_str("</section>\n");
    Ok(out)
}

fn write_panel(out: &mut String, panel: &Panel) -> Result<(), ChartError> {
    let frame = serde_json::to_string(&panel.frame)
        .map_err(|e| ChartError::Draw(format!("cannot encode a plot frame: {e}")))?;
    out.push_str(&format!(
        "<figure class=\"chart\" id=\"chart-{}\" data-frame=\"{}\">\n<div class=\"toggles\">",
        panel.id,
        escape(&frame)
    ));
    for (name, colour) in &panel.series {
        let hex = format!("#{:02X}{:02X}{:02X}", colour.0, colour.1, colour.2);
        out.push_str(&format!(
            "<label><input type=\"checkbox\" checked data-colour=\"{hex}\"><span class=\"swatch\" \
             style=\"background:{hex}\"></span>{}</label>",
            escape(name)
        ));
    }
    out.push_str("</div>\n<div class=\"plot\" role=\"img\" aria-label=\"");
    out.push_str(&escape(&panel.alt));
    out.push_str("\">\n");
    // plotters writes an XML declaration-free <svg> element: inline as is.
    out.push_str(&panel.svg);
    out.push_str(&format!(
        "\n</div>\n<figcaption>{}</figcaption>\n</figure>\n",
        escape(&panel.alt)
    ));
    Ok(())
}

/// The markdown report as HTML. Raw HTML, links and images in it are shown as text: the report quotes what
/// servers and users wrote (URLs, error messages), which must never become markup or a way out of the page.
pub fn markdown_html(markdown: &str) -> String {
    let events =
        Parser::new_ext(markdown, Options::ENABLE_TABLES).filter_map(|event| match event {
            Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
            Event::Start(Tag::Link { .. } | Tag::Image { .. })
            | Event::End(TagEnd::Link | TagEnd::Image) => None,
            other => Some(other),
        });
    let mut html = String::with_capacity(markdown.len() * 2);
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// `text` safe in HTML text and attribute values.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON that cannot end its `<script>` element early: every `<` as its JSON escape.
fn script_safe(json: &str) -> String {
    json.replace('<', "\\u003c")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_the_report_stays_text() {
        let html = markdown_html(
            "error: <script>alert(1)</script> [x](javascript:alert(1)) <http://a.b/>",
        );
        assert!(!html.contains("<script>"), "{html}");
        assert!(!html.contains("<a "), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    #[test]
    fn figures_cannot_close_their_script_element() {
        assert_eq!(
            script_safe(r#"{"a":"</script>"}"#),
            r#"{"a":"\u003c/script>"}"#
        );
    }
}
