//! One MCP client, for the chaos scenario's driver and anything else here that calls tools: it picks the
//! request ids, matches answers to them, times a request out by cancelling it (`notifications/cancelled`;
//! over HTTP its request is closed too), answers the server's pings, and never gives up on a session because
//! of a message it cannot read (a malformed answer is a finding, not a reason to stop). It speaks
//! newline-delimited JSON over any byte stream (a child's stdio, an in-process relay) or Streamable HTTP
//! ([`HttpSession`]).

use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    sync::{mpsc, oneshot},
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use super::http_session::{HttpSession, Posted};
use super::jsonrpc::{notification_line, request_line};
use super::lines;

/// Problems kept for error messages (what the server printed that was not JSON-RPC, HTTP failures).
const PROBLEM_LINES: usize = 40;
/// Characters of one problem kept (a server's banner, an HTTP body).
const PROBLEM_CHARS: usize = 300;
/// How long the cancellation of a timed-out request may take to send before the caller moves on.
const CANCEL_SEND_TIMEOUT: Duration = Duration::from_secs(2);

/// How a request ended.
#[derive(Debug)]
pub enum Answer {
    /// The JSON-RPC response (a `result` or an `error`).
    Response(Value),
    /// No answer within the timeout; the request was cancelled.
    TimedOut,
    /// The session closed under the request.
    Closed,
}

type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// What went wrong on a session, for error messages, bounded.
#[derive(Default)]
struct Problems {
    lines: VecDeque<String>,
    /// The first thing the server printed that is not a JSON-RPC message (a banner, a log line).
    first_noise: Option<String>,
    noise_lines: u64,
}

impl Problems {
    fn note(&mut self, problem: String) {
        tracing::debug!(%problem, "MCP client");
        if self.lines.len() >= PROBLEM_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(clip(&problem));
    }
}

fn clip(text: &str) -> String {
    let mut clipped: String = text.chars().take(PROBLEM_CHARS).collect();
    if clipped.len() < text.len() {
        clipped.push('…');
    }
    clipped
}

enum Carrier {
    Lines {
        to_server: Mutex<Option<mpsc::UnboundedSender<Vec<u8>>>>,
        /// Cancelled once the server's side of the stream ended.
        closed: CancellationToken,
    },
    Http(Arc<HttpSession>),
}

pub struct McpClient {
    transport: Carrier,
    waiting: Waiting,
    next_id: AtomicU64,
    problems: Arc<Mutex<Problems>>,
}

