//! The MCP load generator of `fault_run_mcp_chaos_scenario`: its maximum calls per second against a trivial
//! tool (`echo` of `fault mcp-test-server --transport http`), beside a floor measured in the same run: a
//! minimal client (hyper, no judging, no records) making the same `tools/call` POSTs with the same sessions
//! and calls in flight. Then an open-model run at half the floor's rate, to show every due call starts.
//!
//! `cargo bench --bench mcp_load` (release build). `MCP_LOAD_BENCH_SECONDS` sets each side's run (default 3),
//! `MCP_LOAD_BENCH_ROUNDS` the alternated rounds (default 3).

#[path = "support/mcp_stdio.rs"]
mod mcp_stdio;

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde_json::{Value, json};

const FAULT: &str = env!("CARGO_BIN_EXE_fault");
const SESSIONS: u32 = 8;
const IN_FLIGHT_PER_SESSION: u32 = 4;

struct TestServer {
    child: Child,
    url: String,
}

impl TestServer {
    fn spawn() -> TestServer {
        let mut child = Command::new(FAULT)
            // At info: the line naming its URL is logged at that level.
            .args(["mcp-test-server", "--transport", "http"])
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn fault mcp-test-server");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let url = loop {
            line.clear();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "the server exited"
            );
            if let Some(rest) = line.split("Streamable HTTP at ").nth(1) {
                break rest.split_whitespace().next().unwrap().to_owned();
            }
        };
        // Keep draining its stderr so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in stderr.lines() {});
        TestServer { child, url }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type HttpClient = Client<HttpConnector, Full<Bytes>>;

fn post(url: &str, session: Option<&str>, body: String) -> Request<Full<Bytes>> {
    let mut request = Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.body(Full::new(Bytes::from(body))).unwrap()
}

/// The floor: `SESSIONS` sessions with `IN_FLIGHT_PER_SESSION` callers each, back to back for `seconds`.
async fn floor(client: &HttpClient, url: &str, seconds: f64) -> f64 {
    let calls = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut callers = tokio::task::JoinSet::new();
    for _ in 0..SESSIONS {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "floor", "version": "1"}}});
        let response = client
            .request(post(url, None, init.to_string()))
            .await
            .unwrap();
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        response.into_body().collect().await.unwrap();
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let response = client
            .request(post(url, Some(&session), initialized.to_owned()))
            .await
            .unwrap();
        response.into_body().collect().await.unwrap();
        for caller in 0..IN_FLIGHT_PER_SESSION {
            let (client, url, session, calls) = (
                client.clone(),
                url.to_owned(),
                session.clone(),
                calls.clone(),
            );
            callers.spawn(async move {
                let mut id = u64::from(caller) * 1_000_000_000;
                while Instant::now() < deadline {
                    id += 1;
                    let body = format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}}}}}}"#
                    );
                    let response = client.request(post(&url, Some(&session), body)).await.unwrap();
                    let answer = response.into_body().collect().await.unwrap().to_bytes();
                    assert!(answer.windows(7).any(|w| w == b"\"hello\""));
                    calls.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    }
    let started = Instant::now();
    while callers.join_next().await.is_some() {}
    calls.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// One run of the scenario tool; its report.
fn scenario(agent: &mut mcp_stdio::Server, url: &str, schedule: Value) -> Value {
    let mut arguments = json!({
        "server": {"url": url},
        "calls": [{"tool": "echo", "arguments": {"text": "hello"}}],
        "num_clients": SESSIONS,
        "concurrency": IN_FLIGHT_PER_SESSION,
        "client": {"timeout_ms": 30000},
    });
    arguments
        .as_object_mut()
        .unwrap()
        .extend(schedule.as_object().unwrap().clone());
    let answer = agent.call("fault_run_mcp_chaos_scenario", arguments);
    answer["result"]["structuredContent"].clone()
}

/// Calls answered per second of a report.
fn rate(report: &Value) -> f64 {
    let run = &report["run"];
    run["overall"]["outcomes"]["ok"].as_f64().unwrap()
        / (run["duration_ms"].as_f64().unwrap() / 1000.0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() {
    let seconds: f64 = std::env::var("MCP_LOAD_BENCH_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3.0);
    let rounds: usize = std::env::var("MCP_LOAD_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let server = TestServer::spawn();
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let mut agent = mcp_stdio::Server::spawn_with(&["--max-scenario-rps", "100000"], &[]);
    agent.initialize();
    // Warm both sides.
    floor(&client, &server.url, 0.5).await;
    let calibration = scenario(&mut agent, &server.url, json!({"repeat": 200}));
    let per_session_rate = rate(&calibration) / f64::from(SESSIONS);
    let mut ours = Vec::new();
    let mut floors = Vec::new();
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let repeat = (per_session_rate * seconds).max(10.0).round() as u64;
        let report = scenario(&mut agent, &server.url, json!({"repeat": repeat}));
        let our_rate = rate(&report);
        let floor_rate = floor(&client, &server.url, seconds).await;
        println!(
            // stdout-ok
            "  round {}: scenario {our_rate:8.0} calls/s, floor {floor_rate:8.0} calls/s, ratio {:.2} (load {})",
            round + 1,
            our_rate / floor_rate,
            load_average()
        );
        ours.push(our_rate);
        floors.push(floor_rate);
        ratios.push(our_rate / floor_rate);
    }
    let floor_rate = median(floors.clone());
    println!(
        // stdout-ok
        "maximum calls/s against echo, {SESSIONS} sessions × {IN_FLIGHT_PER_SESSION} in flight: scenario {:.0}, floor {:.0}, ratio {:.2} (median of {rounds} rounds)",
        median(ours),
        floor_rate,
        median(ratios)
    );
    let half = (floor_rate / 2.0 / f64::from(SESSIONS)).floor();
    let report = scenario(
        &mut agent,
        &server.url,
        json!({"rps": half, "duration": format!("{seconds}s"), "concurrency": 256}),
    );
    let run = &report["run"];
    println!(
        // stdout-ok
        "open model at {:.0} calls/s ({SESSIONS} × {half}) for {seconds} s: {} started of {} due, {} not started, {} answered, p50 {} ms, p99 {} ms",
        half * f64::from(SESSIONS),
        run["overall"]["calls"],
        (half * f64::from(SESSIONS) * seconds).ceil(),
        run["not_started"],
        run["overall"]["outcomes"]["ok"],
        run["overall"]["latency"]["p50_ms"],
        run["overall"]["latency"]["p99_ms"]
    );
    agent.close();
}
