//! `burst_error`: failures come in bursts. A two-state chain (ok, failing) steps once per call of each tool;
//! it leaves a burst with probability 1/`burst_len` and enters one with the probability that keeps the
//! long-run failure share at `rate`. Each step's roll is keyed by (seed, fault, tool, ordinal), so the
//! bursts are the same on every run whatever the arrival order.

use serde::{Deserialize, Serialize};

use super::{Action, CallContext, Failure, Fault, check_probability};

pub const DEFAULT_CODE: i64 = -32000;
pub const DEFAULT_MESSAGE: &str = "injected error";

fn rate() -> f64 {
    0.02
}

fn eight() -> u64 {
    8
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurstError {
    #[serde(default = "rate")]
    pub rate: f64,
    #[serde(default = "eight")]
    pub burst_len: u64,
    #[serde(flatten)]
    pub failure: Failure,
}

impl BurstError {
    pub const KEYS: &[&str] = &["rate", "burst_len", "as", "code", "message", "category"];

    fn exit_probability(&self) -> f64 {
        1.0 / self.burst_len as f64
    }

    fn enter_probability(&self) -> f64 {
        (self.rate * self.exit_probability() / (1.0 - self.rate)).min(1.0)
    }

    /// The chain's next state from `failing`, given this step's roll.
    pub fn step(&self, failing: bool, roll: f64) -> bool {
        if failing {
            roll >= self.exit_probability()
        } else {
            roll < self.enter_probability()
        }
    }
}

impl Fault for BurstError {
    fn validate(&self) -> Result<(), String> {
        check_probability("rate", self.rate)?;
        if self.rate >= 1.0 {
            return Err("rate must be below 1".into());
        }
        if self.burst_len == 0 {
            return Err("burst_len must be at least 1".into());
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "fail in bursts of ~{} calls, {:.1}% of calls overall",
            self.burst_len,
            self.rate * 100.0
        )
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Reply {
            after: std::time::Duration::ZERO,
            reply: self.failure.reply(DEFAULT_CODE, DEFAULT_MESSAGE),
            call_upstream: false,
        }
    }
}
