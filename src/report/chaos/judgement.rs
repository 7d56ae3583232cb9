//! How the client handled the failures of a run, in words it can act on: for each failed call what the
//! client did next, and a verdict per tool and for the session.
//!
//! - A **duplicate write** is a retry of an attempt the server had received and whose outcome the client
//!   did not get (an error, a timeout, a cut, a garbled answer), for a tool that is neither read-only nor
//!   idempotent by its `tools/list` annotations (an absent hint is false): the effect may have happened twice.
//!   The same retry of a read-only or idempotent tool is harmless and counted apart.
//! - **Retry-After** is honoured when the retry of a call answered with `retryAfterSeconds` came at least
//!   that long after the answer, less [`RETRY_AFTER_SLACK_MS`].
//! - A **runaway** is a logical call with [`RUNAWAY_ATTEMPTS`] or more attempts after its first failure.
//!
//! A session handled its failures well when it has no runaway, no duplicate write and no ignored
//! Retry-After.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::record::{CallOutcome, CallRecord, Hints, ToolHints};
use super::tool_figures::{RUNAWAY_ATTEMPTS, is_runaway};
use crate::report::round2;

/// A retry this much earlier than Retry-After asked still honours it (timers and the wire).
pub const RETRY_AFTER_SLACK_MS: f64 = 50.0;
/// Failures listed one by one in the report; the counts cover every one.
pub const MAX_FOLLOW_UPS: usize = 100;

/// What the client did after a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NextStep {
    /// It sent the same call again.
    Retried,
    /// It cancelled the call and did not send it again (its next call, if any, is named).
    Cancelled,
    /// It did not send it again; its next call was to another tool.
    CalledAnotherTool,
    /// It did not send it again, nor anything else on that session.
    GaveUp,
}

impl NextStep {
    pub fn label(self) -> &'static str {
        match self {
            NextStep::Retried => "retried",
            NextStep::Cancelled => "cancelled",
            NextStep::CalledAnotherTool => "called another tool",
            NextStep::GaveUp => "gave up",
        }
    }
}

/// One failed call and what followed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FollowUp {
    pub tool: String,
    /// When the call started, from the start of the run.
    pub start_ms: f64,
    /// The fault the proxy injected, if any.
    pub fault: Option<String>,
    /// How it ended, e.g. "timeout".
    pub outcome: String,
    pub next: NextStep,
    /// From the failure's end to the next call (the retry, or the other tool's call).
    pub after_ms: Option<f64>,
    /// The other tool called next, when the call was not retried.
    pub next_tool: Option<String>,
    /// The wait the answer asked for (Retry-After).
    pub retry_after_ms: Option<f64>,
}

/// The kinds of verdict, from the worst.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    DuplicateWrite,
    Runaway,
    IgnoredRetryAfter,
    GaveUp,
    RetriedReadOnly,
    Recovered,
    NoFailure,
}

impl VerdictKind {
    /// Whether the verdict breaks the session's "handled well".
    pub fn is_mishandling(self) -> bool {
        matches!(
            self,
            VerdictKind::DuplicateWrite | VerdictKind::Runaway | VerdictKind::IgnoredRetryAfter
        )
    }
}

/// One verdict on a tool, with its sentence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verdict {
    pub kind: VerdictKind,
    pub sentence: String,
}

/// How the client handled one tool's failures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolJudgement {
    pub tool: String,
    /// The tool's annotations as `tools/list` gave them.
    pub hints: ToolHints,
    /// Whether a repeat may do the tool's effect twice (neither read-only nor idempotent).
    pub repeats_effect: bool,
    /// Failed calls (every outcome but a valid result; calls never sent aside).
    pub failures: u64,
    /// Of them, what the client did next.
    pub retried: u64,
    pub cancelled: u64,
    pub called_another_tool: u64,
    pub gave_up: u64,
    /// From a failure's end to its retry.
    pub retry_wait_mean_ms: Option<f64>,
    pub retry_wait_min_ms: Option<f64>,
    /// Logical calls that met a failure and ended with a valid result, and those that did not.
    pub recovered_calls: u64,
    pub unrecovered_calls: u64,
    /// Logical calls with [`RUNAWAY_ATTEMPTS`] or more attempts after their first failure, and the most
    /// attempts of one.
    pub runaways: u64,
    pub max_attempts: u32,
    /// Retries of an attempt the server had received, when a repeat may do the effect twice.
    pub duplicate_writes: u64,
    /// The same retries of a read-only or idempotent tool (harmless).
    pub harmless_retries: u64,
    /// Retries after an answer that asked for a wait, those that waited long enough, and the shortest wait
    /// with what it was asked.
    pub retry_after_asked: u64,
    pub retry_after_honoured: u64,
    pub retry_after_worst_waited_ms: Option<f64>,
    pub retry_after_worst_asked_ms: Option<f64>,
    /// Worst first.
    pub verdicts: Vec<Verdict>,
    /// The verdicts as one sentence.
    pub sentence: String,
}

