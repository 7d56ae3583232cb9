//! Markdown rendering of a [`Report`], laid out as the guide's sample report.

use std::fmt::Write;

use super::phases::FOOTNOTE;
use super::{Report, RunFigures, Status};
use crate::report::{SecondFigures, latency_scale};

/// `value` with its share of `total`, e.g. "3 (9.7%)".
fn count_with_share(value: u64, total: u64) -> String {
    let share = if total == 0 {
        0.0
    } else {
        value as f64 * 100.0 / total as f64
    };
    format!("{value} ({share:.1}%)")
}

fn total_time(ms: f64) -> String {
    let whole = ms.max(0.0).round() as u64;
    format!("{} seconds and {} ms", whole / 1000, whole % 1000)
}

fn signed(value: f64) -> String {
    if value >= 0.0 {
        format!("+{value:.2}")
    } else {
        format!("{value:.2}")
    }
}

/// Ten cells of the run, `x` where a window (seconds) covers the cell's middle.
fn timeline(windows: &[super::ActiveWindow], run_s: f64) -> String {
    let cells = 10usize;
    (0..cells)
        .map(|i| {
            let middle = (i as f64 + 0.5) * run_s / cells as f64;
            if windows
                .iter()
                .any(|w| middle >= w.from_s && middle <= w.until_s)
            {
                'x'
            } else {
                '.'
            }
        })
        .collect()
}

/// Seconds for the text: "5", "2.5", "0.25".
fn secs(value: f64) -> String {
    super::trim_float(value)
}

