//! `connection_refused`: the server cannot be reached. `mode: error` (default) answers -32000
//! "Connection closed" without forwarding; `mode: close` closes our stdout. Limit it with the trigger's
//! `window`, `first_n` or `max_injections`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Action, CallContext, Format, McpFaultSpec, PeerType};
use crate::mcp_wire::jsonrpc::Reply;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefusalMode {
    #[default]
    Error,
    Close,
}

fn code() -> i64 {
    -32000
}

fn message() -> String {
    "Connection closed".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConnectionRefused {
    #[serde(default)]
    pub mode: RefusalMode,
    #[serde(default = "code")]
    pub code: i64,
    #[serde(default = "message")]
    pub message: String,
}

impl McpFaultSpec for ConnectionRefused {
    fn wire() -> &'static str {
        "-32000 `Connection closed` without reaching the server (`mode: close` closes our stdout); bound it \
        with `first_n` or `window`"
    }

    fn peer_types() -> &'static [PeerType] {
        const { &[PeerType::of(Format::ChaosMonkey, "connection-refused")] }
    }

    fn describe(&self) -> String {
        match self.mode {
            RefusalMode::Error => format!(
                "answer {} \"{}\" without forwarding",
                self.code, self.message
            ),
            RefusalMode::Close => "close the client's connection".into(),
        }
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        match self.mode {
            RefusalMode::Error => Action::Reply {
                after: std::time::Duration::ZERO,
                reply: Reply::Error {
                    code: self.code,
                    message: self.message.clone(),
                    data: None,
                },
                call_upstream: false,
            },
            RefusalMode::Close => Action::CloseClient,
        }
    }
}
