//! `fault mcp-proxy` seen by the official MCP Python SDK's client (tests/suite/mcp_python/client.py):
//! the proxy's faults arrive as that client reports them.

use serde_json::{Value, json};

use crate::{common, mcp_proxy::wait_events, python_client};

#[tokio::test]
async fn the_python_sdk_sees_each_fault() {
    let test = "the_python_sdk_sees_each_fault";
    let Some(python) = python_client::python_with_mcp(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:
  - type: latency
    tools: [echo]
    ms: 150
  - type: rate_limit
    tools: [error]
    retry_after_seconds: 9
  - type: hang
    tools: [slow]
  - type: schema_drift
    tools: [get_item]
    rename: {name: title}
  - type: partial_result
    tools: [list_items]
",
    )
    .unwrap();
    let events = dir.path().join("events.jsonl");
    let script = json!({
        "server": python_client::fault_server(&[
            "mcp-proxy", "--plan", plan.to_str().unwrap(), "--events", events.to_str().unwrap(),
            "--", common::fault_bin(), "mcp-test-server",
        ]),
        "calls": [
            {"tool": "echo", "arguments": {"text": "a"}},
            {"tool": "error", "arguments": {"message": "x"}},
            {"tool": "slow", "arguments": {"milliseconds": 20000}, "cancel_after_ms": 300},
            {"tool": "get_item", "arguments": {"id": 4}},
            {"tool": "list_items", "arguments": {"count": 4}},
        ]
    });
    let run = python_client::run_script(&python, &script).await;
    let calls = &run.calls;
    assert_eq!(calls[0].outcome, "result");
    assert!(
        calls[0].wall_ms >= 150.0,
        "latency: {} ms",
        calls[0].wall_ms
    );
    let error = calls[1].error.as_ref().expect("a JSON-RPC error");
    assert_eq!(
        (error.code, error.message.as_str()),
        (-32000, "Rate limit exceeded, retry after 9s")
    );
    assert_eq!(error.data, Some(json!({"retryAfterSeconds": 9})));
    assert_eq!(calls[2].outcome, "cancelled");
    // The drifted item no longer matches get_item's outputSchema: the SDK says so.
    assert_eq!(calls[3].outcome, "exception", "{:?}", calls[3]);
    let items = calls[4].structured_content.as_ref().unwrap()["items"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(items, 2);
    let logged = wait_events(&events, 5).await;
    let hung: &Value = logged.iter().find(|e| e["tool"] == "slow").unwrap();
    assert_eq!(hung["cancel"]["ended_injected_wait"], true);
    assert!(hung["cancel"]["released_ms"].as_f64().unwrap() < 50.0);
}