impl McpClient {
    /// A client writing requests to `writer` and reading the server's messages from `reader`, one JSON
    /// message per line; its request ids start at `first_id`.
    pub fn over_lines<R, W>(reader: R, writer: W, first_id: u64) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let waiting: Waiting = Arc::default();
        let problems: Arc<Mutex<Problems>> = Arc::default();
        let closed = CancellationToken::new();
        let (to_server, mut lines) = mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            let mut writer = writer;
            while let Some(line) = lines.recv().await {
                if writer.write_all(&line).await.is_err() || writer.flush().await.is_err() {
                    break;
                }
            }
            let _ = writer.shutdown().await;
        });
        {
            let waiting = waiting.clone();
            let problems = problems.clone();
            let closed = closed.clone();
            // Weak: answering the server's pings must not keep its input open once the client closes.
            let replies = to_server.downgrade();
            tokio::spawn(async move {
                let mut reader = BufReader::with_capacity(64 * 1024, reader);
                loop {
                    let mut line = Vec::new();
                    match lines::read_line(&mut reader, &mut line).await {
                        Ok(true) => {
                            if let Some(reply) = dispatch(&line, &waiting, &problems)
                                && let Some(replies) = replies.upgrade()
                            {
                                let _ = replies.send(reply);
                            }
                        }
                        Ok(false) => break,
                        Err(e) => {
                            lock(&problems).note(format!(
                                "the server's messages could not be read ({e}); the session was ended"
                            ));
                            break;
                        }
                    }
                }
                closed.cancel();
                lock(&waiting).clear();
            });
        }
        Self {
            transport: Carrier::Lines {
                to_server: Mutex::new(Some(to_server)),
                closed,
            },
            waiting,
            next_id: AtomicU64::new(first_id),
            problems,
        }
    }

    /// A client of a Streamable HTTP session; its request ids start at `first_id`.
    pub fn over_http(session: HttpSession, first_id: u64) -> Self {
        Self {
            transport: Carrier::Http(Arc::new(session)),
            waiting: Arc::default(),
            next_id: AtomicU64::new(first_id),
            problems: Arc::default(),
        }
    }

    /// What went wrong so far: what the server printed besides JSON-RPC, HTTP failures.
    pub fn problems(&self) -> String {
        let problems = lock(&self.problems);
        let mut text = String::new();
        if let Some(first) = &problems.first_noise {
            text.push_str(&format!(
                "The server wrote {} line(s) on its stdout that are not JSON-RPC messages, the first: {first}",
                problems.noise_lines
            ));
        }
        for line in &problems.lines {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(line);
        }
        text
    }

    /// Sends a notification without waiting for it to be taken.
    pub fn notify(&self, method: &str, params: Value) {
        let line = notification_line(method, &params);
        match &self.transport {
            Carrier::Lines { to_server, .. } => {
                if let Some(tx) = lock(to_server).as_ref() {
                    let _ = tx.send(line);
                }
            }
            Carrier::Http(session) => {
                let session = session.clone();
                let problems = self.problems.clone();
                tokio::spawn(async move {
                    if let Err(e) = session.post(Bytes::from(line), |_| {}).await {
                        lock(&problems).note(e.to_string());
                    }
                });
            }
        }
    }

    /// Sends a request and waits up to `timeout` for its response; returns the id it used.
    pub async fn request(&self, method: &str, params: Value, timeout: Duration) -> (u64, Answer) {
        self.request_until(method, params, Instant::now() + timeout)
            .await
    }

    /// Sends a request and waits for its response until `deadline` (then cancels it); returns the id it used.
    pub async fn request_until(
        &self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> (u64, Answer) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let line = request_line(&json!(id), method, &params);
        let answer = match &self.transport {
            Carrier::Lines { to_server, closed } => {
                let (tx, rx) = oneshot::channel();
                lock(&self.waiting).insert(id, tx);
                let sent = !closed.is_cancelled()
                    && lock(to_server)
                        .as_ref()
                        .is_some_and(|tx| tx.send(line).is_ok());
                if !sent {
                    lock(&self.waiting).remove(&id);
                    return (id, Answer::Closed);
                }
                tokio::select! {
                    response = rx => match response {
                        Ok(value) => Answer::Response(value),
                        Err(_) => Answer::Closed,
                    },
                    () = tokio::time::sleep_until(deadline) => {
                        lock(&self.waiting).remove(&id);
                        self.notify("notifications/cancelled", cancelled(id));
                        Answer::TimedOut
                    }
                }
            }
            Carrier::Http(session) => self.http_request(session, id, line, deadline).await,
        };
        (id, answer)
    }

    async fn http_request(
        &self,
        session: &HttpSession,
        id: u64,
        line: Vec<u8>,
        deadline: Instant,
    ) -> Answer {
        let mut response = None;
        let posted = session.post(Bytes::from(line), |message| {
            if response.is_none()
                && let Ok(value) = serde_json::from_slice::<Value>(&message)
                && value.get("id").and_then(Value::as_u64) == Some(id)
                && (value.get("result").is_some() || value.get("error").is_some())
            {
                response = Some(value);
            }
        });
        // Dropping the POST on timeout closes its request: the cancellation HTTP servers see.
        let posted = tokio::time::timeout_at(deadline, posted).await;
        match posted {
            Err(_) => {
                let cancel = notification_line("notifications/cancelled", &cancelled(id));
                // Sent before returning, as over stdio: a session closed next must not overtake it.
                let sent =
                    tokio::time::timeout(CANCEL_SEND_TIMEOUT, session.post(cancel.into(), |_| {}));
                if let Ok(Err(e)) = sent.await {
                    lock(&self.problems).note(e.to_string());
                }
                Answer::TimedOut
            }
            Ok(Err(e)) => {
                lock(&self.problems).note(e.to_string());
                response.map_or(Answer::Closed, Answer::Response)
            }
            Ok(Ok(Posted::Refused { status, body })) => {
                // A JSON-RPC error in a 4xx body is still the answer to the request.
                match serde_json::from_slice::<Value>(&body) {
                    Ok(value) if value.get("error").is_some() => Answer::Response(value),
                    _ => {
                        let text = String::from_utf8_lossy(&body);
                        lock(&self.problems).note(format!("HTTP {status}: {}", text.trim()));
                        Answer::Closed
                    }
                }
            }
            Ok(Ok(_)) => match response {
                Some(value) => Answer::Response(value),
                None => {
                    lock(&self.problems).note(format!(
                        "the answer to request {id} carried no JSON-RPC response for it"
                    ));
                    Answer::Closed
                }
            },
        }
    }

    /// Ends the session: over a stream its input is closed (the server sees end of file); over HTTP the
    /// session is ended with DELETE, waiting up to `grace`.
    pub async fn close(&self, grace: Duration) {
        match &self.transport {
            Carrier::Lines { to_server, .. } => {
                lock(to_server).take();
            }
            Carrier::Http(session) => session.close(grace).await,
        }
    }
}

