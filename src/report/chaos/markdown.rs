//! Markdown of a [`ChaosReport`], in the layout of the impact scenario reports. Every figure is printed
//! from the report's own fields, with the same rounding: ratios with 4 decimals, milliseconds with 2.

use std::fmt::Write;

use super::gates::GateReport;
use super::head_of_line::{BLOCKED_RATIO, BLOCKED_SHARE, HeadOfLine, MIN_CALLS, SLOWER_FACTOR};
use super::judgement::{Judgement, MAX_FOLLOW_UPS, NextStep, RETRY_AFTER_SLACK_MS};
use super::latency::LatencyFigures;
use super::mcp_tasks::McpTaskFigures;
use super::report::ChaosReport;
use super::run_figures::ChaosFigures;
use super::sessions::SessionsFigures;
use super::tool_figures::{RUNAWAY_ATTEMPTS, ToolFigures};

fn opt_ms(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"))
}

fn opt_count(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

fn faults_by_type(tool: &ToolFigures) -> String {
    if tool.faults_by_type.is_empty() {
        return "-".to_owned();
    }
    tool.faults_by_type
        .iter()
        .map(|(kind, count)| format!("{kind}×{count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Renders the whole report.
pub fn render(report: &ChaosReport) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_report(&mut out, report);
    out
}

fn write_report(out: &mut String, report: &ChaosReport) -> std::fmt::Result {
    writeln!(out, "# {}\n", report.title)?;
    writeln!(out, "Start: {}\n", report.started_at)?;
    writeln!(out, "End: {}\n", report.ended_at)?;
    // A URL is called directly; a command runs behind the proxy.
    let how = if report.server.starts_with("http://") || report.server.starts_with("https://") {
        "called over Streamable HTTP"
    } else {
        "behind `fault mcp-proxy`"
    };
    writeln!(
        out,
        "## Scenario: `{}` {how} (seed {})\n",
        report.server.replace('`', "'"),
        report.seed
    )?;
    if let Some(client) = &report.client {
        writeln!(
            out,
            "**Client**: {}; concurrency {} per client; timeout {}ms (then `notifications/cancelled`); retries {}; backoff {}ms\n",
            client.schedule,
            client.concurrency,
            client.timeout_ms,
            client.retries,
            client.backoff_ms
        )?;
    }
    if let Some(gates) = &report.gates {
        write_gates(out, gates)?;
    }
    if let Some(sessions) = &report.sessions {
        write_sessions(out, sessions)?;
    }
    writeln!(out, "**Faults Applied**:\n")?;
    if report.faults.is_empty() {
        writeln!(out, "None.\n")?;
    } else {
        writeln!(out, "| # | Type | Tools | Description |")?;
        writeln!(out, "|---|------|-------|-------------|")?;
        for fault in &report.faults {
            let tools = if fault.tools.is_empty() {
                "all".to_owned()
            } else {
                fault.tools.join(", ")
            };
            writeln!(
                out,
                "| {} | {} | {} | {} |",
                fault.index,
                fault.fault_type,
                tools,
                fault.description.replace('|', "\\|")
            )?;
        }
        writeln!(out)?;
    }
    write_run(out, &report.run)?;
    if let Some(rows) = &report.comparison {
        writeln!(
            out,
            "**Impact versus baseline** (the same calls without faults, run first):\n"
        )?;
        writeln!(
            out,
            "| Run | A | C | A×C | Task success rate | Blast radius | p50 (ms) | p95 (ms) | p99 (ms) | Retries |"
        )?;
        writeln!(
            out,
            "|-----|---|---|-----|-------------------|--------------|----------|----------|----------|---------|"
        )?;
        for row in rows {
            writeln!(
                out,
                "| {} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {} | {} | {} | {} |",
                row.run,
                row.availability,
                row.correctness,
                row.effective_availability,
                row.task_success_rate,
                row.blast_radius,
                opt_ms(row.p50_ms),
                opt_ms(row.p95_ms),
                opt_ms(row.p99_ms),
                row.retries
            )?;
        }
        writeln!(out)?;
    }
    writeln!(
        out,
        "_A (availability) = answered calls / calls; C (correctness) = results valid against the tool's own outputSchema / answered calls; A×C = valid results / calls. \
A retry is a further attempt of the same logical call; a runaway is a logical call with {RUNAWAY_ATTEMPTS} or more attempts after its first failure; \
a duplicate is a retry of a failed attempt the server had received. Time to detect runs from a request to the client's cancel; \
time to recovery from a failed call to the next valid result of the same tool. A task fails when one of its calls ends, after retries, \
without a valid result; the blast radius is the share of tasks that met an injected fault and failed._"
    )
}

fn row(tools: &[ToolFigures], overall: &ToolFigures) -> Vec<ToolFigures> {
    let mut rows = vec![overall.clone()];
    rows.extend(tools.iter().cloned());
    rows
}

fn latency_cells(l: &LatencyFigures) -> String {
    format!(
        "{} | {} | {} | {}",
        l.calls,
        opt_ms(l.p50_ms),
        opt_ms(l.p95_ms),
        opt_ms(l.p99_ms)
    )
}

fn latency_cells_with_max(l: &LatencyFigures) -> String {
    format!("{} | {}", latency_cells(l), opt_ms(l.max_ms))
}

fn write_run(out: &mut String, run: &ChaosFigures) -> std::fmt::Result {
    write_judgement(out, &run.judgement)?;
    let rows = row(&run.tools, &run.overall);
    let seconds = run.duration_ms / 1000.0;
    writeln!(out, "**Run Overview** ({seconds:.2} s):\n")?;
    writeln!(
        out,
        "| Tool | Calls | Logical calls | Faults injected | OK | isError | Protocol error | Timeout | Malformed | Schema-invalid | Not started | A | C | A×C | Success after retries |"
    )?;
    writeln!(
        out,
        "|------|-------|---------------|-----------------|----|---------|----------------|---------|-----------|----------------|-------------|---|---|-----|-----------------------|"
    )?;
    for t in &rows {
        let o = &t.outcomes;
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.4} | {:.4} | {:.4} | {:.4} |",
            t.tool,
            t.calls,
            t.logical_calls,
            faults_by_type(t),
            o.ok,
            o.tool_error,
            o.protocol_error,
            o.timeout,
            o.malformed,
            o.schema_invalid,
            o.not_started,
            t.availability,
            t.correctness,
            t.effective_availability,
            t.success_after_retries
        )?;
    }
    writeln!(out)?;
    write_mcp_tasks(out, &run.mcp_tasks)?;
    writeln!(
        out,
        "**Latency** (ms, from when each call was due to its answer or cancel; a call that could not start \
         counts its timeout):\n"
    )?;
    writeln!(
        out,
        "| Tool | All calls | p50 | p95 | p99 | max | Clean calls | p50 | p95 | p99 | max | Injected calls | p50 | p95 | p99 | max |"
    )?;
    writeln!(
        out,
        "|------|-----------|-----|-----|-----|-----|-------------|-----|-----|-----|-----|----------------|-----|-----|-----|-----|"
    )?;
    for t in &rows {
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            t.tool,
            latency_cells_with_max(&t.latency),
            latency_cells_with_max(&t.latency_clean),
            latency_cells_with_max(&t.latency_injected)
        )?;
    }
    writeln!(out)?;
    write_queueing_and_service(out, &rows)?;
    writeln!(out, "**Client behaviour**:\n")?;
    writeln!(
        out,
        "| Tool | Retries | Cancels | Detect mean (ms) | Detect max (ms) | Recoveries | Unrecovered | Recovery mean (ms) | Recovery max (ms) | Recovery mean (calls) | Recovery max (calls) | Runaway | Duplicates |"
    )?;
    writeln!(
        out,
        "|------|---------|---------|------------------|-----------------|------------|-------------|--------------------|-------------------|-----------------------|----------------------|---------|------------|"
    )?;
    for t in &rows {
        let c = &t.client;
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            t.tool,
            c.retries,
            c.cancels,
            opt_ms(c.detect_mean_ms),
            opt_ms(c.detect_max_ms),
            c.recoveries,
            c.unrecovered,
            opt_ms(c.recovery_mean_ms),
            opt_ms(c.recovery_max_ms),
            opt_ms(c.recovery_mean_calls),
            opt_count(c.recovery_max_calls),
            c.runaway,
            c.duplicates
        )?;
    }
    writeln!(out)?;
    let k = &run.tasks;
    writeln!(out, "**Tasks**:\n")?;
    writeln!(
        out,
        "| Tasks | Calls per task | Succeeded | Failed | Met a fault | Failed after a fault | Task success rate | Blast radius |"
    )?;
    writeln!(
        out,
        "|-------|----------------|-----------|--------|-------------|----------------------|-------------------|--------------|"
    )?;
    writeln!(
        out,
        "| {} | {:.2} | {} | {} | {} | {} | {:.4} | {:.4} |\n",
        k.tasks,
        k.calls_per_task,
        k.succeeded,
        k.failed,
        k.met_fault,
        k.failed_after_fault,
        k.success_rate,
        k.blast_radius
    )?;
    if run.not_started > 0 {
        writeln!(
            out,
            "**Not started**: {} calls were due while every in-flight slot of their client was busy.\n",
            run.not_started
        )?;
    }
    write_sparkline(out, run)?;
    write_head_of_line(out, &run.head_of_line)
}

