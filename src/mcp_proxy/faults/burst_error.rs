//! `burst_error`: failures come in bursts, as mcp-chaos's `burst_error` has them: a two-state [`Chain`] stepped
//! once per call, whose long-run share of failed calls is `rate` and whose bursts last `burst_len` calls on
//! average, starting in its long-run state. A tick is a call ordinal: each tool's n-th call shares tick n, so a
//! burst fails every tool of the trigger together, and the bursts are the same on every run whatever the
//! arrival order.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, Chain, Failure, FaultError, FaultMemory, Format, McpFaultSpec, PeerEntry,
    PeerType, PeerValueError, check_probability,
};

pub const DEFAULT_CODE: i64 = -32000;
pub const DEFAULT_MESSAGE: &str = "injected error";

fn rate() -> f64 {
    0.02
}

fn burst_len() -> f64 {
    8.0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BurstError {
    /// The long-run share of failed calls.
    #[serde(default = "rate")]
    pub rate: f64,
    /// The mean length of a burst, in calls (a decimal is kept).
    #[serde(default = "burst_len")]
    pub burst_len: f64,
    #[serde(flatten)]
    pub failure: Failure,
}

impl McpFaultSpec for BurstError {
    fn wire() -> &'static str {
        "failures in bursts, as mcp-chaos has them: `rate` (0.02) is the long-run share of failed calls and \
        `burst_len` (8, a decimal kept) the mean burst length in calls; a two-state chain stepped per call \
        ordinal and starting in its long-run state, each tool's *n*-th call sharing step *n*, so a burst fails \
        the trigger's tools together; -32000 `injected error`"
    }

    fn peer_types() -> &'static [PeerType] {
        const {
            &[PeerType::mcp_chaos(
                "burst_error",
                &["rate", "burst_len", "tools"],
            )]
        }
    }

    /// In mcp-chaos a `burst_len` below 1 counts as 1.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        if entry.format == Format::McpChaos
            && let Some(len) = entry.get("burst_len").and_then(serde_json::Value::as_f64)
            && len < 1.0
        {
            entry.set("burst_len", 1.0.into());
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), FaultError> {
        check_probability("rate", self.rate)?;
        if self.burst_len < 1.0 {
            return Err(FaultError::Value {
                field: "burst_len",
                rule: "be at least 1 (the mean burst length, in calls)",
                got: self.burst_len.to_string(),
            });
        }
        Ok(())
    }

    /// The chain is on at the call's ordinal.
    fn fires(&self, call: &CallContext<'_>, memory: &mut FaultMemory) -> bool {
        let chain = Chain {
            rate: self.rate,
            mean_len: self.burst_len,
        };
        chain.on_at(call.seed, call.fault_index, call.ordinal, &mut memory.chain)
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
