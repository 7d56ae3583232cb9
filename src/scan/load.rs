//! The measured phases: the baseline (each tool called one call at a time), saturation (calls in flight
//! doubled from 1 until goodput stops rising) and head-of-line blocking (a slow tool's call in flight while
//! a fast tool is called).

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

use super::{
    Phase,
    calls::{Call, Reply, call, percentile},
    finding::{Finding, Kind, Severity},
};
use crate::mcp_wire::client::McpClient;
use crate::report::chaos::record::{CallOutcome, Schemas};

/// Latency figures of some calls, each percentile with the count it rests on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Latency {
    pub calls: u64,
    /// Calls that succeeded (the percentiles are theirs).
    pub ok: u64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    /// Judged only over as many successes as the policy's `p99_samples`: below that, it is the slowest call
    /// or close to it.
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

impl Latency {
    pub fn of(calls: &[Call]) -> Self {
        let mut times: Vec<f64> = calls
            .iter()
            .filter(|c| c.reply.is_success())
            .map(|c| c.elapsed_ms)
            .collect();
        times.sort_by(f64::total_cmp);
        let ok = times.len() as u64;
        Self {
            calls: calls.len() as u64,
            ok,
            p50_ms: percentile(&times, 50.0),
            p95_ms: percentile(&times, 95.0),
            p99_ms: percentile(&times, 99.0),
            max_ms: times.last().copied(),
        }
    }
}

/// The baseline of one tool: `samples` calls, one at a time, and each success judged against the tool's
/// `outputSchema`.
pub struct Baseline {
    pub calls: Vec<Call>,
    /// Successes whose payload breaks the output schema (the first kept as evidence).
    pub against_schema: Vec<Call>,
    pub checked_against_schema: u64,
}

pub async fn baseline(
    client: &McpClient,
    schemas: &Schemas,
    tool: &str,
    arguments: &Value,
    samples: u64,
    timeout: Duration,
    deadline: Instant,
) -> Baseline {
    let mut calls = Vec::new();
    let mut against_schema = Vec::new();
    let mut checked = 0;
    for _ in 0..samples {
        if Instant::now() >= deadline {
            break;
        }
        let made = call(client, tool, arguments, timeout).await;
        if let super::calls::Reply::Result(result) = &made.reply
            && made.reply.is_success()
            && schemas.has_output_schema(tool)
        {
            checked += 1;
            if schemas.judge(tool, result) == CallOutcome::SchemaInvalid {
                against_schema.push(made.clone());
            }
        }
        let ended = matches!(made.reply, super::calls::Reply::Closed);
        calls.push(made);
        if ended {
            break;
        }
    }
    Baseline {
        calls,
        against_schema,
        checked_against_schema: checked,
    }
}

/// One step of the saturation phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Step {
    pub in_flight: u64,
    pub calls: u64,
    pub ok: u64,
    /// Successful calls per second.
    pub goodput: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
}

/// What the saturation phase found for one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Saturation {
    pub steps: Vec<Step>,
    /// The last step whose goodput rose at least a quarter over every step before it: past it, doubling the
    /// calls in flight bought less (the first step when none did).
    pub peak_in_flight: u64,
    pub peak_goodput: f64,
    /// The first step whose p95 is at least twice the first step's.
    pub knee_in_flight: Option<u64>,
    /// Whether goodput stopped rising: two steps (or one at the ceiling) without a quarter more than the best.
    pub plateau: bool,
}

/// Goodput a step must add over the best so far to count as still rising: a doubling of the calls in flight
/// that buys less than a quarter more is the server's limit (noise on a busy machine reaches 10 %).
const RISING: f64 = 1.25;
/// Steps in a row without rising that end the phase.
const FLAT_STEPS: usize = 2;