/// Latency's two parts; only the scenario's own client knows them (a live proxy session does not).
/// The MCP tasks per tool, when calls were answered with tasks.
fn write_mcp_tasks(out: &mut String, tasks: &[McpTaskFigures]) -> std::fmt::Result {
    if tasks.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "**MCP tasks** (by the tool whose call made them; each counted once, by the first end the client was \
         told; lost: \"not found\" before any end):\n"
    )?;
    writeln!(
        out,
        "| Tool | Created | Completed | Failed | Cancelled | Lost | Still running |"
    )?;
    writeln!(
        out,
        "|------|---------|-----------|--------|-----------|------|---------------|"
    )?;
    for t in tasks {
        let ended = t.completed + t.failed + t.cancelled + t.lost;
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            t.tool,
            t.created,
            t.completed,
            t.failed,
            t.cancelled,
            t.lost,
            t.created.saturating_sub(ended)
        )?;
    }
    writeln!(out)
}

fn write_queueing_and_service(out: &mut String, rows: &[ToolFigures]) -> std::fmt::Result {
    if rows
        .iter()
        .all(|t| t.queueing.calls == 0 && t.service.calls == 0)
    {
        return Ok(());
    }
    writeln!(
        out,
        "**Queueing and service** (ms; the latency's two parts: queueing delay from when each call was due to when \
         it was sent, all of it for a call that could not start; service time from when it was sent to its answer \
         or cancel):\n"
    )?;
    writeln!(
        out,
        "| Tool | Scheduled calls | Queueing p50 | Queueing p95 | Queueing p99 | Queueing max | Sent calls | Service p50 | Service p95 | Service p99 | Service max |"
    )?;
    writeln!(
        out,
        "|------|-----------------|--------------|--------------|--------------|--------------|------------|-------------|-------------|-------------|-------------|"
    )?;
    for t in rows {
        writeln!(
            out,
            "| {} | {} | {} |",
            t.tool,
            latency_cells_with_max(&t.queueing),
            latency_cells_with_max(&t.service)
        )?;
    }
    writeln!(out)
}

