//! The Streamable HTTP front: a reverse proxy in front of an MCP server's HTTP endpoint. POST, GET and DELETE
//! are forwarded with every end-to-end header both ways (`Mcp-Session-Id`, `MCP-Protocol-Version`,
//! `Authorization`, `Last-Event-ID`, …); a POSTed request goes through the same fault engine as on stdio, and
//! its answer, a JSON body or an SSE stream, is read message by message (event ids kept). Status answers
//! (202, 4xx, 5xx) and every other exchange pass untouched. A client's `notifications/cancelled` (POSTed in
//! the call's session) or closing the call's HTTP request ends the waits injected into it, as on stdio. A
//! `drop_tool`'s `notifications/tools/list_changed` goes on every open GET stream, and first on the SSE answer of
//! the call that made the tool disappear when its client has no GET stream open.

mod cancel;
mod exchange;
mod forward;
mod front;
mod get_stream;
mod headers;
mod proxy;
mod request;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;

pub use self::front::{HttpFront, HttpProxyError, HttpProxyOptions, run, start};

/// The largest request or JSON response body read whole: one message.
const MAX_BODY: usize = crate::mcp_wire::jsonrpc::MAX_MESSAGE_BYTES;
/// Sessions remembered as expired at most (the oldest is forgotten first).
const MAX_EXPIRED_SESSIONS: usize = 4_096;
const SESSION_HEADER: &str = "mcp-session-id";

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type ProxyBody = BoxBody<Bytes, BoxError>;

/// Why an exchange ends without an answer: the connection is closed (a `connection_drop`, a hang's
/// `on_cap: close`).
#[derive(Debug, thiserror::Error)]
#[error("fault mcp-proxy closed the connection")]
struct Dropped;
