//! `stream_cut` (Streamable HTTP only): forward the call, then close its SSE response after `after_events`
//! events, before the answer (a JSON response is cut before its body).

use serde::{Deserialize, Serialize};

use super::{Action, CallContext, Fault, HttpAction};

fn one() -> u64 {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamCut {
    #[serde(default = "one")]
    pub after_events: u64,
}

impl StreamCut {
    pub const KEYS: &[&str] = &["after_events"];
}

impl Fault for StreamCut {
    fn describe(&self) -> String {
        format!(
            "close the SSE response after {} event(s)",
            self.after_events
        )
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Http(HttpAction::CutStream {
            after_events: self.after_events,
        })
    }

    fn http_only(&self) -> bool {
        true
    }
}
