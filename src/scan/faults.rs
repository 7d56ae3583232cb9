//! The faults phase: each tool called through `fault mcp-proxy` with a plan that loses replies (the server
//! runs the call, its answer is replaced by an error), retried within the scan's own budget. A write whose
//! reply was lost is checked against the server's own state (`verify`: a read-only tool and the count in its
//! answer, or `verify_command`), read before the call and after its last attempt, so a duplicate effect is
//! confirmed, not inferred from annotations.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    Phase,
    calls::{Call, Reply, call},
    finding::{Finding, Kind, Severity},
};
use crate::mcp_proxy::plan::Plan;
use crate::mcp_wire::client::McpClient;

/// Attempts of one logical call beyond the first: the scan's retry budget, not the server's.
pub const RETRIES: u32 = 2;
/// The pause before each retry.
pub const BACKOFF: Duration = Duration::from_millis(50);
/// The share of calls whose reply the plan loses.
pub const LOST_REPLY_PROBABILITY: f64 = 0.3;
/// The seed of the plan's decisions: the same calls lose their replies in every scan.
pub const SEED: u64 = 1;
/// The name the plan gives its fault, and a word of the error that replaces a lost reply.
const FAULT_NAME: &str = "lost-reply";
const INJECTED: &str = "injected fault";
/// How long `verify_command` may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// How the server's state is read.
#[derive(Debug, Clone, PartialEq)]
pub enum Verify {
    /// A read-only tool, its arguments, and the dotted path to the count (a number, or a list whose length
    /// counts) in its `structuredContent` (or the JSON of its text).
    Tool {
        tool: String,
        arguments: Value,
        count: Option<String>,
    },
    /// A shell command printing a count (or a JSON list, or an object holding one at `count`).
    Command {
        command: String,
        count: Option<String>,
    },
}

/// The plan of the phase: replies lost on `tools` (never on the verify tool).
pub fn plan(tools: &[String]) -> Result<Plan, String> {
    Plan::from_value(
        json!({"seed": SEED, "faults": [{
            "name": FAULT_NAME, "type": "error", "upstream": "call",
            "probability": LOST_REPLY_PROBABILITY, "tools": tools,
        }]}),
        "",
    )
    .map_err(|e| e.to_string())
}

/// What one tool's calls in the phase did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FaultFigures {
    pub tool: String,
    pub logical_calls: u64,
    pub attempts: u64,
    /// Replies the plan lost.
    pub lost_replies: u64,
    /// Logical calls that ended with a success within the scan's retries.
    pub recovered: u64,
    /// Logical calls that failed on an attempt whose reply was not lost: the server's own failure.
    pub failed_unfaulted: u64,
    /// Logical calls whose effect the server's state shows more than once.
    pub duplicate_effects: u64,
    /// Logical calls with a lost reply whose effect was read before and after.
    pub verified: u64,
}

/// The count `verify` reads now.
pub async fn read_count(
    client: &McpClient,
    verify: &Verify,
    timeout: Duration,
) -> Result<f64, String> {
    match verify {
        Verify::Tool {
            tool,
            arguments,
            count,
        } => {
            let made = call(client, tool, arguments, timeout).await;
            let Reply::Result(result) = &made.reply else {
                return Err(format!(
                    "verify: `{tool}` answered {}",
                    made.reply.describe(timeout)
                ));
            };
            if !made.reply.is_success() {
                return Err(format!(
                    "verify: `{tool}` answered {}",
                    made.reply.describe(timeout)
                ));
            }
            let payload = result.get("structuredContent").cloned().or_else(|| {
                result["content"]
                    .as_array()?
                    .iter()
                    .find_map(|b| b.get("text")?.as_str())
                    .and_then(|t| serde_json::from_str(t.trim()).ok())
            });
            count_in(payload.as_ref(), count.as_deref()).ok_or_else(|| {
                format!(
                    "verify: no count at `{}` in `{tool}`'s answer {}",
                    count.as_deref().unwrap_or("(the whole answer)"),
                    made.reply.said()
                )
            })
        }
        Verify::Command { command, count } => {
            let output = tokio::time::timeout(
                COMMAND_TIMEOUT,
                tokio::process::Command::new("/bin/sh")
                    .args(["-c", command])
                    .stdin(std::process::Stdio::null())
                    .kill_on_drop(true)
                    .output(),
            )
            .await
            .map_err(|_| {
                format!(
                    "verify_command: no answer within {} s",
                    COMMAND_TIMEOUT.as_secs()
                )
            })?
            .map_err(|e| format!("verify_command: cannot run it: {e}"))?;
            if !output.status.success() {
                return Err(format!("verify_command: ended with {}", output.status));
            }
            let text = String::from_utf8_lossy(&output.stdout);
            let value: Option<Value> = serde_json::from_str(text.trim()).ok();
            count_in(value.as_ref(), count.as_deref()).ok_or_else(|| {
                format!(
                    "verify_command: printed {:?}, not a count",
                    super::finding::shorten(text.trim(), 80)
                )
            })
        }
    }
}

