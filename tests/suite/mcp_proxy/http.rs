//! `fault mcp-proxy --upstream URL --listen ADDR` between real Streamable HTTP parts: a FastMCP server
//! upstream (tests/suite/mcp_proxy/http/upstream.py), and in front the official Python SDK's client
//! (tests/suite/mcp_proxy/http/client.py) and rmcp's Streamable HTTP client. Needs a Python with `fastmcp`
//! (it brings the `mcp` SDK): skipped out loud without one.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, ClientRequest, ProgressNotificationParam, Request, ServerResult,
    },
    service::{NotificationContext, PeerRequestOptions},
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use crate::{mcp_proxy::faults::wait_events, support::common};

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/suite/mcp_proxy/http")
        .join(name)
}

pub fn python(test: &str) -> Option<String> {
    match common::python_with(&["fastmcp"]) {
        Ok(python) => Some(python),
        Err(why) => {
            crate::support::optional::skip(test, &why);
            None
        }
    }
}

/// The FastMCP server on a free loopback port; killed when dropped.
pub struct Upstream {
    _child: Child,
    pub url: String,
}

pub async fn fastmcp_upstream(python: &str) -> Upstream {
    fastmcp_upstream_with(python, &[]).await
}

/// The FastMCP server; with `[CERT, KEY]` (PEM files) it serves `https://`.
pub async fn fastmcp_upstream_with(python: &str, tls: &[&Path]) -> Upstream {
    let port = common::free_port();
    let child = Command::new(python)
        .arg(script("upstream.py"))
        .arg(port.to_string())
        .args(tls)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    common::wait_until_listening(port, "the FastMCP upstream").await;
    Upstream {
        _child: child,
        url: format!(
            "{}://127.0.0.1:{port}/mcp",
            if tls.is_empty() { "http" } else { "https" }
        ),
    }
}

/// `fault mcp-proxy --upstream URL --listen 127.0.0.1:0 ARGS…`; its URL is read from its stderr.
pub struct Proxy {
    _child: Child,
    pub url: String,
}

pub async fn http_proxy(upstream: &str, args: &[&str]) -> Proxy {
    let mut child = Command::new(common::fault_bin())
        .args([
            "mcp-proxy",
            "--upstream",
            upstream,
            "--listen",
            "127.0.0.1:0",
        ])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.split("listening on ").nth(1) {
                return rest.split(" -> ").next().unwrap().to_owned();
            }
            eprintln!("{line}");
        }
        panic!("the proxy exited before listening");
    })
    .await
    .expect("the proxy did not say where it listens");
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("{line}");
        }
    });
    Proxy { _child: child, url }
}

pub async fn run_python_client(python: &str, script_json: Value) -> Value {
    common::run_python_script(python, &script("client.py"), &[], Some(&script_json)).await
}

#[tokio::test]
async fn the_python_sdk_sees_each_http_fault_as_the_spec_says() {
    let test = "the_python_sdk_sees_each_http_fault_as_the_spec_says";
    let Some(python) = python(test) else { return };
    let upstream = fastmcp_upstream(&python).await;
    // FastMCP's SSE events carry no ids, so the cut stream cannot be resumed: the SDK says so at once.
    let cut = (
        (-32000, "SSE stream ended without a response"),
        &[1.0, 2.0][..],
    );
    python_sdk_sees_each_http_fault(&python, &upstream.url, "count", json!({"steps": 5}), cut)
        .await;
}

/// The same in front of `fault mcp-test-server --transport http` (its `progress` tool streams the events).
/// Its SSE events carry ids, so after the cut the SDK resumes with `Last-Event-ID` (a GET), as the spec lets
/// it; the server cannot resume a stream whose request was closed, answers each resume with an empty stream,
/// and the call ends at the client's timeout.
#[tokio::test]
async fn the_python_sdk_sees_each_http_fault_in_front_of_the_test_server() {
    let test = "the_python_sdk_sees_each_http_fault_in_front_of_the_test_server";
    let Some(python) = python(test) else { return };
    let upstream = crate::mcp::http::HttpServer::start(&["mcp-test-server"], &[], &[]).await;
    python_sdk_sees_each_http_fault(
        &python,
        upstream.url(),
        "progress",
        json!({"steps": 5, "step_ms": 50}),
        // The cut counts the server's priming event (an id, no data): one progress event gets through.
        ((-32001, "Request 'tools/call' timed out"), &[1.0][..]),
    )
    .await;
    let log = upstream.stderr();
    assert!(log.contains("Resume failed"), "no resume was tried:\n{log}");
}

