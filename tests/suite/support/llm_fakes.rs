//! Stand-ins for paid LLM services on 127.0.0.1, speaking their real HTTP/1.1 wire formats:
//! OpenAI (`/v1/chat/completions`, `/v1/embeddings`) and Ollama (`/api/chat`, `/api/embed`).
//!
//! A test gives a handler that sees each recorded request (with its position) and returns the reply;
//! every request is kept for assertions. The server stops when the value is dropped.
#![allow(dead_code)]

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server answers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Wait this long before answering (a hang when longer than the client's timeout).
    pub delay: Duration,
}

impl Reply {
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    pub fn text(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("Content-Type".into(), "text/plain".into())],
            body: body.to_owned(),
            delay: Duration::ZERO,
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// An OpenAI rate-limit error.
    pub fn openai_429() -> Self {
        Self::json(
            429,
            json!({"error": {"message": "Rate limit reached", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}),
        )
        .with_header("Retry-After", "0")
    }

    /// An OpenAI chat completion whose message content is `content`.
    pub fn openai_chat(model: &str, content: &str) -> Self {
        Self::openai_chat_ending(model, content, "stop", 10)
    }

    /// An OpenAI chat completion ended for its length (`finish_reason: length`) after `tokens` tokens: at
    /// `max_completion_tokens`, or earlier when the context window is full.
    pub fn openai_chat_cut(model: &str, content: &str, tokens: u32) -> Self {
        Self::openai_chat_ending(model, content, "length", tokens)
    }

    fn openai_chat_ending(model: &str, content: &str, finish_reason: &str, tokens: u32) -> Self {
        Self::json(
            200,
            json!({
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1_700_000_000u32,
                "model": model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": null},
                    "logprobs": null,
                    "finish_reason": finish_reason
                }],
                "usage": {"prompt_tokens": 10, "completion_tokens": tokens, "total_tokens": 10 + tokens}
            }),
        )
    }

    /// An OpenAI embeddings answer.
    pub fn openai_embeddings(model: &str, vectors: &[Vec<f32>]) -> Self {
        let data: Vec<Value> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
            .collect();
        Self::json(
            200,
            json!({"object": "list", "data": data, "model": model,
                   "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
        )
    }

    /// An Ollama non-streamed chat answer.
    pub fn ollama_chat(model: &str, content: &str) -> Self {
        Self::json(
            200,
            json!({
                "model": model,
                "created_at": "2026-01-01T00:00:00.000000Z",
                "message": {"role": "assistant", "content": content},
                "done": true,
                "done_reason": "stop",
                "total_duration": 1, "load_duration": 1, "prompt_eval_count": 1,
                "prompt_eval_duration": 1, "eval_count": 1, "eval_duration": 1
            }),
        )
    }

    /// An Ollama `/api/embed` answer.
    pub fn ollama_embed(model: &str, vectors: &[Vec<f32>]) -> Self {
        Self::json(200, json!({"model": model, "embeddings": vectors}))
    }
}

type Handler = dyn Fn(usize, &Recorded) -> Reply + Send + Sync;

/// A running stand-in server.
pub struct FakeServer {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    /// Connections the client closed while a delayed reply was pending (e.g. a cancelled call).
    abandoned: Arc<Mutex<usize>>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeServer {
    /// Starts on 127.0.0.1 with an OS-chosen port.
    pub async fn start(
        handler: impl Fn(usize, &Recorded) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let abandoned = Arc::new(Mutex::new(0));
        let handler: Arc<Handler> = Arc::new(handler);
        let recorded = requests.clone();
        let abandoned_count = abandoned.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let handler = handler.clone();
                let recorded = recorded.clone();
                let abandoned = abandoned_count.clone();
                tokio::spawn(async move {
                    let _ = serve_connection(stream, handler, recorded, abandoned).await;
                });
            }
        });
        Self {
            addr,
            requests,
            abandoned,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }

    /// How many connections were closed by the client before their delayed reply was sent.
    pub fn abandoned(&self) -> usize {
        *self.abandoned.lock().expect("lock")
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve_connection(
    mut stream: TcpStream,
    handler: Arc<Handler>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    abandoned: Arc<Mutex<usize>>,
) -> std::io::Result<()> {
    // Keep-alive: serve requests until the client closes.
    let mut buffer = Vec::new();
    loop {
        let Some(request) = read_request(&mut stream, &mut buffer).await? else {
            return Ok(());
        };
        let index = {
            let mut all = recorded.lock().expect("lock");
            all.push(request.clone());
            all.len() - 1
        };
        let reply = handler(index, &request);
        if !reply.delay.is_zero() {
            // Wait, but notice a client that gives up (EOF) meanwhile.
            let mut probe = [0u8; 1];
            tokio::select! {
                _ = tokio::time::sleep(reply.delay) => {}
                read = stream.read(&mut probe) => {
                    if matches!(read, Ok(0) | Err(_)) {
                        *abandoned.lock().expect("lock") += 1;
                        return Ok(());
                    }
                }
            }
        }
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Length: {}\r\n",
            reply.status,
            reason(reply.status),
            reply.body.len()
        );
        for (k, v) in &reply.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(reply.body.as_bytes()).await?;
        stream.flush().await?;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Reads one HTTP/1.1 request (Content-Length bodies only, which is what reqwest sends for JSON).
async fn read_request(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
) -> std::io::Result<Option<Recorded>> {
    let header_end = loop {
        if let Some(pos) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let body_start = header_end + 4;
    while buffer.len() < body_start + length {
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body_bytes = buffer[body_start..body_start + length].to_vec();
    buffer.drain(..body_start + length);
    let body = serde_json::from_slice(&body_bytes).unwrap_or(Value::Null);
    Ok(Some(Recorded {
        method,
        path,
        headers,
        body,
    }))
}
