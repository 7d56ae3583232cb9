//! The scan from start to end: the server reached once (again after a crash), its tools listed and chosen,
//! the phases in order within the scan's time, the verdict, and the files written.

use std::{
    path::Path,
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{
    Phase, ScanError,
    calls::{Call, Reply, call},
    cases, contract, faults,
    finding::{self, Finding, Kind, Severity},
    guide, hygiene, load,
    policy::Policy,
    report::{LeftOut, PhaseRun, ScanReport, ToolFigures},
    spec::ScanSpec,
    verdict::{self, Evidence},
};
use crate::{
    load::LoadProgress,
    mcp_chaos::{Connection, ServerUnderTest},
    mcp_proxy::plan::Plan,
    mcp_wire::client::Answer,
};

/// The most tools a listing may hold before the scan stops reading it.
const MAX_LISTED: usize = 100_000;
/// How long the handshake and each page of the listing may take.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// A tool whose baseline p50 is at least this is checked for holding up other calls.
const SLOW_TOOL_MS: f64 = 20.0;

/// The server, reached again after a crash.
struct Target<'a> {
    server: &'a ServerUnderTest,
    connection: Option<Connection>,
    cancel: &'a CancellationToken,
    reconnects: u32,
}

impl Target<'_> {
    async fn client(&mut self) -> Result<&Connection, ScanError> {
        if self.connection.is_none() {
            self.reconnects += 1;
            self.connection =
                Some(Connection::open(self.server, Plan::default(), self.cancel).await?);
        }
        self.connection.as_ref().ok_or(ScanError::Cancelled)
    }

    /// After a call the session ended under: the next call opens a new one.
    async fn lost(&mut self) {
        if let Some(connection) = self.connection.take() {
            connection.close().await;
        }
    }
}

/// A tool chosen for calls: its listing and valid arguments.
struct Chosen {
    name: String,
    listing: Value,
    arguments: Value,
    figures: ToolFigures,
}

