//! `burst_error`: failures come in bursts. A two-state chain (ok, failing) steps once per call of each tool;
//! it leaves a burst with probability 1/`burst_len` and enters one with the probability that keeps the
//! long-run failure share at `rate`. Each step's roll is keyed by (seed, fault, tool, ordinal), so the
//! bursts are the same on every run whatever the arrival order.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, Failure, FaultError, FaultMemory, Format, McpFaultSpec, PeerEntry,
    PeerValueError, check_probability,
};
use crate::mcp_proxy::roll::call_roll;

pub const DEFAULT_CODE: i64 = -32000;
pub const DEFAULT_MESSAGE: &str = "injected error";

fn rate() -> f64 {
    0.02
}

fn eight() -> u64 {
    8
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BurstError {
    #[serde(default = "rate")]
    pub rate: f64,
    #[serde(default = "eight")]
    pub burst_len: u64,
    #[serde(flatten)]
    pub failure: Failure,
}

impl BurstError {
    fn exit_probability(&self) -> f64 {
        1.0 / self.burst_len as f64
    }

    fn enter_probability(&self) -> f64 {
        (self.rate * self.exit_probability() / (1.0 - self.rate)).min(1.0)
    }

    /// The chain's next state from `failing`, given this step's roll.
    fn step(&self, failing: bool, roll: f64) -> bool {
        if failing {
            roll >= self.exit_probability()
        } else {
            roll < self.enter_probability()
        }
    }
}

impl McpFaultSpec for BurstError {
    /// mcp-chaos's `burst_len` may be a decimal (rounded).
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        if entry.format == Format::McpChaos {
            entry.round("burst_len");
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), FaultError> {
        check_probability("rate", self.rate)?;
        if self.rate >= 1.0 {
            return Err(FaultError::Rule {
                field: "rate",
                rule: "be below 1",
            });
        }
        if self.burst_len == 0 {
            return Err(FaultError::Rule {
                field: "burst_len",
                rule: "be at least 1",
            });
        }
        Ok(())
    }

    /// The chain's state at the call's ordinal, stepped on from where `memory` left it (or from the start).
    fn fires(&self, call: &CallContext<'_>, memory: &mut FaultMemory) -> bool {
        let (mut at, mut failing) = if memory.ordinal <= call.ordinal {
            (memory.ordinal, memory.on)
        } else {
            (0, false)
        };
        while at < call.ordinal {
            at += 1;
            let roll = call_roll(call.seed, call.fault_index, call.tool, at, "burst");
            failing = self.step(failing, roll);
        }
        *memory = FaultMemory {
            ordinal: at,
            on: failing,
        };
        failing
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
