//! The scan's session with the server: one client session without faults, opened again after a crash, and
//! the server's whole tool listing.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{ScanError, finding};
use crate::{
    mcp_chaos::{Connection, ServerUnderTest},
    mcp_proxy::plan::Plan,
    mcp_wire::client::Answer,
};

/// The most tools a listing may hold before the scan stops reading it.
const MAX_LISTED: usize = 100_000;
/// How long the handshake and each page of the listing may take.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The server, reached again after a crash.
pub struct Target<'a> {
    pub server: &'a ServerUnderTest,
    pub connection: Option<Connection>,
    pub cancel: &'a CancellationToken,
    /// Sessions opened after the first.
    pub reconnects: u32,
}

impl Target<'_> {
    pub async fn client(&mut self) -> Result<&Connection, ScanError> {
        if self.connection.is_none() {
            self.reconnects += 1;
            self.connection = Some(
                Connection::open(self.server, Plan::default(), START_TIMEOUT, self.cancel).await?,
            );
        }
        self.connection.as_ref().ok_or(ScanError::Cancelled)
    }

    /// After a call the session ended under: the next call opens a new one.
    pub async fn lost(&mut self) {
        if let Some(connection) = self.connection.take() {
            connection.close().await;
        }
    }
}

/// Every tool of the server's listing, all pages.
pub async fn list_tools(connection: &Connection) -> Result<Vec<Value>, ScanError> {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let (_, answer) = connection
            .client()
            .request("tools/list", params, START_TIMEOUT)
            .await;
        let result = match answer {
            Answer::Response(r) if r.get("result").is_some() => r["result"].clone(),
            Answer::Response(r) => {
                return Err(ScanError::Listing(format!(
                    "tools/list was refused: {}",
                    r.get("error").unwrap_or(&r)
                )));
            }
            Answer::TimedOut => {
                return Err(ScanError::Listing(format!(
                    "tools/list had no answer within {} s",
                    START_TIMEOUT.as_secs()
                )));
            }
            Answer::Closed => {
                return Err(ScanError::Listing(
                    "the session ended during tools/list".to_owned(),
                ));
            }
        };
        match result.get("tools") {
            Some(Value::Array(page)) => tools.extend(page.iter().cloned()),
            _ => {
                return Err(ScanError::Listing(format!(
                    "the tools/list result has no `tools` list: {}",
                    finding::shorten(&result.to_string(), 200)
                )));
            }
        }
        if tools.len() > MAX_LISTED {
            return Err(ScanError::Listing(format!(
                "the listing holds more than {MAX_LISTED} tools; scan some with `tools`"
            )));
        }
        cursor = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
        if cursor.is_none() {
            return Ok(tools);
        }
    }
}

/// A listed tool's name.
pub fn tool_name(tool: &Value) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or("?")
}