fn write_head_of_line(out: &mut String, hol: &HeadOfLine) -> std::fmt::Result {
    writeln!(out, "**Head-of-line blocking**: {}\n", hol.verdict)?;
    if hol.tools.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "| Tool | Behind a slower call, same session | Same p50 | Same p95 | Same p99 | Behind one on another session only | Other p50 | Other p95 | Other p99 | Clear | Clear p50 | Clear p95 | Clear p99 | Ratio same | Ratio other |"
    )?;
    writeln!(
        out,
        "|------|------|-----|-----|-----|------|-----|-----|-----|-------|-----|-----|-----|------|------|"
    )?;
    let ratio = |r: Option<f64>| r.map_or_else(|| "-".to_owned(), |r| format!("{r:.4}"));
    for t in &hol.tools {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            t.tool,
            latency_cells(&t.behind_same_session),
            latency_cells(&t.behind_other_session),
            latency_cells(&t.clear),
            ratio(t.same_session_ratio),
            ratio(t.other_session_ratio)
        )?;
    }
    writeln!(
        out,
        "\n_A call is behind a slower call when, at its start, a call of another tool whose p50 is more than {SLOWER_FACTOR}× its own tool's was in flight; \
ratios are p50 behind / p50 clear, judged with at least {MIN_CALLS} calls in each group; blocking is called from {BLOCKED_RATIO}× and {BLOCKED_SHARE} of the slower tool's p50 longer._\n"
    )
}

fn write_sparkline(out: &mut String, run: &ChaosFigures) -> std::fmt::Result {
    let Some((low, high)) =
        crate::report::latency_scale(run.per_second.iter().map(|s| (s.p50_ms, s.p95_ms)))
    else {
        return Ok(());
    };
    let failed: Vec<String> = run
        .per_second
        .iter()
        .map(|s| s.errors.to_string())
        .collect();
    writeln!(
        out,
        "**Latency per second** (one block per second, shared scale {low:.2}ms ▁ … █ {high:.2}ms; failed calls per second: {}):\n",
        failed.join(" ")
    )?;
    writeln!(out, "```text")?;
    writeln!(out, "p50 {}", run.sparkline_p50)?;
    writeln!(out, "p95 {}", run.sparkline_p95)?;
    writeln!(out, "```\n")
}