/// Through `fault mcp-proxy --upstream` with one fault of each HTTP kind, the Python SDK client sees each as
/// the spec says: a 404 makes it re-initialize, 429 carries Retry-After, progress arrives in order.
async fn python_sdk_sees_each_http_fault(
    python: &str,
    upstream: &str,
    progress_tool: &str,
    progress_arguments: Value,
    (cut_stream_error, progress_before_cut): ((i64, &str), &[f64]),
) {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:
  - type: latency
    tools: [echo]
    ms: 300
    on_call: 2
  - type: error
    tools: [echo]
    on_call: 3
  - type: session_expiry
    tools: [echo]
    on_call: 4
  - type: http_status
    status: 429
    retry_after_seconds: 7
    tools: [echo]
    on_call: 6
  - type: protocol_version_rejection
    tools: [echo]
    on_call: 7
  - type: stream_cut
    tools: [PROGRESS]
    after_events: 2
    on_call: 2
"
        .replace("PROGRESS", progress_tool),
    )
    .unwrap();
    let events = dir.path().join("events.jsonl");
    let proxy = http_proxy(
        upstream,
        &[
            "--plan",
            plan.to_str().unwrap(),
            "--events",
            events.to_str().unwrap(),
        ],
    )
    .await;
    let echo = |text: &str| json!({"tool": "echo", "arguments": {"text": text}});
    // The cut call ends at its timeout: 5 s is ample for the whole call, whose 5 steps take 250 ms.
    let count = json!({"tool": progress_tool, "arguments": progress_arguments, "timeout_s": 5});
    let run = run_python_client(
        python,
        json!({
            "url": proxy.url,
            "calls": [
                echo("1"), echo("2"), echo("3"), echo("4"), echo("6"), echo("7"), count, count,
            ],
        }),
    )
    .await;
    let calls = run["calls"].as_array().unwrap();
    let outcome = |i: usize| calls[i]["outcome"].as_str().unwrap();
    // FastMCP's echo answers the text; the test server's answers it as JSON ({"text": ...}).
    let echoed = |i: usize| -> String {
        let text = calls[i]["text"].as_str().unwrap_or_default();
        serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|v| v["text"].as_str().map(str::to_owned))
            .unwrap_or_else(|| text.to_owned())
    };
    let error = |i: usize| {
        (
            calls[i]["error"]["code"].as_i64().unwrap(),
            calls[i]["error"]["message"].as_str().unwrap(),
        )
    };
    assert_eq!((outcome(0), echoed(0).as_str()), ("result", "1"));
    // The latency acts on its call only.
    assert_eq!(echoed(1), "2");
    assert!(
        calls[1]["wall_ms"].as_f64().unwrap() >= 300.0,
        "{}",
        calls[1]
    );
    assert!(
        calls[2]["wall_ms"].as_f64().unwrap() < 300.0,
        "{}",
        calls[2]
    );
    assert_eq!(error(2), (-32603, "Internal error: injected fault"));
    // 404 on the session: the SDK reports the session terminated; the client initializes a new session and
    // the call goes through there.
    assert_eq!(error(3), (-32600, "Session terminated"));
    assert_eq!((outcome(4), echoed(4).as_str()), ("result", "4"));
    assert_eq!(run["sessions"], 2);
    assert_ne!(calls[3]["session"], calls[4]["session"]);
    // 429 and 400 as the SDK reports them.
    assert_eq!(error(5), (-32603, "Server returned an error response"));
    assert_eq!(
        error(6),
        (-32600, "Bad Request: Unsupported protocol version")
    );
    // Progress events delivered in order, then the answer; the cut stream loses the answer after 2 events.
    let steps = |i: usize| -> Vec<f64> {
        calls[i]["progress"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[0].as_f64().unwrap())
            .collect()
    };
    assert_eq!(outcome(7), "result", "{}", calls[7]);
    assert_eq!(steps(7), [1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(error(8), cut_stream_error);
    assert_eq!(steps(8), progress_before_cut);

    // On the wire: one session id on every request of a session, the 404 on the old one, the new session
    // used after it, Retry-After with the 429.
    let http = run["http"].as_array().unwrap();
    let first = http[1]["session"]
        .as_str()
        .expect("a session id after initialize");
    let expired_at = http
        .iter()
        .position(|e| e["status"] == 404 && e["rpc"] == "tools/call")
        .expect("a 404 on a tools/call");
    assert!(
        http[1..=expired_at].iter().all(|e| e["session"] == first),
        "the session header changed within a session: {http:?}"
    );
    let reinitialized = http[expired_at..]
        .iter()
        .position(|e| e["rpc"] == "initialize")
        .map(|i| i + expired_at)
        .expect("a second initialize");
    assert!(http[reinitialized]["session"].is_null());
    let second = http[reinitialized + 1]["session"].as_str().unwrap();
    assert_ne!(first, second);
    assert!(
        http[reinitialized + 1..]
            .iter()
            .filter(|e| e["rpc"] == "tools/call")
            .all(|e| e["session"] == second)
    );
    let limited = http.iter().find(|e| e["status"] == 429).unwrap();
    assert_eq!(limited["retry_after"], "7");
    assert!(http.iter().any(|e| e["status"] == 400));

    // One event per call, with the fault that acted.
    let logged = wait_events(&events, 10).await;
    let fired: Vec<&str> = logged
        .iter()
        .filter_map(|e| e["fault"]["type"].as_str())
        .collect();
    assert_eq!(
        fired,
        [
            "latency",
            "error",
            "session_expiry",
            "http_status",
            "protocol_version_rejection",
            "stream_cut"
        ]
    );
}

#[derive(Clone, Default)]
struct ProgressRecorder {
    seen: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.lock().unwrap().push(params);
    }
}

