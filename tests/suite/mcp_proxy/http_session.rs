//! `fault mcp-proxy --upstream URL --listen ADDR`: what crosses requests of one Streamable HTTP session. A
//! `notifications/cancelled` POSTed by the client ends the wait the proxy injected into the call it names (in
//! another POST); a `drop_tool` fault's `notifications/tools/list_changed` reaches the client. Real parts: a
//! FastMCP server upstream, rmcp's and the official Python SDK's Streamable HTTP clients.

use std::time::{Duration, Instant};

use rmcp::{
    ServiceExt,
    model::{CallToolRequestParams, ClientRequest, Request},
    service::PeerRequestOptions,
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};

use crate::{
    mcp_proxy::faults::{events, wait_events},
    mcp_proxy::http::{fastmcp_upstream, http_proxy, python, run_python_client},
    support::common,
};

fn echo(text: &str) -> CallToolRequestParams {
    CallToolRequestParams::new("echo")
        .with_arguments(json!({"text": text}).as_object().unwrap().clone())
}

/// A plan file in `dir`.
fn plan(dir: &tempfile::TempDir, yaml: &str) -> String {
    let path = dir.path().join("plan.yaml");
    std::fs::write(&path, yaml).unwrap();
    path.to_str().unwrap().to_owned()
}