/// How the client handled the run's failures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Judgement {
    /// No runaway, no duplicate write, no ignored Retry-After.
    pub handled_well: bool,
    /// The session's verdict in one sentence.
    pub verdict: String,
    pub failures: u64,
    pub duplicate_writes: u64,
    pub runaways: u64,
    pub ignored_retry_after: u64,
    pub tools: Vec<ToolJudgement>,
    /// The first [`MAX_FOLLOW_UPS`] failures, in time order, and what followed each.
    pub follow_ups: Vec<FollowUp>,
}

fn outcome_name(outcome: CallOutcome) -> &'static str {
    match outcome {
        CallOutcome::Ok => "ok",
        CallOutcome::ToolError => "isError",
        CallOutcome::ProtocolError => "protocol error",
        CallOutcome::Timeout => "timeout",
        CallOutcome::Malformed => "malformed",
        CallOutcome::SchemaInvalid => "schema-invalid",
        CallOutcome::NotStarted => "not started",
    }
}

fn failed(r: &CallRecord) -> bool {
    !matches!(r.outcome, CallOutcome::Ok | CallOutcome::NotStarted)
}

fn end_ms(r: &CallRecord) -> f64 {
    r.start_ms + r.latency_ms
}

fn seconds(ms: f64) -> String {
    let s = ms / 1000.0;
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.2}")
    }
}

/// Per tool, as it accumulates.
#[derive(Default)]
struct Tally {
    failures: u64,
    steps: [u64; 4],
    waits: Vec<f64>,
    recovered: u64,
    unrecovered: u64,
    runaways: u64,
    max_attempts: u32,
    duplicate_writes: u64,
    harmless_retries: u64,
    retry_after_asked: u64,
    retry_after_honoured: u64,
    /// (waited, asked) of the retry that fell shortest of its Retry-After.
    retry_after_worst: Option<(f64, f64)>,
}

