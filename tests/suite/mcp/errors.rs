//! Errors a client can act on: every missing required field named at once, and `arguments` that is not an
//! object answered with what is expected, through rmcp's own client.

use crate::support::common;

use rmcp::model::{ClientRequest, CustomRequest};
use serde_json::json;

#[tokio::test]
async fn every_missing_required_field_is_named_in_one_message() {
    let client = common::spawn().await;
    for (tool, args, expected) in [
        (
            // `url` is not required by the schema: `requests` may give the traffic instead.
            "fault_run_latency_impact_scenario",
            json!({}),
            "missing required field: latency",
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

/// `name` with one letter left out, as a slip of the fingers: "deviation" → "deviaton".
fn misspelled(name: &str) -> String {
    let mut letters: Vec<char> = name.chars().collect();
    letters.remove(letters.len().saturating_sub(2));
    letters.into_iter().collect()
}

#[tokio::test]
async fn every_tool_refuses_a_misspelled_field_by_name_with_the_closest_declared_one() {
    let client = common::spawn().await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let mut tried = 0;
    let mut failures = Vec::new();
    for tool in &tools {
        let schema = &tool.input_schema;
        assert_eq!(
            schema.get("additionalProperties"),
            Some(&json!(false)),
            "{}: the schema says a field it does not declare is refused",
            tool.name
        );
        let properties = schema["properties"].as_object().expect("properties");
        for field in properties.keys() {
            let typo = misspelled(field);
            if properties.contains_key(&typo) {
                continue;
            }
            tried += 1;
            let result = common::call(&client, &tool.name, json!({ typo.clone(): "x" }))
                .await
                .expect("a tool result");
            let text = common::text(&result);
            let expected = format!("unknown field '{typo}'; did you mean '{field}'? (it takes: ");
            if !(common::is_error(&result) && text.starts_with(&expected)) {
                failures.push(format!("{} {typo}: {text}", tool.name));
            }
        }
    }
    assert!(tried > 150, "{tried} fields tried");
    assert!(failures.is_empty(), "{failures:#?}");
    client.cancel().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_field_nobody_declared_is_refused_at_any_depth_and_nothing_runs() {
    let client = common::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    // A model's typos in a latency scenario: refused before anything starts (no proxy, no report page).
    let result = common::call(
        &client,
        "fault_run_latency_impact_scenario",
        json!({"url": "http://127.0.0.1:9/", "duration": "1s", "latency": 50, "deviaton": 50,
               "durration": "30s", "report_path": page.to_string_lossy()}),
    )
    .await
    .unwrap();
    assert!(common::is_error(&result));
    assert!(
        common::text(&result).starts_with(
            "unknown field 'deviaton'; did you mean 'deviation'? (it takes: url, method, body, "
        ),
        "{}",
        common::text(&result)
    );
    assert!(!page.exists(), "nothing ran: no report page was created");
    for (tool, args, expected) in [
        (
            "fault_run_latency_impact_scenario",
            json!({"url": "http://127.0.0.1:9/", "latency": 50,
                   "slos": [{"objective": 99, "threshold_ms": 350}, {"objectiv": 95, "threshold_ms": 200}]}),
            "slos[1]: unknown field 'objectiv'; did you mean 'objective'? (it takes: objective, threshold_ms, \
             request)",
        ),
        (
            "fault_run_mcp_chaos_scenario",
            json!({"server": {"comand": "python"}, "calls": [{"tool": "echo"}]}),
            "server: unknown field 'comand'; did you mean 'command'?",
        ),
        (
            "fault_run_mcp_chaos_scenario",
            json!({"server": {"command": "python"}, "calls": [{"tool": "echo", "argumnts": {}}]}),
            "calls[0]: unknown field 'argumnts'; did you mean 'arguments'?",
        ),
        (
            "fault_run_mcp_chaos_scenario",
            json!({"server": {"command": "python"}, "calls": [{"tool": "echo"}],
                   "client": {"timeout": 5}}),
            "client: unknown field 'timeout'; did you mean 'timeout_ms'?",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": "http://127.0.0.1:9/", "latency": 50, "schedule": "start:1s"}),
            "unknown field 'schedule'; did you mean 'sched'? (it takes: ",
        ),
        (
            // The older name of a field and the field itself, both given.
            "fault_run_mcp_chaos_scenario",
            json!({"server": {"command": "python"}, "calls": [{"tool": "echo"}],
                   "duration": "1s", "rps": 5, "rate": 5}),
            "rate: is the older name of `rps`, which is given too: give one of the two",
        ),
    ] {
        let result = common::call(&client, tool, args).await.unwrap();
        let text = common::text(&result);
        assert!(common::is_error(&result), "{tool}: {text}");
        assert!(text.starts_with(expected), "{tool}: {text}");
    }
    // The headers' names are the caller's own, not fields.
    let result = common::call(
        &client,
        "fault_run_latency_impact_scenario",
        json!({"url": "http://127.0.0.1:9/", "latency": 50, "headers": {"X-Anything": "1"}, "rps": 0}),
    )
    .await
    .unwrap();
    assert!(
        common::text(&result).starts_with("rps: 0 is out of range"),
        "{}",
        common::text(&result)
    );
    // The server still serves.
    common::call_ok(
        &client,
        "fault_list_function_names",
        json!({"file": common::code_fixture("sample.py")}),
    )
    .await;
    client.cancel().await.expect("clean shutdown");
}

#[tokio::test]
async fn seeds_are_exact_over_u64_and_anything_else_is_refused_by_name() {
    let client = common::spawn().await;
    let two_to_the_64: serde_json::Value = serde_json::from_str("18446744073709551616").unwrap();
    // An accepted seed lets the call reach its next field, whose refusal stops it before anything runs.
    let scenario = |seed: serde_json::Value| json!({"url": "http://127.0.0.1:9/", "latency": 50, "seed": seed, "rps": 0});
    for accepted in [
        json!(u64::MAX),
        json!("18446744073709551615"),
        json!(9_007_199_254_740_993u64),
    ] {
        let result = common::call(
            &client,
            "fault_run_latency_impact_scenario",
            scenario(accepted.clone()),
        )
        .await
        .unwrap();
        assert!(
            common::text(&result).starts_with("rps: "),
            "seed {accepted}: {}",
            common::text(&result)
        );
    }
    for (refused, expected) in [
        (
            json!(1.5),
            "seed: 1.5 is not a seed; accepted: a whole number written in digits",
        ),
        (
            json!(-1),
            "seed: -1 is not a seed; accepted: a whole number from 0 to 18446744073709551615",
        ),
        (
            two_to_the_64,
            "seed: 1.8446744073709552e+19 is not a seed; accepted: a whole number from 0 to",
        ),
        (
            json!("18446744073709551616"),
            "seed: '18446744073709551616' is not a seed; accepted: a whole number from 0",
        ),
        (json!("12abc"), "seed: '12abc' is not a seed"),
    ] {
        for tool in [
            "fault_run_latency_impact_scenario",
            "fault_run_mcp_chaos_scenario",
        ] {
            let args = match tool {
                "fault_run_mcp_chaos_scenario" => json!({"server": {"command": "python"},
                    "calls": [{"tool": "echo"}], "seed": refused}),
                _ => scenario(refused.clone()),
            };
            let result = common::call(&client, tool, args).await.unwrap();
            let text = common::text(&result);
            assert!(common::is_error(&result), "{tool}: {text}");
            assert!(text.starts_with(expected), "{tool} {refused}: {text}");
        }
    }
    client.cancel().await.expect("clean shutdown");
}
