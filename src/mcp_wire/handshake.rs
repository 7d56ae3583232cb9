//! How our client opens an MCP session: `initialize` with the capabilities it declares, then
//! `notifications/initialized`; and the server's tool listing, every page of `tools/list`. Each answer is
//! awaited up to a timeout, and a server that does not answer, refuses, or closes is named by the method.

use std::time::Duration;

use serde_json::{Value, json};

use super::PROTOCOL_VERSION;
use super::client::{Answer, McpClient};

/// The name our client gives in `clientInfo`.
const CLIENT_NAME: &str = "fault-mcp-chaos";

/// Why a server cannot be driven.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("no answer to {method} within {}s", .timeout.as_secs())]
    NoAnswer {
        method: &'static str,
        timeout: Duration,
    },
    #[error("the session closed before the answer to {method}")]
    Closed { method: &'static str },
    #[error("{method} failed: {error}")]
    Refused { method: &'static str, error: Value },
}

/// The response to `method` when it carries a result; otherwise why not.
fn answered(
    answer: Answer,
    method: &'static str,
    timeout: Duration,
) -> Result<Value, HandshakeError> {
    match answer {
        Answer::Response(r) if r.get("result").is_some() => Ok(r),
        Answer::Response(r) => Err(HandshakeError::Refused {
            method,
            error: r.get("error").cloned().unwrap_or(r),
        }),
        Answer::TimedOut => Err(HandshakeError::NoAnswer { method, timeout }),
        Answer::Closed => Err(HandshakeError::Closed { method }),
    }
}

/// `initialize` declaring `capabilities`, then `notifications/initialized`.
pub async fn initialize(
    client: &McpClient,
    capabilities: Value,
    timeout: Duration,
) -> Result<(), HandshakeError> {
    let init = json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": capabilities,
        "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}
    });
    let method = "initialize";
    answered(
        client.request(method, init, timeout).await.1,
        method,
        timeout,
    )?;
    client.notify("notifications/initialized", json!({}));
    Ok(())
}

/// Every page of `tools/list`, each `result` handed to `page` in order.
pub async fn list_tools(
    client: &McpClient,
    timeout: Duration,
    mut page: impl FnMut(&Value),
) -> Result<(), HandshakeError> {
    let method = "tools/list";
    let mut cursor: Option<Value> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let response = answered(
            client.request(method, params, timeout).await.1,
            method,
            timeout,
        )?;
        let result = response.get("result").cloned().unwrap_or(Value::Null);
        page(&result);
        cursor = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
        if cursor.is_none() {
            return Ok(());
        }
    }
}
