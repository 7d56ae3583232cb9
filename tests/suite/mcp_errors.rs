//! Errors a client can act on: every missing required field named at once, and `arguments` that is not an
//! object answered with what is expected, through rmcp's own client.

use crate::common;

use rmcp::model::{ClientRequest, CustomRequest};
use serde_json::json;

#[tokio::test]
async fn every_missing_required_field_is_named_in_one_message() {
    let client = common::spawn().await;
    for (tool, args, expected) in [
        (
            "fault_run_latency_impact_scenario",
            json!({}),
            "missing required fields: url, latency",
        ),
        (
            "fault_run_mcp_chaos_scenario",
            json!({}),
            "missing required fields: server, calls",
        ),
        (
            "fault_extract_code_block",
            json!({"func": null}),
            "missing required fields: file, func",
        ),
    ] {
        let result = common::call(&client, tool, args).await.expect(tool);
        assert!(
            common::is_error(&result),
            "{tool}: {}",
            common::text(&result)
        );
        assert_eq!(common::text(&result), expected, "{tool}");
    }
    client.cancel().await.expect("clean shutdown");
}

#[tokio::test]
async fn arguments_that_is_not_an_object_is_named_with_what_is_expected() {
    let client = common::spawn().await;
    for (arguments, kind) in [
        (json!(5), "a number"),
        (json!("file.py"), "a string"),
        (json!(["/a.py"]), "an array"),
    ] {
        let request = CustomRequest::new(
            "tools/call",
            Some(json!({"name": "fault_list_function_names", "arguments": arguments})),
        );
        let error = client
            .send_request(ClientRequest::CustomRequest(request))
            .await
            .expect_err("non-object arguments are refused");
        let message = error.to_string();
        assert!(
            message.contains("arguments: expected an object") && message.contains(kind),
            "{message}"
        );
    }
    // The server still serves.
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(!tools.is_empty());
    client.cancel().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_value_of_the_wrong_type_or_length_is_named_with_what_is_accepted() {
    let client = common::spawn().await;
    let file = common::code_fixture("sample.py");
    for (tool, args, expected) in [
        (
            "fault_list_function_names",
            json!({"file": {"path": "/a.py"}}),
            "file: expected string, got an object",
        ),
        (
            "fault_extract_code_block",
            json!({"file": file, "func": "f".repeat(1_000_001)}),
            "func: 1000001 characters; accepted: at most 1000",
        ),
        (
            "fault_score_performance",
            json!({"snippet": "x".repeat(200_001)}),
            "snippet: 200001 characters; accepted: at most 200000",
        ),
    ] {
        let started = std::time::Instant::now();
        let result = common::call(&client, tool, args).await.expect(tool);
        assert!(
            common::is_error(&result),
            "{tool}: {}",
            common::text(&result)
        );
        assert_eq!(common::text(&result), expected, "{tool}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "{tool}: slow refusal"
        );
    }
    client.cancel().await.expect("clean shutdown");
}
