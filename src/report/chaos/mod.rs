//! The MCP chaos report's data: every figure, per tool and overall, computed from [`CallRecord`]s. The
//! markdown ([`super::markdown`]) shows these same values, so the text and `structuredContent` agree.
//!
//! Definitions (stated in the report too):
//! - availability A = answered calls (a result, valid or not) / calls; correctness C = valid results /
//!   answered calls; effective availability A×C = valid results / calls;
//! - a retry is a further attempt of the same logical call; a call is a runaway when 3 or more attempts
//!   followed its first failure; a duplicate is a retry of a failed attempt the server had received;
//! - latency runs from when a call was due to its answer or cancel: queueing delay (due → sent) and service
//!   time (sent → answer or cancel);
//! - time to detect runs from a request to the client's cancel; time to recovery from a failed call to the
//!   next valid result of the same tool, in ms and in calls;
//! - a task fails when one of its logical calls ends (after retries) without a valid result; the blast
//!   radius is the share of tasks that met an injected fault and failed;
//! - the judgement ([`judgement`]) says what the client did after each failure and gives verdicts per tool
//!   and for the run, with the tools' annotations telling a duplicate write from a harmless retry.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub mod gates;
pub mod head_of_line;
pub mod judgement;
pub mod latency;
pub mod markdown;
pub mod mcp_tasks;
pub mod record;
pub mod sessions;
pub mod timeline;

use head_of_line::{HeadOfLine, head_of_line};
use judgement::{Judgement, judge};
pub use latency::LatencyFigures;
use latency::{latency, queueing, service};
use record::{CallOutcome, CallRecord, Hints, infer_logical};
use timeline::{CallTimeline, timeline};

pub use markdown::{render, render_sessions};

use super::{SecondFigures, latency_histogram, ms, quantile, ratio, record_ms, round2, sparklines};

/// Attempts after a first failure that make a runaway.
pub const RUNAWAY_ATTEMPTS: u32 = 3;

/// Whether a logical call of `attempts` attempts, the first failure at `first_failure` (0-based), ran away.
pub fn is_runaway(attempts: usize, first_failure: usize) -> bool {
    // Attempts after the first failure: attempts - first_failure - 1.
    attempts - first_failure > RUNAWAY_ATTEMPTS as usize
}

/// One fault of the plan.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PlannedFaultInfo {
    pub index: usize,
    #[serde(rename = "type")]
    pub fault_type: String,
    /// Tools (names or globs) it is limited to; empty means every tool.
    pub tools: Vec<String>,
    pub description: String,
}

/// The client policy the scenario tool drove calls with.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ClientPolicy {
    /// This long after a call was due (a retry: after its backoff), without an answer, the client sends
    /// `notifications/cancelled` and gives up.
    pub timeout_ms: u64,
    /// Further attempts after a failed one (error, isError, timeout, malformed answer).
    pub retries: u32,
    /// Wait before each retry.
    pub backoff_ms: u64,
    /// Logical calls in flight at once, per client.
    pub concurrency: u32,
    /// Client sessions driven at once.
    pub num_clients: u32,
    /// How calls were scheduled, e.g. "8 calls × 200 repeats".
    pub schedule: String,
}

/// Calls by what the client ended up with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChaosOutcomes {
    pub ok: u64,
    /// Tool results with `isError: true`.
    pub tool_error: u64,
    /// JSON-RPC errors.
    pub protocol_error: u64,
    /// No answer in time (the client cancelled, or none came).
    pub timeout: u64,
    /// A line that is not a JSON-RPC response came instead.
    pub malformed: u64,
    /// Results invalid against the tool's `outputSchema`.
    pub schema_invalid: u64,
    /// Calls due while every in-flight slot of their client was busy: never sent.
    pub not_started: u64,
}

/// What the client did after failures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientFigures {
    /// Attempts beyond the first of a logical call.
    pub retries: u64,
    /// Calls the client cancelled.
    pub cancels: u64,
    /// Time to detect: request → the client's cancel.
    pub detect_mean_ms: Option<f64>,
    pub detect_max_ms: Option<f64>,
    /// Failures followed by a valid result of the same tool.
    pub recoveries: u64,
    /// Failures never followed by one.
    pub unrecovered: u64,
    /// Time to recovery: from the failed call's start to the next valid result's end.
    pub recovery_mean_ms: Option<f64>,
    pub recovery_max_ms: Option<f64>,
    /// Calls of the tool from the failed call to that valid result.
    pub recovery_mean_calls: Option<f64>,
    pub recovery_max_calls: Option<u64>,
    /// Logical calls with 3 or more attempts after their first failure.
    pub runaway: u64,
    /// Retries of a failed attempt the server had received (it may have run twice).
    pub duplicates: u64,
}

