//! What the proxy knows about the call a fault acts on, and what the decider keeps for a fault between one
//! tool's calls.

use super::chain::ChainState;
use crate::mcp_proxy::learned::{Ask, TaskRequest};
use crate::mcp_proxy::trigger::Matcher;
use crate::seeded::call_roll;

/// What the proxy knows about the call a fault acts on.
#[derive(Debug, Clone, Default)]
pub struct CallContext<'a> {
    pub seed: u64,
    pub fault_index: usize,
    /// The tool name (`params.name`), or the method for calls without one.
    pub tool: &'a str,
    /// 1-based count of calls to this tool since the proxy started.
    pub ordinal: u64,
    /// Milliseconds from the proxy's start to the call's decision.
    pub elapsed_ms: u64,
    /// The decision's roll (see [`call_roll`]).
    pub roll: f64,
    /// The fault's trigger, for a fault that picks the tools of a listing
    /// ([`Scope::Listing`](super::Scope::Listing)); `None` picks them all.
    pub tools: Option<&'a Matcher>,
    /// What the request says beyond its tool.
    pub request: RequestFacts<'a>,
}

/// What a request says that the faults on tasks, questions and protocol versions act on. Read only when a
/// fault of the plan needs it ([`Scope::reads_learned`](super::Scope::reads_learned)), except the protocol
/// version, which is one lookup in the parameters the envelope already holds.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestFacts<'a> {
    /// The task a `tasks/*` request names, when the proxy saw the `tools/call` that made it (the call's
    /// `tool` is then that call's tool).
    pub task: Option<&'a TaskRequest>,
    /// The protocol version the request declares: its `_meta` `io.modelcontextprotocol/protocolVersion`, or
    /// an `initialize`'s `protocolVersion`.
    pub protocol_version: Option<&'a str>,
    /// For a `tools/call` that carries `inputResponses`: the question the server last asked of its tool.
    pub answers: Option<&'a Ask>,
}

impl CallContext<'_> {
    /// A further roll for the same call, independent of the decision's (e.g. jitter).
    pub fn roll_for(&self, salt: &str) -> f64 {
        call_roll(self.seed, self.fault_index, self.tool, self.ordinal, salt)
    }

    /// Whether the fault's trigger picks the listed tool `name`.
    pub fn selects_tool(&self, name: &str) -> bool {
        self.tools.is_none_or(|m| m.matches_tool(name))
    }
}

/// A call for a test: the `ordinal`th call to `tool`, with seed 0, roll 0 and nothing else known.
#[cfg(test)]
impl<'a> CallContext<'a> {
    pub fn for_tool(tool: &'a str, ordinal: u64) -> Self {
        Self {
            tool,
            ordinal,
            ..Default::default()
        }
    }

    pub fn seed(self, seed: u64) -> Self {
        Self { seed, ..self }
    }

    pub fn roll(self, roll: f64) -> Self {
        Self { roll, ..self }
    }

    /// The call as a request of `task`.
    pub fn task(self, task: &'a TaskRequest) -> Self {
        Self {
            request: RequestFacts {
                task: Some(task),
                ..self.request
            },
            ..self
        }
    }
}

/// What the decider keeps for one fault and one tool between that tool's calls, for the fault's own firing
/// rule: the tool's copy of a correlated fault's [`Chain`](super::Chain), where it last stood. It starts empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultMemory {
    pub chain: Option<ChainState>,
    /// The question (its serial) the fault last asked again, and how many times.
    pub asked_again: Option<(u64, u64)>,
}
