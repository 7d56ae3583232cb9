//! `fault agent tool` over Streamable HTTP vs. over stdio, in the same run: the round trip of one code tool call
//! (`fault_extract_code_block` of one function of a fixed 2,000-line Python file) on each transport, p50 and
//! p99, and their ratio, printed with the machine's load average.
//!
//! `cargo bench --bench mcp_http` (release build). `MCP_HTTP_BENCH_CALLS` sets the calls per side (default
//! 5,000), run in interleaved batches of 500 so both sides see the same machine. The HTTP side is one session
//! (`Mcp-Session-Id`) on one kept-alive connection, each answer an SSE stream read to its end, as a client does;
//! the stdio side is newline-delimited JSON-RPC on the child's pipes.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    time::Instant,
};

#[path = "support/mcp_stdio.rs"]
mod mcp_stdio;

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde_json::{Value, json};

const FAULT: &str = env!("CARGO_BIN_EXE_fault");
const FUNCTIONS: usize = 200;

/// 200 functions of 10 lines: a fixed file, the same on every run.
fn python_source() -> String {
    let mut source = String::new();
    for i in 0..FUNCTIONS {
        source.push_str(&format!(
            "def function_{i}(a, b):\n    \"\"\"Function {i}.\"\"\"\n    total = 0\n    for x in range(a):\n        if x % {m} == 0:\n            total += x * b\n        else:\n            total -= 1\n    return total + {i}\n\n",
            m = i % 7 + 2
        ));
    }
    source
}

/// `fault agent tool --transport http --listen 127.0.0.1:0`, its URL read from its log.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn spawn() -> Self {
        let mut child = Command::new(FAULT)
            .args(["--log-level", "info", "agent", "tool"])
            .args(["--transport", "http", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn fault agent tool --transport http");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let url = loop {
            line.clear();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "the server exited"
            );
            if let Some(rest) = line.split("serving MCP over Streamable HTTP at ").nth(1) {
                break rest.split_whitespace().next().unwrap().to_owned();
            }
        };
        // Keep draining its log so it never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while stderr.read_line(&mut sink).is_ok_and(|n| n > 0) {
                sink.clear();
            }
        });
        Self { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One session on the HTTP server.
struct HttpSession {
    client: Client<HttpConnector, Full<Bytes>>,
    url: String,
    session: Option<String>,
    next_id: u64,
}

impl HttpSession {
    async fn post(&mut self, message: Value) -> (Option<String>, Option<Value>) {
        let mut request = Request::post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18");
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        let request = request
            .body(Full::new(Bytes::from(message.to_string())))
            .unwrap();
        let response = self.client.request(request).await.expect("request");
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&body);
        // A JSON body, or the answer among an SSE stream's events.
        let answer = serde_json::from_str(&text).ok().or_else(|| {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                .find(|m| m.get("id").is_some())
        });
        (session, answer)
    }

    async fn initialize(url: &str) -> Self {
        let mut session = Self {
            client: {
                let mut connector = HttpConnector::new();
                connector.set_nodelay(true);
                Client::builder(TokioExecutor::new()).build(connector)
            },
            url: url.to_owned(),
            session: None,
            next_id: 1,
        };
        let (id, answer) = session
            .post(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"}}}),
            )
            .await;
        assert!(answer.is_some_and(|a| a["result"].is_object()));
        session.session = id;
        session
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        session
    }

    async fn call(&mut self, tool: &str, arguments: &Value) -> Value {
        self.next_id += 1;
        let (_, answer) = self
            .post(
                json!({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}}),
            )
            .await;
        let answer = answer.expect("an answer");
        assert_ne!(answer["result"]["isError"], true, "{answer}");
        answer
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).unwrap()
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn us(nanos: u64) -> f64 {
    nanos as f64 / 1000.0
}

#[tokio::main]
async fn main() {
    let calls: u64 = std::env::var("MCP_HTTP_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("fixed.py");
    std::fs::write(&file, python_source()).unwrap();
    let arguments = json!({"file": file.to_str().unwrap(), "func": "function_100"});
    let tool = "fault_extract_code_block";

    let mut stdio = mcp_stdio::Server::spawn();
    stdio.initialize();
    let http_server = HttpServer::spawn();
    let mut http = HttpSession::initialize(&http_server.url).await;
    let expected = stdio.call(tool, arguments.clone())["result"]["structuredContent"].clone();
    assert_eq!(
        http.call(tool, &arguments).await["result"]["structuredContent"],
        expected,
        "the transports answer differently"
    );
    // Warm-up: parse caches, connection pool, allocator.
    for _ in 0..200 {
        stdio.call(tool, arguments.clone());
        http.call(tool, &arguments).await;
    }

    let load_before = load_average();
    let (mut over_stdio, mut over_http) = (histogram(), histogram());
    let batch = 500.min(calls).max(1);
    for _ in 0..calls.div_ceil(batch) {
        for _ in 0..batch {
            let started = Instant::now();
            std::hint::black_box(stdio.call(tool, arguments.clone()));
            over_stdio.saturating_record(started.elapsed().as_nanos() as u64);
        }
        for _ in 0..batch {
            let started = Instant::now();
            std::hint::black_box(http.call(tool, &arguments).await);
            over_http.saturating_record(started.elapsed().as_nanos() as u64);
        }
    }
    let load_after = load_average();
    stdio.close();
    drop(http_server);

    println!(
        "{tool} of one function of a {}-line Python file, {} calls per transport (interleaved batches of {batch}):",
        FUNCTIONS * 10,
        over_stdio.len()
    ); // stdout-ok
    let quantiles = |h: &Histogram<u64>| (h.value_at_quantile(0.5), h.value_at_quantile(0.99));
    let (s50, s99) = quantiles(&over_stdio);
    let (h50, h99) = quantiles(&over_http);
    println!(
        "  stdio                        p50 {:8.1} µs  p99 {:8.1} µs",
        us(s50),
        us(s99)
    ); // stdout-ok
    println!(
        "  Streamable HTTP (SSE answer) p50 {:8.1} µs  p99 {:8.1} µs",
        us(h50),
        us(h99)
    ); // stdout-ok
    println!(
        // stdout-ok
        "  HTTP / stdio: p50 x{:.2} ({:+.1} µs), p99 x{:.2} ({:+.1} µs)",
        h50 as f64 / s50 as f64,
        us(h50) - us(s50),
        h99 as f64 / s99 as f64,
        us(h99) - us(s99)
    );
    println!("  load average (1/5/15 min): {load_before} before, {load_after} after"); // stdout-ok
}