#[tokio::test]
async fn rmcp_over_http_sees_faults_per_message_and_progress_in_order() {
    let test = "rmcp_over_http_sees_faults_per_message_and_progress_in_order";
    let Some(python) = python(test) else { return };
    let upstream = fastmcp_upstream(&python).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:
  - type: latency
    tools: [echo]
    ms: 400
    on_call: 2
  - type: error
    tools: [echo]
    code: -32050
    message: injected
    on_call: 3
",
    )
    .unwrap();
    let events = dir.path().join("events.jsonl");
    let proxy = http_proxy(
        &upstream.url,
        &[
            "--plan",
            plan.to_str().unwrap(),
            "--events",
            events.to_str().unwrap(),
        ],
    )
    .await;
    // rmcp's HTTP client is reqwest on rustls: the crypto provider the binary uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let recorder = ProgressRecorder::default();
    // FastMCP refuses requests without the session id it gave: every call below carries it through the proxy.
    let client = recorder
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(proxy.url.as_str()))
        .await
        .unwrap();
    let mut walls = Vec::new();
    let mut outcomes = Vec::new();
    for text in ["a", "b", "c", "d"] {
        let started = Instant::now();
        let called = client
            .call_tool(
                CallToolRequestParams::new("echo")
                    .with_arguments(json!({"text": text}).as_object().unwrap().clone()),
            )
            .await;
        walls.push(started.elapsed());
        outcomes.push(match called {
            Ok(result) => common::text(&result).to_owned(),
            Err(e) => format!("error: {e}"),
        });
    }
    assert_eq!(outcomes[0], "a");
    assert_eq!(outcomes[1], "b");
    assert!(
        outcomes[2].contains("-32050") || outcomes[2].contains("injected"),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[3], "d");
    assert!(walls[1] >= Duration::from_millis(400), "{walls:?}");
    // Per message: only call 2 was held (its answer 400 ms after the server's), as the events show.
    let logged = wait_events(&events, 4).await;
    let held: Vec<f64> = logged
        .iter()
        .filter(|e| e["upstream"]["kind"] == "result")
        .map(|e| e["latency_ms"].as_f64().unwrap() - e["upstream_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(held.len(), 3, "{logged:?}");
    assert!(
        held[1] >= 400.0 && held[0] < 100.0 && held[2] < 100.0,
        "{held:?}"
    );

    let request = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("count")
            .with_arguments(json!({"steps": 6}).as_object().unwrap().clone()),
    ));
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(30), handle.await_response())
        .await
        .unwrap()
        .unwrap();
    let ServerResult::CallToolResult(result) = result else {
        panic!("not a tool result: {result:?}");
    };
    assert_eq!(common::text(&result), "counted 6");
    let seen: Vec<f64> = recorder
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.progress)
        .collect();
    assert_eq!(seen, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn http_only_faults_are_a_plan_error_in_stdio_mode() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(&plan, "faults:\n  - type: session_expiry\n").unwrap();
    let output = Command::new(common::fault_bin())
        .args(["mcp-proxy", "--plan", plan.to_str().unwrap(), "--", "true"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("faults[0]: `session_expiry` acts on Streamable HTTP only"),
        "{stderr}"
    );
}

/// `--upstream URL` without `--listen`: the Python SDK's stdio client talks to the proxy, the proxy to the
/// FastMCP server over Streamable HTTP; the stdio faults act per call, progress passes in order.
#[tokio::test]
async fn the_stdio_front_bridges_to_an_http_upstream() {
    let test = "the_stdio_front_bridges_to_an_http_upstream";
    let Some(python) = python(test) else { return };
    let upstream = fastmcp_upstream(&python).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:
  - type: latency
    tools: [echo]
    ms: 300
    on_call: 2
  - type: rate_limit
    tools: [echo]
    retry_after_seconds: 3
    on_call: 3
",
    )
    .unwrap();
    let events = dir.path().join("events.jsonl");
    let script = json!({
        "server": crate::support::python_client::fault_server(&[
            "mcp-proxy", "--upstream", &upstream.url, "--plan", plan.to_str().unwrap(),
            "--events", events.to_str().unwrap(),
        ]),
        "calls": [
            {"tool": "echo", "arguments": {"text": "a"}},
            {"tool": "echo", "arguments": {"text": "b"}},
            {"tool": "echo", "arguments": {"text": "c"}},
            {"tool": "count", "arguments": {"steps": 4}, "progress": true},
        ]
    });
    let sandbox = common::Sandbox::new("python stdio client → fault mcp-proxy --upstream");
    let run =
        crate::support::python_client::run_script_in(Path::new(&python), &script, &sandbox).await;
    let calls = &run.calls;
    assert_eq!(run.server_info["name"], "upstream");
    assert_eq!(calls[0].text(), Some("a"));
    assert_eq!(calls[1].text(), Some("b"));
    assert!(calls[1].wall_ms >= 300.0, "{}", calls[1].wall_ms);
    let error = calls[2].error.as_ref().expect("a JSON-RPC error");
    assert_eq!(
        (error.code, error.message.as_str()),
        (-32000, "Rate limit exceeded, retry after 3s")
    );
    assert_eq!(calls[3].text(), Some("counted 4"));
    let steps: Vec<f64> = calls[3]
        .progress
        .as_ref()
        .unwrap()
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(steps, [1.0, 2.0, 3.0, 4.0]);
    let logged = wait_events(&events, 4).await;
    let held =
        logged[1]["latency_ms"].as_f64().unwrap() - logged[1]["upstream_ms"].as_f64().unwrap();
    assert!(held >= 300.0, "{}", logged[1]);
}
