//! The impact charts' words: the header drawn above them and the text alternative that says what they show.
//! A window's detection and recovery is the report's own sentence ([`WindowRecovery::describe`]).
//!
//! [`WindowRecovery::describe`]: crate::report::impact::WindowRecovery::describe

use plotters::style::RGBColor;

use super::{header, impact_rate, impact_requests, palette::*};
use crate::report::{
    impact::{Report, Status},
    trim_float,
};

/// The header above the charts: the run, its status and target, each fault, each phase, each window's
/// detection and recovery, and why the run is inconclusive if it is; coloured where an SLO was missed.
pub(super) fn header_lines(report: &Report) -> Vec<(String, RGBColor)> {
    let status = match report.status {
        Status::Passed => "Passed",
        Status::Failed => "Failed",
    };
    let slos = &report.run.slos;
    let missed = slos.iter().filter(|s| !s.passed).count();
    let mut lines = vec![
        (report.title.clone(), TEXT),
        (
            format!(
                "{status}: {missed} of {} SLOs missed · {} · {} requests, {} errors ({} timeouts)",
                slos.len(),
                target(report),
                report.run.requests,
                report.run.errors,
                report.run.outcomes.timeout,
            ),
            if missed > 0 { SLO_MISSED } else { TEXT },
        ),
    ];
    for fault in &report.faults {
        let windows: Vec<String> = fault
            .windows
            .iter()
            .map(|w| format!("{}–{} s", trim_float(w.from_s), trim_float(w.until_s)))
            .collect();
        let acted = fault
            .applications
            .map_or(String::new(), |n| format!(", acted {n} times"));
        lines.push((
            format!(
                "Fault: {} ({}), active {}{acted}",
                fault.kind,
                fault.description,
                windows.join(", ")
            ),
            FAULT_LABEL,
        ));
    }
    for phase in &report.phases {
        let upstream = phase
            .upstream
            .as_ref()
            .and_then(|u| u.requests_per_client_request)
            .map_or(String::new(), |x| {
                format!(", {x:.2} upstream requests per request")
            });
        let missed: Vec<&str> = phase
            .slos
            .iter()
            .filter(|slo| !slo.passed)
            .map(|slo| slo.name.as_str())
            .collect();
        let verdict = if missed.is_empty() {
            "SLOs met".to_owned()
        } else {
            format!("missed {}", missed.join(", "))
        };
        lines.push((
            format!(
                "{} {}–{} s: {} requests, {} errors, p99 {} ms{upstream}; {verdict}",
                phase.name,
                trim_float(phase.from_s),
                trim_float(phase.until_s),
                phase.requests,
                phase.errors,
                phase.p99_ms
            ),
            if missed.is_empty() { TEXT } else { SLO_MISSED },
        ));
    }
    for window in &report.recovery {
        lines.push((window.describe(report.recovery_seconds).to_string(), TEXT));
    }
    if let Some(why) = &report.inconclusive {
        lines.push((format!("Inconclusive: {why}"), WARNING));
    }
    header::wrapped(lines)
}

/// What the load went to: "GET http://…", or "3 requests (checkout, search, home)" for a mix.
fn target(report: &Report) -> String {
    if report.requests.len() > 1 {
        let names: Vec<&str> = report.requests.iter().map(|r| r.name.as_str()).collect();
        format!("{} requests ({})", names.len(), names.join(", "))
    } else {
        format!("{} {}", report.call.method, report.call.url)
    }
}

/// What the charts show, in words.
pub(super) fn alt_text(report: &Report) -> String {
    let run = &report.run;
    let mut text = format!(
        "Charts of the impact scenario on {}: latency over time, the latency distribution, and errors per \
         second.",
        target(report)
    );
    for fault in &report.faults {
        let windows: Vec<String> = fault
            .windows
            .iter()
            .map(|w| {
                format!(
                    "from {} s to {} s",
                    trim_float(w.from_s),
                    trim_float(w.until_s)
                )
            })
            .collect();
        text.push_str(&format!(
            " The fault {} ({}) was active {}.",
            fault.kind,
            fault.description,
            windows.join(" and ")
        ));
    }
    for phase in &report.phases {
        text.push_str(&format!(
            " Phase {} ({}–{} s): {} requests, {} errors, p99 {} ms.",
            phase.name,
            trim_float(phase.from_s),
            trim_float(phase.until_s),
            phase.requests,
            phase.errors,
            phase.p99_ms
        ));
    }
    for window in &report.recovery {
        text.push_str(&format!(" {}.", window.describe(report.recovery_seconds)));
    }
    match &report.comparison {
        Some(c) => text.push_str(&format!(
            " p50 {} ms with the fault against {} ms without, p99 {} ms against {} ms.",
            c.fault_p50_ms, c.baseline_p50_ms, c.fault_p99_ms, c.baseline_p99_ms
        )),
        None => {
            let at = |name: &str| {
                run.percentiles
                    .iter()
                    .find(|p| p.name == name)
                    .map_or(0.0, |p| p.latency_ms)
            };
            text.push_str(&format!(
                " p50 {} ms, p99 {} ms, max {} ms.",
                at("p50"),
                at("p99"),
                run.max_ms
            ));
        }
    }
    for slo in &run.slos {
        text.push_str(&format!(
            " SLO {}: {} (latency at the objective {} ms).",
            slo.name,
            if slo.passed { "met" } else { "missed" },
            slo.latency_at_objective_ms
        ));
    }
    text.push_str(&format!(
        " {} requests, {} errors, {} timeouts.",
        run.requests, run.errors, run.outcomes.timeout
    ));
    text.push_str(&impact_requests::alt_text(report));
    text.push_str(&impact_rate::alt_text(report));
    if let Some(why) = &report.inconclusive {
        text.push_str(&format!(" Inconclusive: {why}."));
    }
    text
}
