//! The refusals of a capacity search that cannot run, each naming its field. The search itself is measured in
//! `tests/measured/capacity.rs`, alone on the machine.

use serde_json::json;

use crate::support::common;

/// A server whose rate cap is 2000 requests per second.
async fn server() -> common::Client {
    common::spawn_with(common::ServerSpec {
        agent_args: &["--max-scenario-rps", "2000"],
        ..Default::default()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_that_cannot_run_is_refused_naming_its_field() {
    let client = server().await;
    let url = "http://127.0.0.1:9/";
    let faults = json!([{"type": "latency", "latency": 10}]);
    for (args, starts) in [
        (
            json!({"max_rps": 2001}),
            "max_rps: 2001 requests per second; accepted: at most 2000",
        ),
        (
            json!({"start_rps": 10, "max_rps": 2000, "step_duration": 30}),
            "step_duration: 30 s per step: the search from 10 to 2000 req/s",
        ),
        (
            json!({"start_rps": 300, "max_rps": 200}),
            "start_rps: 300 is above max_rps",
        ),
        (json!({"step_duration": 0.5}), "step_duration:"),
        (json!({"growth": 1}), "growth:"),
        (json!({"precision": 80}), "precision:"),
        (json!({"error_budget": 120}), "error_budget:"),
        (json!({"duration": "10s"}), "unknown field 'duration'"),
        (
            json!({"faults": [{"type": "latency", "latency": 10, "sched": "start:1s"}]}),
            "faults[0]: unknown field 'sched'",
        ),
    ] {
        let mut call = json!({"url": url, "faults": faults});
        call.as_object_mut()
            .unwrap()
            .extend(args.as_object().unwrap().clone());
        let result = common::call(&client, "fault_run_capacity_scenario", call)
            .await
            .expect("tool call");
        assert!(common::is_error(&result), "{args} was accepted");
        let text = common::text(&result);
        assert!(text.starts_with(starts), "{args}: {text}");
    }
}
