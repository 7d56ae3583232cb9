//! `http_status` (Streamable HTTP only): answer an HTTP status instead of the call's answer, e.g. 429 with
//! `Retry-After` or 503, as a gateway or an overloaded server does.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Action, CallContext, FaultError, HttpAction, McpFaultSpec};

fn service_unavailable() -> u16 {
    503
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HttpStatus {
    #[serde(default = "service_unavailable")]
    pub status: u16,
    /// Sent as the `Retry-After` header (seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
    /// The response body (plain text); empty by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

impl McpFaultSpec for HttpStatus {
    fn wire() -> &'static str {
        "answers `status` (default 503; 400–599) instead of the call's answer, with `Retry-After: \
        retry_after_seconds` when given and `body` as text; the Python SDK client reports -32603 `Server \
        returned an error response`"
    }

    fn aliases() -> &'static [&'static str] {
        &["http-status"]
    }

    fn validate(&self) -> Result<(), FaultError> {
        if (400..=599).contains(&self.status) {
            Ok(())
        } else {
            Err(FaultError::Value {
                field: "status",
                rule: "be an HTTP error status (400-599)",
                got: self.status.to_string(),
            })
        }
    }

    fn describe(&self) -> String {
        match self.retry_after_seconds {
            Some(s) => format!("answer HTTP {} with Retry-After: {s}", self.status),
            None => format!("answer HTTP {}", self.status),
        }
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        let mut headers = Vec::new();
        if let Some(seconds) = self.retry_after_seconds {
            headers.push(("retry-after".to_owned(), seconds.to_string()));
        }
        Action::Http(HttpAction::Status {
            status: self.status,
            headers,
            body: self.body.clone().map(|b| (b.into_bytes(), "text/plain")),
            expires_session: false,
        })
    }

    fn http_only(&self) -> bool {
        true
    }
}