/// Every figure of one tool, or of all tools together (`tool` = "(all)").
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ToolFigures {
    pub tool: String,
    /// Attempts the client made (every `tools/call`).
    pub calls: u64,
    /// Calls the client meant to make (retries excluded).
    pub logical_calls: u64,
    pub faults_injected: u64,
    /// Injected faults by type.
    pub faults_by_type: BTreeMap<String, u64>,
    pub outcomes: ChaosOutcomes,
    /// A: answered calls / calls (0..1).
    pub availability: f64,
    /// C: valid results / answered calls (0..1; 0 when nothing was answered).
    pub correctness: f64,
    /// A×C: valid results / calls.
    pub effective_availability: f64,
    /// Logical calls that ended with a valid result, after retries (0..1).
    pub success_after_retries: f64,
    pub latency: LatencyFigures,
    /// Calls no fault was injected into.
    pub latency_clean: LatencyFigures,
    /// Calls a fault was injected into.
    pub latency_injected: LatencyFigures,
    /// Of the latency, the queueing delay: from when each call was due to when it was sent (a call that could
    /// not start waited its whole timeout). Only the scenario's own client knows it: none in a live proxy
    /// session.
    #[serde(default)]
    pub queueing: LatencyFigures,
    /// Of the latency, the service time: from when each call was sent to its answer or cancel (calls sent by
    /// the scenario's client).
    #[serde(default)]
    pub service: LatencyFigures,
    pub client: ClientFigures,
}

/// Task-level figures (a task is a `task` id of `calls`, or a logical call of its own).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskFigures {
    pub tasks: u64,
    /// Attempts per task, retries included.
    pub calls_per_task: f64,
    pub succeeded: u64,
    pub failed: u64,
    /// Tasks with at least one injected fault.
    pub met_fault: u64,
    pub failed_after_fault: u64,
    /// succeeded / tasks (0..1).
    pub success_rate: f64,
    /// failed_after_fault / tasks (0..1).
    pub blast_radius: f64,
}

/// Every figure of one run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChaosFigures {
    pub duration_ms: f64,
    pub overall: ToolFigures,
    pub tools: Vec<ToolFigures>,
    pub tasks: TaskFigures,
    /// Calls per second of the run: `requests` are calls started that second, `errors` those that failed.
    pub per_second: Vec<SecondFigures>,
    /// p50 and p95 per second as Unicode blocks, on one scale.
    pub sparkline_p50: String,
    pub sparkline_p95: String,
    /// Calls that were due while every in-flight slot of their client was busy, so never started
    /// (open-model schedules only).
    pub not_started: u64,
    /// Whether slow calls delayed others.
    pub head_of_line: HeadOfLine,
    /// Every call as a mark per tool, coloured by how it ended (bounded: the most severe call of each tool
    /// per column of the run).
    #[serde(default)]
    pub timeline: CallTimeline,
    /// How the client handled the failures: what it did after each, a verdict per tool and for the run.
    #[serde(default)]
    pub judgement: Judgement,
    /// How the tasks of the MCP Tasks extension ended, per tool whose call made them (a proxy session's; empty
    /// when no call was answered with a task).
    #[serde(default)]
    pub mcp_tasks: Vec<mcp_tasks::McpTaskFigures>,
}

/// One row of the with/without comparison.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ComparisonRow {
    /// "Baseline (no faults)" or "With faults".
    pub run: String,
    pub availability: f64,
    pub correctness: f64,
    pub effective_availability: f64,
    pub task_success_rate: f64,
    pub blast_radius: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub retries: u64,
}

