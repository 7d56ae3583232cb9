//! `connection_drop`: the server goes away mid-call. The request is forwarded, then after `after_ms` the
//! server process is killed. Without `restart_after_ms` the client sees the connection close (our stdout
//! ends); with it, calls in flight fail with -32000 "Connection closed" and the server is started again and
//! re-initialised with the client's own `initialize`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Action, CallContext, Format, McpFaultSpec, PeerEntry, PeerType, PeerValueError, ms};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConnectionDrop {
    #[serde(default)]
    pub after_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_after_ms: Option<u64>,
}

impl McpFaultSpec for ConnectionDrop {
    fn wire() -> &'static str {
        "the server is killed `after_ms` into the call; without `restart_after_ms` our stdout closes, with it \
        calls in flight get -32000 `Connection closed` and the server is restarted and re-initialised with the \
        client's own `initialize`"
    }

    fn peer_types() -> &'static [PeerType] {
        const { &[PeerType::of(Format::ChaosMonkey, "connection-drop")] }
    }

    /// mcp-chaos-monkey's `afterMs` is ours; its Python port's `afterBytes` is taken and ignored, as the
    /// port drops the connection at once whatever it says.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        entry.take("after_bytes");
        Ok(())
    }

    fn describe(&self) -> String {
        match self.restart_after_ms {
            Some(restart) => format!(
                "kill the server {} ms into the call, restart it {restart} ms later",
                self.after_ms
            ),
            None => format!(
                "kill the server {} ms into the call and close",
                self.after_ms
            ),
        }
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::CrashServer {
            after: ms(self.after_ms),
            restart_after: self.restart_after_ms.map(ms),
        }
    }
}