/// The count at the dotted `path` of `value` (a number, or a list's length).
fn count_in(value: Option<&Value>, path: Option<&str>) -> Option<f64> {
    let mut at = value?;
    for part in path
        .into_iter()
        .flat_map(|p| p.split('.'))
        .filter(|p| !p.is_empty())
    {
        at = match at {
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            other => other.get(part)?,
        };
    }
    match at {
        Value::Number(n) => n.as_f64(),
        Value::Array(items) => Some(items.len() as f64),
        _ => None,
    }
}

/// The phase for one tool: `calls` logical calls with `arguments` (fewer once `deadline` has passed), each
/// retried up to [`RETRIES`] times, its effect read before and after when `verify` is given. The findings
/// come with the figures.
pub async fn run_tool(
    client: &McpClient,
    (tool, arguments): (&str, &Value),
    calls: u64,
    verify: Option<&Verify>,
    (timeout, deadline): (Duration, tokio::time::Instant),
    reproduce: &str,
) -> Result<(FaultFigures, Vec<Finding>), String> {
    let mut figures = FaultFigures {
        tool: tool.to_owned(),
        ..Default::default()
    };
    let mut duplicate: Option<(Call, f64)> = None;
    let mut unfaulted: Option<Call> = None;
    for _ in 0..calls {
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        figures.logical_calls += 1;
        let before = match verify {
            Some(verify) => Some(read_count(client, verify, timeout).await?),
            None => None,
        };
        let mut lost = false;
        let mut last = None;
        for attempt in 0..=RETRIES {
            if attempt > 0 {
                tokio::time::sleep(BACKOFF).await;
            }
            let made = call(client, tool, arguments, timeout).await;
            figures.attempts += 1;
            let injected =
                matches!(&made.reply, Reply::Error { message, .. } if message.contains(INJECTED));
            if injected {
                figures.lost_replies += 1;
                lost = true;
            }
            let done = made.reply.is_success();
            if !done && !injected && unfaulted.is_none() {
                unfaulted = Some(made.clone());
            }
            if !done && !injected {
                figures.failed_unfaulted += 1;
                last = Some(made);
                break;
            }
            last = Some(made);
            if done {
                figures.recovered += 1;
                break;
            }
        }
        if let (Some(verify), Some(before), true) = (verify, before, lost) {
            let after = read_count(client, verify, timeout).await?;
            figures.verified += 1;
            if after - before > 1.0
                && let Some(made) = last
            {
                figures.duplicate_effects += 1;
                duplicate.get_or_insert((made, after - before));
            }
        }
    }
    let mut findings = Vec::new();
    if let Some((made, effects)) = duplicate {
        findings.push(
            Finding::new(Phase::Faults, Kind::DuplicateEffect, Severity::Critical, Some(tool), None)
                .title(format!(
                    "`{tool}` applied {} of {} calls more than once: after a lost reply, the retry of the same call \
                     took effect again ({effects} effects for one call, read from the server's state)",
                    figures.duplicate_effects, figures.verified
                ))
                .fix(format!(
                    "Make `{tool}` idempotent: accept an idempotency key (or derive one from the arguments) and answer \
                     a repeated call with the first call's result instead of doing it again; until then, declare \
                     `idempotentHint: false` and `destructiveHint: true` so that clients do not retry it blindly."
                ))
                .evidence(&made.params, format!("{effects} effects for one logical call with a lost reply"))
                .with_reproduce(reproduce),
        );
    }
    if let Some(made) = unfaulted {
        findings.push(
            Finding::new(Phase::Faults, Kind::FailsAfterFault, Severity::Major, Some(tool), None)
                .title(format!(
                    "`{tool}` failed {} call(s) the proxy did not touch while replies were being lost",
                    figures.failed_unfaulted
                ))
                .fix(format!(
                    "`{tool}` succeeded in the baseline with the same arguments: find what a call whose reply was \
                     lost leaves behind (a half-done write, a lock, a conflict with the retry) and make a repeated \
                     call succeed."
                ))
                .evidence(&made.params, made.reply.describe(timeout))
                .with_reproduce(reproduce),
        );
    }
    Ok((figures, findings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_read_at_their_path() {
        let answer =
            json!({"count": 3, "orders": [{"id": 1}, {"id": 2}], "nested": {"total": 7.0}});
        assert_eq!(count_in(Some(&answer), Some("count")), Some(3.0));
        assert_eq!(count_in(Some(&answer), Some("orders")), Some(2.0));
        assert_eq!(count_in(Some(&answer), Some("nested.total")), Some(7.0));
        assert_eq!(count_in(Some(&json!(5)), None), Some(5.0));
        assert_eq!(count_in(Some(&answer), None), None);
        assert_eq!(count_in(Some(&answer), Some("missing")), None);
    }

    #[test]
    fn the_plan_loads_as_the_proxy_loads_it() {
        let plan = plan(&["create_order".to_owned()]).unwrap();
        assert_eq!(plan.faults.len(), 1);
        assert_eq!(plan.seed, SEED);
    }
}