#[tokio::test]
async fn rmcp_cancelling_a_hung_call_over_http_releases_it() {
    let test = "rmcp_cancelling_a_hung_call_over_http_releases_it";
    let Some(python) = python(test) else { return };
    let upstream = fastmcp_upstream(&python).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(
        &dir,
        "faults:\n  - type: hang\n    tools: [echo]\n    on_call: 2\n",
    );
    let events_path = dir.path().join("events.jsonl");
    let proxy = http_proxy(
        &upstream.url,
        &["--plan", &plan, "--events", events_path.to_str().unwrap()],
    )
    .await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client =
        ().serve(StreamableHttpClientTransport::from_uri(proxy.url.as_str()))
            .await
            .unwrap();
    let first = client.call_tool(echo("a")).await.unwrap();
    assert_eq!(common::text(&first), "a");
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(Request::new(echo("b"))),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        events(&events_path).len(),
        1,
        "the hung call ended before the cancel"
    );
    let sent = Instant::now();
    handle
        .cancel(Some("the client gave up".into()))
        .await
        .unwrap();
    // The cancel travels in its own POST of the session.
    let logged = wait_events(&events_path, 2).await;
    let seen = sent.elapsed();
    assert_eq!(
        logged.len(),
        2,
        "no event for the cancelled call: {logged:?}"
    );
    let event = &logged[1];
    assert_eq!(event["fault"]["type"], "hang");
    assert_eq!(event["client"]["kind"], "none");
    assert_eq!(event["cancel"]["ended_injected_wait"], true, "{event}");
    let after_ms = event["cancel"]["after_ms"].as_f64().unwrap();
    let released_ms = event["cancel"]["released_ms"].as_f64().unwrap();
    assert!(after_ms >= 250.0, "{event}");
    assert!(
        released_ms < 50.0,
        "released {released_ms} ms after the cancel"
    );
    assert!(
        seen < Duration::from_secs(2),
        "the event came {seen:?} after the cancel"
    );
    // The session goes on.
    let started = Instant::now();
    let next = client.call_tool(echo("c")).await.unwrap();
    assert_eq!(common::text(&next), "c");
    assert!(started.elapsed() < Duration::from_secs(2));
    eprintln!(
        "HTTP hang release: cancel arrived {after_ms} ms into the call, released {released_ms} ms after it; event seen by the test {:.1} ms after the client sent the cancel",
        seen.as_secs_f64() * 1000.0
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_python_sdks_timeout_cancel_ends_an_injected_latency_over_http() {
    let test = "the_python_sdks_timeout_cancel_ends_an_injected_latency_over_http";
    let Some(python) = python(test) else { return };
    let upstream = fastmcp_upstream(&python).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(
        &dir,
        "faults:\n  - type: latency\n    tools: [echo]\n    ms: 20000\n    on_call: 2\n",
    );
    let events_path = dir.path().join("events.jsonl");
    let proxy = http_proxy(
        &upstream.url,
        &["--plan", &plan, "--events", events_path.to_str().unwrap()],
    )
    .await;
    let started = Instant::now();
    let run = run_python_client(
        &python,
        json!({
            "url": proxy.url,
            "calls": [
                {"tool": "echo", "arguments": {"text": "a"}},
                {"tool": "echo", "arguments": {"text": "b"}, "timeout_s": 0.5},
                {"tool": "echo", "arguments": {"text": "c"}},
            ],
        }),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(15));
    let calls = run["calls"].as_array().unwrap();
    assert_eq!(calls[0]["text"], "a");
    assert_eq!(calls[1]["outcome"], "error", "{}", calls[1]);
    assert_eq!(calls[1]["error"]["code"], -32001);
    assert_eq!(calls[2]["text"], "c");
    assert_eq!(calls[1]["session"], calls[2]["session"]);
    // The SDK gave up after its read timeout and said so in a POST of its own, in the same session.
    let http = run["http"].as_array().unwrap();
    let cancel = http
        .iter()
        .find(|e| e["rpc"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no notifications/cancelled POST: {http:?}"));
    assert_eq!(cancel["status"], 202);
    assert_eq!(cancel["session"], calls[1]["session"]);
    // The SDK keeps the abandoned call's POST open (below the 2026 protocol, the notification is the signal,
    // not a disconnect): the notification alone released the call, before the next call ran.
    let logged = wait_events(&events_path, 3).await;
    let ordinals: Vec<&Value> = logged.iter().map(|e| &e["ordinal"]).collect();
    assert_eq!(ordinals, [1, 2, 3], "{logged:?}");
    let event: &Value = &logged[1];
    assert_eq!(event["fault"]["type"], "latency");
    assert_eq!(event["upstream"]["kind"], "result");
    assert_eq!(event["client"]["kind"], "none");
    assert_eq!(event["cancel"]["ended_injected_wait"], true, "{event}");
    let after_ms = event["cancel"]["after_ms"].as_f64().unwrap();
    assert!((400.0..2_000.0).contains(&after_ms), "{event}");
    assert!(
        event["latency_ms"].as_f64().unwrap() < 10_000.0,
        "the latency ran to its end: {event}"
    );
    assert!(event["cancel"]["released_ms"].as_f64().unwrap() < 50.0);
}

const DROP_ECHO_AFTER_ONE_CALL: &str =
    "faults:\n  - type: drop_tool\n    tools: [echo]\n    after_calls: 1\n";

/// The Python SDK keeps the session's GET stream open: the notification arrives there, the SDK's message
/// handler gets it, and the client's new listing lacks the tool.
#[tokio::test]
async fn the_python_sdk_hears_list_changed_on_its_get_stream_and_relists_without_the_tool() {
    let test = "the_python_sdk_hears_list_changed_on_its_get_stream_and_relists_without_the_tool";
    let Some(python) = python(test) else { return };
    let upstream = fastmcp_upstream(&python).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(&dir, DROP_ECHO_AFTER_ONE_CALL);
    let proxy = http_proxy(&upstream.url, &["--plan", &plan]).await;
    let run = run_python_client(
        &python,
        json!({
            "url": proxy.url,
            "calls": [
                {"list": true},
                {"tool": "echo", "arguments": {"text": "a"}},
                {"tool": "echo", "arguments": {"text": "b"}},
                {"await_notification": "notifications/tools/list_changed", "timeout_s": 5},
                {"list": true},
            ],
        }),
    )
    .await;
    let calls = run["calls"].as_array().unwrap();
    let names = |i: usize| -> Vec<&str> {
        calls[i]["listed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect()
    };
    assert!(names(0).contains(&"echo"), "{:?}", names(0));
    assert_eq!(calls[1]["text"], "a");
    assert_eq!(calls[2]["error"]["code"], -32602, "{}", calls[2]);
    assert_eq!(calls[2]["error"]["message"], "Unknown tool: echo");
    assert_eq!(calls[3]["notified"], true, "{run}");
    assert_eq!(names(4), ["count"]);
    assert_eq!(
        run["notifications"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| *n == "notifications/tools/list_changed")
            .count(),
        1
    );
    let http = run["http"].as_array().unwrap();
    assert!(
        http.iter()
            .any(|e| e["method"] == "GET" && e["status"] == 200),
        "the SDK opened no GET stream: {http:?}"
    );
    // It came on the GET stream: the proxy's own answer to the dropped tool's call stayed plain JSON.
    let dropped_call = http.iter().rfind(|e| e["rpc"] == "tools/call").unwrap();
    assert_eq!(dropped_call["content_type"], "application/json", "{http:?}");
}

/// One POST to the proxy; the answer's JSON-RPC messages (from a JSON body or the events of an SSE one).
async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: Value,
) -> (reqwest::Response, String) {
    let mut request = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .json(&body);
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-06-18");
    }
    let response = request.send().await.unwrap();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (response, content_type)
}

async fn messages(response: reqwest::Response, content_type: &str) -> Vec<Value> {
    let text = tokio::time::timeout(Duration::from_secs(10), response.text())
        .await
        .unwrap()
        .unwrap();
    if content_type.starts_with("application/json") {
        return vec![serde_json::from_str(&text).unwrap()];
    }
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            (!data.is_empty() && !data.concat().is_empty())
                .then(|| serde_json::from_str(&data.join("\n")).unwrap())
        })
        .collect()
}

