//! `flaky` (alias `error_injection`): fail a seeded share of calls. The share is the trigger's `probability`
//! (the plan's `fail_rate` or `rate`); the roll is the call's keyed roll, or the roll of `arguments.call_id`
//! when the call carries one, so the same inputs fail on every machine.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Action, CallContext, Failure, McpFaultSpec, PeerEntry, PeerType, PeerValueError};

pub const DEFAULT_CODE: i64 = -32000;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Flaky {
    #[serde(flatten)]
    pub failure: Failure,
}

impl McpFaultSpec for Flaky {
    fn wire() -> &'static str {
        "fails when the call's seeded roll < `fail_rate` (or `rate`): -32000 `flaky failure (roll=0.4231)`; \
        `arguments.call_id`, when present, keys the roll"
    }

    fn peer_types() -> &'static [PeerType] {
        const { &[PeerType::mcp_chaos("error_injection", &["rate", "tools"])] }
    }

    /// plexara's `fail_rate` and mcp-chaos's `rate` are the trigger's probability; mcp-chaos's
    /// `error_injection`, in whatever plan, fails 0.02 of the calls when it gives no `rate`, answering
    /// "injected error".
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        entry.rename("fail_rate", "probability");
        entry.rename("rate", "probability");
        if entry.type_name == "error_injection" {
            entry.set_default("probability", 0.02.into());
            entry.set_default("message", "injected error".into());
        }
        Ok(())
    }

    /// plexara's `call_id` argument, when the call carries one.
    fn roll_key(&self, arguments: Option<&Value>) -> Option<String> {
        let id = arguments?.get("call_id")?;
        Some(id.as_str().map_or_else(|| id.to_string(), str::to_owned))
    }

    fn describe(&self) -> String {
        "fail the calls whose seeded roll is below the rate".into()
    }

    fn action(&self, call: &CallContext<'_>) -> Action {
        let default_message = format!("flaky failure (roll={:.4})", call.roll);
        Action::Reply {
            after: std::time::Duration::ZERO,
            reply: self.failure.reply(DEFAULT_CODE, &default_message),
            call_upstream: false,
        }
    }
}
