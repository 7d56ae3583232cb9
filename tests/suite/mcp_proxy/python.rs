//! `fault mcp-proxy` seen by the official MCP Python SDK's client (tests/suite/support/mcp_python/client.py):
//! the proxy's faults arrive as that client reports them.

use serde_json::{Value, json};

use crate::{
    mcp_proxy::faults::wait_events,
    support::{common, python_client},
};

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
    let sandbox = common::Sandbox::new("python client → fault mcp-proxy");
    let run = python_client::run_script_in(&python, &script, &sandbox).await;
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

/// `schema_drift` with `target: list` seen by the Python SDK: the advertised `outputSchema` of `get_item` now
/// requires `title` instead of `name`, so the SDK rejects the server's real (undrifted) result, the way a
/// client would meet a server whose interface changed under it.
#[tokio::test]
async fn the_python_sdk_validates_against_the_drifted_list() {
    let test = "the_python_sdk_validates_against_the_drifted_list";
    let Some(python) = python_client::python_with_mcp(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:\n  - type: schema_drift\n    target: list\n    tools: [get_item]\n    rename: {name: title}\n",
    )
    .unwrap();
    let script = json!({
        "server": python_client::fault_server(&[
            "mcp-proxy", "--plan", plan.to_str().unwrap(), "--", common::fault_bin(), "mcp-test-server",
        ]),
        "calls": [
            {"method": "tools/list"},
            {"tool": "get_item", "arguments": {"id": 4}},
            {"tool": "echo", "arguments": {"text": "a"}},
        ]
    });
    let sandbox = common::Sandbox::new("python client → fault mcp-proxy");
    let run = python_client::run_script_in(&python, &script, &sandbox).await;
    let tools = run.calls[0].tools.as_ref().unwrap();
    let get_item = tools.iter().find(|t| t["name"] == "get_item").unwrap();
    let required = get_item["output_schema"]["required"].as_array().unwrap();
    assert!(required.contains(&json!("title")) && !required.contains(&json!("name")));
    assert_eq!(run.calls[1].outcome, "exception", "{:?}", run.calls[1]);
    let exception = run.calls[1].exception.as_ref().unwrap();
    assert!(exception.message.contains("title"), "{exception:?}");
    assert_eq!(run.calls[2].outcome, "result", "{:?}", run.calls[2]);
}