/// The version of the MCP chaos result's format ([`ChaosReport`] as JSON, `docs/src/schemas/chaos-result.json`):
/// raised when a field changes meaning or a required one is added.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole report; the markdown is rendered from it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChaosReport {
    /// The version of this format (1).
    pub schema_version: u32,
    pub title: String,
    pub started_at: String,
    pub ended_at: String,
    /// The server's command line.
    pub server: String,
    pub seed: u64,
    pub faults: Vec<PlannedFaultInfo>,
    /// The driving client's policy (absent for a live proxy session, where the client is someone else's).
    pub client: Option<ClientPolicy>,
    /// The run with the faults.
    pub run: ChaosFigures,
    /// The same calls without faults, when `baseline` was asked for.
    pub baseline: Option<ChaosFigures>,
    pub comparison: Option<Vec<ComparisonRow>>,
    /// The run's gates, PASSED or FAILED each, when any were given.
    #[serde(default)]
    pub gates: Option<gates::GateReport>,
    /// With more than one session of the plan: how many handled their failures well, and pass^k. The
    /// report's figures are the first session's.
    #[serde(default)]
    pub sessions: Option<sessions::SessionsFigures>,
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| round2(values.iter().sum::<f64>() / values.len() as f64))
}

fn max(values: &[f64]) -> Option<f64> {
    values.iter().copied().reduce(f64::max).map(round2)
}

/// The logical index of a record (records always have one once [`figures`] has inferred them).
fn logical_index(r: &CallRecord) -> u64 {
    r.logical.as_ref().map_or(0, |l| l.index)
}

fn attempt(r: &CallRecord) -> u32 {
    r.logical.as_ref().map_or(1, |l| l.attempt)
}

/// Recovery episodes of one tool's calls, in start order: (calls, ms) per recovery, and the unrecovered.
fn recoveries(calls: &[&CallRecord]) -> (Vec<(u64, f64)>, u64) {
    let mut done = Vec::new();
    let mut open: Option<(usize, f64)> = None;
    for (position, r) in calls.iter().enumerate() {
        match (r.outcome, open) {
            (CallOutcome::Ok, Some((from, start))) => {
                done.push(((position - from) as u64, r.start_ms + r.latency_ms - start));
                open = None;
            }
            (CallOutcome::Ok, None) => {}
            (_, None) => open = Some((position, r.start_ms)),
            (_, Some(_)) => {}
        }
    }
    (done, u64::from(open.is_some()))
}

fn tool_figures(tool: &str, records: &[&CallRecord]) -> ToolFigures {
    let mut outcomes = ChaosOutcomes::default();
    let mut faults_by_type = BTreeMap::new();
    for r in records {
        let slot = match r.outcome {
            CallOutcome::Ok => &mut outcomes.ok,
            CallOutcome::ToolError => &mut outcomes.tool_error,
            CallOutcome::ProtocolError => &mut outcomes.protocol_error,
            CallOutcome::Timeout => &mut outcomes.timeout,
            CallOutcome::Malformed => &mut outcomes.malformed,
            CallOutcome::SchemaInvalid => &mut outcomes.schema_invalid,
            CallOutcome::NotStarted => &mut outcomes.not_started,
        };
        *slot += 1;
        if let Some(fault) = &r.fault {
            *faults_by_type.entry(fault.clone()).or_insert(0) += 1;
        }
    }
    let calls = records.len() as u64;
    let answered = outcomes.ok + outcomes.schema_invalid;

    // Attempts of each logical call, in order.
    let mut chains: BTreeMap<u64, Vec<&CallRecord>> = BTreeMap::new();
    for r in records {
        chains.entry(logical_index(r)).or_default().push(r);
    }
    let mut client = ClientFigures::default();
    let mut succeeded = 0;
    for chain in chains.values_mut() {
        chain.sort_by_key(|r| attempt(r));
        if chain.last().is_some_and(|r| r.outcome == CallOutcome::Ok) {
            succeeded += 1;
        }
        client.retries += chain.len().saturating_sub(1) as u64;
        client.duplicates += chain
            .windows(2)
            .filter(|pair| pair[0].outcome != CallOutcome::Ok && pair[0].reached_server)
            .count() as u64;
        if let Some(first_failure) = chain.iter().position(|r| r.outcome != CallOutcome::Ok)
            && is_runaway(chain.len(), first_failure)
        {
            client.runaway += 1;
        }
    }
    let detects: Vec<f64> = records.iter().filter_map(|r| r.cancel_after_ms).collect();
    client.cancels = detects.len() as u64;
    client.detect_mean_ms = mean(&detects);
    client.detect_max_ms = max(&detects);

    // Recovery is per tool: episodes of each tool, pooled for the overall row.
    let mut by_tool: BTreeMap<&str, Vec<&CallRecord>> = BTreeMap::new();
    for r in records {
        by_tool.entry(r.tool.as_str()).or_default().push(r);
    }
    let mut episodes = Vec::new();
    for calls in by_tool.values_mut() {
        calls.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
        let (done, open) = recoveries(calls);
        episodes.extend(done);
        client.unrecovered += open;
    }
    client.recoveries = episodes.len() as u64;
    let episode_ms: Vec<f64> = episodes.iter().map(|(_, ms)| *ms).collect();
    let episode_calls: Vec<f64> = episodes.iter().map(|(calls, _)| *calls as f64).collect();
    client.recovery_mean_ms = mean(&episode_ms);
    client.recovery_max_ms = max(&episode_ms);
    client.recovery_mean_calls = mean(&episode_calls);
    client.recovery_max_calls = episodes.iter().map(|(calls, _)| *calls).max();

    ToolFigures {
        tool: tool.to_owned(),
        calls,
        logical_calls: chains.len() as u64,
        faults_injected: faults_by_type.values().sum(),
        faults_by_type,
        availability: ratio(answered, calls),
        correctness: ratio(outcomes.ok, answered),
        effective_availability: ratio(outcomes.ok, calls),
        success_after_retries: ratio(succeeded, chains.len() as u64),
        outcomes,
        latency: latency(records.iter().copied()),
        latency_clean: latency(records.iter().copied().filter(|r| r.fault.is_none())),
        latency_injected: latency(records.iter().copied().filter(|r| r.fault.is_some())),
        queueing: queueing(records.iter().copied()),
        service: service(records.iter().copied()),
        client,
    }
}