/// Judges the run's records; every record has its [`super::record::Logical`] (see
/// [`super::record::infer_logical`]).
pub fn judge(records: &[CallRecord], hints: &Hints) -> Judgement {
    // Attempts of each logical call, in order; the next attempt of each record.
    let mut chains: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        chains
            .entry(r.logical.as_ref().map_or(i as u64, |l| l.index))
            .or_default()
            .push(i);
    }
    let attempt = |i: &usize| records[*i].logical.as_ref().map_or(1, |l| l.attempt);
    let mut next_attempt: HashMap<usize, usize> = HashMap::new();
    for chain in chains.values_mut() {
        chain.sort_by_key(attempt);
        for pair in chain.windows(2) {
            next_attempt.insert(pair[0], pair[1]);
        }
    }
    // Each session's calls by start, to find what a client did after giving up on a call.
    let mut by_session: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        by_session.entry(r.session).or_default().push(i);
    }
    for calls in by_session.values_mut() {
        calls.sort_by(|&a, &b| records[a].start_ms.total_cmp(&records[b].start_ms));
    }

    let mut tallies: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut follow_ups: Vec<FollowUp> = Vec::new();
    let default_hints = ToolHints::default();
    let hints_of = |tool: &str| hints.get(tool).unwrap_or(&default_hints);
    for (i, r) in records.iter().enumerate() {
        let tally = tallies.entry(r.tool.as_str()).or_default();
        if !failed(r) {
            continue;
        }
        tally.failures += 1;
        let end = end_ms(r);
        let (next, after_ms, next_tool) = match next_attempt.get(&i).map(|&n| &records[n]) {
            Some(retry) => {
                let waited = (retry.start_ms - end).max(0.0);
                tally.waits.push(waited);
                if r.reached_server {
                    if hints_of(&r.tool).repeats_effect() {
                        tally.duplicate_writes += 1;
                    } else {
                        tally.harmless_retries += 1;
                    }
                }
                if let Some(asked) = r.retry_after_ms {
                    tally.retry_after_asked += 1;
                    if waited + RETRY_AFTER_SLACK_MS >= asked {
                        tally.retry_after_honoured += 1;
                    } else if tally
                        .retry_after_worst
                        .is_none_or(|(w, a)| waited / asked < w / a)
                    {
                        tally.retry_after_worst = Some((waited, asked));
                    }
                }
                (NextStep::Retried, Some(waited), None)
            }
            None => {
                let later = by_session[&r.session]
                    .iter()
                    .map(|&n| &records[n])
                    .find(|n| n.start_ms >= end && n.tool != r.tool);
                let step = match (r.cancel_after_ms, later) {
                    (Some(_), _) => NextStep::Cancelled,
                    (None, Some(_)) => NextStep::CalledAnotherTool,
                    (None, None) => NextStep::GaveUp,
                };
                (
                    step,
                    later.map(|other| other.start_ms - end),
                    later.map(|other| other.tool.clone()),
                )
            }
        };
        tally.steps[next as usize] += 1;
        follow_ups.push(FollowUp {
            tool: r.tool.clone(),
            start_ms: round2(r.start_ms),
            fault: r.fault.clone(),
            outcome: outcome_name(r.outcome).to_owned(),
            next,
            after_ms: after_ms.map(round2),
            next_tool,
            retry_after_ms: r.retry_after_ms.map(round2),
        });
    }
    for chain in chains.values() {
        let Some(first_failure) = chain.iter().position(|&i| failed(&records[i])) else {
            continue;
        };
        let last = &records[chain[chain.len() - 1]];
        let tally = tallies.entry(last.tool.as_str()).or_default();
        if last.outcome == CallOutcome::Ok {
            tally.recovered += 1;
        } else {
            tally.unrecovered += 1;
        }
        if is_runaway(chain.len(), first_failure) {
            tally.runaways += 1;
            tally.max_attempts = tally.max_attempts.max(chain.len() as u32);
        }
    }
    follow_ups.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    follow_ups.truncate(MAX_FOLLOW_UPS);

    let tools: Vec<ToolJudgement> = tallies
        .into_iter()
        .map(|(tool, tally)| tool_judgement(tool, hints_of(tool).clone(), tally))
        .collect();
    session(tools, follow_ups)
}

