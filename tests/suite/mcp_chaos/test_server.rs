//! `fault mcp-test-server` driven by rmcp's MCP client over stdio: each tool's exact result, its errors on
//! the wire, the cancellation of `slow`, progress notifications, and `flaky`'s determinism across processes.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use fault::mcp_test_server::ErrorCategory;
use rmcp::{
    ClientHandler, ServiceError,
    model::{CallToolRequestParams, ClientRequest, ErrorData, ProgressNotificationParam, Request},
    service::{NotificationContext, PeerRequestOptions},
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{
    common::{self, Client, call, call_ok, is_error, spawn_command, text},
    python_client,
};

async fn server() -> Client {
    spawn_command(&["mcp-test-server"]).await
}

/// The JSON-RPC error of a call that must fail at the protocol level.
async fn rpc_error(client: &Client, tool: &str, args: Value) -> ErrorData {
    match call(client, tool, args.clone()).await {
        Err(ServiceError::McpError(error)) => error,
        other => panic!("{tool} {args}: expected a JSON-RPC error, got {other:?}"),
    }
}

/// The result's structuredContent, after checking the text content is the same JSON.
pub(crate) fn structured(result: &rmcp::model::CallToolResult) -> Value {
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent");
    let from_text: Value = serde_json::from_str(text(result)).expect("the text content is JSON");
    assert_eq!(from_text, structured, "text and structuredContent differ");
    structured
}

#[tokio::test]
async fn lists_every_tool_with_an_output_schema_where_it_returns_data() {
    let client = server().await;
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "create_order",
            "echo",
            "error",
            "fails_late",
            "flaky",
            "get_item",
            "list_items",
            "needs_input",
            "orders_count",
            "progress",
            "slow",
            "slow_job"
        ]
    );
    for tool in &tools {
        let has_output_schema = tool.output_schema.is_some();
        // The two that only ever fail have none.
        let only_fails = tool.name == "error" || tool.name == "fails_late";
        assert_eq!(has_output_schema, !only_fails, "{}", tool.name);
    }
    let get_item = tools.iter().find(|t| t.name == "get_item").unwrap();
    let properties = get_item.output_schema.as_ref().unwrap()["properties"].clone();
    assert_eq!(properties["price"]["type"], "number");
    assert_eq!(properties["tags"]["type"], "array");
    assert_eq!(properties["in_stock"]["type"], "boolean");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn create_order_is_a_destructive_write_whose_orders_the_server_counts() {
    let client = server().await;
    let tools = client.list_all_tools().await.unwrap();
    let hints = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let a = tool.annotations.as_ref().expect("annotations");
        (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
    };
    assert_eq!(
        hints("create_order"),
        (Some(false), Some(true), Some(false))
    );
    assert_eq!(hints("orders_count").0, Some(true));
    let count = |result: &rmcp::model::CallToolResult| structured(result)["count"].clone();
    assert_eq!(count(&call_ok(&client, "orders_count", json!({})).await), 0);
    // The same arguments twice: two orders.
    for expected in [1, 2] {
        let order = call_ok(
            &client,
            "create_order",
            json!({"item_id": 7, "quantity": 3}),
        )
        .await;
        assert_eq!(
            structured(&order),
            json!({"order_id": expected, "item_id": 7, "quantity": 3, "total": 1662.99})
        );
    }
    assert_eq!(count(&call_ok(&client, "orders_count", json!({})).await), 2);
    let bad = call(
        &client,
        "create_order",
        json!({"item_id": 7, "quantity": 0}),
    )
    .await
    .unwrap();
    assert!(is_error(&bad));
    assert!(text(&bad).contains("`quantity`"), "{}", text(&bad));
    assert_eq!(count(&call_ok(&client, "orders_count", json!({})).await), 2);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn error_answers_with_the_code_of_its_category_or_as_a_tool_error() {
    let client = server().await;
    for category in ErrorCategory::ALL {
        let error = rpc_error(
            &client,
            "error",
            json!({"message": "boom", "category": category.name()}),
        )
        .await;
        assert_eq!(error.code.0, category.code(), "{category:?}");
        assert_eq!(error.message, "boom");
        assert_eq!(error.data, Some(json!({"category": category.name()})));
    }
    let codes: Vec<i32> = ErrorCategory::ALL.iter().map(|c| c.code()).collect();
    assert_eq!(codes, [-32603, -32000, -32001, -32003]);

    let default = rpc_error(&client, "error", json!({})).await;
    assert_eq!(
        (default.code.0, default.message.as_ref()),
        (-32603, "synthetic error")
    );

    let as_tool = call(
        &client,
        "error",
        json!({"as_tool": true, "category": "auth"}),
    )
    .await
    .unwrap();
    assert!(is_error(&as_tool));
    assert_eq!(text(&as_tool), "synthetic error");

    let bad = call(&client, "error", json!({"category": "network"}))
        .await
        .unwrap();
    assert!(is_error(&bad));
    assert_eq!(
        text(&bad),
        "invalid arguments: `category` must be one of protocol, tool, timeout, auth, got \"network\""
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn data_tools_return_exact_structured_results() {
    let client = server().await;
    let echo = call_ok(&client, "echo", json!({"text": "héllo ✓ \"q\""})).await;
    assert_eq!(
        structured(&echo),
        json!({"text": "héllo ✓ \"q\"", "length": 11})
    );
    assert_eq!(text(&echo), r#"{"text":"héllo ✓ \"q\"","length":11}"#);

    let item = call_ok(&client, "get_item", json!({"id": 7})).await;
    assert_eq!(
        text(&item),
        r#"{"id":7,"name":"Smart Widget 7","price":554.33,"tags":["tools","office"],"in_stock":true,"dimensions":{"width_cm":17.5,"height_cm":12.0}}"#
    );
    structured(&item);

    let list = call_ok(&client, "list_items", json!({"count": 1000})).await;
    let list = structured(&list);
    assert_eq!(list["count"], 1000);
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1000);
    assert_eq!(items[6]["name"], "Smart Widget 7");
    assert_eq!(items[999]["id"], 1000);
    let default = call_ok(&client, "list_items", json!({})).await;
    assert_eq!(structured(&default)["items"].as_array().unwrap().len(), 10);

    for (tool, args, message) in [
        (
            "get_item",
            json!({"id": 0}),
            "`id` must be between 1 and 1000000, got 0",
        ),
        (
            "get_item",
            json!({"id": "7"}),
            "`id` must be a whole number, got \"7\"",
        ),
        ("get_item", json!({}), "`id` is required"),
        (
            "list_items",
            json!({"count": 1001}),
            "`count` must be between 0 and 1000, got 1001",
        ),
        (
            "echo",
            json!({"text": "x", "txt": "y"}),
            "unknown argument `txt` (this tool takes: text)",
        ),
    ] {
        let result = call(&client, tool, args.clone()).await.unwrap();
        assert!(is_error(&result), "{tool} {args}");
        assert_eq!(text(&result), format!("invalid arguments: {message}"));
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn slow_sleeps_then_answers() {
    let client = server().await;
    let started = Instant::now();
    let slow = call_ok(&client, "slow", json!({"milliseconds": 120})).await;
    assert!(started.elapsed() >= Duration::from_millis(120));
    let answer = structured(&slow);
    assert_eq!(answer["slept_ms"], 120, "{answer}");
    let handled = answer["handled_ms"].as_f64().unwrap();
    assert!(
        handled >= 120.0 && handled <= started.elapsed().as_secs_f64() * 1000.0,
        "{answer}"
    );
    let negative = call(&client, "slow", json!({"milliseconds": -1}))
        .await
        .unwrap();
    assert!(text(&negative).contains("`milliseconds` must be between 0 and"));
    client.cancel().await.unwrap();
}

/// A cancelled `slow` ends at once on the server (which logs the partial duration, and the capped request),
/// and the server keeps answering other calls.
#[tokio::test]
async fn slow_ends_when_the_client_cancels() {
    let (client, stderr) = common::spawn_command_with(&["mcp-test-server"], (), true).await;
    let mut stderr = BufReader::new(stderr.unwrap()).lines();
    let request = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("slow").with_arguments(
            json!({"milliseconds": 120_000})
                .as_object()
                .cloned()
                .unwrap(),
        ),
    ));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cancelled_at = Instant::now();
    handle
        .cancel(Some("test cancels".to_owned()))
        .await
        .unwrap();

    let line = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("slow: cancelled by the client") {
                return line;
            }
        }
        panic!("stderr closed before the server logged the cancellation");
    })
    .await
    .expect("the server logs the cancellation within 5 s");
    // Bounds loose enough for a loaded machine, and far from the 60 s asked for.
    let seen_after = cancelled_at.elapsed();
    assert!(seen_after < Duration::from_secs(2), "{seen_after:?}");
    assert!(line.contains("requested_ms=60000"), "{line}");
    let partial_ms: f64 = line
        .split("partial_ms=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no partial_ms in {line}"));
    // The sleep began when the server read the request, so it ran at most the 100 ms plus scheduling delays.
    assert!((0.0..5000.0).contains(&partial_ms), "{partial_ms}");

    let echo = call_ok(&client, "echo", json!({"text": "still here"})).await;
    assert_eq!(structured(&echo)["text"], "still here");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn log_calls_logs_each_call_to_stderr() {
    let (client, stderr) =
        common::spawn_command_with(&["mcp-test-server", "--log-calls"], (), true).await;
    call_ok(&client, "echo", json!({"text": "logged"})).await;
    let _ = rpc_error(&client, "error", json!({"category": "auth"})).await;
    client.cancel().await.unwrap();
    let mut lines = BufReader::new(stderr.unwrap()).lines();
    let mut calls = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line.contains("tool call") {
            calls.push(line);
        }
    }
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls[0].contains(r#"tool=echo arguments={"text":"logged"} outcome=ok"#),
        "{}",
        calls[0]
    );
    assert!(
        calls[1].contains("outcome=JSON-RPC error -32003: synthetic error"),
        "{}",
        calls[1]
    );
}

