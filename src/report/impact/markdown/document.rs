//! The report from its title down: the scenario, the call or the mix, the load's shape, the faults, the
//! proxy's counters, then the run's, the requests' and the phases' tables, the baseline and the footnote.

use std::fmt::Write;

use super::cells::{cell, signed, windows_text};
use super::phase_tables::write_phases;
use super::request_tables::{write_request_comparison, write_requests};
use super::run_tables::write_run;
use crate::report::impact::{ActiveWindow, Report, Status, phases::FOOTNOTE};
use crate::report::trim_float;

/// Ten cells of the run, `x` where a window (seconds) covers the cell's middle.
fn timeline(windows: &[ActiveWindow], run_s: f64) -> String {
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
            trim_float(request.weight),
            cell(&request.expect),
            cell(&headers),
            if request.has_body { "Yes" } else { "No" }
        )?;
    }
    writeln!(out)
}