fn task_figures(records: &[CallRecord]) -> TaskFigures {
    // task → logical call → (last attempt, its outcome); task → met a fault; task → attempts
    let mut finals: HashMap<&str, HashMap<u64, (u32, CallOutcome)>> = HashMap::new();
    let mut met: HashMap<&str, bool> = HashMap::new();
    for r in records {
        let Some(logical) = &r.logical else { continue };
        let task = logical.task.as_str();
        let last = finals
            .entry(task)
            .or_default()
            .entry(logical.index)
            .or_insert((0, r.outcome));
        if logical.attempt >= last.0 {
            *last = (logical.attempt, r.outcome);
        }
        *met.entry(task).or_insert(false) |= r.fault.is_some();
    }
    let tasks = finals.len() as u64;
    let mut figures = TaskFigures {
        tasks,
        calls_per_task: if tasks == 0 {
            0.0
        } else {
            round2(records.len() as f64 / tasks as f64)
        },
        ..TaskFigures::default()
    };
    for (task, calls) in &finals {
        let ok = calls.values().all(|(_, o)| *o == CallOutcome::Ok);
        let met_fault = met.get(task).copied().unwrap_or(false);
        if ok {
            figures.succeeded += 1;
        } else {
            figures.failed += 1;
        }
        if met_fault {
            figures.met_fault += 1;
            if !ok {
                figures.failed_after_fault += 1;
            }
        }
    }
    figures.success_rate = ratio(figures.succeeded, tasks);
    figures.blast_radius = ratio(figures.failed_after_fault, tasks);
    figures
}

