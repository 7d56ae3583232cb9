//! Long tools as tasks (the MCP Tasks extension): a scenario called with the extension declared in the
//! request's `_meta` answers at once with a task, is polled with changing status messages and completes with
//! the report the plain call gives; a cancelled one ends `cancelled` with its proxy port free; without the
//! extension the plain result comes as before; over HTTP a task outlives its session. The bad inputs (unknown
//! id, a cancel of a finished task, polls far too fast, a client without the extension, the task cap) are clear
//! JSON-RPC errors and the server goes on. Real parts: the built binary under rmcp's client, on stdio and
//! Streamable HTTP, and an HTTP service on 127.0.0.1.
//!
//! They do not take `TIMING`: their bounds are seconds wide and their scenarios send a few requests a second,
//! so they run beside each other.

use std::time::{Duration, Instant};

use rmcp::{
    RoleClient,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities,
        GetTaskParams, RequestMetaObject, TaskPayload, TaskStatus,
    },
    service::{RunningService, ServiceError},
};
use serde_json::{Value, json};

use crate::mcp::http::HttpServer;
use crate::support::common;
use crate::support::scenario;

/// A `tools/call` of `tool` whose `_meta` declares the tasks extension, as a 2026-07-28 request does.
pub(crate) fn task_call(tool: &str, arguments: Value) -> CallToolRequestParams {
    let mut meta = RequestMetaObject::default();
    meta.set_client_capabilities(ClientCapabilities::builder().enable_tasks().build());
    let mut params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(arguments.as_object().cloned().unwrap_or_default());
    params.meta = Some(meta);
    params
}

/// `tasks/get` and `tasks/cancel` declare the extension the same way.
pub(crate) fn declared() -> Option<RequestMetaObject> {
    let mut meta = RequestMetaObject::default();
    meta.set_client_capabilities(ClientCapabilities::builder().enable_tasks().build());
    Some(meta)
}

pub(crate) fn get(id: &str) -> GetTaskParams {
    let mut params = GetTaskParams::new(id);
    params.meta = declared();
    params
}

pub(crate) fn cancel(id: &str) -> CancelTaskParams {
    let mut params = CancelTaskParams::new(id);
    params.meta = declared();
    params
}

/// Starts `tool` as a task; its id, and how long the answer took.
async fn start<H: rmcp::ClientHandler>(
    client: &RunningService<RoleClient, H>,
    tool: &str,
    arguments: Value,
) -> (String, Duration) {
    let sent = Instant::now();
    let response = client
        .peer()
        .call_tool_once(task_call(tool, arguments))
        .await
        .expect("tools/call");
    let took = sent.elapsed();
    match response {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working);
            assert_eq!(created.task.poll_interval_ms, Some(1000));
            assert!(created.task.ttl_ms.is_some_and(|ttl| ttl >= 60_000));
            (created.task.task_id, took)
        }
        other => panic!("{tool} with the tasks extension: not a task: {other:?}"),
    }
}

/// The result of a task that completed; any other end fails the test with `context` (e.g. a server's stderr).
fn completed(payload: TaskPayload, context: &str) -> rmcp::model::JsonObject {
    let TaskPayload::Completed { result } = payload else {
        panic!("not completed: {payload:?}\n{context}");
    };
    result
}

/// Polls task `id` every `pollIntervalMs` until it leaves `working`; the status messages seen, in order, and
/// the final payload.
pub(crate) async fn poll_to_end<H: rmcp::ClientHandler>(
    client: &RunningService<RoleClient, H>,
    id: &str,
    limit: Duration,
) -> (Vec<String>, TaskPayload) {
    let deadline = Instant::now() + limit;
    let mut messages: Vec<String> = Vec::new();
    loop {
        let task = client
            .peer()
            .get_task(get(id))
            .await
            .expect("tasks/get")
            .task;
        if let Some(message) = &task.task.status_message
            && messages.last() != Some(message)
        {
            messages.push(message.clone());
        }
        if task.status().is_terminal() {
            return (messages, task.payload);
        }
        assert!(
            Instant::now() < deadline,
            "task {id} still {:?} after {limit:?}: {messages:?}",
            task.status()
        );
        tokio::time::sleep(Duration::from_millis(
            task.task.poll_interval_ms.unwrap_or(1000),
        ))
        .await;
    }
}

