//! `hang` (alias `wedged`): the client never gets an answer, until it cancels or the hold cap is reached.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, FaultError, Format, McpFaultSpec, OnCap, PeerEntry, PeerType,
    PeerValueError, ms,
};

fn yes() -> bool {
    true
}

const TEN_MINUTES_MS: u64 = 600_000;

fn ten_minutes() -> u64 {
    TEN_MINUTES_MS
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Hang {
    /// Still deliver the request, so side effects happen; the real answer is swallowed.
    #[serde(default = "yes")]
    pub forward: bool,
    #[serde(default = "ten_minutes")]
    pub max_hold_ms: u64,
    #[serde(default)]
    pub on_cap: OnCap,
    /// `hang` or `wedged`: only recorded, to keep the plan's intent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl Hang {
    /// A hang that forwards the call and holds it for ten minutes.
    pub const DEFAULT: Hang = Hang {
        forward: true,
        max_hold_ms: TEN_MINUTES_MS,
        on_cap: OnCap::Drop,
        label: None,
    };
}

impl Default for Hang {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl McpFaultSpec for Hang {
    fn wire() -> &'static str {
        "no answer; the request still reaches the server (`forward: false` keeps it back) and its answer is \
        swallowed; released by the client's `notifications/cancelled` or after `max_hold_ms` (600 000), then \
        `on_cap: drop`/`error`/`close`"
    }

    fn peer_types() -> &'static [PeerType] {
        const {
            &[
                PeerType::of(Format::McpTest, "hang"),
                PeerType::of(Format::McpTest, "wedged"),
            ]
        }
    }

    /// mcptest's `hang` and `wedged` are one fault; the name written is kept as the label.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        let label = entry.type_name.clone();
        entry.set_default("label", label.into());
        Ok(())
    }

    fn validate(&self) -> Result<(), FaultError> {
        if self.max_hold_ms == 0 {
            return Err(FaultError::Rule {
                field: "max_hold_ms",
                rule: "be above 0",
            });
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "never answer{} until the client cancels or {} ms pass, then {:?}",
            if self.forward {
                " (request still sent)"
            } else {
                ""
            },
            self.max_hold_ms,
            self.on_cap
        )
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Hang {
            forward: self.forward,
            max_hold: ms(self.max_hold_ms),
            on_cap: self.on_cap,
        }
    }
}