/// A client with no GET stream open gets the notification first on the SSE answer of the call that made the
/// tool disappear; another session's GET stream gets it too.
#[tokio::test]
async fn without_a_get_stream_list_changed_comes_first_on_the_calls_sse_answer_and_other_sessions_hear_it()
 {
    let test = "without_a_get_stream_list_changed_comes_first_on_the_calls_sse_answer_and_other_sessions_hear_it";
    let Some(python) = python(test) else { return };
    let upstream = fastmcp_upstream(&python).await;
    let dir = tempfile::tempdir().unwrap();
    let plan = plan(&dir, DROP_ECHO_AFTER_ONE_CALL);
    let proxy = http_proxy(&upstream.url, &["--plan", &plan]).await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let url = proxy.url.as_str();
    let session = initialize(&client, url).await;
    // Another session, with its GET stream open: its tool list changes too.
    let other = initialize(&client, url).await;
    let mut other_stream = client
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &other)
        .header("mcp-protocol-version", "2025-06-18")
        .timeout(Duration::from_secs(20))
        .send()
        .await
        .unwrap();
    assert_eq!(other_stream.status(), 200);
    let call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "a"}}})
    };
    let (response, content_type) = post(&client, url, Some(&session), call(2)).await;
    let first = messages(response, &content_type).await;
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0]["result"]["content"][0]["text"], "a");
    let (response, content_type) = post(&client, url, Some(&session), call(3)).await;
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    assert_eq!(
        messages(response, &content_type).await,
        [
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "Unknown tool: echo"}}),
        ]
    );
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        let mut seen = String::new();
        while let Some(chunk) = other_stream.chunk().await.unwrap() {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("notifications/tools/list_changed") {
                return seen;
            }
        }
        panic!("the other session's stream ended: {seen}");
    })
    .await
    .expect("no list_changed on the other session's GET stream");
    assert!(heard.contains("event: message\n"), "{heard}");
}

/// A new session by `initialize` and `notifications/initialized`; its id.
async fn initialize(client: &reqwest::Client, url: &str) -> String {
    let (response, content_type) = post(
        client,
        url,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
    )
    .await;
    let session = response
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_owned();
    assert!(messages(response, &content_type).await[0]["result"].is_object());
    let (response, _) = post(
        client,
        url,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(response.status(), 202);
    session
}

/// A client that gives up on a call whose answer a `latency` fault holds, by closing its request (no
/// `notifications/cancelled`), releases the held answer at once, on both kinds of answer (an SSE stream from
/// the stateful test server, a JSON body from a stateless one): the call's event is written then, with the
/// cancellation and the injected wait it ended, not when the 3 s delay would have run out.
#[tokio::test]
async fn closing_the_request_releases_an_injected_latency_over_http() {
    for stateless in [false, true] {
        let extra: &[&str] = if stateless { &["--stateless"] } else { &[] };
        let upstream = crate::mcp::http::HttpServer::start(&["mcp-test-server"], extra, &[]).await;
        let dir = tempfile::tempdir().unwrap();
        let plan = plan(
            &dir,
            "faults:\n  - type: latency\n    tools: [echo]\n    ms: 3000\n",
        );
        let events_path = dir.path().join("events.jsonl");
        let proxy = http_proxy(
            upstream.url(),
            &["--plan", &plan, "--events", events_path.to_str().unwrap()],
        )
        .await;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap();
        let url = proxy.url.as_str();
        let session = if stateless {
            None
        } else {
            Some(initialize(&client, url).await)
        };
        let mut call = client
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-06-18")
            .timeout(Duration::from_millis(300))
            .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                          "params": {"name": "echo", "arguments": {"text": "hi"}}}));
        if let Some(session) = &session {
            call = call.header("mcp-session-id", session);
        }
        let sent = Instant::now();
        // The answer is held for 3 s: the client gives up (its request closes) first.
        let outcome = call.send().await.and_then(|r| r.error_for_status());
        let body = match outcome {
            Ok(response) => response.text().await.map(|_| ()),
            Err(e) => Err(e),
        };
        assert!(body.is_err(), "stateless {stateless}: an answer came");
        let event = wait_events(&events_path, 1).await.remove(0);
        let recorded_after = sent.elapsed();
        assert!(
            recorded_after < Duration::from_millis(2500),
            "stateless {stateless}: the call was held {recorded_after:?} after its request closed: {event}"
        );
        assert_eq!(event["fault"]["type"], "latency", "{event}");
        assert_eq!(event["client"]["kind"], "none", "{event}");
        assert_eq!(event["cancel"]["ended_injected_wait"], true, "{event}");
        let after = event["cancel"]["after_ms"].as_f64().unwrap();
        assert!(
            (250.0..2000.0).contains(&after),
            "stateless {stateless}: {event}"
        );
    }
}
