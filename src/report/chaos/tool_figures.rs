//! The figures of one tool's calls, or of all tools together: outcomes, A, C and A×C, latency and its parts,
//! and what the client did after failures (retries, cancels, recovery, runaways, duplicates).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::latency::{LatencyFigures, latency, queueing, service};
use super::record::{CallOutcome, CallRecord};
use crate::report::{ratio, round2};

/// Attempts after a first failure that make a runaway.
pub const RUNAWAY_ATTEMPTS: u32 = 3;

/// Whether a logical call of `attempts` attempts, the first failure at `first_failure` (0-based), ran away.
pub fn is_runaway(attempts: usize, first_failure: usize) -> bool {
    // Attempts after the first failure: attempts - first_failure - 1.
    attempts - first_failure > RUNAWAY_ATTEMPTS as usize
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

pub(super) fn tool_figures(tool: &str, records: &[&CallRecord]) -> ToolFigures {
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
