//! What every fault file implements ([`McpFaultSpec`]), how a spec is refused, and the checks specs share.

use serde_json::Value;

use super::action::Action;
use super::context::{CallContext, FaultMemory};
use super::nested::NestedFault;
use super::peer::{PeerEntry, PeerType, PeerValueError};
use super::scope::Scope;
use crate::mcp_proxy::trigger::Trigger;

/// A fault's spec refused; the message names the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultError {
    #[error("{field} must {rule}")]
    Rule {
        field: &'static str,
        rule: &'static str,
    },
    #[error("{field} must {rule}, got {got}")]
    Value {
        field: &'static str,
        rule: &'static str,
        got: String,
    },
    #[error("rename maps `{0}` to itself")]
    RenameToItself(String),
    #[error("then: {0}")]
    Then(Box<FaultError>),
}

/// A fault's rewrite of a response that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    #[error("response is not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("{0}")]
    Encode(serde_json::Error),
}

/// How a fault that hides tools changes `tools/list` once it has fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hiding {
    /// Whether the client is told with `notifications/tools/list_changed`.
    pub notify: bool,
}

/// Behaviour every fault file implements. The defaults are those of a fault that acts on the call it fires
/// on ([`Scope::Call`]), keyed by the tool and its ordinal, and fires whenever its trigger and roll say so.
pub trait McpFaultSpec {
    /// What the fault does on the wire, for the reference (one paragraph, markdown).
    fn wire() -> &'static str
    where
        Self: Sized;

    /// The fault's other type names of ours (`delay` for `latency`), read in every format.
    fn aliases() -> &'static [&'static str]
    where
        Self: Sized,
    {
        &[]
    }

    /// The peers' fault types this fault reads, read in every format: mcp-chaos's with the keys its fault
    /// takes (`error_injection` with `rate` and `tools` for `flaky`), mcp-chaos-monkey's (`rate-limit`),
    /// SmartAI's (`corrupt`), mcptest's (`wedged`). The plan loader recognises a peer's plans by them.
    fn peer_types() -> &'static [PeerType]
    where
        Self: Sized,
    {
        &[]
    }

    /// Reads what the entry's keys mean in its format into our keys (`added_ms` → `ms`, a peer's defaults,
    /// ...), before the plan loader checks the keys against the spec's; refuses what the peer refuses.
    fn read_peer(_entry: &mut PeerEntry) -> Result<(), PeerValueError>
    where
        Self: Sized,
    {
        Ok(())
    }

    /// Checks the spec's values; the error names the field.
    fn validate(&self) -> Result<(), FaultError> {
        Ok(())
    }

    /// Checks the trigger the fault is planned with.
    fn check_trigger(&self, _trigger: &Trigger) -> Result<(), FaultError> {
        Ok(())
    }

    /// Whether the fault acts only on Streamable HTTP exchanges (a plan error in stdio mode).
    fn http_only(&self) -> bool {
        false
    }

    /// A key given by the caller that the fault's roll is keyed on instead of (tool, ordinal): the roll is then
    /// that of (key, 0), the same for the same key on every machine.
    fn roll_key(&self, _arguments: Option<&Value>) -> Option<String> {
        None
    }

    /// Whether the fault fires on a call its trigger selected and its roll passed (and, for a fault on tasks,
    /// whose task the proxy saw made); `memory` is what the decider kept for this fault and this tool.
    fn fires(&self, _call: &CallContext<'_>, _memory: &mut FaultMemory) -> bool {
        true
    }

    /// What the fault acts on: the methods it is planned on by default, what its trigger's `tools` pick, how
    /// its roll is keyed and what the proxy learns for it.
    fn scope(&self) -> Scope {
        Scope::Call
    }

    /// Whether the trigger's tools leave `tools/list` results once the fault has fired (from the start when
    /// nothing in the trigger holds it back).
    fn hides_tools(&self) -> Option<Hiding> {
        None
    }

    /// A fault the spec holds, as the plan wrote it until the plan loader builds it (recover_after's `then`).
    fn nested_mut(&mut self) -> Option<&mut NestedFault> {
        None
    }

    /// One line saying what the fault does on the wire.
    fn describe(&self) -> String;

    /// What to do with a call this fault fired on.
    fn action(&self, call: &CallContext<'_>) -> Action;

    /// Rewrites the response of a call whose action was [`Action::Rewrite`].
    fn rewrite(&self, response: &mut Value, _call: &CallContext<'_>) {
        let _ = response;
    }

    /// Rewrites the raw response line (faults that break JSON itself); the default goes through [`Self::rewrite`].
    fn rewrite_line(&self, line: &[u8], call: &CallContext<'_>) -> Result<Vec<u8>, RewriteError> {
        let mut value: Value = serde_json::from_slice(line).map_err(RewriteError::NotJson)?;
        self.rewrite(&mut value, call);
        let mut out = serde_json::to_vec(&value).map_err(RewriteError::Encode)?;
        out.push(b'\n');
        Ok(out)
    }
}

/// For a peer whose fault with no (or empty) `tools` acts on no tool, where our trigger would pick every tool:
/// a fault that fires on no call.
pub(crate) fn no_tools_no_fault(entry: &mut PeerEntry) {
    if entry
        .get("tools")
        .is_none_or(|tools| tools.as_array().is_some_and(Vec::is_empty))
    {
        entry.set("probability", 0.0.into());
    }
}

/// For a fault whose `tools` name what it acts on, where a peer's without `tools` acts on nothing: refuses a
/// trigger without tools unless it fires on no call (a peer's fault read by [`no_tools_no_fault`]).
pub(crate) fn require_tools(trigger: &Trigger, rule: &'static str) -> Result<(), FaultError> {
    if trigger.tools.is_empty() && trigger.probability > 0.0 {
        return Err(FaultError::Rule {
            field: "tools",
            rule,
        });
    }
    Ok(())
}

/// Checks that `value` of `field` is a probability.
pub(crate) fn check_probability(field: &'static str, value: f64) -> Result<(), FaultError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(FaultError::Value {
            field,
            rule: "be between 0 and 1",
            got: value.to_string(),
        })
    }
}
