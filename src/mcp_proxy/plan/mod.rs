//! The plan file: `seed`, `mode`, `policy` and `faults`, in YAML or JSON. The peer tools' plans load unchanged
//! and mean what they meant there: the format is recognised from the plan's spelling ([`format`]), each fault
//! reads its keys as that format means them (its [`McpFaultSpec::read_peer`]), and the policy is the peer's
//! unless the plan says. The formats: mcp-chaos (`added_ms`, `error_injection` + `rate`, ...), mcptest
//! (`kind: hang`, `slow:<ms>`, `recover-after:<n>`, `target: {tool}`), mcp-chaos-monkey (camelCase `delayMs`,
//! `statusCode`, `hangMs`, `retryAfterSeconds`, `missingFields`, `corruptResponse`, `target` + `config` +
//! `duration_ms`) and SmartAI's (`tool:` glob, `after_calls`, `server:`). Unknown keys are an error naming the
//! key and its line. A plan is bounded before it is parsed (its size and nesting) and after (its fault count).
//!
//! [`McpFaultSpec::read_peer`]: crate::mcp_proxy::faults::McpFaultSpec::read_peer

mod entry;
mod error;
mod format;
mod gates;
mod load;
mod suite;
mod text;

use serde::{Deserialize, Serialize};

use super::faults::McpFault;
use super::trigger::Trigger;

pub use entry::nested_fault;
pub use error::{FaultEntryError, InvalidPlan, NestedFaultError, PlanError, PlanTextError};
pub use gates::Gates;
pub use load::read_value;

/// The largest plan read, in bytes: a thousand faults fit with room; a parser's time on a malformed plan
/// grows with its size.
pub const MAX_PLAN_BYTES: u64 = 256 * 1024;
/// The most faults a plan holds (every call is decided against each).
pub const MAX_FAULTS: usize = 1000;
/// The deepest nesting of a plan's flow collections (`[`, `{`); a plan needs a handful.
pub const MAX_NESTING: usize = 32;

/// What the proxy does when it fails itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Pass the original message on and log the error.
    #[default]
    FailSafe,
    /// Answer the client with a JSON-RPC error instead.
    Strict,
}

/// Which of the faults that fire on one call apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// The first fault, in plan order, that fires; the faults after it are not evaluated.
    #[default]
    First,
    /// Every fault that fires, in plan order (mcp-chaos applies its faults in sequence): delays add up,
    /// result rewrites chain, and the first fault that answers in the server's place (error, timeout, hang,
    /// dropped connection, ...) ends the chain, after the delays before it.
    All,
    /// The first fault, in plan order, whose trigger selects the call decides alone: when its roll misses, no
    /// fault applies (mcp-chaos-monkey evaluates only the first fault aimed at a target).
    FirstMatch,
}

/// One fault of a plan: when (trigger) and what (spec).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedFault {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(flatten)]
    pub spec: McpFault,
    #[serde(flatten)]
    pub trigger: Trigger,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Plan {
    pub seed: u64,
    pub mode: Mode,
    pub policy: Policy,
    /// The server command from the plan (`upstream.command` or SmartAI's `server.command`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    pub faults: Vec<PlannedFault>,
    /// The budgets the run must meet (`gates:`, or the `recovery:` of an mcptest suite's agents).
    #[serde(skip_serializing_if = "Gates::is_empty")]
    pub gates: Gates,
}

/// How a plan's text is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Yaml,
    Json,
}

const TOP_KEYS: &[&str] = &[
    "version", "format", "seed", "mode", "faults", "upstream", "server", "policy", "gates",
    "agents",
];