/// Calls of `tool` at 1, 2, 4 … `max_in_flight` in flight (each step `max(20, 4 × in flight)` calls),
/// ending early once goodput has stopped rising.
pub async fn saturation(
    client: &Arc<McpClient>,
    tool: &str,
    arguments: &Value,
    max_in_flight: u64,
    timeout: Duration,
    deadline: Instant,
) -> Saturation {
    let mut steps: Vec<Step> = Vec::new();
    // The peak is where rising stopped, not the fewest calls near the best goodput: at the server's limit each
    // call still pays the client's turnaround, which twice the calls in flight hide by queueing, so a step past
    // the limit can do a few per cent better without the server doing more at once.
    let mut peak = 0;
    let mut flat = 0;
    let mut in_flight = 1;
    loop {
        if Instant::now() >= deadline {
            break;
        }
        let step = run_step(client, tool, arguments, in_flight, timeout).await;
        let best = steps.iter().map(|s| s.goodput).fold(0.0, f64::max);
        if steps.is_empty() || step.goodput > best * RISING {
            flat = 0;
            peak = steps.len();
        } else {
            flat += 1;
        }
        let failed = step.ok == 0;
        steps.push(step);
        if failed || flat >= FLAT_STEPS || in_flight >= max_in_flight {
            // At the ceiling, one step that did not rise is already a plateau.
            if in_flight >= max_in_flight && flat >= 1 {
                flat = FLAT_STEPS;
            }
            break;
        }
        in_flight = (in_flight * 2).min(max_in_flight);
    }
    let peak = steps.get(peak).cloned();
    let first_p95 = steps.first().and_then(|s| s.p95_ms);
    let knee = first_p95.and_then(|first| {
        steps
            .iter()
            .find(|s| s.p95_ms.is_some_and(|p| p >= 2.0 * first))
            .map(|s| s.in_flight)
    });
    Saturation {
        peak_in_flight: peak.as_ref().map_or(0, |p| p.in_flight),
        peak_goodput: peak.as_ref().map_or(0.0, |p| p.goodput),
        knee_in_flight: knee,
        plateau: flat >= FLAT_STEPS,
        steps,
    }
}

async fn run_step(
    client: &Arc<McpClient>,
    tool: &str,
    arguments: &Value,
    in_flight: u64,
    timeout: Duration,
) -> Step {
    let total = (4 * in_flight).max(20);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let workers = (0..in_flight).map(|_| {
        let next = next.clone();
        async move {
            let mut made = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                made.push(call(client, tool, arguments, timeout).await);
            }
            made
        }
    });
    let calls: Vec<Call> = futures::future::join_all(workers)
        .await
        .into_iter()
        .flatten()
        .collect();
    let seconds = started.elapsed().as_secs_f64().max(1e-6);
    let latency = Latency::of(&calls);
    Step {
        in_flight,
        calls: latency.calls,
        ok: latency.ok,
        goodput: latency.ok as f64 / seconds,
        p50_ms: latency.p50_ms,
        p95_ms: latency.p95_ms,
    }
}

/// A fast tool's calls made while one call of a slow tool is in flight.
pub struct HeldUp {
    /// The slow call.
    pub slow: Call,
    /// The fast tool's calls made while it ran.
    pub during: Vec<Call>,
}

/// Calls `fast` three times, one after another, the first `lead` after one call of `slow` was sent; the
/// fast calls that started while the slow one was in flight are kept.
pub async fn held_up(
    client: &McpClient,
    (slow, slow_arguments): (&str, &Value),
    (fast, fast_arguments): (&str, &Value),
    lead: Duration,
    timeout: Duration,
) -> HeldUp {
    let started = Instant::now();
    let slow_call = async {
        let made = call(client, slow, slow_arguments, timeout).await;
        (made, started.elapsed())
    };
    let fast_calls = async {
        tokio::time::sleep(lead).await;
        let mut made = Vec::new();
        for _ in 0..3 {
            let at = started.elapsed();
            made.push((at, call(client, fast, fast_arguments, timeout).await));
        }
        made
    };
    let ((slow, slow_ended), fast) = tokio::join!(slow_call, fast_calls);
    HeldUp {
        slow,
        during: fast
            .into_iter()
            .filter(|(at, _)| *at < slow_ended)
            .map(|(_, made)| made)
            .collect(),
    }
}

/// The findings of a baseline whose calls crashed, hung, or (with arguments the caller gave) failed.
pub fn baseline_findings(
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
