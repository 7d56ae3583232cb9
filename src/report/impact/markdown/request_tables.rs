//! Each request of a traffic mix: its own row over the run, and its change against the baseline.

use std::fmt::Write;

use super::cells::{cell, count_with_share, signed};
use crate::report::impact::{Comparison, OutcomeCounts, Report};

/// A request's errors by kind: "HTTP 500×2, timeout 3", or "–" without errors.
fn errors_by_kind(outcomes: &OutcomeCounts) -> String {
    let mut kinds: Vec<String> = outcomes
        .http_error_by_status
        .iter()
        .map(|(status, count)| format!("HTTP {status}×{count}"))
        .collect();
    for (name, count) in [
        ("transport", outcomes.transport_error),
        ("timeout", outcomes.timeout),
        ("not started", outcomes.not_started),
    ] {
        if count > 0 {
            kinds.push(format!("{name} {count}"));
        }
    }
    if kinds.is_empty() {
        "–".to_owned()
    } else {
        kinds.join(", ")
    }
}

/// Each request of the mix, its own row (nothing with one request: its figures are the run's).
pub(super) fn write_requests(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.requests.len() < 2 {
        return Ok(());
    }
    writeln!(
        out,
        "**Requests** (each request of the mix over the run; its SLOs judged on its requests alone):\n"
    )?;
    writeln!(
        out,
        "| Request | Share | Requests | Errors | Errors by kind | p50 (ms) | p95 (ms) | p99 (ms) | Max (ms) | Mean (ms) | SLOs |"
    )?;
    writeln!(
        out,
        "|---------|-------|----------|--------|----------------|----------|----------|----------|----------|-----------|------|"
    )?;
    for request in &report.requests {
        let slos = if request.slos.is_empty() {
            "–".to_owned()
        } else {
            request
                .slos
                .iter()
                .map(|slo| format!("{} {}", if slo.passed { "✅" } else { "❌" }, slo.name))
                .collect::<Vec<_>>()
                .join("; ")
        };
        writeln!(
            out,
            "| {} | {:.1}% | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
            cell(&request.name),
            request.share_percent,
            request.requests,
            count_with_share(request.errors, request.requests),
            errors_by_kind(&request.outcomes),
            request.p50_ms,
            request.p95_ms,
            request.p99_ms,
            request.max_ms,
            request.mean_ms,
            cell(&slos)
        )?;
    }
    writeln!(out)
}

/// Each request of the mix with and without the fault (nothing with one request).
pub(super) fn write_request_comparison(
    out: &mut String,
    comparison: &Comparison,
) -> std::fmt::Result {
    if comparison.requests.is_empty() {
        return Ok(());
    }
    writeln!(out, "**Impact per request** (baseline → with the fault):\n")?;
    writeln!(out, "| Request | p50 (ms) | p95 (ms) | p99 (ms) | Errors |")?;
    writeln!(out, "|---------|----------|----------|----------|--------|")?;
    for request in &comparison.requests {
        writeln!(
            out,
            "| {} | {:.2} → {:.2} ({}) | {:.2} → {:.2} ({}) | {:.2} → {:.2} ({}) | {} → {} ({:+}) |",
            cell(&request.name),
            request.baseline_p50_ms,
            request.fault_p50_ms,
            signed(request.fault_p50_ms - request.baseline_p50_ms),
            request.baseline_p95_ms,
            request.fault_p95_ms,
            signed(request.fault_p95_ms - request.baseline_p95_ms),
            request.baseline_p99_ms,
            request.fault_p99_ms,
            signed(request.fault_p99_ms - request.baseline_p99_ms),
            request.baseline_errors,
            request.fault_errors,
            request.fault_errors as i64 - request.baseline_errors as i64
        )?;
    }
    writeln!(out)
}