/// The outcome of one `flaky` call: the roll and the error message, if it failed.
async fn flaky_outcome(client: &Client, args: Value) -> (f64, Option<String>) {
    match call(client, "flaky", args).await {
        Ok(result) => {
            let value = structured(&result);
            assert_eq!(value["failed"], false);
            (value["roll"].as_f64().unwrap(), None)
        }
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code.0, -32000);
            let data = error.data.unwrap();
            (data["roll"].as_f64().unwrap(), Some(error.message.into()))
        }
        Err(other) => panic!("flaky: {other}"),
    }
}

#[tokio::test]
async fn flaky_gives_the_same_outcome_for_the_same_inputs_across_processes() {
    let (first, second) = tokio::join!(server(), server());
    let mut outcomes = Vec::new();
    for call_id in 0..20 {
        let args = json!({"fail_rate": 0.5, "seed": "fault", "call_id": call_id});
        let a = flaky_outcome(&first, args.clone()).await;
        let b = flaky_outcome(&second, args).await;
        assert_eq!(a, b, "call_id {call_id}");
        outcomes.push(a.1.is_some());
    }
    assert!(
        outcomes.contains(&true) && outcomes.contains(&false),
        "{outcomes:?}"
    );

    // Known pairs (the same as plexara/mcp-test's `flaky` for these inputs).
    let (_, failure) = flaky_outcome(
        &first,
        json!({"fail_rate": 0.5, "seed": "fault", "call_id": KNOWN_FAILING_CALL}),
    )
    .await;
    assert_eq!(failure.as_deref(), Some(KNOWN_FAILURE_MESSAGE));

    let always = flaky_outcome(&first, json!({"fail_rate": 7, "seed": "x"})).await;
    assert!(always.1.unwrap().ends_with("< rate=1.0000)"));
    let never = flaky_outcome(&first, json!({"fail_rate": -1, "seed": "x"})).await;
    assert_eq!(never.1, None);
    let unseeded = flaky_outcome(&first, json!({"fail_rate": 0})).await;
    assert!((0.0..1.0).contains(&unseeded.0));

    let as_tool = call(
        &first,
        "flaky",
        json!({"fail_rate": 1, "seed": "x", "as_tool": true}),
    )
    .await
    .unwrap();
    assert!(is_error(&as_tool));
    assert!(text(&as_tool).starts_with("flaky failure (roll="));
    first.cancel().await.unwrap();
    second.cancel().await.unwrap();
}