pub async fn run(
    spec: &ScanSpec,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<ScanReport, ScanError> {
    let started = Instant::now();
    let started_at = now();
    let deadline = started + spec.scan_timeout;
    let policy = match &spec.policy {
        Some(path) => Policy::load(path)?,
        None => Policy::builtin(),
    };
    let server_line = spec.server.line();
    let previous = match &spec.previous {
        Some(path) => Some(guide::read_previous(path, &server_line)?),
        None => None,
    };
    for path in [&spec.guide, &spec.result, &spec.junit]
        .into_iter()
        .flatten()
    {
        check_writable(path)?;
    }
    let reproduce = |tool: &str, phase: Phase| reproduce_line(spec, tool, phase);

    let opened = tokio::time::timeout(
        spec.scan_timeout.min(START_TIMEOUT * 2),
        Connection::open(&spec.server, Plan::default(), cancel),
    )
    .await
    .map_err(|_| ScanError::StartTimeout(spec.scan_timeout.min(START_TIMEOUT * 2)))??;
    let listed = list_tools(&opened).await?;
    let mut target = Target {
        server: &spec.server,
        connection: Some(opened),
        cancel,
        reconnects: 0,
    };
    if listed.is_empty() {
        target.lost().await;
        return Err(ScanError::NoTools);
    }
    let names: Vec<&str> = listed
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    for (index, wanted) in spec.tools.iter().enumerate() {
        if !names.contains(&wanted.as_str()) {
            target.lost().await;
            return Err(ScanError::UnknownTool {
                index,
                message: crate::fields::unknown_field(wanted, &names),
            });
        }
    }
    let mut left_out = Vec::new();
    let mut selected: Vec<&Value> = listed
        .iter()
        .filter(|t| {
            let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
            spec.tools.is_empty() || spec.tools.iter().any(|w| w == name)
        })
        .collect();
    if selected.len() > spec.max_tools {
        for tool in selected.split_off(spec.max_tools) {
            left_out.push(LeftOut {
                tool: tool_name(tool).to_owned(),
                reason: format!("beyond `max_tools` ({})", spec.max_tools),
            });
        }
    }

    let mut findings: Vec<Finding> = Vec::new();
    let mut phases = Vec::new();
    let mut calls_made = 0u64;
    let mut stopped = None;

    // Hygiene: every selected tool, writes too (nothing is called).
    if spec.runs(Phase::Hygiene) {
        let at = Instant::now();
        for tool in &selected {
            findings.extend(hygiene::check(
                tool,
                &reproduce(tool_name(tool), Phase::Hygiene),
            ));
        }
        phases.push(ran(Phase::Hygiene, 0, at, None));
    }

    // The tools the calling phases may call.
    let mut chosen = Vec::new();
    for tool in &selected {
        let name = tool_name(tool).to_owned();
        let read_only = tool
            .get("annotations")
            .and_then(|a| a.get("readOnlyHint"))
            .and_then(Value::as_bool)
            == Some(true);
        if !read_only && !spec.allow_writes {
            left_out.push(LeftOut {
                tool: name,
                reason: "its annotations do not say read-only (readOnlyHint true): not called, for it may \
                         write; pass `allow_writes` to include it"
                    .to_owned(),
            });
            continue;
        }
        let (arguments, arguments_from) = match spec.arguments.get(&name) {
            Some(given) => (given.clone(), "given"),
            None => {
                let schema = tool.get("inputSchema").cloned().unwrap_or(json!({}));
                (
                    super::schema::example(&schema, &schema, 0),
                    "built from the input schema",
                )
            }
        };
        chosen.push(Chosen {
            figures: ToolFigures {
                name: name.clone(),
                read_only,
                arguments_from: arguments_from.to_owned(),
                baseline: None,
                saturation: None,
                contract_cases: 0,
            },
            name,
            listing: (*tool).clone(),
            arguments,
        });
    }
    for name in spec.arguments.keys() {
        if !names.contains(&name.as_str()) {
            target.lost().await;
            return Err(ScanError::Arguments(crate::fields::unknown_field(
                name, &names,
            )));
        }
    }
    let verify_tool = match &spec.verify {
        Some(faults::Verify::Tool { tool, .. }) => Some(tool.clone()),
        _ => None,
    };
    if let Some(tool) = &verify_tool
        && !names.contains(&tool.as_str())
    {
        target.lost().await;
        return Err(ScanError::Verify(format!(
            "verify.tool: {}",
            crate::fields::unknown_field(tool, &names)
        )));
    }

    // Baseline.
    let mut output_checked = 0u64;
    let mut output_broken = 0u64;
    if spec.runs(Phase::Baseline) {
        let at = Instant::now();
        let mut count = 0;
        progress.set_note("baseline".to_owned());
        for tool in &mut chosen {
            if Instant::now() >= deadline || cancel.is_cancelled() {
                stopped.get_or_insert_with(|| stop_reason(spec, cancel, Phase::Baseline));
                break;
            }
            let connection = target.client().await?;
            let schemas = connection.schemas().clone();
            let made = load::baseline(
                connection.client(),
                &schemas,
                &tool.name,
                &tool.arguments,
                spec.samples,
                spec.call_timeout,
                deadline,
            )
            .await;
            if (made.calls.len() as u64) < spec.samples && Instant::now() >= deadline {
                stopped.get_or_insert_with(|| stop_reason(spec, cancel, Phase::Baseline));
            }
            count += made.calls.len() as u64;
            progress
                .completed
                .fetch_add(made.calls.len() as u64, Ordering::Relaxed);
            output_checked += made.checked_against_schema;
            output_broken += made.against_schema.len() as u64;
            let reproduce = reproduce(&tool.name, Phase::Baseline);
            if let Some(first) = made.against_schema.first() {
                let why = match &first.reply {
                    Reply::Result(result) => schemas.explain(&tool.name, result),
                    _ => None,
                };
                findings.push(
                    Finding::new(Phase::Baseline, Kind::OutputAgainstSchema, Severity::Major, Some(&tool.name), None)
                        .title(format!(
                            "`{}` answers against its own outputSchema ({} of {} results){}",
                            tool.name,
                            made.against_schema.len(),
                            made.checked_against_schema,
                            why.as_ref().map_or(String::new(), |w| format!(": {w}"))
                        ))
                        .fix("Make `structuredContent` match the declared outputSchema (types, required members), or correct the schema: clients that validate results reject these answers.")
                        .evidence(&first.params, first.reply.describe(spec.call_timeout))
                        .with_reproduce(&reproduce),
                );
            }
            findings.extend(failing_calls(
                &tool.name,
                &made.calls,
                &tool.figures.arguments_from,
                spec.call_timeout,
                &reproduce,
            ));
            if made.calls.iter().any(|c| matches!(c.reply, Reply::Closed)) {
                target.lost().await;
            }
            tool.figures.baseline = Some(load::Latency::of(&made.calls));
        }
        phases.push(ran(Phase::Baseline, count, at, None));
    }

    // Saturation, then head-of-line blocking.
    if spec.runs(Phase::Saturation) {
        let at = Instant::now();
        let mut count = 0;
        progress.set_note("saturation".to_owned());
        let mut skipped = Vec::new();
        for tool in &mut chosen {
            if Instant::now() >= deadline || cancel.is_cancelled() {
                stopped.get_or_insert_with(|| stop_reason(spec, cancel, Phase::Saturation));
                break;
            }
            if tool.figures.baseline.as_ref().is_some_and(|b| b.ok == 0) {
                skipped.push(tool.name.clone());
                continue;
            }
            let client = target.client().await?.client().clone();
            let measured = load::saturation(
                &client,
                &tool.name,
                &tool.arguments,
                spec.max_in_flight,
                spec.call_timeout,
                deadline,
            )
            .await;
            let cut = !measured.plateau
                && measured
                    .steps
                    .last()
                    .is_some_and(|s| s.in_flight < spec.max_in_flight)
                && Instant::now() >= deadline;
            if cut {
                stopped.get_or_insert_with(|| stop_reason(spec, cancel, Phase::Saturation));
            }
            let made: u64 = measured.steps.iter().map(|s| s.calls).sum();
            count += made;
            progress.completed.fetch_add(made, Ordering::Relaxed);
            let first_p50 = measured.steps.first().and_then(|s| s.p50_ms).unwrap_or(0.0);
            if measured.plateau
                && measured.peak_in_flight < policy.min_in_flight
                && first_p50 >= verdict::SLOW_ENOUGH_MS
            {
                let last = measured.steps.last();
                findings.push(
                    Finding::new(Phase::Saturation, Kind::Saturates, Severity::Major, Some(&tool.name), None)
                        .title(format!(
                            "`{}` stops gaining beyond {} in flight ({:.0} calls/s); past it, calls queue (p95 {} → {} ms at {} in flight)",
                            tool.name,
                            measured.peak_in_flight,
                            measured.peak_goodput,
                            fmt_ms(measured.steps.first().and_then(|s| s.p95_ms)),
                            fmt_ms(last.and_then(|s| s.p95_ms)),
                            last.map_or(0, |s| s.in_flight),
                        ))
                        .fix(format!(
                            "Find what lets only {} calls of `{}` run at once (a pool, a semaphore, a lock, a single worker) and raise it, or make each call cheaper; the policy expects at least {} in flight.",
                            measured.peak_in_flight, tool.name, policy.min_in_flight
                        ))
                        .with_reproduce(&reproduce(&tool.name, Phase::Saturation)),
                );
            }
            tool.figures.saturation = Some(measured);
        }
        // A slow tool's call in flight while the fastest other tool is called.
        let p50 = |t: &Chosen| t.figures.baseline.as_ref().and_then(|b| b.p50_ms);
        let fastest = chosen
            .iter()
            .filter_map(|t| Some((t, p50(t)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        for slow in &chosen {
            let (Some(slow_p50), Some((fast, fast_p50))) = (p50(slow), fastest) else {
                continue;
            };
            if slow_p50 < SLOW_TOOL_MS || fast.name == slow.name || Instant::now() >= deadline {
                continue;
            }
            let client = target.client().await?.client().clone();
            let lead = Duration::from_secs_f64((slow_p50 / 4.0).min(20.0) / 1000.0);
            let held = load::held_up(
                &client,
                (&slow.name, &slow.arguments),
                (&fast.name, &fast.arguments),
                lead,
                spec.call_timeout,
            )
            .await;
            count += 1 + held.during.len() as u64;
            let waited = held.during.iter().map(|c| c.elapsed_ms).fold(0.0, f64::max);
            let bound = (5.0 * fast_p50).max(0.5 * slow_p50).max(fast_p50 + 10.0);
            if waited >= bound {
                let worst = held
                    .during
                    .iter()
                    .max_by(|a, b| a.elapsed_ms.total_cmp(&b.elapsed_ms));
                let mut found = Finding::new(Phase::Saturation, Kind::HeadOfLine, Severity::Major, Some(&slow.name), None)
                    .title(format!(
                        "while one call of `{}` runs ({:.0} ms), a call of `{}` waits: {:.0} ms against {:.1} ms alone",
                        slow.name, held.slow.elapsed_ms, fast.name, waited, fast_p50
                    ))
                    .fix(format!(
                        "Let other calls run while `{}` works: do not hold a server-wide lock or block the event loop for the whole call (move the work to a worker, narrow the lock to the shared state it protects).",
                        slow.name
                    ))
                    .with_reproduce(&reproduce(&slow.name, Phase::Saturation));
                if let Some(worst) = worst {
                    found = found.evidence(
                        &worst.params,
                        format!(
                            "answered after {:.0} ms, while `{}` was in flight",
                            worst.elapsed_ms, slow.name
                        ),
                    );
                }
                findings.push(found);
            }
        }
        let note = (!skipped.is_empty()).then(|| {
            format!(
                "not measured (no baseline call succeeded): {}",
                skipped.join(", ")
            )
        });
        phases.push(ran(Phase::Saturation, count, at, note));
    }

    // Contract.
    let mut tally = None;
    if spec.runs(Phase::Contract) {
        let at = Instant::now();
        let mut count = 0;
        progress.set_note("contract".to_owned());
        let mut cases_tally = contract::ContractTally::default();
        'tools: for tool in &mut chosen {
            let schema = tool
                .listing
                .get("inputSchema")
                .cloned()
                .unwrap_or(json!({}));
            let base: Map<String, Value> = tool.arguments.as_object().cloned().unwrap_or_default();
            let reproduce = reproduce(&tool.name, Phase::Contract);
            for case in cases::cases(&schema, &base) {
                if Instant::now() >= deadline || cancel.is_cancelled() {
                    stopped.get_or_insert_with(|| stop_reason(spec, cancel, Phase::Contract));
                    break 'tools;
                }
                let client = target.client().await?.client().clone();
                let made: Call =
                    call(&client, &tool.name, &case.arguments, spec.call_timeout).await;
                count += 1;
                progress.completed.fetch_add(1, Ordering::Relaxed);
                tool.figures.contract_cases += 1;
                let (outcome, found) =
                    contract::judge(&tool.name, &case, &made, spec.call_timeout, &reproduce);
                cases_tally.add(&case, outcome);
                findings.extend(found);
                if matches!(made.reply, Reply::Closed | Reply::Hang) {
                    // A crashed server, or one that may still be stuck on the case: the next call gets a new one.
                    target.lost().await;
                }
            }
        }
        tally = Some(cases_tally);
        phases.push(ran(Phase::Contract, count, at, None));
    }
    // Faults: replies lost through the proxy, each call retried within the scan's budget.
    let mut fault_figures = Vec::new();
    if spec.runs(Phase::Faults) {
        let at = Instant::now();
        let mut count = 0;
        progress.set_note("faults".to_owned());
        target.lost().await;
        let faulted: Vec<&Chosen> = chosen
            .iter()
            .filter(|t| Some(&t.name) != verify_tool.as_ref())
            .filter(|t| t.figures.baseline.as_ref().is_none_or(|b| b.ok > 0))
            .collect();
        let names: Vec<String> = faulted.iter().map(|t| t.name.clone()).collect();
        let plan = faults::plan(&names).map_err(ScanError::Verify)?;
        let connection = Connection::open(&spec.server, plan, cancel).await?;
        let mut note = Vec::new();
        for tool in faulted {
            if Instant::now() >= deadline || cancel.is_cancelled() {
                stopped.get_or_insert_with(|| stop_reason(spec, cancel, Phase::Faults));
                break;
            }
            let verify = (!tool.figures.read_only)
                .then_some(spec.verify.as_ref())
                .flatten();
            if !tool.figures.read_only && verify.is_none() {
                note.push(format!(
                    "`{}` writes: give `verify` or `verify_command` to check its effects",
                    tool.name
                ));
            }
            let (figures, found) = faults::run_tool(
                connection.client(),
                (&tool.name, &tool.arguments),
                spec.fault_calls,
                verify,
                (spec.call_timeout, deadline),
                &reproduce(&tool.name, Phase::Faults),
            )
            .await
            .map_err(ScanError::Verify)?;
            if figures.logical_calls < spec.fault_calls {
                stopped.get_or_insert_with(|| stop_reason(spec, cancel, Phase::Faults));
            }
            count += figures.attempts + 2 * figures.verified;
            progress
                .completed
                .fetch_add(figures.attempts, Ordering::Relaxed);
            findings.extend(found);
            fault_figures.push(figures);
        }
        connection.close().await;
        let note = format!(
            "{:.0} % of replies lost (seed {}), each call retried up to {} times: the scan's budget{}",
            faults::LOST_REPLY_PROBABILITY * 100.0,
            faults::SEED,
            faults::RETRIES,
            if note.is_empty() {
                String::new()
            } else {
                format!("; {}", note.join("; "))
            }
        );
        phases.push(ran(Phase::Faults, count, at, Some(note)));
    }
    for phase in Phase::ALL {
        if !spec.runs(phase) {
            phases.push(PhaseRun {
                phase,
                ran: false,
                calls: 0,
                seconds: 0.0,
                note: Some("not asked for (`phases`)".to_owned()),
            });
        }
    }
    phases.sort_by_key(|p| p.phase);
    calls_made += phases.iter().map(|p| p.calls).sum::<u64>();
    target.lost().await;

    finding::sort(&mut findings);
    let tools: Vec<ToolFigures> = chosen.into_iter().map(|t| t.figures).collect();
    let verdict = verdict::judge(
        &policy,
        &Evidence {
            tools: selected.len(),
            findings: &findings,
            contract: tally.as_ref(),
            latency: tools
                .iter()
                .filter_map(|t| Some((t.name.as_str(), t.baseline.as_ref()?)))
                .collect(),
            saturation: tools
                .iter()
                .filter_map(|t| Some((t.name.as_str(), t.saturation.as_ref()?)))
                .collect(),
            output: spec
                .runs(Phase::Baseline)
                .then_some((output_checked, output_broken)),
            faults: spec.runs(Phase::Faults).then_some(fault_figures.as_slice()),
        },
    );
    let since_last = previous.as_ref().map(|p| guide::since(p, &findings));
    let report = ScanReport {
        schema_version: super::report::SCHEMA_VERSION,
        kind: super::report::KIND.to_owned(),
        server: server_line,
        started_at,
        ended_at: now(),
        seconds: started.elapsed().as_secs_f64(),
        calls: calls_made,
        tools_listed: listed.len(),
        tools,
        left_out,
        phases,
        contract: tally,
        faults: fault_figures,
        findings,
        verdict,
        since_last,
        stopped,
    };
    write_files(spec, &report)?;
    Ok(report)
}

/// Every tool of the server's listing, all pages.
async fn list_tools(connection: &Connection) -> Result<Vec<Value>, ScanError> {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (_, answer) = connection
            .client()
            .request("tools/list", params, START_TIMEOUT)
            .await;
        let result = match answer {
            Answer::Response(r) if r.get("result").is_some() => r["result"].clone(),
            Answer::Response(r) => {
                return Err(ScanError::Listing(format!(
                    "tools/list was refused: {}",
                    r.get("error").unwrap_or(&r)
                )));
            }
            Answer::TimedOut => {
                return Err(ScanError::Listing(format!(
                    "tools/list had no answer within {} s",
                    START_TIMEOUT.as_secs()
                )));
            }
            Answer::Closed => {
                return Err(ScanError::Listing(
                    "the session ended during tools/list".to_owned(),
                ));
            }
        };
        match result.get("tools") {
            Some(Value::Array(page)) => tools.extend(page.iter().cloned()),
            _ => {
                return Err(ScanError::Listing(format!(
                    "the tools/list result has no `tools` list: {}",
                    finding::shorten(&result.to_string(), 200)
                )));
            }
        }
        if tools.len() > MAX_LISTED {
            return Err(ScanError::Listing(format!(
                "the listing holds more than {MAX_LISTED} tools; scan some with `tools`"
            )));
        }
        cursor = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
        if cursor.is_none() {
            return Ok(tools);
        }
    }
}

fn tool_name(tool: &Value) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or("?")
}

/// The findings of a baseline whose calls crashed, hung, or (with arguments the caller gave) failed.
fn failing_calls(
    tool: &str,
    calls: &[Call],
    arguments_from: &str,
    timeout: Duration,
    reproduce: &str,
) -> Vec<Finding> {
    let mut found = Vec::new();
    let failed = |kind, severity, title: String, fix: &str, made: &Call| {
        Finding::new(Phase::Baseline, kind, severity, Some(tool), None)
            .title(title)
            .fix(fix)
            .evidence(&made.params, made.reply.describe(timeout))
            .with_reproduce(reproduce)
    };
    if let Some(made) = calls.iter().find(|c| matches!(c.reply, Reply::Closed) || matches!(&c.reply, Reply::Error { code, .. } if *code == super::calls::INTERNAL_ERROR)) {
        found.push(failed(Kind::Crash, Severity::Critical, format!("`{tool}` crashes on valid arguments"), "Find the failure in the handler (the evidence shows the call) and answer a result or a tool error instead.", made));
    }
    if let Some(made) = calls.iter().find(|c| matches!(c.reply, Reply::Hang)) {
        found.push(failed(
            Kind::Hang,
            Severity::Critical,
            format!(
                "`{tool}` does not answer valid arguments within {} ms",
                timeout.as_millis()
            ),
            "Bound the call's work and answer within the client's timeout, or run it as a task.",
            made,
        ));
    }
    let refused = calls.iter().filter(|c| c.reply.is_refusal()).count();
    if arguments_from == "given"
        && refused > 0
        && let Some(made) = calls.iter().find(|c| c.reply.is_refusal())
    {
        found.push(failed(Kind::CallsFail, Severity::Major, format!("`{tool}` fails {refused} of {} calls with the arguments given", calls.len()), "Make the tool succeed on the valid arguments the scan was given (or give the scan arguments the tool accepts).", made));
    }
    found
}

fn ran(phase: Phase, calls: u64, at: Instant, note: Option<String>) -> PhaseRun {
    PhaseRun {
        phase,
        ran: true,
        calls,
        seconds: at.elapsed().as_secs_f64(),
        note,
    }
}

fn stop_reason(spec: &ScanSpec, cancel: &CancellationToken, phase: Phase) -> String {
    if cancel.is_cancelled() {
        format!("cancelled during the {} phase", phase.name())
    } else {
        format!(
            "`scan_timeout` ({} s) reached during the {} phase",
            spec.scan_timeout.as_secs_f64(),
            phase.name()
        )
    }
}

fn fmt_ms(value: Option<f64>) -> String {
    value.map_or("n/a".to_owned(), |v| format!("{v:.0}"))
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The `fault mcp-scan` command line that runs `phase` on `tool` alone, quoted for a POSIX shell.
fn reproduce_line(spec: &ScanSpec, tool: &str, phase: Phase) -> String {
    let quote = |word: &str| {
        shlex::try_quote(word).map_or_else(|_| word.to_owned(), |quoted| quoted.into_owned())
    };
    let mut line = vec![
        "fault mcp-scan".to_owned(),
        format!("--tool {}", quote(tool)),
        format!("--phase {}", phase.name()),
    ];
    if let Some(given) = spec.arguments.get(tool) {
        line.push(format!(
            "--arguments {}",
            quote(&json!({ tool: given }).to_string())
        ));
    }
    match &spec.server {
        ServerUnderTest::Command(command) => {
            line.push("--".to_owned());
            line.push(quote(&command.program));
            line.extend(command.args.iter().map(|a| quote(a)));
        }
        ServerUnderTest::Url(server) => {
            line.push(format!("--url {}", quote(&server.url)));
            line.extend(server.headers.keys().map(|k| format!("--header '{k}: …'")));
        }
    }
    line.join(" ")
}

/// A file the scan will write: its directory must exist.
fn check_writable(path: &Path) -> Result<(), ScanError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if path.is_dir() {
        return Err(ScanError::Write {
            path: path.display().to_string(),
            error: "is a directory".to_owned(),
        });
    }
    match std::fs::metadata(parent) {
        Ok(meta) if meta.is_dir() && !meta.permissions().readonly() => Ok(()),
        Ok(_) => Err(ScanError::Write {
            path: path.display().to_string(),
            error: format!("{} is not a writable directory", parent.display()),
        }),
        Err(e) => Err(ScanError::Write {
            path: path.display().to_string(),
            error: format!("{}: {e}", parent.display()),
        }),
    }
}

fn write_files(spec: &ScanSpec, report: &ScanReport) -> Result<(), ScanError> {
    let write = |path: &Path, text: String| {
        std::fs::write(path, text).map_err(|e| ScanError::Write {
            path: path.display().to_string(),
            error: e.to_string(),
        })
    };
    if let Some(path) = &spec.result {
        let json = serde_json::to_string_pretty(report).map_err(|e| ScanError::Write {
            path: path.display().to_string(),
            error: e.to_string(),
        })?;
        write(path, json)?;
    }
    if let Some(path) = &spec.guide {
        write(path, guide::guide(report))?;
    }
    if let Some(path) = &spec.junit {
        write(path, guide::junit(report))?;
    }
    Ok(())
}
