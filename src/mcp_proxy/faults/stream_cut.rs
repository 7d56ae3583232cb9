//! `stream_cut` (Streamable HTTP only): forward the call, then close its SSE response after `after_events`
//! events, before the answer (a JSON response is cut before its body).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Action, CallContext, HttpAction, McpFaultSpec};

fn one() -> u64 {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StreamCut {
    #[serde(default = "one")]
    pub after_events: u64,
}

impl McpFaultSpec for StreamCut {
    fn aliases() -> &'static [&'static str] {
        &["stream-cut"]
    }

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