const KNOWN_FAILING_CALL: i64 = 0;
const KNOWN_FAILURE_MESSAGE: &str = "flaky failure (roll=0.3193 < rate=0.5000)";

/// Records the progress notifications the server sends.
#[derive(Clone, Default)]
pub(crate) struct ProgressRecorder(pub(crate) Arc<Mutex<Vec<ProgressNotificationParam>>>);

impl ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }
}

#[tokio::test]
async fn progress_notifies_each_step_for_the_progress_token() {
    let recorder = ProgressRecorder::default();
    let (client, _) =
        common::spawn_command_with(&["mcp-test-server"], recorder.clone(), false).await;
    let request = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("progress").with_arguments(
            json!({"steps": 3, "step_ms": 10})
                .as_object()
                .cloned()
                .unwrap(),
        ),
    ));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let token = handle.progress_token.clone();
    let response = handle.await_response().await.unwrap();
    let rmcp::model::ServerResult::CallToolResult(result) = response else {
        panic!("not a tool result: {response:?}");
    };
    assert_eq!(structured(&result), json!({"steps": 3, "notifications": 3}));
    let seen = recorder.0.lock().unwrap().clone();
    let summary: Vec<(f64, Option<f64>, Option<String>)> = seen
        .iter()
        .map(|p| {
            assert_eq!(p.progress_token, token);
            (p.progress, p.total, p.message.clone())
        })
        .collect();
    assert_eq!(
        summary,
        [1.0, 2.0, 3.0].map(|i| (i, Some(3.0), Some(format!("step {i} of 3"))))
    );
    client.cancel().await.unwrap();
}

