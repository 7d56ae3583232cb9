//! A minimal MCP client over a child's stdio, for driving calls through `fault mcp-proxy`: it sends
//! requests with ids it chooses, times them out by sending `notifications/cancelled`, and never gives up on
//! the session because of a line it cannot read (a malformed answer is a finding, not a reason to stop).

use std::{
    collections::{HashMap, VecDeque},
    path::Path,
    process::Stdio,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::{Child, Command},
    sync::{mpsc, oneshot},
};
use tokio_util::sync::CancellationToken;

/// Lines of the child's stderr kept for error messages.
const STDERR_LINES: usize = 40;

/// How a request ended.
#[derive(Debug)]
pub enum Answer {
    /// The JSON-RPC response (a `result` or an `error`).
    Response(Value),
    /// No answer within the timeout; `notifications/cancelled` was sent.
    TimedOut,
    /// The session closed under the request.
    Closed,
}

type Waiting = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

pub struct StdioClient {
    to_server: Mutex<Option<mpsc::UnboundedSender<Vec<u8>>>>,
    waiting: Waiting,
    next_id: AtomicU64,
    closed: CancellationToken,
    stderr: Arc<Mutex<VecDeque<String>>>,
    child: tokio::sync::Mutex<Child>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl StdioClient {
    /// Starts `program args` with `env` added and in `cwd`, and the pumps around its stdio.
    pub fn spawn(
        program: &Path,
        args: &[String],
        env: &[(String, String)],
        cwd: Option<&Path>,
    ) -> std::io::Result<Self> {
        let mut command = Command::new(program);
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn()?;
        let waiting: Waiting = Arc::default();
        let closed = CancellationToken::new();
        let stderr: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let (to_server, mut lines) = mpsc::unbounded_channel::<Vec<u8>>();
        if let Some(mut stdin) = child.stdin.take() {
            tokio::spawn(async move {
                while let Some(line) = lines.recv().await {
                    if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
                        break;
                    }
                }
            });
        }
        if let Some(stdout) = child.stdout.take() {
            let waiting = waiting.clone();
            let closed = closed.clone();
            // Weak: answering the server must not keep its stdin open once the client closes.
            let replies = to_server.downgrade();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    dispatch(&line, &waiting, &replies);
                }
                closed.cancel();
                lock(&waiting).clear();
            });
        }
        if let Some(err) = child.stderr.take() {
            let stderr = stderr.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(err).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    tracing::debug!(target: "mcp_chaos::server", "{line}");
                    let mut tail = lock(&stderr);
                    if tail.len() >= STDERR_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            });
        }
        Ok(Self {
            to_server: Mutex::new(Some(to_server)),
            waiting,
            next_id: AtomicU64::new(1),
            closed,
            stderr,
            child: tokio::sync::Mutex::new(child),
        })
    }

    fn send(&self, message: &Value) {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        if let Some(tx) = lock(&self.to_server).as_ref() {
            let _ = tx.send(line);
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits up to `timeout` for its response; returns the id it used.
    pub async fn request(&self, method: &str, params: Value, timeout: Duration) -> (u64, Answer) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id, tx);
        if self.closed.is_cancelled() {
            lock(&self.waiting).remove(&id);
            return (id, Answer::Closed);
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = tokio::select! {
            response = rx => match response {
                Ok(value) => Answer::Response(value),
                Err(_) => Answer::Closed,
            },
            () = tokio::time::sleep(timeout) => {
                lock(&self.waiting).remove(&id);
                self.notify(
                    "notifications/cancelled",
                    json!({"requestId": id, "reason": "client timeout"}),
                );
                Answer::TimedOut
            }
        };
        (id, answer)
    }

    /// The last lines the child wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        lock(&self.stderr)
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Closes the child's stdin and gives it `grace` to exit before it is killed (by its pid).
    pub async fn close(&self, grace: Duration) {
        lock(&self.to_server).take();
        let mut child = self.child.lock().await;
        if tokio::time::timeout(grace, child.wait()).await.is_err() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
        // Let the stderr pump read what was left.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Routes one line from the server: a response to its waiter, a request answered (ping, or "not
/// supported"), anything else ignored.
fn dispatch(line: &str, waiting: &Waiting, replies: &mpsc::WeakUnboundedSender<Vec<u8>>) {
    let Ok(message) = serde_json::from_str::<Value>(line) else {
        return;
    };
    let id = message.get("id");
    match (message.get("method"), id) {
        (None, Some(id)) => {
            if let Some(tx) = id.as_u64().and_then(|id| lock(waiting).remove(&id)) {
                let _ = tx.send(message);
            }
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
            if let Some(replies) = replies.upgrade() {
                let _ = replies.send(line);
            }
        }
        _ => {}
    }
}
