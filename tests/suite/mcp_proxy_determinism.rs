//! Decisions under concurrency: 8 callers, 400 calls, seed 42, two runs → the same decision for every
//! (tool, ordinal), read back from the events files.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::mcp_proxy::{proxy, wait_events};

const PLAN: &str = "seed: 42
faults:
  - type: flaky
    tools: [echo]
    fail_rate: 0.3
  - type: latency
    tools: [get_item]
    ms: 2
    jitter_ms: 5
    probability: 0.4
  - type: burst_error
    tools: [list_items]
    rate: 0.2
    burst_len: 4
  - type: timeout
    after_ms: 1
    probability: 0.1
";

/// (tool, ordinal) → (fault fired, every decision's roll).
async fn run() -> BTreeMap<(String, u64), Value> {
    let p = proxy(PLAN).await;
    let tools = ["echo", "get_item", "list_items"];
    let callers = (0..8).map(|caller| {
        let client = &p.client;
        async move {
            for i in 0..50usize {
                let tool = tools[(caller + i) % 3];
                let args = match tool {
                    "echo" => json!({"text": "a"}),
                    "get_item" => json!({"id": 1 + i}),
                    _ => json!({"count": 2}),
                };
                let _ = crate::common::call(client, tool, args).await;
            }
        }
    });
    futures::future::join_all(callers).await;
    let logged = wait_events(&p.events, 400).await;
    assert_eq!(logged.len(), 400);
    logged
        .into_iter()
        .map(|e| {
            let key = (
                e["tool"].as_str().unwrap().to_owned(),
                e["ordinal"].as_u64().unwrap(),
            );
            (
                key,
                json!({"fault": e["fault"]["index"], "decisions": e["decisions"]}),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_same_decision_per_tool_and_ordinal_across_runs() {
    let first = run().await;
    let second = run().await;
    assert_eq!(first.len(), 400);
    assert_eq!(first, second);
    let fired = first.values().filter(|d| !d["fault"].is_null()).count();
    assert!(
        fired > 40 && fired < 300,
        "{fired} of 400 calls had a fault"
    );
}
