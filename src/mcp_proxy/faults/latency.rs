//! `latency`: hold one call's request or response for `ms` plus a seeded jitter; other calls keep flowing.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, FaultError, Format, McpFaultSpec, PeerEntry, PeerType, PeerValueError, ms,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Forward at once, hold the server's response.
    #[default]
    Response,
    /// Hold the request before it reaches the server.
    Request,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Latency {
    /// Added delay in milliseconds.
    pub ms: u64,
    /// Uniform jitter 0..=jitter_ms added on top, from the call's seeded roll.
    #[serde(default)]
    pub jitter_ms: u64,
    #[serde(default)]
    pub phase: Phase,
    /// Upper bound of the total delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap_ms: Option<u64>,
}

impl Latency {
    /// The delay of one call.
    pub fn delay_ms(&self, call: &CallContext<'_>) -> u64 {
        let jitter = if self.jitter_ms == 0 {
            0
        } else {
            (call.roll_for("jitter") * (self.jitter_ms + 1) as f64) as u64
        };
        let total = self.ms + jitter.min(self.jitter_ms);
        self.cap_ms.map_or(total, |cap| total.min(cap))
    }
}

impl McpFaultSpec for Latency {
    fn wire() -> &'static str {
        "holds this call's response (`phase: response`) or request (`phase: request`) for `ms` + seeded jitter \
        0..`jitter_ms`; other calls keep flowing"
    }

    fn aliases() -> &'static [&'static str] {
        &["delay"]
    }

    fn peer_types() -> &'static [PeerType] {
        const {
            &[
                PeerType::mcp_chaos("latency", &["added_ms", "jitter_ms", "probability"]),
                PeerType::of(Format::SmartAi, "slow"),
                PeerType::of(Format::McpTest, "slow"),
                PeerType::of(Format::ChaosMonkey, "latency"),
            ]
        }
    }

    /// mcp-chaos's `added_ms` (250 when absent; decimals rounded), mcptest's `slow:<ms>` and `delay_ms`;
    /// mcp-chaos-monkey's `delayMs` and SmartAI's `slow` + `delay_ms` (2000 when absent) are waits before the
    /// request is forwarded.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        entry.rename("added_ms", "ms");
        entry.rename("delay_ms", "ms");
        entry.set_from_suffix("ms");
        match entry.format {
            Format::McpChaos => {
                entry.set_default("ms", 250.into());
                entry.round("ms");
                entry.round("jitter_ms");
            }
            Format::SmartAi => {
                entry.set_default("ms", 2000.into());
                entry.set_default("phase", "request".into());
            }
            Format::ChaosMonkey => entry.set_default("phase", "request".into()),
            Format::Own | Format::McpTest => {}
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), FaultError> {
        if self.ms > 3_600_000 {
            return Err(FaultError::Value {
                field: "ms",
                rule: "be at most 3600000 (one hour)",
                got: self.ms.to_string(),
            });
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let phase = match self.phase {
            Phase::Response => "response",
            Phase::Request => "request",
        };
        format!(
            "hold the {phase} {} ms (+0..{} ms jitter)",
            self.ms, self.jitter_ms
        )
    }

    fn action(&self, call: &CallContext<'_>) -> Action {
        let delay = ms(self.delay_ms(call));
        match self.phase {
            Phase::Response => Action::DelayResponse(delay),
            Phase::Request => Action::DelayRequest(delay),
        }
    }
}
