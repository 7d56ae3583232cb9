//! A client's cancellation of a tracked call: a `notifications/cancelled` POSTed in the call's session ends the
//! waits injected into it.

use std::{sync::OnceLock, time::Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::mcp_wire::jsonrpc::id_key;

/// A tracked call's cancellation by its client: a `notifications/cancelled` naming it, POSTed in its session.
#[derive(Default)]
pub(super) struct CancelSignal {
    pub(super) token: CancellationToken,
    /// When the cancellation arrived.
    pub(super) at: OnceLock<Instant>,
}

impl CancelSignal {
    pub(super) fn cancel(&self) {
        let _ = self.at.set(Instant::now());
        self.token.cancel();
    }
}

/// The key of a call a client may cancel: its session (none for a server without sessions) and request id.
pub(super) fn cancel_key(session: Option<&str>, id: &Value) -> String {
    format!("{}\u{0}{}", session.unwrap_or_default(), id_key(id))
}
