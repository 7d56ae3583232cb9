//! The stdio relay's server when it is a Streamable HTTP endpoint (`fault mcp-proxy --upstream URL` without
//! `--listen`): each line the relay sends is POSTed through one [`HttpSession`], and what comes back (a JSON
//! body, the events of an SSE answer, the events of the session's GET stream) becomes lines, so every stdio
//! fault applies unchanged. Closing the relay's side ends the session with DELETE.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::mcp_wire::{
    http_session::{HttpSession, Posted},
    jsonrpc::{Envelope, Reply},
};

/// How long the server gets to take the session's DELETE.
const END_SESSION_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

#[derive(Clone)]
struct Bridge {
    session: Arc<HttpSession>,
    lines_out: mpsc::UnboundedSender<Vec<u8>>,
}

/// Starts the bridge: lines sent to the returned sender are POSTed; the server's messages come out of the
/// returned receiver, one line each. The receiver ends once the sender is dropped and the session ended.
pub fn spawn(
    session: HttpSession,
) -> (
    mpsc::UnboundedSender<Vec<u8>>,
    mpsc::UnboundedReceiver<Vec<u8>>,
    tokio::task::JoinHandle<()>,
) {
    let (lines_in, mut to_post) = mpsc::unbounded_channel::<Vec<u8>>();
    let (lines_out, from_server) = mpsc::unbounded_channel();
    let bridge = Bridge {
        session: Arc::new(session),
        lines_out,
    };
    let task = tokio::spawn(async move {
        while let Some(line) = to_post.recv().await {
            let envelope = Envelope::parse(&line);
            let is_request = envelope.as_ref().is_some_and(Envelope::is_request);
            let is_initialize =
                envelope.as_ref().and_then(|e| e.method.as_deref()) == Some("initialize");
            if is_request && !is_initialize {
                // Requests run side by side; notifications, responses and initialize go in order.
                tokio::spawn(bridge.clone().post(line, envelope));
            } else {
                bridge.clone().post(line, envelope).await;
            }
        }
        bridge.session.close(END_SESSION_GRACE).await;
    });
    (lines_in, from_server, task)
}

impl Bridge {
    fn send_line(&self, message: &[u8]) {
        // One line per message: a pretty-printed body is compacted.
        let mut line = if message.contains(&b'\n') {
            match serde_json::from_slice::<Value>(message) {
                Ok(value) => value.to_string().into_bytes(),
                Err(_) => message.iter().copied().filter(|b| *b != b'\n').collect(),
            }
        } else {
            message.to_vec()
        };
        line.push(b'\n');
        let _ = self.lines_out.send(line);
    }

    /// The client gets an error for its request instead of an answer.
    fn fail(&self, envelope: Option<&Envelope>, message: String) {
        if let Some(id) = envelope
            .filter(|e| e.is_request())
            .and_then(|e| e.id.as_ref())
        {
            let _ = self.lines_out.send(
                Reply::Error {
                    code: -32000,
                    message,
                    data: None,
                }
                .line(id),
            );
        }
    }

    async fn post(self, line: Vec<u8>, envelope: Option<Envelope>) {
        let is_initialize =
            envelope.as_ref().and_then(|e| e.method.as_deref()) == Some("initialize");
        // Ends with the relay's side (the server was "killed" by a fault, or the relay stopped).
        let posted = tokio::select! {
            posted = self.session.post(Bytes::from(line), |message| self.send_line(&message)) => posted,
            () = self.lines_out.closed() => return,
        };
        match posted {
            Err(e) => {
                tracing::warn!("mcp-proxy: {e}");
                self.fail(envelope.as_ref(), format!("Connection closed: {e}"));
                return;
            }
            Ok(Posted::Accepted) => return,
            Ok(Posted::Refused { status, body }) => {
                // A JSON-RPC error in the body is the server's answer; else the status stands for it.
                if Envelope::parse(&body).is_some_and(|e| e.error.is_some()) {
                    self.answer_with_request_id(&body, envelope.as_ref());
                } else {
                    let text = String::from_utf8_lossy(&body).trim().to_owned();
                    self.fail(envelope.as_ref(), format!("HTTP {status} {text}"));
                }
                return;
            }
            Ok(Posted::Answered { answered: false }) => self.fail(
                envelope.as_ref(),
                "Connection closed: the server's stream ended without an answer".into(),
            ),
            Ok(Posted::Answered { answered: true }) => {}
        }
        if is_initialize && self.session.has_id() {
            tokio::spawn(self.clone().listen());
        }
    }

    /// A JSON-RPC error the server sent with a status, on the request's own id.
    fn answer_with_request_id(&self, bytes: &[u8], envelope: Option<&Envelope>) {
        let mut value: Value = serde_json::from_slice(bytes).unwrap_or_default();
        if value.get("id").is_none_or(Value::is_null)
            && let Some(id) = envelope.and_then(|e| e.id.clone())
        {
            value["id"] = id;
        }
        self.send_line(value.to_string().as_bytes());
    }

    /// The session's GET stream: messages the server starts (notifications, requests).
    async fn listen(self) {
        let listened = tokio::select! {
            listened = self.session.listen(|message| self.send_line(&message)) => listened,
            () = self.lines_out.closed() => return,
        };
        match listened {
            Ok(true) => {}
            Ok(false) => tracing::debug!("mcp-proxy: the server has no GET stream"),
            Err(e) => tracing::debug!("mcp-proxy: GET stream: {e}"),
        }
    }
}
