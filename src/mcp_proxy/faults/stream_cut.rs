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
    fn wire() -> &'static str {
        "forwards the call and closes its SSE answer after `after_events` (1) events, before the answer (a JSON \
        answer is cut before its body); a server's priming event (an id, no data, as rmcp sends) counts as \
        one; the Python SDK client reports -32000 `SSE stream ended without a response`, after the progress \
        events sent before the cut, when the server's events carry no ids (FastMCP); when they do (`fault \
        mcp-test-server`, rmcp servers) the SDK resumes with a GET and `Last-Event-ID` every `retry` interval, \
        the server cannot resume a stream whose request was closed and answers empty streams, and the call \
        ends at the client's timeout (-32001)"
    }

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