fn tool_judgement(tool: &str, hints: ToolHints, t: Tally) -> ToolJudgement {
    let repeats_effect = hints.repeats_effect();
    let mut verdicts = Vec::new();
    let mut say = |kind, sentence: String| verdicts.push(Verdict { kind, sentence });
    if t.duplicate_writes > 0 {
        say(
            VerdictKind::DuplicateWrite,
            format!(
                "duplicate write: `{tool}` was sent again {} time{} after an attempt the server had received \
                 without the client knowing its outcome, and it is neither read-only nor idempotent ({})",
                t.duplicate_writes,
                plural(t.duplicate_writes),
                hints.describe()
            ),
        );
    }
    if t.runaways > 0 {
        say(
            VerdictKind::Runaway,
            format!(
                "runaway: {} call{} retried {RUNAWAY_ATTEMPTS} or more times after failing, up to {} attempts",
                t.runaways,
                plural(t.runaways),
                t.max_attempts
            ),
        );
    }
    let ignored = t.retry_after_asked - t.retry_after_honoured;
    if let Some((waited, asked)) = t.retry_after_worst {
        say(
            VerdictKind::IgnoredRetryAfter,
            format!(
                "ignored Retry-After {ignored} of {} time{}: waited {} of {} s",
                t.retry_after_asked,
                plural(t.retry_after_asked),
                seconds(waited),
                seconds(asked)
            ),
        );
    }
    if t.unrecovered > 0 {
        say(
            VerdictKind::GaveUp,
            format!(
                "gave up: {} call{} ended without a valid result",
                t.unrecovered,
                plural(t.unrecovered)
            ),
        );
    }
    if t.harmless_retries > 0 {
        say(
            VerdictKind::RetriedReadOnly,
            format!(
                "retried a {} tool {} time{} after the server had received the call (harmless)",
                if hints.read_only == Some(true) {
                    "read-only"
                } else {
                    "idempotent"
                },
                t.harmless_retries,
                plural(t.harmless_retries)
            ),
        );
    }
    if t.recovered > 0 {
        let honoured = if t.retry_after_asked > 0 && ignored == 0 {
            ", honouring Retry-After"
        } else {
            ""
        };
        say(
            VerdictKind::Recovered,
            format!(
                "recovered: {} call{} ended with a valid result after failing{honoured}",
                t.recovered,
                plural(t.recovered)
            ),
        );
    }
    if t.failures == 0 {
        say(VerdictKind::NoFailure, "no failure to handle".to_owned());
    }
    let sentence = format!(
        "`{tool}`: {}.",
        verdicts
            .iter()
            .map(|v| v.sentence.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    );
    let waits = &t.waits;
    ToolJudgement {
        tool: tool.to_owned(),
        hints,
        repeats_effect,
        failures: t.failures,
        retried: t.steps[NextStep::Retried as usize],
        cancelled: t.steps[NextStep::Cancelled as usize],
        called_another_tool: t.steps[NextStep::CalledAnotherTool as usize],
        gave_up: t.steps[NextStep::GaveUp as usize],
        retry_wait_mean_ms: (!waits.is_empty())
            .then(|| round2(waits.iter().sum::<f64>() / waits.len() as f64)),
        retry_wait_min_ms: waits.iter().copied().reduce(f64::min).map(round2),
        recovered_calls: t.recovered,
        unrecovered_calls: t.unrecovered,
        runaways: t.runaways,
        max_attempts: t.max_attempts,
        duplicate_writes: t.duplicate_writes,
        harmless_retries: t.harmless_retries,
        retry_after_asked: t.retry_after_asked,
        retry_after_honoured: t.retry_after_honoured,
        retry_after_worst_waited_ms: t.retry_after_worst.map(|(w, _)| round2(w)),
        retry_after_worst_asked_ms: t.retry_after_worst.map(|(_, a)| round2(a)),
        verdicts,
        sentence,
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn session(tools: Vec<ToolJudgement>, follow_ups: Vec<FollowUp>) -> Judgement {
    let failures = tools.iter().map(|t| t.failures).sum();
    let duplicate_writes = tools.iter().map(|t| t.duplicate_writes).sum();
    let runaways = tools.iter().map(|t| t.runaways).sum();
    let ignored_retry_after = tools
        .iter()
        .map(|t| t.retry_after_asked - t.retry_after_honoured)
        .sum();
    let handled_well = duplicate_writes == 0 && runaways == 0 && ignored_retry_after == 0;
    let verdict = if failures == 0 {
        "no call failed, so nothing was judged".to_owned()
    } else if handled_well {
        let asked: u64 = tools.iter().map(|t| t.retry_after_asked).sum();
        format!(
            "handled well: {failures} failure{} met with no runaway and no duplicate write{}",
            plural(failures),
            if asked > 0 {
                ", Retry-After honoured"
            } else {
                ""
            }
        )
    } else {
        let mut wrong = Vec::new();
        let mut name = |count: u64, what: &str, kind: VerdictKind| {
            if count > 0 {
                let tools: Vec<&str> = tools
                    .iter()
                    .filter(|t| t.verdicts.iter().any(|v| v.kind == kind))
                    .map(|t| t.tool.as_str())
                    .collect();
                wrong.push(format!("{count} {what} ({})", tools.join(", ")));
            }
        };
        name(
            duplicate_writes,
            "duplicate write",
            VerdictKind::DuplicateWrite,
        );
        name(runaways, "runaway", VerdictKind::Runaway);
        name(
            ignored_retry_after,
            "ignored Retry-After",
            VerdictKind::IgnoredRetryAfter,
        );
        format!("mishandled: {}", wrong.join(", "))
    };
    Judgement {
        handled_well,
        verdict,
        failures,
        duplicate_writes,
        runaways,
        ignored_retry_after,
        tools,
        follow_ups,
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::Logical;
    use super::*;

    fn call(tool: &str, index: u64, attempt: u32, start: f64, outcome: CallOutcome) -> CallRecord {
        CallRecord::of(tool, start, outcome)
            .fault((outcome != CallOutcome::Ok).then_some("hang"))
            .logical(index, attempt, &format!("call-{index}"))
    }

    fn hints() -> Hints {
        let mut hints = Hints::new();
        hints.insert(
            "create_order".into(),
            ToolHints {
                listed: true,
                read_only: Some(false),
                destructive: Some(true),
                idempotent: Some(false),
            },
        );
        hints.insert(
            "get_order".into(),
            ToolHints {
                listed: true,
                read_only: Some(true),
                ..ToolHints::default()
            },
        );
        hints
    }

    #[test]
    fn a_blind_retry_of_a_write_is_a_duplicate_write_and_of_a_read_is_not() {
        let records = vec![
            call("create_order", 0, 1, 0.0, CallOutcome::Timeout),
            call("create_order", 0, 2, 100.0, CallOutcome::Ok),
            call("get_order", 1, 1, 200.0, CallOutcome::Timeout),
            call("get_order", 1, 2, 300.0, CallOutcome::Ok),
        ];
        let j = judge(&records, &hints());
        assert!(!j.handled_well);
        assert_eq!(j.duplicate_writes, 1);
        let write = &j.tools[0];
        assert_eq!(write.tool, "create_order");
        assert_eq!(write.verdicts[0].kind, VerdictKind::DuplicateWrite);
        assert!(
            write
                .sentence
                .contains("readOnlyHint false, destructiveHint true, idempotentHint false"),
            "{}",
            write.sentence
        );
        let read = &j.tools[1];
        assert_eq!((read.duplicate_writes, read.harmless_retries), (0, 1));
        assert!(read.sentence.contains("retried a read-only tool 1 time"));
        assert_eq!(j.verdict, "mishandled: 1 duplicate write (create_order)");
        assert_eq!(j.follow_ups[0].next, NextStep::Retried);
        assert_eq!(j.follow_ups[0].after_ms, Some(90.0));
    }

    #[test]
    fn a_tool_without_annotations_is_taken_as_a_write() {
        let records = vec![
            call("unlisted", 0, 1, 0.0, CallOutcome::ProtocolError),
            call("unlisted", 0, 2, 100.0, CallOutcome::Ok),
        ];
        let j = judge(&records, &Hints::new());
        assert_eq!(j.tools[0].duplicate_writes, 1);
        assert!(j.tools[0].sentence.contains("not listed"));
    }

    #[test]
    fn retry_after_is_judged_on_the_wait_before_the_retry() {
        let mut limited = call("get_order", 0, 1, 0.0, CallOutcome::ProtocolError);
        limited.retry_after_ms = Some(2000.0);
        limited.reached_server = false;
        let mut too_soon = limited.clone();
        too_soon.logical = Some(Logical {
            index: 0,
            attempt: 2,
            task: "call-0".into(),
        });
        too_soon.start_ms = 510.0;
        let mut last = call("get_order", 0, 3, 3000.0, CallOutcome::Ok);
        last.reached_server = true;
        let j = judge(&[limited, too_soon, last], &hints());
        let t = &j.tools[0];
        assert_eq!((t.retry_after_asked, t.retry_after_honoured), (2, 1));
        assert_eq!(t.verdicts[0].kind, VerdictKind::IgnoredRetryAfter);
        assert!(t.sentence.contains("waited 0.50 of 2 s"), "{}", t.sentence);
        assert!(!j.handled_well);
    }

    #[test]
    fn what_follows_a_failure_that_is_not_retried() {
        let mut cancelled = call("get_order", 0, 1, 0.0, CallOutcome::Timeout);
        cancelled.cancel_after_ms = Some(10.0);
        let switched = call("get_order", 1, 1, 20.0, CallOutcome::ToolError);
        let other = call("create_order", 2, 1, 50.0, CallOutcome::Ok);
        let abandoned = call("create_order", 3, 1, 100.0, CallOutcome::ToolError);
        let j = judge(&[cancelled, switched, other, abandoned], &hints());
        let steps: Vec<(NextStep, Option<String>)> = j
            .follow_ups
            .iter()
            .map(|f| (f.next, f.next_tool.clone()))
            .collect();
        assert_eq!(
            steps,
            vec![
                (NextStep::Cancelled, Some("create_order".into())),
                (NextStep::CalledAnotherTool, Some("create_order".into())),
                (NextStep::GaveUp, None),
            ]
        );
        assert!(j.handled_well);
        assert!(j.tools[1].sentence.contains("gave up: 2 calls"));
    }
}
