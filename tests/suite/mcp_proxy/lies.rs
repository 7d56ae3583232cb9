//! The faults that lie (`stale`, `swap_fields`, `plausible_empty`, `numeric_drift`): a wrong answer that the
//! official MCP Python SDK accepts (it validates `structuredContent` against the tool's `outputSchema`, and
//! raises when it does not match), and the same lies for the same (seed, tool, ordinal) under concurrency.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::{
    mcp_proxy::faults::{proxy, wait_events},
    support::{common, python_client},
};

#[tokio::test]
async fn each_lie_passes_the_python_sdks_output_schema_validation() {
    let test = "mcp_proxy::lies::each_lie_passes_the_python_sdks_output_schema_validation";
    let Some(python) = python_client::python_with_mcp(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "seed: 3
faults:
  - type: stale
    tools: [echo]
  - type: swap_fields
    tools: [create_order]
  - type: plausible_empty
    tools: [list_items]
  - type: numeric_drift
    tools: [get_item]
    min_drift: 0.2
",
    )
    .unwrap();
    let script = json!({
        "server": python_client::fault_server(&[
            "mcp-proxy", "--plan", plan.to_str().unwrap(), "--", common::fault_bin(), "mcp-test-server",
        ]),
        "calls": [
            {"tool": "echo", "arguments": {"text": "first"}},
            {"tool": "echo", "arguments": {"text": "second"}},
            {"tool": "create_order", "arguments": {"item_id": 7, "quantity": 2}},
            {"tool": "list_items", "arguments": {"count": 3}},
            {"tool": "get_item", "arguments": {"id": 7}},
        ]
    });
    let sandbox = common::Sandbox::new("python client → fault mcp-proxy (lies)");
    let run = python_client::run_script_in(&python, &script, &sandbox).await;
    for call in &run.calls {
        assert_eq!(call.outcome, "result", "the SDK refused a lie: {call:?}");
        assert_ne!(call.is_error, Some(true), "{call:?}");
    }
    let structured = |i: usize| run.calls[i].structured_content.clone().unwrap();
    // stale: the second echo gets the first one's answer.
    assert_eq!(structured(1), json!({"text": "first", "length": 5}));
    // swap_fields: the same three integers, two of them exchanged.
    let order = structured(2);
    let truth = json!({"order_id": 1, "item_id": 7, "quantity": 2});
    assert_ne!(order["total"], Value::Null);
    let mut values: Vec<u64> = ["order_id", "item_id", "quantity"]
        .iter()
        .map(|k| order[k].as_u64().unwrap())
        .collect();
    values.sort_unstable();
    assert_eq!(values, [1, 2, 7], "{order}");
    assert!(
        ["order_id", "item_id", "quantity"]
            .iter()
            .filter(|k| order[**k] != truth[**k])
            .count()
            == 2,
        "{order}"
    );
    // plausible_empty: no items, the count as asked.
    assert_eq!(structured(3), json!({"items": [], "count": 3}));
    // numeric_drift: item 7's numbers, each off by the same factor.
    let item = structured(4);
    let factor = item["dimensions"]["width_cm"].as_f64().unwrap() / 17.5;
    assert!(
        (factor - 1.0).abs() >= 0.2 - 1e-9 && (factor - 1.0).abs() <= 0.5 + 1e-9,
        "{item}"
    );
    assert_eq!(item["id"], json!((7.0 * factor).round() as u64), "{item}");
    assert_eq!(item["name"], "Smart Widget 7");
}

const PLAN: &str = "seed: 42
faults:
  - type: stale
    tools: [echo]
    probability: 0.5
  - type: swap_fields
    tools: [get_item]
    probability: 0.5
  - type: plausible_empty
    tools: [list_items]
    probability: 0.5
  - type: numeric_drift
    tools: [flaky]
    probability: 0.5
";

/// 8 callers, 25 rounds of four tools each, with the same arguments every time: the decisions by
/// (tool, ordinal) from the events file, and every result each tool gave, sorted.
async fn run() -> (
    BTreeMap<(String, u64), Value>,
    BTreeMap<String, Vec<String>>,
) {
    let p = proxy(PLAN).await;
    let calls = [
        ("echo", json!({"text": "same"})),
        ("get_item", json!({"id": 7})),
        ("list_items", json!({"count": 2})),
        (
            "flaky",
            json!({"fail_rate": 0.0, "seed": "lies", "call_id": 1}),
        ),
    ];
    let callers = (0..8).map(|_| {
        let client = &p.client;
        let calls = &calls;
        async move {
            let mut seen = Vec::new();
            for _ in 0..25 {
                for (tool, args) in calls {
                    let result = common::call(client, tool, args.clone()).await.unwrap();
                    let structured = result.structured_content.clone().unwrap();
                    seen.push((tool.to_string(), structured.to_string()));
                }
            }
            seen
        }
    });
    let mut results: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (tool, structured) in futures::future::join_all(callers)
        .await
        .into_iter()
        .flatten()
    {
        results.entry(tool).or_default().push(structured);
    }
    results.values_mut().for_each(|v| v.sort());
    let logged = wait_events(&p.events, 800).await;
    assert_eq!(logged.len(), 800);
    let decisions = logged
        .into_iter()
        .map(|e| {
            (
                (
                    e["tool"].as_str().unwrap().to_owned(),
                    e["ordinal"].as_u64().unwrap(),
                ),
                json!({"fault": e["fault"]["index"], "decisions": e["decisions"]}),
            )
        })
        .collect();
    (decisions, results)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lies_are_the_same_for_the_same_seed_under_concurrency() {
    let (first_decisions, first_results) = run().await;
    let (second_decisions, second_results) = run().await;
    assert_eq!(first_decisions, second_decisions);
    let fired = first_decisions
        .values()
        .filter(|d| !d["fault"].is_null())
        .count();
    assert!(fired > 300 && fired < 500, "{fired} of 800 calls lied");
    // Same arguments every call: what a tool answered differs only by the lies, which are the same.
    for tool in ["get_item", "list_items", "flaky"] {
        assert_eq!(first_results[tool], second_results[tool], "{tool}");
        let distinct: std::collections::BTreeSet<&String> = first_results[tool].iter().collect();
        assert!(distinct.len() >= 2, "{tool}: no lie told: {distinct:?}");
    }
}
