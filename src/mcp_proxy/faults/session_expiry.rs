//! `session_expiry` (Streamable HTTP only): answer 404 to a request carrying an `Mcp-Session-Id`, and to
//! every later request with that session id, as a server does once it has ended the session; the client
//! must then initialize a new session. A request without a session id passes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Action, CallContext, HttpAction, McpFaultSpec};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionExpiry {}

impl McpFaultSpec for SessionExpiry {
    fn wire() -> &'static str {
        "404 to a request carrying an `Mcp-Session-Id`, and to every later request with that session id \
        (requests without one pass); the client must initialize a new session; the Python SDK client reports \
        -32600 `Session terminated`; a new `initialize` then gets a new session from the server"
    }

    fn aliases() -> &'static [&'static str] {
        &["session_expired"]
    }

    fn describe(&self) -> String {
        "answer HTTP 404 on the session (expired), so the client re-initializes".into()
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Http(HttpAction::Status {
            status: 404,
            headers: Vec::new(),
            body: None,
            expires_session: true,
        })
    }

    fn http_only(&self) -> bool {
        true
    }
}
