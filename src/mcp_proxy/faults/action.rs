//! What a fault does to a call once it has fired: the verdicts the fronts carry out, and the parts of them a
//! plan writes (how a failure is answered, whether the server is called, what a hang does at its cap).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::mcp_wire::jsonrpc::Reply;

/// What to do with a call once a fault has fired on it.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Hold the request for this long, then forward it.
    DelayRequest(Duration),
    /// Forward the request, hold the response for this long.
    DelayResponse(Duration),
    /// Answer the client ourselves after `after`; with `call_upstream`, run the real call first and replace
    /// its answer, else never send the request.
    Reply {
        after: Duration,
        reply: Reply,
        call_upstream: bool,
    },
    /// Never answer: release on the client's cancellation, or after `max_hold` as `on_cap` says.
    Hang {
        forward: bool,
        max_hold: Duration,
        on_cap: OnCap,
    },
    /// Forward the request and rewrite its response with [`McpFaultSpec::rewrite`].
    Rewrite,
    /// Forward the request, then kill the server after `after`; restart it after `restart_after` if given.
    CrashServer {
        after: Duration,
        restart_after: Option<Duration>,
    },
    /// Close our stdout: the client sees the server go away.
    CloseClient,
    /// What only the Streamable HTTP front can do.
    Http(HttpAction),
}

/// A fault's act on the HTTP exchange itself (Streamable HTTP only).
#[derive(Debug, Clone, PartialEq)]
pub enum HttpAction {
    /// Answer `status` with these headers and body (bytes, content type) instead of the call's answer; with
    /// `expires_session`, only a request carrying a session id, whose later requests get the same answer.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: Option<(Vec<u8>, &'static str)>,
        expires_session: bool,
    },
    /// Forward the request, then close the SSE response after this many events.
    CutStream { after_events: u64 },
}

impl Action {
    /// Whether the action settles the call (answers in the server's place, hangs, or drops a connection),
    /// which ends a `policy: all` chain; delays and rewrites compose with what follows.
    pub fn ends_chain(&self) -> bool {
        !matches!(
            self,
            Action::DelayRequest(_) | Action::DelayResponse(_) | Action::Rewrite
        )
    }
}

/// What a hang does once its hold cap is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnCap {
    /// Keep silent for good: the client never gets an answer.
    #[default]
    Drop,
    /// Answer with a timeout error (-32001).
    Error,
    /// Close our stdout.
    Close,
}

/// How a synthesised failure reaches the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReplyAs {
    /// A JSON-RPC error object.
    #[default]
    Protocol,
    /// A tool result with `isError: true` and the message as text.
    Tool,
}

/// A failure payload shared by the faults that fail a call (error, flaky, burst_error, server_degradation).
/// `code` and `message` default per fault type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Failure {
    #[serde(rename = "as", default)]
    pub reply_as: ReplyAs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
}

impl Failure {
    /// The reply, with `code` and `message` defaulting to the fault type's.
    pub fn reply(&self, default_code: i64, default_message: &str) -> Reply {
        let message = self
            .message
            .as_deref()
            .unwrap_or(default_message)
            .to_owned();
        match self.reply_as {
            ReplyAs::Protocol => Reply::Error {
                code: self.code.unwrap_or(default_code),
                message,
                data: self
                    .category
                    .as_ref()
                    .map(|c| serde_json::json!({ "category": c })),
            },
            ReplyAs::Tool => Reply::ToolError { text: message },
        }
    }
}

/// Whether the real server is called when a fault answers in its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallUpstream {
    /// The request never reaches the server.
    #[default]
    Skip,
    /// The server runs the call; its answer is replaced.
    Call,
}

/// `ms` as a [`Duration`].
pub(crate) fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}
