//! Gates for CI: budgets a run must meet, written in a plan (`gates:`, or an mcptest suite's `recovery:`), as
//! `fault mcp-proxy` flags, or as the scenario tool's `gates` field. They are read here with the rest of the
//! plan; the chaos report judges them (`report::chaos::gates`), and `fault mcp-proxy` exits non-zero when one
//! fails.
//!
//! `max_detection_ms`, `max_recovery_ms` and `require_clean_timeout` mean what they mean in mcptest's
//! `recovery:` matcher: the per-call timeout budget, the recovery budget (a failure never recovered fails it),
//! and that every call without an answer was given up cleanly (cancelled, within the timeout budget).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::InvalidPlan;
use super::text::key_line;

/// The budgets of a run; each one given is a gate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct Gates {
    /// Gate: the client detects every call left without an answer (it cancels it) within this many ms of
    /// sending it (mcptest's per-call timeout budget). E.g. 3000.
    #[arg(long, value_name = "MS")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_detection_ms: Option<u64>,
    /// Gate: every failure is followed by a valid result of the same tool within this many ms; a failure
    /// never recovered fails it (mcptest's recovery budget). E.g. 5000.
    #[arg(long, value_name = "MS")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_recovery_ms: Option<u64>,
    /// Gate: every call left without an answer was given up cleanly: cancelled by the client, within
    /// `max_detection_ms` when it is given (mcptest's `require_clean_timeout`). Default false.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_clean_timeout: bool,
    /// Gate: at most this many runaway calls (3 or more retries after a failure). E.g. 0.
    #[arg(long, value_name = "N")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runaways: Option<u64>,
    /// Gate: at most this many duplicate writes (a write sent again after the server had received it). E.g. 0.
    #[arg(long, value_name = "N")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_writes: Option<u64>,
}

impl Gates {
    /// Whether no gate is set.
    pub fn is_empty(&self) -> bool {
        *self == Gates::default()
    }

    /// These gates with `other`'s set ones over them (flags over the plan).
    pub fn overridden_by(&self, other: &Gates) -> Gates {
        Gates {
            max_detection_ms: other.max_detection_ms.or(self.max_detection_ms),
            max_recovery_ms: other.max_recovery_ms.or(self.max_recovery_ms),
            require_clean_timeout: other.require_clean_timeout || self.require_clean_timeout,
            max_runaways: other.max_runaways.or(self.max_runaways),
            duplicate_writes: other.duplicate_writes.or(self.duplicate_writes),
        }
    }

    /// The stricter of two sets of budgets (an mcptest suite's agents, each with its `recovery:`).
    pub fn strictest(&self, other: &Gates) -> Gates {
        let min = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Gates {
            max_detection_ms: min(self.max_detection_ms, other.max_detection_ms),
            max_recovery_ms: min(self.max_recovery_ms, other.max_recovery_ms),
            require_clean_timeout: self.require_clean_timeout || other.require_clean_timeout,
            max_runaways: min(self.max_runaways, other.max_runaways),
            duplicate_writes: min(self.duplicate_writes, other.duplicate_writes),
        }
    }
}

/// The gates written at `key`, refused naming the key and what was wrong.
pub(super) fn gates_of(key: &str, value: Value, source: &str) -> Result<Gates, InvalidPlan> {
    serde_json::from_value(value).map_err(|error| InvalidPlan::Gates {
        key: key.to_owned(),
        error: error.to_string(),
        line: key_line(source, key.rsplit('.').next().unwrap_or(key)),
    })
}