/// The official Python SDK client sees each tool's outcome as the Rust client does, and its cancellation and
/// progress token reach the server.
#[tokio::test]
async fn python_sdk_client_sees_each_outcome() {
    let test = "mcp_chaos::test_server::python_sdk_client_sees_each_outcome";
    let Some(python) = python_client::python_with_mcp(test) else {
        return;
    };
    let script = json!({
        "server": python_client::fault_server(&["mcp-test-server"]),
        "calls": [
            {"tool": "echo", "arguments": {"text": "héllo ✓"}},
            {"tool": "error", "arguments": {"category": "timeout", "message": "late"}},
            {"tool": "error", "arguments": {"as_tool": true}},
            {"tool": "flaky", "arguments": {"fail_rate": 0.5, "seed": "fault", "call_id": KNOWN_FAILING_CALL}},
            {"tool": "slow", "arguments": {"milliseconds": 30000}, "cancel_after_ms": 100},
            {"tool": "slow", "arguments": {"milliseconds": 30000}, "timeout_s": 0.2},
            {"tool": "progress", "arguments": {"steps": 3, "step_ms": 10}, "progress": true},
            {"tool": "progress", "arguments": {"steps": 2, "step_ms": 10}},
            {"tool": "get_item", "arguments": {"id": 0}},
            {"method": "tools/list"}
        ]
    });
    let run = python_client::run_script(&python, &script).await;
    assert_eq!(run.server_info["name"], "fault-mcp-test-server");
    let [
        echo,
        late,
        as_tool,
        flaky,
        cancelled,
        timed_out,
        progress,
        silent,
        bad,
        listed,
    ] = <[python_client::CallSeen; 10]>::try_from(run.calls).unwrap();

    assert_eq!(echo.outcome, "result");
    assert_eq!(
        echo.structured_content,
        Some(json!({"text": "héllo ✓", "length": 7}))
    );
    assert_eq!(echo.text(), Some(r#"{"text":"héllo ✓","length":7}"#));

    assert_eq!(late.outcome, "error");
    let error = late.error.unwrap();
    assert_eq!((error.code, error.message.as_str()), (-32001, "late"));
    assert_eq!(error.data, Some(json!({"category": "timeout"})));

    assert_eq!(
        (as_tool.outcome.as_str(), as_tool.is_error),
        ("result", Some(true))
    );
    assert_eq!(as_tool.text(), Some("synthetic error"));

    let error = flaky.error.unwrap();
    assert_eq!(
        (error.code, error.message.as_str()),
        (-32000, KNOWN_FAILURE_MESSAGE)
    );

    assert_eq!(cancelled.outcome, "cancelled");
    assert!(cancelled.wall_ms < 2000.0, "{}", cancelled.wall_ms);
    assert_eq!(timed_out.outcome, "timeout");
    assert!(timed_out.wall_ms < 2000.0, "{}", timed_out.wall_ms);
    let server_cancels = run.stderr.matches("slow: cancelled by the client").count();
    assert_eq!(server_cancels, 2, "{}", run.stderr);

    assert_eq!(
        progress.structured_content,
        Some(json!({"steps": 3, "notifications": 3}))
    );
    let steps: Vec<f64> = progress
        .progress
        .unwrap()
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(steps, [1.0, 2.0, 3.0]);
    assert_eq!(
        silent.structured_content,
        Some(json!({"steps": 2, "notifications": 0}))
    );

    assert_eq!(bad.is_error, Some(true));
    assert_eq!(
        bad.text(),
        Some("invalid arguments: `id` must be between 1 and 1000000, got 0")
    );
    assert_eq!(listed.tools.unwrap().len(), 12);
    let progress_notifications = run
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .count();
    assert_eq!(progress_notifications, 3);
    assert!(
        run.stream_exceptions.is_empty(),
        "{:?}",
        run.stream_exceptions
    );
}
