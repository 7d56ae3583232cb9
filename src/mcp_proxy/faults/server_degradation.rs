//! `server_degradation`: episodes in which every tool of the trigger's `tools` fails together. An episode
//! starts at a tick with probability `episode_rate` and lasts `episode_len` ticks. A tick is a call ordinal
//! (`clock: calls`: each tool's n-th call shares tick n) or `tick_ms` of wall-clock time (`clock: ms`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, Failure, FaultError, FaultMemory, Format, McpFaultSpec, PeerEntry,
    PeerValueError, check_probability, no_tools_no_fault,
};
use crate::mcp_proxy::roll::call_roll;

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

fn twenty() -> u64 {
    20
}

fn second() -> u64 {
    1000
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerDegradation {
    #[serde(default = "episode_rate")]
    pub episode_rate: f64,
    #[serde(default = "twenty")]
    pub episode_len: u64,
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

    /// Whether `tick` falls in an episode; the same for every tool of the group.
    fn degraded(&self, seed: u64, fault_index: usize, tick: u64) -> bool {
        let first = tick.saturating_sub(self.episode_len.saturating_sub(1));
        (first..=tick)
            .any(|start| call_roll(seed, fault_index, "", start, "episode") < self.episode_rate)
    }
}

impl McpFaultSpec for ServerDegradation {
    /// mcp-chaos's `episode_rate` is the long-run share of degraded ticks (its chain's entry probability is
    /// derived from it): here it becomes the probability an episode starts at a tick that gives that share,
    /// 1 - (1 - rate)^(1 / episode_len). Its `episode_len` may be a decimal (rounded); without `tools` it
    /// degrades no tool.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        if entry.format != Format::McpChaos {
            return Ok(());
        }
        no_tools_no_fault(entry);
        entry.round("episode_len");
        let share = entry
            .get("episode_rate")
            .map_or(Some(episode_rate()), serde_json::Value::as_f64);
        let len = entry
            .get("episode_len")
            .map_or(Some(twenty()), serde_json::Value::as_u64);
        if let (Some(share), Some(len)) = (share, len)
            && (0.0..=1.0).contains(&share)
            && len > 0
        {
            let start = 1.0 - (1.0 - share).powf(1.0 / len as f64);
            entry.set("episode_rate", start.into());
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), FaultError> {
        check_probability("episode_rate", self.episode_rate)?;
        if self.episode_len == 0 {
            return Err(FaultError::Rule {
                field: "episode_len",
                rule: "be at least 1",
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

    /// The call's tick falls in an episode.
    fn fires(&self, call: &CallContext<'_>, _memory: &mut FaultMemory) -> bool {
        self.degraded(
            call.seed,
            call.fault_index,
            self.tick(call.ordinal, call.elapsed_ms),
        )
    }

    fn describe(&self) -> String {
        format!(
            "episodes of {} ticks ({:?}) where the tools fail together, starting at {:.1}% of ticks",
            self.episode_len,
            self.clock,
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
