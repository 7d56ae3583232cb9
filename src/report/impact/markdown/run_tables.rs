//! The run's tables: overview, outcomes, percentiles, the latency's two parts, the SLOs, the sparklines.

use std::fmt::Write;

use super::cells::count_with_share;
use crate::report::impact::RunFigures;
use crate::report::{SecondFigures, latency_scale, trim_float};

fn total_time(ms: f64) -> String {
    let whole = ms.max(0.0).round() as u64;
    format!("{} seconds and {} ms", whole / 1000, whole % 1000)
}

pub(super) fn write_run(out: &mut String, run: &RunFigures) -> std::fmt::Result {
    let total = run.requests;
    writeln!(out, "**Run Overview**:\n")?;
    writeln!(
        out,
        "| Num. Requests | Num. Errors | Min. Response Time (ms) | Max Response Time (ms) | Mean Latency (ms) | Expectation Failures | Total Time |"
    )?;
    writeln!(
        out,
        "|---------------|-------------|--------------------|-------------------|-------------------|----------------------|------------|"
    )?;
    writeln!(
        out,
        "| {} | {} | {:.2} | {:.2} | {:.2} | {} | {} |\n",
        total,
        count_with_share(run.errors, total),
        run.min_ms,
        run.max_ms,
        run.mean_ms,
        run.slo_failures,
        total_time(run.total_time_ms)
    )?;
    if let Some(planned) = run.planned_requests
        && planned != total
    {
        writeln!(
            out,
            "⚠️ {total} of {planned} planned requests started (the run was cut or cancelled).\n"
        )?;
    }
    if run.cut_short {
        writeln!(
            out,
            "⚠️ Requests still in flight at duration + timeout + grace were cut.\n"
        )?;
    }
    writeln!(out, "**Outcomes**:\n")?;
    writeln!(out, "| Outcome | Num. Requests (% of total) |")?;
    writeln!(out, "|---------|----------------------------|")?;
    let outcomes = &run.outcomes;
    writeln!(
        out,
        "| Success | {} |",
        count_with_share(outcomes.success, total)
    )?;
    let by_status = if outcomes.http_error_by_status.is_empty() {
        String::new()
    } else {
        let codes: Vec<String> = outcomes
            .http_error_by_status
            .iter()
            .map(|(status, count)| format!("{status}×{count}"))
            .collect();
        format!(" — {}", codes.join(", "))
    };
    writeln!(
        out,
        "| HTTP error status | {}{by_status} |",
        count_with_share(outcomes.http_error, total)
    )?;
    writeln!(
        out,
        "| Transport error | {} |",
        count_with_share(outcomes.transport_error, total)
    )?;
    writeln!(
        out,
        "| Timeout | {} |",
        count_with_share(outcomes.timeout, total)
    )?;
    writeln!(
        out,
        "| Could not start (in-flight cap) | {} |\n",
        count_with_share(outcomes.not_started, total)
    )?;
    if !outcomes.transport_error_examples.is_empty() {
        writeln!(out, "Transport errors seen:\n")?;
        for example in &outcomes.transport_error_examples {
            writeln!(out, "- `{}`", example.replace('`', "'"))?;
        }
        writeln!(out)?;
    }
    writeln!(
        out,
        "| Latency Percentile | Latency (ms) | Num. Requests (% of total) |"
    )?;
    writeln!(
        out,
        "|--------------------|--------------|----------------------------|"
    )?;
    for row in &run.percentiles {
        writeln!(
            out,
            "| {} | {:.2} | {} |",
            row.name,
            row.latency_ms,
            count_with_share(row.requests_at_or_below, total)
        )?;
    }
    writeln!(out)?;
    write_queueing_and_service(out, run)?;
    writeln!(
        out,
        "| SLO | Pass? | Objective | Margin | Num. Requests Over Threshold or Failed (% of those it judges) |"
    )?;
    writeln!(
        out,
        "|-----|-------|-----------|--------|---------------------------------------------------------------|"
    )?;
    for slo in &run.slos {
        let margin = if slo.margin_ms >= 0.0 {
            format!("Below by {:.1}ms", slo.margin_ms)
        } else {
            format!("Above by {:.1}ms", -slo.margin_ms)
        };
        writeln!(
            out,
            "| {} | {} | {}% < {}ms | {} | {} |",
            slo.name,
            if slo.passed { "✅" } else { "❌" },
            trim_float(slo.objective),
            trim_float(slo.threshold_ms),
            margin,
            count_with_share(slo.bad_requests, slo.good_requests + slo.bad_requests)
        )?;
    }
    writeln!(out)?;
    write_sparkline(out, run)
}

fn write_queueing_and_service(out: &mut String, run: &RunFigures) -> std::fmt::Result {
    writeln!(
        out,
        "**Queueing and service** (ms; the latency's two parts: queueing delay from when each request was due to \
         when it was sent, all of it for a request that could not start; service time from when it was sent to \
         the end of its body or its timeout):\n"
    )?;
    writeln!(out, "| Part | Requests | p50 | p95 | p99 | max |")?;
    writeln!(out, "|------|----------|-----|-----|-----|-----|")?;
    for (name, part) in [
        ("Queueing delay", &run.queueing),
        ("Service time", &run.service),
    ] {
        writeln!(
            out,
            "| {name} | {} | {:.2} | {:.2} | {:.2} | {:.2} |",
            part.requests, part.p50_ms, part.p95_ms, part.p99_ms, part.max_ms
        )?;
    }
    writeln!(out)
}

fn write_sparkline(out: &mut String, run: &RunFigures) -> std::fmt::Result {
    let Some((low, high)) = latency_scale(
        run.per_second
            .iter()
            .map(|s: &SecondFigures| (s.p50_ms, s.p95_ms)),
    ) else {
        return Ok(());
    };
    writeln!(
        out,
        "**Latency per second** (one block per second, shared scale {low:.2}ms ▁ … █ {high:.2}ms):\n"
    )?;
    writeln!(out, "```text")?;
    writeln!(out, "p50 {}", run.sparkline_p50)?;
    writeln!(out, "p95 {}", run.sparkline_p95)?;
    writeln!(out, "```\n")
}