/// The verdicts first: what a team acts on.
fn write_judgement(out: &mut String, judgement: &Judgement) -> std::fmt::Result {
    writeln!(out, "**Judgement**: {}\n", judgement.verdict)?;
    if judgement.failures == 0 {
        return Ok(());
    }
    for tool in &judgement.tools {
        writeln!(out, "- {}", tool.sentence)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "| Tool | Annotations | Failures | Retried | Retry wait mean (ms) | Retry wait min (ms) | Cancelled | Called another tool | Gave up | Recovered calls | Unrecovered calls | Runaways | Max attempts | Duplicate writes | Harmless retries | Retry-After honoured |"
    )?;
    writeln!(
        out,
        "|------|-------------|----------|---------|----------------------|---------------------|-----------|---------------------|---------|-----------------|-------------------|----------|--------------|------------------|------------------|----------------------|"
    )?;
    for t in &judgement.tools {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} of {} |",
            t.tool,
            t.hints.describe(),
            t.failures,
            t.retried,
            opt_ms(t.retry_wait_mean_ms),
            opt_ms(t.retry_wait_min_ms),
            t.cancelled,
            t.called_another_tool,
            t.gave_up,
            t.recovered_calls,
            t.unrecovered_calls,
            t.runaways,
            t.max_attempts,
            t.duplicate_writes,
            t.harmless_retries,
            t.retry_after_honoured,
            t.retry_after_asked
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "**After each failure** (the first {MAX_FOLLOW_UPS}, in time order; ms from the run's start, and from the failure's end to the next call):\n"
    )?;
    writeln!(
        out,
        "| Start (ms) | Tool | Fault | Outcome | Next | After (ms) | Retry-After (ms) |"
    )?;
    writeln!(
        out,
        "|------------|------|-------|---------|------|------------|------------------|"
    )?;
    for f in &judgement.follow_ups {
        let next = match (&f.next_tool, f.next) {
            (Some(tool), NextStep::Cancelled) => format!("cancelled, then called `{tool}`"),
            (Some(tool), _) => format!("{} `{tool}`", f.next.label()),
            (None, _) => f.next.label().to_owned(),
        };
        writeln!(
            out,
            "| {:.2} | {} | {} | {} | {} | {} | {} |",
            f.start_ms,
            f.tool,
            f.fault.as_deref().unwrap_or("-"),
            f.outcome,
            next,
            opt_ms(f.after_ms),
            opt_ms(f.retry_after_ms)
        )?;
    }
    writeln!(
        out,
        "\n_A duplicate write is a retry of an attempt the server had received and whose outcome the client did not get, \
of a tool neither read-only nor idempotent by its annotations (an absent hint counts as false); the same retry of a \
read-only or idempotent tool is harmless. Retry-After is honoured when the retry came at least the wait asked \
(`retryAfterSeconds`, or an HTTP `Retry-After`) after the answer, less {RETRY_AFTER_SLACK_MS} ms. A run handles its failures well with no \
runaway, no duplicate write and no ignored Retry-After._\n"
    )
}

/// PASSED or FAILED first, then each gate.
fn write_gates(out: &mut String, gates: &GateReport) -> std::fmt::Result {
    writeln!(out, "**Gates: {}**\n", gates.summary())?;
    writeln!(out, "| Gate | Allowed | Measured | Result |")?;
    writeln!(out, "|------|---------|----------|--------|")?;
    for g in &gates.gates {
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            g.gate,
            g.limit,
            g.measured,
            if g.passed { "PASSED" } else { "FAILED" }
        )?;
    }
    writeln!(out)
}

/// The sessions' figures alone, as [`render`] shows them.
pub fn render_sessions(sessions: &SessionsFigures) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_sessions(&mut out, sessions);
    out
}

/// k sessions of the plan: the share that handled every failure well, and pass^j.
fn write_sessions(out: &mut String, sessions: &SessionsFigures) -> std::fmt::Result {
    writeln!(
        out,
        "**Sessions**: {} of {} handled every failure well (no runaway, no duplicate write, Retry-After honoured).\n",
        sessions.handled_well, sessions.sessions
    )?;
    writeln!(out, "| Session | Judgement |")?;
    writeln!(out, "|---------|-----------|")?;
    for (i, verdict) in sessions.verdicts.iter().enumerate() {
        writeln!(out, "| {} | {} |", i + 1, verdict.replace('|', "\\|"))?;
    }
    writeln!(out)?;
    let header: Vec<String> = sessions
        .pass
        .iter()
        .map(|p| format!("pass^{}", p.j))
        .collect();
    writeln!(out, "| {} |", header.join(" | "))?;
    writeln!(out, "|{}", "---|".repeat(header.len()))?;
    let values: Vec<String> = sessions
        .pass
        .iter()
        .map(|p| format!("{:.4}", p.pass))
        .collect();
    writeln!(out, "| {} |\n", values.join(" | "))?;
    writeln!(
        out,
        "_pass^j = C(c, j) / C(k, j) for c of k sessions handled well: the chance that j sessions drawn from them all were._\n"
    )
}