fn cancelled(id: u64) -> Value {
    json!({"requestId": id, "reason": "client timeout"})
}

/// Routes one line from the server: a response to its waiter, a request answered (ping, or "not
/// supported"), anything that is not JSON-RPC noted; the reply to send back, if any.
fn dispatch(line: &[u8], waiting: &Waiting, problems: &Mutex<Problems>) -> Option<Vec<u8>> {
    let trimmed = line.trim_ascii();
    if trimmed.is_empty() {
        return None;
    }
    let message = match serde_json::from_slice::<Value>(trimmed) {
        Ok(message @ Value::Object(_)) => message,
        _ => {
            let mut problems = lock(problems);
            problems.noise_lines += 1;
            if problems.first_noise.is_none() {
                problems.first_noise = Some(clip(&String::from_utf8_lossy(trimmed)));
            }
            return None;
        }
    };
    let id = message.get("id");
    match (message.get("method"), id) {
        (None, Some(id)) => {
            if let Some(tx) = id.as_u64().and_then(|id| lock(waiting).remove(&id)) {
                let _ = tx.send(message);
            }
            None
        }
        (Some(method), Some(id)) => {
            let reply = if method == "ping" {
                json!({"jsonrpc": "2.0", "id": id, "result": {}})
            } else {
                json!({"jsonrpc": "2.0", "id": id,
                       "error": {"code": -32601, "message": "Method not found"}})
            };
            let mut line = reply.to_string().into_bytes();
            line.push(b'\n');
            Some(line)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncBufReadExt;

    use super::*;
    use crate::mcp_wire::jsonrpc::MAX_MESSAGE_BYTES;

    #[tokio::test]
    async fn answers_are_matched_noise_is_kept_and_pings_answered() {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (client_read, client_write) = tokio::io::split(client_end);
        let client = McpClient::over_lines(client_read, client_write, 7);
        let (server_read, mut server_write) = tokio::io::split(server_end);
        let mut server_lines = BufReader::new(server_read).lines();
        let request = tokio::spawn(async move {
            client
                .request("tools/list", json!({}), Duration::from_secs(5))
                .await;
            client
        });
        let sent = server_lines.next_line().await.unwrap().unwrap();
        assert!(sent.contains("\"id\":7"), "{sent}");
        server_write
            .write_all(b"Starting demo MCP server on stdio...\n{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n")
            .await
            .unwrap();
        let pong = server_lines.next_line().await.unwrap().unwrap();
        assert_eq!(pong, r#"{"jsonrpc":"2.0","id":"p","result":{}}"#);
        let client = request.await.unwrap();
        let problems = client.problems();
        assert!(
            problems.contains("Starting demo MCP server on stdio..."),
            "{problems}"
        );
    }

    #[tokio::test]
    async fn a_line_over_the_cap_ends_the_session_naming_the_cap() {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (client_read, client_write) = tokio::io::split(client_end);
        let client = McpClient::over_lines(client_read, client_write, 1);
        let (_server_read, mut server_write) = tokio::io::split(server_end);
        let flood = tokio::spawn(async move {
            let chunk = vec![b'x'; 1 << 20];
            for _ in 0..=MAX_MESSAGE_BYTES / chunk.len() + 1 {
                if server_write.write_all(&chunk).await.is_err() {
                    break;
                }
            }
            server_write
        });
        let (_, answer) = client
            .request("initialize", json!({}), Duration::from_secs(30))
            .await;
        assert!(matches!(answer, Answer::Closed), "{answer:?}");
        assert!(
            client.problems().contains(&MAX_MESSAGE_BYTES.to_string()),
            "{}",
            client.problems()
        );
        flood.abort();
    }
}
