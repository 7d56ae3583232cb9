//! Decisions under concurrency: 8 callers, 400 calls, seed 42, two runs → the same decision for every
//! (tool, ordinal), read back from the events files, and the same as the library decides for each tool's
//! calls alone, in ordinal order. The plan uses every counter a decision reads: `max_injections` (per tool),
//! `first_n`, `after_calls`, `on_call`, `recover_after`, the burst chain and the degradation episodes.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::mcp_proxy::faults::{proxy, wait_events};

const PLAN: &str = "seed: 42
faults:
  - type: error
    probability: 0.2
    max_injections: 6
    message: capped
  - type: flaky
    tools: [echo]
    fail_rate: 0.3
    first_n: 100
  - type: latency
    tools: [get_item]
    ms: 2
    jitter_ms: 5
    probability: 0.4
    after_calls: 10
    max_injections: 30
  - type: recover_after
    tools: [list_items]
    failures: 3
    then: {type: error, message: warming up}
  - type: burst_error
    tools: [list_items]
    rate: 0.2
    burst_len: 4
  - type: server_degradation
    tools: [echo, get_item]
    episode_rate: 0.05
    episode_len: 5
  - type: rate_limit
    on_call: 50
  - type: timeout
    after_ms: 1
    probability: 0.1
";

const TOOLS: [&str; 3] = ["echo", "get_item", "list_items"];

/// (tool, ordinal) → (fault applied, every decision with its roll).
async fn run() -> BTreeMap<(String, u64), Value> {
    let p = proxy(PLAN).await;
    let callers = (0..8).map(|caller| {
        let client = &p.client;
        async move {
            for i in 0..50usize {
                let tool = TOOLS[(caller + i) % 3];
                let args = match tool {
                    "echo" => json!({"text": "a"}),
                    "get_item" => json!({"id": 1 + i}),
                    _ => json!({"count": 2}),
                };
                let _ = crate::support::common::call(client, tool, args).await;
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

/// What the library decides for `calls` calls of each tool, one tool after another.
fn predicted(calls: &BTreeMap<(String, u64), Value>) -> BTreeMap<(String, u64), Value> {
    let plan =
        fault::mcp_proxy::plan::Plan::from_value(serde_yaml_ng::from_str(PLAN).unwrap(), PLAN)
            .unwrap();
    let mut decider = fault::mcp_proxy::decide::Decider::new(&plan).unwrap();
    let mut out = BTreeMap::new();
    for tool in TOOLS {
        let n = calls.keys().filter(|(t, _)| t == tool).count() as u64;
        for ordinal in 1..=n {
            let d = decider.decide("tools/call", tool, None);
            assert_eq!(d.ordinal, ordinal);
            out.insert(
                (tool.to_owned(), ordinal),
                json!({"fault": d.fired, "decisions": d.records}),
            );
        }
    }
    out
}

#[tokio::test]
async fn the_same_decision_per_tool_and_ordinal_across_runs() {
    let first = run().await;
    let second = run().await;
    assert_eq!(first.len(), 400);
    assert_eq!(first, second);
    assert_eq!(first, predicted(&first));
    let fired = first.values().filter(|d| !d["fault"].is_null()).count();
    eprintln!(
        "determinism: {fired} of 400 calls had a fault; both runs and the library agree on all 400"
    );
    assert!(
        fired > 40 && fired < 350,
        "{fired} of 400 calls had a fault"
    );
    // max_injections: exactly 6 capped errors per tool, at the ordinals the rolls give.
    for tool in TOOLS {
        let capped: Vec<u64> = first
            .iter()
            .filter(|((t, _), d)| t == tool && d["fault"] == 0)
            .map(|((_, n), _)| *n)
            .collect();
        assert_eq!(capped.len(), 6, "{tool}: {capped:?}");
    }
    // on_call: the 50th call of each tool is rate limited unless an earlier fault took it.
    for tool in TOOLS {
        let fifty = &first[&(tool.to_owned(), 50)];
        assert!(
            fifty["fault"] == 6
                || fifty["decisions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|d| d["fault"] != 6),
            "{tool}: {fifty}"
        );
    }
    // ...and the rate limit did fire: at least one tool's 50th call carries it.
    assert!(
        TOOLS
            .into_iter()
            .any(|tool| first[&(tool.to_owned(), 50)]["fault"] == 6),
        "no tool's 50th call was rate limited"
    );
}
