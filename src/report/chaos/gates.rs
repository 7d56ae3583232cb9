//! Judging a run against its gates: PASSED or FAILED per gate, from the run's figures. The gates themselves are
//! plan input, declared and read with the plan; the report sees them as [`Budgets`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ChaosFigures;

/// The budgets a run is judged against, each one given a gate (the plan's gates).
pub trait Budgets {
    /// The slowest cancel of a call left without an answer, in ms.
    fn max_detection_ms(&self) -> Option<u64>;
    /// The slowest recovery after a failure, in ms; a failure never recovered fails it.
    fn max_recovery_ms(&self) -> Option<u64>;
    /// Every call left without an answer was cancelled by the client.
    fn require_clean_timeout(&self) -> bool;
    fn max_runaways(&self) -> Option<u64>;
    fn duplicate_writes(&self) -> Option<u64>;
}

/// One gate, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateResult {
    /// The gate's key, e.g. "max_runaways".
    pub gate: String,
    /// What it allows, e.g. "0".
    pub limit: String,
    /// What the run did, e.g. "1 runaway (echo)".
    pub measured: String,
    pub passed: bool,
}

/// Every gate of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateReport {
    /// Every gate passed.
    pub passed: bool,
    pub gates: Vec<GateResult>,
}

impl GateReport {
    /// "PASSED", or "FAILED: " and the failed gates with what the run did.
    pub fn summary(&self) -> String {
        if self.passed {
            return "PASSED".to_owned();
        }
        let failed: Vec<String> = self
            .gates
            .iter()
            .filter(|g| !g.passed)
            .map(|g| format!("{} {} (allowed {})", g.gate, g.measured, g.limit))
            .collect();
        format!("FAILED: {}", failed.join("; "))
    }
}

/// The gates of `gates` judged on `run`; `None` without any.
pub fn evaluate(gates: &impl Budgets, run: &ChaosFigures) -> Option<GateReport> {
    let none_set = gates.max_detection_ms().is_none()
        && gates.max_recovery_ms().is_none()
        && !gates.require_clean_timeout()
        && gates.max_runaways().is_none()
        && gates.duplicate_writes().is_none();
    if none_set {
        return None;
    }
    let client = &run.overall.client;
    let judgement = &run.judgement;
    let mut results = Vec::new();
    let mut gate = |gate: &str, limit: String, measured: String, passed: bool| {
        results.push(GateResult {
            gate: gate.to_owned(),
            limit,
            measured,
            passed,
        });
    };
    let worst_detection = client.detect_max_ms;
    if let Some(budget) = gates.max_detection_ms() {
        gate(
            "max_detection_ms",
            format!("{budget} ms"),
            worst_detection.map_or("no call cancelled".to_owned(), |ms| {
                format!("slowest cancel {ms:.0} ms")
            }),
            worst_detection.is_none_or(|ms| ms <= budget as f64),
        );
    }
    if gates.require_clean_timeout() {
        // A call still without an answer at the end that the client never cancelled hung past any budget.
        let left_open = run.overall.outcomes.timeout.saturating_sub(client.cancels);
        let late = gates
            .max_detection_ms()
            .zip(worst_detection)
            .is_some_and(|(budget, ms)| ms > budget as f64);
        gate(
            "require_clean_timeout",
            "every call without an answer cancelled".to_owned(),
            format!(
                "{left_open} left hanging{}",
                if late {
                    ", a cancel past max_detection_ms"
                } else {
                    ""
                }
            ),
            left_open == 0 && !late,
        );
    }
    if let Some(budget) = gates.max_recovery_ms() {
        let measured = match client.recovery_max_ms {
            Some(ms) => format!(
                "slowest recovery {ms:.0} ms, {} failure(s) never recovered",
                client.unrecovered
            ),
            None => format!("{} failure(s) never recovered", client.unrecovered),
        };
        gate(
            "max_recovery_ms",
            format!("{budget} ms"),
            measured,
            client.unrecovered == 0 && client.recovery_max_ms.is_none_or(|ms| ms <= budget as f64),
        );
    }
    let named = |count: u64, has: fn(&super::judgement::ToolJudgement) -> bool| {
        let tools: Vec<&str> = judgement
            .tools
            .iter()
            .filter(|t| has(t))
            .map(|t| t.tool.as_str())
            .collect();
        if tools.is_empty() {
            count.to_string()
        } else {
            format!("{count} ({})", tools.join(", "))
        }
    };
    if let Some(most) = gates.max_runaways() {
        gate(
            "max_runaways",
            most.to_string(),
            named(client.runaway, |t| t.runaways > 0),
            client.runaway <= most,
        );
    }
    if let Some(most) = gates.duplicate_writes() {
        gate(
            "duplicate_writes",
            most.to_string(),
            named(judgement.duplicate_writes, |t| t.duplicate_writes > 0),
            judgement.duplicate_writes <= most,
        );
    }
    Some(GateReport {
        passed: results.iter().all(|g| g.passed),
        gates: results,
    })
}

#[cfg(test)]
mod tests {
    use super::super::record::{CallOutcome, CallRecord, Hints};
    use super::*;
    use crate::mcp_proxy::plan::Gates;

    fn call(attempt: u32, start: f64, outcome: CallOutcome) -> CallRecord {
        CallRecord::of("echo", start, outcome)
            .latency_ms(100.0)
            .cancel_after_ms((outcome == CallOutcome::Timeout).then_some(100.0))
            .logical(0, attempt, "t")
    }

    #[test]
    fn a_runaway_write_breaks_its_gates_and_the_others_pass() {
        let records = (1..=4)
            .map(|a| {
                let outcome = if a < 4 {
                    CallOutcome::Timeout
                } else {
                    CallOutcome::Ok
                };
                call(a, f64::from(a) * 200.0, outcome)
            })
            .collect();
        let run = super::super::figures(records, 1000.0, &Hints::new());
        let gates = Gates {
            max_detection_ms: Some(3000),
            max_recovery_ms: Some(5000),
            require_clean_timeout: true,
            max_runaways: Some(0),
            duplicate_writes: Some(0),
        };
        let report = evaluate(&gates, &run).unwrap();
        let passed: Vec<(&str, bool)> = report
            .gates
            .iter()
            .map(|g| (g.gate.as_str(), g.passed))
            .collect();
        assert_eq!(
            passed,
            [
                ("max_detection_ms", true),
                ("require_clean_timeout", true),
                ("max_recovery_ms", true),
                ("max_runaways", false),
                ("duplicate_writes", false),
            ]
        );
        assert_eq!(
            report.summary(),
            "FAILED: max_runaways 1 (echo) (allowed 0); duplicate_writes 3 (echo) (allowed 0)"
        );
        assert!(evaluate(&Gates::default(), &run).is_none());
    }
}