/// A fault's windows in words: "5–10 s", "2–3 s, 8–10 s".
fn windows_text(windows: &[super::ActiveWindow]) -> String {
    windows
        .iter()
        .map(|w| format!("{}–{} s", secs(w.from_s), secs(w.until_s)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Renders the whole report.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_report(&mut out, report);
    out
}

fn write_report(out: &mut String, report: &Report) -> std::fmt::Result {
    let call = &report.call;
    let status = match report.status {
        Status::Passed => "Passed",
        Status::Failed => "Failed",
    };
    writeln!(out, "# {}\n", report.title)?;
    writeln!(out, "Start: {}\n", report.started_at)?;
    writeln!(out, "End: {}\n", report.ended_at)?;
    let mix = report.requests.len() > 1;
    writeln!(
        out,
        "## Scenario: Evaluating runtime performance of {} (items: {})\n",
        call.url,
        report.requests.len().max(1)
    )?;
    let target = if mix {
        let names: Vec<&str> = report.requests.iter().map(|r| r.name.as_str()).collect();
        format!(
            "a mix of {} requests ({})",
            report.requests.len(),
            names.join(", ")
        )
    } else {
        format!("`{}` {}", call.method, call.url)
    };
    match &report.inconclusive {
        None => writeln!(out, "### 🎯 {target} | {status}\n")?,
        Some(why) => {
            writeln!(out, "### 🎯 {target} | {status} (inconclusive)\n")?;
            writeln!(out, "⚠️ **Inconclusive**: {why}.\n")?;
        }
    }
    if mix {
        write_mix(out, report)?;
    } else {
        write_call(out, report)?;
    }
    let strategy = &report.strategy;
    if let Some(engine) = &report.engine {
        let workers: Vec<String> = engine
            .workers
            .iter()
            .map(|w| format!("{} {} ({}%)", w.id, w.requests, w.percent))
            .collect();
        writeln!(
            out,
            "**Strategy**: {} {} for {}s with {} users (spawn rate {}/s) on {} workers: {}. Note: {}.\n",
            engine.engine,
            engine.version,
            strategy.duration_s,
            engine.users,
            engine.spawn_rate,
            engine.workers.len(),
            workers.join(", "),
            engine.note
        )?;
    } else {
        writeln!(
            out,
            "**Strategy**: load for {}s with {} clients @ {} RPS (open model: {} requests per second in total start on schedule)\n",
            strategy.duration_s,
            strategy.num_clients,
            strategy.rps,
            u64::from(strategy.num_clients) * u64::from(strategy.rps)
        )?;
    }
    writeln!(out, "**Faults Applied**:\n")?;
    writeln!(out, "| Type | Timeline | Description |")?;
    writeln!(out, "|------|----------|-------------|")?;
    for fault in &report.faults {
        let when = match &fault.sched {
            Some(sched) => format!(
                " — sched `{sched}`: active {}",
                windows_text(&fault.windows)
            ),
            None => String::new(),
        };
        let acted = match fault.applications {
            Some(n) => format!(" — acted {n} times"),
            None => String::new(),
        };
        writeln!(
            out,
            "| {} | 0% `{}` 100% | {} — on {}{when}{acted} |",
            fault.kind,
            timeline(&fault.windows, report.strategy.duration_s),
            fault.description,
            fault.applied_on
        )?;
    }
    writeln!(out)?;
    if let Some(proxy) = &report.proxy {
        writeln!(
            out,
            "Proxy: {} connections, {} upstream failures, {} bytes to upstream, {} bytes to clients, fault acted {} times.\n",
            proxy.connections,
            proxy.upstream_failures,
            proxy.bytes_to_upstream,
            proxy.bytes_to_client,
            proxy.fault_applications
        )?;
    }
    if let Some(upstream) = &report.upstream {
        let requests = match (upstream.requests, upstream.requests_per_client_request) {
            (Some(requests), Some(ratio)) => {
                format!("{requests} requests ({ratio:.2} per request of the load)")
            }
            (Some(requests), None) => format!("{requests} requests"),
            (None, _) => "requests not counted (some traffic was not HTTP/1)".to_owned(),
        };
        writeln!(
            out,
            "Upstream: the proxies sent {requests} on {} connections.\n",
            upstream.connections
        )?;
    }
    write_run(out, &report.run)?;
    write_requests(out, report)?;
    write_phases(out, report)?;
    if let (Some(baseline), Some(comparison)) = (&report.baseline, &report.comparison) {
        writeln!(
            out,
            "**Impact versus baseline** (the same load without the fault, run first: {} requests, {} errors):\n",
            baseline.requests, baseline.errors
        )?;
        writeln!(out, "| Run | p50 (ms) | p95 (ms) | p99 (ms) | Errors |")?;
        writeln!(out, "|-----|----------|----------|----------|--------|")?;
        writeln!(
            out,
            "| Baseline (no fault) | {:.2} | {:.2} | {:.2} | {} |",
            comparison.baseline_p50_ms,
            comparison.baseline_p95_ms,
            comparison.baseline_p99_ms,
            comparison.baseline_errors
        )?;
        writeln!(
            out,
            "| With fault | {:.2} | {:.2} | {:.2} | {} |",
            comparison.fault_p50_ms,
            comparison.fault_p95_ms,
            comparison.fault_p99_ms,
            comparison.fault_errors
        )?;
        writeln!(
            out,
            "| Impact | {} | {} | {} | {:+} |\n",
            signed(comparison.fault_p50_ms - comparison.baseline_p50_ms),
            signed(comparison.fault_p95_ms - comparison.baseline_p95_ms),
            signed(comparison.fault_p99_ms - comparison.baseline_p99_ms),
            comparison.fault_errors as i64 - comparison.baseline_errors as i64
        )?;
        write_request_comparison(out, comparison)?;
        let verdicts: Vec<String> = baseline
            .slos
            .iter()
            .map(|slo| format!("{} {}", if slo.passed { "✅" } else { "❌" }, slo.name))
            .collect();
        if !verdicts.is_empty() {
            writeln!(out, "SLOs without the fault: {}.\n", verdicts.join(", "))?;
        }
    }
    let phases = if report.phases.is_empty() {
        String::new()
    } else {
        format!(" {FOOTNOTE}")
    };
    let requests = if mix {
        " Each request of the traffic mix has its own row; an SLO that names a request is judged on that request's \
         requests alone (in the run, in each phase, in each second for detection and recovery, and in the \
         baseline), an SLO that names none on all traffic."
    } else {
        " The traffic is one request, so its figures are the run's and there is no table per request."
    };
    writeln!(
        out,
        "_Latencies run from each request's scheduled start to the end of its body and cover every request (a timeout counts at the moment it ended, a request that could not start at its timeout). Errors are HTTP statuses ≥ 400, transport errors, timeouts and requests that could not start. A request counts towards an SLO only if it succeeded within the threshold.{requests}{phases}_"
    )
}

/// The one request of a single-request run.
fn write_call(out: &mut String, report: &Report) -> std::fmt::Result {
    let call = &report.call;
    writeln!(out, "**Call**:\n")?;
    writeln!(out, "- Method: `{}`", call.method)?;
    writeln!(out, "- Timeout: {}ms", call.timeout_ms)?;
    let headers = if call.headers.is_empty() {
        "-".to_owned()
    } else {
        call.headers.join(", ")
    };
    writeln!(out, "- Headers: {headers}")?;
    writeln!(
        out,
        "- Body?: {}\n",
        if call.has_body { "Yes" } else { "No" }
    )
}

/// Text for a table cell: no `|` to end it early, no line break.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The requests of the traffic mix as the scenario was given them.
fn write_mix(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(
        out,
        "**Traffic mix** (each call picks a request by weight; timeout {}ms):\n",
        report.call.timeout_ms
    )?;
    writeln!(
        out,
        "| Request | Method | URL | Weight | Success is | Headers | Body? |"
    )?;
    writeln!(
        out,
        "|---------|--------|-----|--------|------------|---------|-------|"
    )?;
    for request in &report.requests {
        let headers = if request.headers.is_empty() {
            "-".to_owned()
        } else {
            request.headers.join(", ")
        };
        writeln!(
            out,
            "| {} | `{}` | {} | {} | {} | {} | {} |",
            cell(&request.name),
            cell(&request.method),
            cell(&request.url),
            super::trim_float(request.weight),
            cell(&request.expect),
            cell(&headers),
            if request.has_body { "Yes" } else { "No" }
        )?;
    }
    writeln!(out)
}

/// A request's errors by kind: "HTTP 500×2, timeout 3", or "–" without errors.
fn errors_by_kind(outcomes: &super::OutcomeCounts) -> String {
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
fn write_requests(out: &mut String, report: &Report) -> std::fmt::Result {
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
fn write_request_comparison(out: &mut String, comparison: &super::Comparison) -> std::fmt::Result {
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

/// A ratio for the text: "1.00", or "–" when there is none.
fn per_request(value: Option<f64>) -> String {
    value.map_or("–".to_owned(), |v| format!("{v:.2}"))
}

/// The phases, their error budget, and each window's time to detect and to recover.
fn write_phases(out: &mut String, report: &Report) -> std::fmt::Result {
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
            secs(phase.from_s),
            secs(phase.until_s),
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

fn write_run(out: &mut String, run: &RunFigures) -> std::fmt::Result {
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
            super::trim_float(slo.objective),
            super::trim_float(slo.threshold_ms),
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
