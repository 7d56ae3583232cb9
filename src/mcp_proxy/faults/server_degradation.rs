//! `server_degradation`: episodes in which every tool of the trigger's `tools` fails together, as mcp-chaos's
//! `server_degradation` has them: `episode_rate` is the long-run share of degraded ticks and `episode_len` the
//! mean length of an episode in ticks (a two-state [`Chain`] starting in its long-run state). A tick is a call
//! ordinal (`clock: calls`: each tool's n-th call shares tick n) or `tick_ms` of wall-clock time (`clock: ms`).
//! The chain is keyed by (seed, fault, tick), so every tool of the group sees the same episodes on every run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, Chain, Failure, FaultError, FaultMemory, Format, McpFaultSpec, PeerEntry,
    PeerType, PeerValueError, check_probability, no_tools_no_fault, require_tools,
};
use crate::mcp_proxy::trigger::Trigger;

pub const DEFAULT_CODE: i64 = -32000;
pub const DEFAULT_MESSAGE: &str = "injected error";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Clock {
    #[default]
    Calls,
    Ms,
}

fn episode_rate() -> f64 {
    0.08
}

fn episode_len() -> f64 {
    20.0
}

fn second() -> u64 {
    1000
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerDegradation {
    /// The long-run share of degraded ticks.
    #[serde(default = "episode_rate")]
    pub episode_rate: f64,
    /// The mean length of an episode, in ticks (a decimal is kept).
    #[serde(default = "episode_len")]
    pub episode_len: f64,
    #[serde(default)]
    pub clock: Clock,
    #[serde(default = "second")]
    pub tick_ms: u64,
    #[serde(flatten)]
    pub failure: Failure,
}

impl ServerDegradation {
    /// The tick of a call made `elapsed_ms` after start with this ordinal.
    fn tick(&self, ordinal: u64, elapsed_ms: u64) -> u64 {
        match self.clock {
            Clock::Calls => ordinal,
            Clock::Ms => elapsed_ms / self.tick_ms.max(1),
        }
    }

    fn chain(&self) -> Chain {
        Chain {
            rate: self.episode_rate,
            mean_len: self.episode_len,
        }
    }
}

impl McpFaultSpec for ServerDegradation {
    fn wire() -> &'static str {
        "episodes in which all the trigger's `tools` fail together, as mcp-chaos has them: `episode_rate` \
        (0.08) is the long-run share of degraded ticks and `episode_len` (20, a decimal kept) the mean episode \
        length in ticks (a two-state chain starting in its long-run state: an episode goes on with probability \
        1 − 1/`episode_len` at each tick, and one starts with the probability that keeps that share); a tick \
        is a call ordinal (`clock: calls`, the default: every tool's *n*-th call shares tick *n*) or `tick_ms` \
        of wall-clock time (`clock: ms`, time-based like `window`); -32000 `injected error`"
    }

    fn peer_types() -> &'static [PeerType] {
        const {
            &[PeerType::mcp_chaos(
                "server_degradation",
                &["tools", "episode_rate", "episode_len"],
            )]
        }
    }

    /// In mcp-chaos an `episode_len` below 1 counts as 1, and without `tools` no tool is degraded.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        if entry.format != Format::McpChaos {
            return Ok(());
        }
        no_tools_no_fault(entry);
        if let Some(len) = entry.get("episode_len").and_then(serde_json::Value::as_f64)
            && len < 1.0
        {
            entry.set("episode_len", 1.0.into());
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), FaultError> {
        check_probability("episode_rate", self.episode_rate)?;
        if self.episode_len < 1.0 {
            return Err(FaultError::Value {
                field: "episode_len",
                rule: "be at least 1 (the mean episode length, in ticks)",
                got: self.episode_len.to_string(),
            });
        }
        if self.tick_ms == 0 {
            return Err(FaultError::Rule {
                field: "tick_ms",
                rule: "be at least 1",
            });
        }
        Ok(())
    }

    /// Without `tools` mcp-chaos degrades no tool, where our trigger would pick every tool: the group is
    /// named.
    fn check_trigger(&self, trigger: &Trigger) -> Result<(), FaultError> {
        require_tools(
            trigger,
            "name the tools that fail together (`[\"*\"]` for every tool; mcp-chaos's server_degradation \
             without tools degrades none)",
        )
    }

    /// The chain is on at the call's tick.
    fn fires(&self, call: &CallContext<'_>, memory: &mut FaultMemory) -> bool {
        let tick = self.tick(call.ordinal, call.elapsed_ms);
        self.chain()
            .on_at(call.seed, call.fault_index, tick, &mut memory.chain)
    }

    fn describe(&self) -> String {
        let tick = match self.clock {
            Clock::Calls => "calls".to_owned(),
            Clock::Ms => format!("ticks of {} ms", self.tick_ms),
        };
        format!(
            "episodes of ~{} {tick} in which the tools fail together, {:.1}% of the time in all",
            self.episode_len,
            self.episode_rate * 100.0
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