/// Cancels task `id` and polls it every 100 ms until it ends (10 s at most): its last status, and how long after
/// the cancel.
async fn cancel_and_wait<H: rmcp::ClientHandler>(
    client: &RunningService<RoleClient, H>,
    id: &str,
) -> (TaskStatus, Duration) {
    let asked = Instant::now();
    client
        .peer()
        .cancel_task(cancel(id))
        .await
        .expect("tasks/cancel");
    let mut status = TaskStatus::Working;
    while !status.is_terminal() && asked.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        status = client
            .peer()
            .get_task(get(id))
            .await
            .expect("tasks/get")
            .task
            .status();
    }
    (status, asked.elapsed())
}

pub(crate) fn error_message(error: ServiceError) -> (i32, String) {
    match error {
        ServiceError::McpError(e) => (e.code.0, e.message.into_owned()),
        other => panic!("not a JSON-RPC error: {other}"),
    }
}

/// The keys of an object, sorted, to compare two reports' shapes.
fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_with_the_tasks_extension_is_a_task_polled_to_the_plain_calls_report() {
    let upstream = scenario::upstream().await;
    let args = json!({
        "url": upstream.url("/todos/1"),
        "duration": "8s",
        "rps": 10,
        "latency": 20,
    });
    let client = common::spawn().await;
    let (id, took) = start(&client, "fault_run_latency_impact_scenario", args.clone()).await;
    eprintln!("an 8 s scenario answered with task {id} after {took:?}");
    assert!(took < Duration::from_secs(5), "answered after {took:?}");
    let (messages, payload) = poll_to_end(&client, &id, Duration::from_secs(60)).await;
    eprintln!("status messages: {messages:?}");
    assert!(
        messages.len() >= 5,
        "the status message changes as the run goes: {messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.contains("of 80 requests done")),
        "{messages:?}"
    );
    let result = completed(payload, "");
    let task_result: rmcp::model::CallToolResult =
        serde_json::from_value(Value::Object(result)).expect("a tool result");
    assert!(
        !common::is_error(&task_result),
        "{}",
        common::text(&task_result)
    );
    let task_report = task_result
        .structured_content
        .clone()
        .expect("structuredContent");
    assert_eq!(task_report["run"]["requests"], 80, "{task_report}");
    assert!(common::text(&task_result).starts_with("# Scenarios Report"));

    // The plain call on the same arguments: the same report, in the same parts.
    let plain = common::call(&client, "fault_run_latency_impact_scenario", args)
        .await
        .expect("plain call");
    let plain_report = plain.structured_content.clone().expect("structuredContent");
    assert_eq!(keys(&task_report), keys(&plain_report));
    assert_eq!(keys(&task_report["run"]), keys(&plain_report["run"]));
    assert_eq!(
        task_report["run"]["requests"],
        plain_report["run"]["requests"]
    );
    // The same fault, acting as often (the proxy's port aside, a new one each run).
    for key in ["kind", "description", "windows", "applications"] {
        assert_eq!(
            task_report["faults"][0][key], plain_report["faults"][0][key],
            "{key}"
        );
    }
    let kinds = |r: &rmcp::model::CallToolResult| -> Vec<String> {
        r.content
            .iter()
            .map(|c| serde_json::to_value(c).unwrap()["type"].to_string())
            .collect()
    };
    assert_eq!(kinds(&task_result), kinds(&plain));
    client.cancel().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_task_ends_cancelled_with_its_proxy_port_free() {
    let upstream = scenario::upstream().await;
    // The demo app calls its upstream through the scenario's proxy on `port`.
    let port = common::free_port();
    let app = scenario::demo_app(format!("http://127.0.0.1:{port}")).await;
    let client = common::spawn().await;
    let (id, _) = start(
        &client,
        "fault_run_latency_impact_scenario",
        json!({
            "url": app.url("/api/todos/1"),
            "proxies": [format!("{port}={}", upstream.addr)],
            "duration": "20s",
            "rps": 5,
            "latency": 20,
        }),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let running = client
        .peer()
        .get_task(get(&id))
        .await
        .expect("tasks/get")
        .task;
    assert_eq!(running.status(), TaskStatus::Working, "{running:?}");
    assert!(
        std::net::TcpListener::bind(("127.0.0.1", port)).is_err(),
        "the scenario's proxy listens on {port}: {running:?}"
    );
    let (status, took) = cancel_and_wait(&client, &id).await;
    eprintln!("cancelled after 2 s: {status:?} {took:?} after tasks/cancel");
    assert_eq!(status, TaskStatus::Cancelled);
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(
        std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
        "port {port} is free once the task is cancelled"
    );
    // A finished task cannot be cancelled again; the server goes on serving.
    let (code, message) = error_message(
        client
            .peer()
            .cancel_task(cancel(&id))
            .await
            .expect_err("cancel of a cancelled task"),
    );
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("is already cancelled"), "{message}");
    let (code, message) = error_message(
        client
            .peer()
            .get_task(get("no-such-task"))
            .await
            .expect_err("unknown id"),
    );
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("unknown task: no-such-task"), "{message}");
    // The next scenario takes the slot the cancelled one freed.
    let (next, _) = start(
        &client,
        "fault_run_latency_impact_scenario",
        json!({"url": upstream.url("/todos/1"), "duration": "1s", "rps": 2, "latency": 10}),
    )
    .await;
    let (_, payload) = poll_to_end(&client, &next, Duration::from_secs(30)).await;
    let result = completed(payload, "");
    assert_eq!(result["isError"], Value::Bool(false), "{result:?}");
    client.cancel().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_extension_the_plain_result_comes_and_task_methods_are_refused() {
    let upstream = scenario::upstream().await;
    let client = common::spawn().await;
    let response = client
        .peer()
        .call_tool_once(
            CallToolRequestParams::new("fault_run_latency_impact_scenario").with_arguments(
                json!({"url": upstream.url("/todos/1"), "duration": "1s", "rps": 2, "latency": 10})
                    .as_object()
                    .cloned()
                    .unwrap(),
            ),
        )
        .await
        .expect("tools/call");
    let CallToolResponse::Complete(result) = response else {
        panic!("a task for a request without the extension: {response:?}");
    };
    assert!(!common::is_error(&result), "{}", common::text(&result));
    // tasks/get from a request that did not declare the extension: the extension's own error.
    let (code, message) = error_message(
        client
            .peer()
            .get_task(GetTaskParams::new("any"))
            .await
            .expect_err("tasks/get without the extension"),
    );
    assert_eq!(code, -32021, "{message}");
    // A short tool never runs as a task, even with the extension.
    let path = common::code_fixture("sample.py");
    let response = client
        .peer()
        .call_tool_once(task_call(
            "fault_list_function_names",
            json!({"file": path}),
        ))
        .await
        .expect("tools/call");
    assert!(
        matches!(response, CallToolResponse::Complete(_)),
        "{response:?}"
    );
    client.cancel().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polls_far_too_fast_and_too_many_tasks_are_refused_and_nothing_is_lost() {
    let upstream = scenario::upstream().await;
    let client = common::spawn().await;
    let args = json!({"url": upstream.url("/todos/1"), "duration": "3s", "rps": 2, "latency": 10});
    let (first, _) = start(&client, "fault_run_latency_impact_scenario", args.clone()).await;
    client
        .peer()
        .get_task(get(&first))
        .await
        .expect("first poll");
    let (code, message) = error_message(
        client
            .peer()
            .get_task(get(&first))
            .await
            .expect_err("a poll right after another"),
    );
    assert_eq!(code, -32600, "{message}");
    assert!(message.contains("poll it every 1000 ms"), "{message}");
    // The cap: the other tasks finish at once (one scenario at a time), but are kept for their TTL.
    let mut refused = None;
    for n in 2..=100 {
        match client
            .peer()
            .call_tool_once(task_call("fault_run_latency_impact_scenario", args.clone()))
            .await
        {
            Ok(CallToolResponse::Task(_)) => {}
            Ok(other) => panic!("not a task: {other:?}"),
            Err(e) => {
                refused = Some((n, error_message(e)));
                break;
            }
        }
    }
    let (n, (code, message)) = refused.expect("a cap on the tasks kept");
    eprintln!("task {n} refused: {message}");
    assert_eq!(n, 65);
    assert_eq!(code, -32600, "{message}");
    assert!(message.contains("too many tasks: 64"), "{message}");
    // Nothing lost: the first task completes with its report.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (_, payload) = poll_to_end(&client, &first, Duration::from_secs(30)).await;
    let result = completed(payload, "");
    assert_eq!(result["isError"], Value::Bool(false), "{result:?}");
    client.cancel().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_task_outlives_its_session_and_is_polled_from_another() {
    let upstream = scenario::upstream().await;
    let server = HttpServer::start(&["agent", "tool"], &[], &[]).await;
    let first = server.client(()).await;
    let (id, _) = start(
        &first,
        "fault_run_latency_impact_scenario",
        json!({"url": upstream.url("/todos/1"), "duration": "3s", "rps": 5, "latency": 10}),
    )
    .await;
    first.cancel().await.expect("close the first session");
    let second = server.client(()).await;
    let (_, payload) = poll_to_end(&second, &id, Duration::from_secs(30)).await;
    let result = completed(payload, &server.stderr());
    assert_eq!(result["isError"], Value::Bool(false), "{result:?}");
    assert_eq!(
        result["structuredContent"]["run"]["requests"], 15,
        "{result:?}"
    );
    second.cancel().await.expect("close the second session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_server_speaks_tasks_to_a_2026_07_28_client() {
    use rmcp::{
        model::{ClientConfig, Implementation, ProtocolVersion},
        service::{ClientLifecycleMode, ClientServiceExt},
        transport::StreamableHttpClientTransport,
    };
    let upstream = scenario::upstream().await;
    let server = HttpServer::start(&["agent", "tool"], &["--stateless"], &[]).await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    // No initialize: server/discover, then every request carries its version, client and capabilities.
    let handler = ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new("tasks-test", "1.0.0"),
    );
    let client = handler
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_uri(server.url()),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap_or_else(|e| panic!("discover: {e}\n{}", server.stderr()));
    let discovered = client
        .peer()
        .peer_info()
        .expect("the server's discover answer");
    assert!(
        discovered.capabilities.supports_tasks(),
        "server/discover advertises the tasks extension: {:?}",
        discovered.capabilities
    );
    let (id, _) = start(
        &client,
        "fault_run_latency_impact_scenario",
        json!({"url": upstream.url("/todos/1"), "duration": "2s", "rps": 5, "latency": 10}),
    )
    .await;
    let (_, payload) = poll_to_end(&client, &id, Duration::from_secs(30)).await;
    let result = completed(payload, &server.stderr());
    assert_eq!(
        result["structuredContent"]["run"]["requests"], 10,
        "{result:?}"
    );
    client.cancel().await.expect("close");
}

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
                .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(marker))
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_chaos_scenario_task_leaves_no_server_behind() {
    let logs = tempfile::tempdir().unwrap();
    // The scenario's server, found by its log file's path on its command line.
    let marker = logs.path().join("chaos-task-server.log");
    let marker = marker.to_string_lossy().into_owned();
    let client = common::spawn().await;
    let (id, took) = start(
        &client,
        "fault_run_mcp_chaos_scenario",
        json!({
            "server": {"command": common::fault_bin(),
                       "args": ["mcp-test-server", "--log-file", marker]},
            "calls": [{"tool": "echo", "arguments": {"text": "a"}}],
            "duration": "20s",
            "rate": "5",
        }),
    )
    .await;
    eprintln!("a 20 s chaos scenario answered with task {id} after {took:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let running = client
        .peer()
        .get_task(get(&id))
        .await
        .expect("tasks/get")
        .task;
    assert_eq!(running.status(), TaskStatus::Working, "{running:?}");
    assert!(
        running
            .task
            .status_message
            .as_deref()
            .is_some_and(|m| m.contains("calls done")),
        "{running:?}"
    );
    assert!(processes_with(&marker) > 0, "the scenario's server runs");
    let (status, took) = cancel_and_wait(&client, &id).await;
    eprintln!("chaos task cancelled after 2 s: {status:?} {took:?} after tasks/cancel");
    assert_eq!(status, TaskStatus::Cancelled);
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(processes_with(&marker), 0, "no server left once cancelled");
    client.cancel().await.expect("clean shutdown");
}
