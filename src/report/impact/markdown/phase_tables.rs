//! The phases, their error budget, and each window's time to detect and to recover.

use std::fmt::Write;

use super::cells::{count_with_share, windows_text};
use crate::report::impact::Report;
use crate::report::trim_float;

/// A ratio for the text: "1.00", or "–" when there is none.
fn per_request(value: Option<f64>) -> String {
    value.map_or("–".to_owned(), |v| format!("{v:.2}"))
}

/// The phases, their error budget, and each window's time to detect and to recover.
pub(super) fn write_phases(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.phases.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "**Phases** (requests grouped by when they were due; the faults' windows: {}):\n",
        windows_text(&report.merged_windows())
    )?;
    writeln!(
        out,
        "| Phase | Time (s) | Requests | Errors | Timeouts | p50 (ms) | p95 (ms) | p99 (ms) | Max (ms) | Upstream requests per request |"
    )?;
    writeln!(
        out,
        "|-------|----------|----------|--------|----------|----------|----------|----------|----------|-------------------------------|"
    )?;
    for phase in &report.phases {
        writeln!(
            out,
            "| {} | {}–{} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
            phase.name,
            trim_float(phase.from_s),
            trim_float(phase.until_s),
            phase.requests,
            count_with_share(phase.errors, phase.requests),
            phase.timeouts,
            phase.p50_ms,
            phase.p95_ms,
            phase.p99_ms,
            phase.max_ms,
            per_request(
                phase
                    .upstream
                    .as_ref()
                    .and_then(|u| u.requests_per_client_request)
            ),
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "**Error budget by phase** (burn rate: the phase's share of requests over the threshold or failed, over the share the objective allows; budget spent: of the requests the objective allows to fail over the whole run):\n"
    )?;
    writeln!(
        out,
        "| SLO | Phase | Pass? | Over Threshold or Failed | Burn Rate | Budget Spent |"
    )?;
    writeln!(
        out,
        "|-----|-------|-------|--------------------------|-----------|--------------|"
    )?;
    for (index, verdict) in report.run.slos.iter().enumerate() {
        for phase in &report.phases {
            let Some(slo) = phase.slos.get(index) else {
                continue;
            };
            writeln!(
                out,
                "| {} | {} | {} | {} ({:.1}%) | {} | {} |",
                verdict.name,
                phase.name,
                if slo.passed { "✅" } else { "❌" },
                slo.bad_requests,
                slo.bad_percent,
                slo.burn_rate
                    .map_or("–".to_owned(), |rate| format!("{rate:.2}×")),
                slo.budget_spent_percent
                    .map_or("–".to_owned(), |spent| format!("{spent:.1}%")),
            )?;
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "**Detection and recovery** (from the load's seconds; recovered = {} seconds in a row within every SLO, errors back to the before phase's share):\n",
        report.recovery_seconds
    )?;
    for window in &report.recovery {
        writeln!(
            out,
            "- {}.",
            window.describe(report.recovery_seconds).markdown()
        )?;
    }
    writeln!(out)
}
