//! One tracked call's exchange over HTTP: the call's faults carried out on the request and on the server's
//! answer (a JSON body here, an SSE stream through [`sse_rewrite`]), and its event written once the client got
//! what it gets.

mod answer;
mod run;
mod sse_rewrite;
mod tracking;

use std::{sync::Arc, time::Duration};

use super::cancel::CancelSignal;
use super::proxy::Proxy;
use crate::mcp_proxy::engine::{Call, CallProgress};

/// One tracked call's exchange. Dropped before its end (the client closed the request), it records the
/// call as cancelled.
pub(super) struct Exchange {
    proxy: Arc<Proxy>,
    pub(super) call: Option<Call>,
    progress: CallProgress,
    /// An injected wait (delay, hang) is in progress.
    waiting: bool,
    cancel: Arc<CancelSignal>,
    cancel_key: String,
    /// `notifications/tools/list_changed` goes first on this call's answer (made an SSE stream).
    pub(super) list_changed: bool,
}

/// Where a forwarded answer is cut short.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct AnswerCut {
    pub(super) after_events: Option<u64>,
    pub(super) after: Option<Duration>,
}

impl AnswerCut {
    fn is_set(&self) -> bool {
        self.after_events.is_some() || self.after.is_some()
    }
}