/// Every figure of a run from its records (records without [`super::record::Logical`] get one inferred),
/// judged with the tools' annotations.
pub fn figures(mut records: Vec<CallRecord>, duration_ms: f64, hints: &Hints) -> ChaosFigures {
    infer_logical(&mut records);
    let judgement = judge(&records, hints);
    let all: Vec<&CallRecord> = records.iter().collect();
    let overall = tool_figures("(all)", &all);
    let not_started = overall.outcomes.not_started;
    let mut names: Vec<&str> = records.iter().map(|r| r.tool.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let tools: Vec<ToolFigures> = names
        .iter()
        .map(|name| {
            let mine: Vec<&CallRecord> = records.iter().filter(|r| r.tool == *name).collect();
            tool_figures(name, &mine)
        })
        .collect();
    let p50_by_tool = tools
        .iter()
        .filter_map(|t| Some((t.tool.as_str(), t.latency.p50_ms?)))
        .collect();
    let head_of_line = head_of_line(&records, &p50_by_tool);
    let seconds = records
        .iter()
        .map(|r| (r.start_ms.max(0.0) / 1000.0) as usize + 1)
        .max()
        .unwrap_or(0);
    let mut buckets: Vec<(u64, u64, u64, hdrhistogram::Histogram<u64>)> = (0..seconds)
        .map(|_| (0, 0, 0, latency_histogram()))
        .collect();
    for r in &records {
        let (calls, failed, timed_out, h) = &mut buckets[(r.start_ms.max(0.0) / 1000.0) as usize];
        *calls += 1;
        *failed += u64::from(r.outcome != CallOutcome::Ok);
        *timed_out += u64::from(r.outcome == CallOutcome::Timeout);
        record_ms(h, r.latency_ms);
    }
    let per_second: Vec<SecondFigures> = buckets
        .iter()
        .enumerate()
        .map(|(second, (calls, failed, timed_out, h))| {
            let at = |q: f64| (*calls > 0).then(|| ms(quantile(h, q)));
            SecondFigures {
                second: second as u32,
                requests: *calls,
                errors: *failed,
                timeouts: *timed_out,
                p50_ms: at(0.50),
                p95_ms: at(0.95),
                p99_ms: at(0.99),
                offered: None,
                achieved: None,
            }
        })
        .collect();
    let (sparkline_p50, sparkline_p95) = sparklines(&per_second);
    ChaosFigures {
        timeline: timeline(&records, duration_ms),
        duration_ms: round2(duration_ms),
        tasks: task_figures(&records),
        overall,
        tools,
        per_second,
        sparkline_p50,
        sparkline_p95,
        not_started,
        head_of_line,
        judgement,
        mcp_tasks: Vec::new(),
    }
}

/// The with/without rows of a run and its baseline.
pub fn compare(baseline: &ChaosFigures, run: &ChaosFigures) -> Vec<ComparisonRow> {
    let row = |name: &str, f: &ChaosFigures| ComparisonRow {
        run: name.to_owned(),
        availability: f.overall.availability,
        correctness: f.overall.correctness,
        effective_availability: f.overall.effective_availability,
        task_success_rate: f.tasks.success_rate,
        blast_radius: f.tasks.blast_radius,
        p50_ms: f.overall.latency.p50_ms,
        p95_ms: f.overall.latency.p95_ms,
        p99_ms: f.overall.latency.p99_ms,
        retries: f.overall.client.retries,
    };
    vec![
        row("Baseline (no faults)", baseline),
        row("With faults", run),
    ]
}

#[cfg(test)]
mod tests {
    use super::record::Logical;
    use super::*;

    fn call(index: u64, attempt: u32, start: f64, outcome: CallOutcome, fault: bool) -> CallRecord {
        CallRecord {
            tool: "search".into(),
            args_hash: None,
            start_ms: start,
            latency_ms: 100.0,
            queueing_ms: Some(0.0),
            service_ms: Some(100.0),
            fault: fault.then(|| "hang".to_owned()),
            outcome,
            reached_server: true,
            cancel_after_ms: (outcome == CallOutcome::Timeout).then_some(100.0),
            logical: Some(Logical {
                index,
                attempt,
                task: "t".into(),
            }),
            session: 0,
            request_id: None,
            retry_after_ms: None,
        }
    }

    #[test]
    fn three_failures_then_a_success_recover_in_three_calls() {
        let records = vec![
            call(0, 1, 0.0, CallOutcome::Timeout, true),
            call(0, 2, 100.0, CallOutcome::Timeout, true),
            call(0, 3, 200.0, CallOutcome::Timeout, true),
            call(0, 4, 300.0, CallOutcome::Ok, false),
        ];
        let f = figures(records, 400.0, &Hints::new());
        let c = &f.overall.client;
        assert_eq!((c.retries, c.recoveries, c.unrecovered), (3, 1, 0));
        assert_eq!(c.recovery_max_calls, Some(3));
        assert_eq!(c.recovery_max_ms, Some(400.0));
        assert_eq!((c.runaway, c.duplicates, c.cancels), (1, 3, 3));
        assert_eq!(f.overall.availability, 0.25);
        assert_eq!(f.overall.success_after_retries, 1.0);
        assert_eq!(f.tasks.blast_radius, 0.0);
        assert_eq!(f.tasks.calls_per_task, 4.0);
        assert_eq!(f.overall.faults_by_type.get("hang"), Some(&3));
        assert_eq!(f.overall.latency_injected.calls, 3);
        assert_eq!(f.overall.latency.p50_ms, Some(100.0));
        assert_eq!(f.overall.service.p50_ms, Some(100.0));
        assert_eq!(f.overall.queueing.max_ms, Some(0.0));
        assert_eq!(f.per_second[0].p95_ms, Some(100.0));
    }
}
