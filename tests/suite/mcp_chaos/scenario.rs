//! `fault_run_mcp_chaos_scenario` and `fault mcp-proxy --report` through real MCP clients, against
//! `fault mcp-test-server`: each figure on a run whose true value is known by construction, and the report's
//! text agreeing with its structuredContent.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::support::common::{self, Client};

/// The test server, as the tool's `server` input.
fn test_server() -> Value {
    json!({"command": common::fault_bin(), "args": ["mcp-test-server"]})
}

/// Runs the scenario; the report's text and structuredContent.
pub(crate) async fn run(client: &Client, args: Value) -> (String, Value) {
    let result = common::call_ok(client, "fault_run_mcp_chaos_scenario", args).await;
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent");
    (common::text(&result).to_owned(), structured)
}

pub(crate) fn tool<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["run"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == name)
        .unwrap_or_else(|| panic!("no figures for {name}: {report}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_after_three_with_three_retries_recovers_in_exactly_three_calls() {
    let client = common::spawn().await;
    let (text, report) = run(
        &client,
        json!({
            "server": test_server(),
            "plan": {"faults": [{"type": "recover_after", "tools": ["echo"], "failures": 3,
                                 "then": {"type": "error"}}]},
            "calls": [{"tool": "echo", "arguments": {"text": "hi"}}],
            "client": {"retries": 3},
        }),
    )
    .await;
    let echo = tool(&report, "echo");
    assert_eq!(echo["calls"], 4, "{text}");
    assert_eq!(echo["faults_by_type"], json!({"recover_after": 3}));
    assert_eq!(echo["outcomes"]["protocol_error"], 3);
    assert_eq!(echo["outcomes"]["ok"], 1);
    let behaviour = &echo["client"];
    assert_eq!(behaviour["retries"], 3);
    assert_eq!(behaviour["recoveries"], 1);
    assert_eq!(behaviour["unrecovered"], 0);
    assert_eq!(behaviour["recovery_max_calls"], 3);
    assert_eq!(behaviour["recovery_mean_calls"], 3.0);
    assert_eq!(behaviour["runaway"], 1);
    assert_eq!(echo["success_after_retries"], 1.0);
    assert_eq!(echo["availability"], 0.25);
    assert_eq!(report["run"]["tasks"]["blast_radius"], 0.0);
    assert_eq!(report["run"]["tasks"]["success_rate"], 1.0);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_drift_on_every_get_item_makes_its_correctness_zero() {
    let client = common::spawn().await;
    let (text, report) = run(
        &client,
        json!({
            "server": test_server(),
            "plan": "faults:\n  - type: schema_drift\n    tools: [get_item]\n    rename: {name: title}\n",
            "calls": [{"tool": "get_item", "arguments": {"id": 7}},
                      {"tool": "echo", "arguments": {"text": "x"}}],
            "repeat": 5,
        }),
    )
    .await;
    let get_item = tool(&report, "get_item");
    assert_eq!(get_item["calls"], 5, "{text}");
    assert_eq!(get_item["outcomes"]["schema_invalid"], 5);
    assert_eq!(get_item["availability"], 1.0);
    assert_eq!(get_item["correctness"], 0.0);
    assert_eq!(get_item["effective_availability"], 0.0);
    let echo = tool(&report, "echo");
    assert_eq!(echo["correctness"], 1.0);
    assert_eq!(report["run"]["overall"]["correctness"], 0.5);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hang_is_detected_at_the_clients_timeout() {
    let client = common::spawn().await;
    let (text, report) = run(
        &client,
        json!({
            "server": test_server(),
            "plan": {"faults": [{"type": "hang", "tools": ["echo"]}]},
            "calls": [{"tool": "echo", "arguments": {"text": "x"}}],
            "repeat": 3,
            "client": {"timeout_ms": 500},
        }),
    )
    .await;
    let echo = tool(&report, "echo");
    assert_eq!(echo["outcomes"]["timeout"], 3, "{text}");
    let behaviour = &echo["client"];
    assert_eq!(behaviour["cancels"], 3);
    for key in ["detect_mean_ms", "detect_max_ms"] {
        let ms = behaviour[key].as_f64().unwrap();
        assert!((ms - 500.0).abs() <= 50.0, "{key} {ms}");
    }
    assert_eq!(echo["availability"], 0.0);
    client.cancel().await.unwrap();
}

/// The mcp-chaos article's fan-out: 200 tasks of 8 calls, 2% errors, seed 42.
async fn fan_out(client: &Client, retries: u32) -> Value {
    let calls: Vec<Value> = (0..8)
        .map(|i| json!({"tool": "echo", "arguments": {"text": format!("step {i}")}, "task": "fan-out"}))
        .collect();
    let (text, report) = run(
        client,
        json!({
            "server": test_server(),
            "plan": {"seed": 42, "faults": [{"type": "error_injection", "rate": 0.02}]},
            "calls": calls,
            "repeat": 200,
            "concurrency": 8,
            "client": {"retries": retries},
        }),
    )
    .await;
    eprintln!("{text}");
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fan_out_blast_radius_matches_the_model_and_retries_beat_it() {
    let client = common::spawn().await;
    let expected = 1.0 - 0.98f64.powi(8);
    let without = fan_out(&client, 0).await;
    let tasks = &without["run"]["tasks"];
    assert_eq!(tasks["tasks"], 200);
    assert_eq!(tasks["calls_per_task"], 8.0);
    let radius = tasks["blast_radius"].as_f64().unwrap();
    assert!(
        (radius - expected).abs() <= 0.05,
        "blast radius {radius} vs {expected}"
    );
    let with = fan_out(&client, 2).await;
    let radius = with["run"]["tasks"]["blast_radius"].as_f64().unwrap();
    assert!(radius < 0.01, "blast radius with retries {radius}");
    assert!(
        with["run"]["overall"]["client"]["retries"]
            .as_u64()
            .unwrap()
            > 0
    );
    client.cancel().await.unwrap();
}

/// The cells of every markdown table row, keyed by the table's header cells and the row's first cell.
fn tables(text: &str) -> BTreeMap<(String, String), String> {
    let mut cells = BTreeMap::new();
    let mut header: Vec<String> = Vec::new();
    let mut previous_was_table = false;
    for line in text.lines() {
        let is_table = line.starts_with('|');
        if !is_table {
            previous_was_table = false;
            continue;
        }
        let row: Vec<String> = line
            .trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_owned())
            .collect();
        if !previous_was_table {
            header = row;
        } else if !row[0].starts_with('-') {
            // Headers repeat (p50 in three groups): key by position too.
            for (i, value) in row.iter().enumerate().skip(1) {
                let name = format!("{}#{i}", header.get(i).cloned().unwrap_or_default());
                cells.insert((row[0].clone(), name), value.clone());
            }
        }
        previous_was_table = true;
    }
    cells
}

/// Gates as the tool's field over the plan's: the result says FAILED with the gate that broke, PASSED for
/// the one that held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_gate_makes_the_result_say_failed_with_the_gate() {
    let client = common::spawn().await;
    let (text, report) = run(
        &client,
        json!({
            "server": test_server(),
            "plan": {"faults": [{"type": "recover_after", "tools": ["echo"], "failures": 3,
                                 "then": {"type": "error"}}],
                     "gates": {"max_runaways": 5, "duplicate_writes": 3}},
            "calls": [{"tool": "echo", "arguments": {"text": "hi"}}],
            "client": {"retries": 3},
            "gates": {"max_runaways": 0, "max_recovery_ms": 60000},
        }),
    )
    .await;
    assert!(
        text.contains("**Gates: FAILED: max_runaways 1 (echo) (allowed 0)**"),
        "{text}"
    );
    assert!(text.contains("| max_recovery_ms | 60000 ms |"), "{text}");
    let gates: Vec<(String, bool)> = report["gates"]["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["gate"].as_str().unwrap().to_owned(), g["passed"] == true))
        .collect();
    assert_eq!(
        gates,
        [
            ("max_recovery_ms".to_owned(), true),
            ("max_runaways".to_owned(), false),
            ("duplicate_writes".to_owned(), true),
        ]
    );
    // echo is read-only: its retries of calls the server never got are no duplicate writes.
    assert_eq!(report["run"]["judgement"]["duplicate_writes"], 0);
    let refused = common::call(
        &client,
        "fault_run_mcp_chaos_scenario",
        json!({"server": test_server(), "calls": [{"tool": "echo"}], "gates": {"max_runaway": 0}}),
    )
    .await
    .unwrap();
    assert!(common::is_error(&refused));
    assert!(
        common::text(&refused).contains("max_runaway"),
        "{}",
        common::text(&refused)
    );
    client.cancel().await.unwrap();
}

/// `sessions: k` runs the plan k times, each with its own proxy and server: how many sessions handled their
/// failures well, and pass^1 … pass^k.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_of_one_plan_give_pass_k() {
    let client = common::spawn().await;
    let (text, report) = run(
        &client,
        json!({
            "server": test_server(),
            "plan": {"faults": [{"type": "recover_after", "tools": ["echo"], "failures": 3,
                                 "then": {"type": "error"}}]},
            "calls": [{"tool": "echo", "arguments": {"text": "hi"}}],
            "client": {"retries": 3},
            "sessions": 3,
        }),
    )
    .await;
    let sessions = &report["sessions"];
    assert_eq!(sessions["sessions"], 3, "{text}");
    assert_eq!(sessions["handled_well"], 0);
    assert_eq!(
        sessions["pass"],
        json!([{"j": 1, "pass": 0.0}, {"j": 2, "pass": 0.0}, {"j": 3, "pass": 0.0}])
    );
    assert!(
        text.contains("**Sessions**: 0 of 3 handled every failure well"),
        "{text}"
    );
    assert!(
        text.contains("| 3 | mishandled: 1 runaway (echo) |"),
        "{text}"
    );
    client.cancel().await.unwrap();
}

fn shown(value: &Value, decimals: usize) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::Number(n) if n.is_f64() => format!("{:.*}", decimals, n.as_f64().unwrap()),
        other => other.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_text_and_structured_content_agree_on_every_figure() {
    let client = common::spawn().await;
    let (text, report) = run(
        &client,
        json!({
            "server": test_server(),
            "plan": {"seed": 7, "faults": [
                {"type": "error", "tools": ["echo"], "probability": 0.3},
                {"type": "schema_drift", "tools": ["get_item"], "probability": 0.5},
                {"type": "latency", "tools": ["list_items"], "ms": 20},
                {"type": "hang", "tools": ["slow"], "first_n": 1},
            ]},
            "calls": [
                {"tool": "echo", "arguments": {"text": "a"}, "task": "t"},
                {"tool": "get_item", "arguments": {"id": 3}, "task": "t"},
                {"tool": "list_items", "arguments": {"count": 3}, "task": "t"},
                {"tool": "slow", "arguments": {"milliseconds": 1}, "task": "t"},
            ],
            "repeat": 6,
            "concurrency": 2,
            "client": {"timeout_ms": 300, "retries": 1},
            "baseline": true,
        }),
    )
    .await;
    let cells = tables(&text);
    let cell = |row: &str, column: &str| -> String {
        cells
            .iter()
            .find(|((r, c), _)| r == row && c == column)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no cell ({row}, {column}) in\n{text}"))
    };
    let run = &report["run"];
    let mut rows: Vec<&Value> = vec![&run["overall"]];
    rows.extend(run["tools"].as_array().unwrap());
    assert_eq!(rows.len(), 5, "{text}");
    let mut checked = 0;
    for t in rows {
        let name = t["tool"].as_str().unwrap();
        let o = &t["outcomes"];
        let c = &t["client"];
        let faults = t["faults_by_type"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| format!("{k}×{v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let expected = [
            ("Calls#1", shown(&t["calls"], 0)),
            ("Logical calls#2", shown(&t["logical_calls"], 0)),
            (
                "Faults injected#3",
                if faults.is_empty() {
                    "-".into()
                } else {
                    faults
                },
            ),
            ("OK#4", shown(&o["ok"], 0)),
            ("isError#5", shown(&o["tool_error"], 0)),
            ("Protocol error#6", shown(&o["protocol_error"], 0)),
            ("Timeout#7", shown(&o["timeout"], 0)),
            ("Malformed#8", shown(&o["malformed"], 0)),
            ("Schema-invalid#9", shown(&o["schema_invalid"], 0)),
            ("Not started#10", shown(&o["not_started"], 0)),
            ("A#11", shown(&t["availability"], 4)),
            ("C#12", shown(&t["correctness"], 4)),
            ("A×C#13", shown(&t["effective_availability"], 4)),
            (
                "Success after retries#14",
                shown(&t["success_after_retries"], 4),
            ),
            ("All calls#1", shown(&t["latency"]["calls"], 0)),
            ("p50#2", shown(&t["latency"]["p50_ms"], 2)),
            ("p95#3", shown(&t["latency"]["p95_ms"], 2)),
            ("p99#4", shown(&t["latency"]["p99_ms"], 2)),
            ("max#5", shown(&t["latency"]["max_ms"], 2)),
            ("Clean calls#6", shown(&t["latency_clean"]["calls"], 0)),
            ("p50#7", shown(&t["latency_clean"]["p50_ms"], 2)),
            ("p95#8", shown(&t["latency_clean"]["p95_ms"], 2)),
            ("p99#9", shown(&t["latency_clean"]["p99_ms"], 2)),
            ("max#10", shown(&t["latency_clean"]["max_ms"], 2)),
            (
                "Injected calls#11",
                shown(&t["latency_injected"]["calls"], 0),
            ),
            ("p50#12", shown(&t["latency_injected"]["p50_ms"], 2)),
            ("p95#13", shown(&t["latency_injected"]["p95_ms"], 2)),
            ("p99#14", shown(&t["latency_injected"]["p99_ms"], 2)),
            ("max#15", shown(&t["latency_injected"]["max_ms"], 2)),
            ("Scheduled calls#1", shown(&t["queueing"]["calls"], 0)),
            ("Queueing p50#2", shown(&t["queueing"]["p50_ms"], 2)),
            ("Queueing p95#3", shown(&t["queueing"]["p95_ms"], 2)),
            ("Queueing p99#4", shown(&t["queueing"]["p99_ms"], 2)),
            ("Queueing max#5", shown(&t["queueing"]["max_ms"], 2)),
            ("Sent calls#6", shown(&t["service"]["calls"], 0)),
            ("Service p50#7", shown(&t["service"]["p50_ms"], 2)),
            ("Service p95#8", shown(&t["service"]["p95_ms"], 2)),
            ("Service p99#9", shown(&t["service"]["p99_ms"], 2)),
            ("Service max#10", shown(&t["service"]["max_ms"], 2)),
            ("Retries#1", shown(&c["retries"], 0)),
            ("Cancels#2", shown(&c["cancels"], 0)),
            ("Detect mean (ms)#3", shown(&c["detect_mean_ms"], 2)),
            ("Detect max (ms)#4", shown(&c["detect_max_ms"], 2)),
            ("Recoveries#5", shown(&c["recoveries"], 0)),
            ("Unrecovered#6", shown(&c["unrecovered"], 0)),
            ("Recovery mean (ms)#7", shown(&c["recovery_mean_ms"], 2)),
            ("Recovery max (ms)#8", shown(&c["recovery_max_ms"], 2)),
            (
                "Recovery mean (calls)#9",
                shown(&c["recovery_mean_calls"], 2),
            ),
            (
                "Recovery max (calls)#10",
                shown(&c["recovery_max_calls"], 0),
            ),
            ("Runaway#11", shown(&c["runaway"], 0)),
            ("Duplicates#12", shown(&c["duplicates"], 0)),
        ];
        for (column, value) in expected {
            assert_eq!(cell(name, column), value, "{name} {column}\n{text}");
            checked += 1;
        }
    }
    let k = &run["tasks"];
    let tasks_row = shown(&k["tasks"], 0);
    for (column, value) in [
        ("Calls per task#1", shown(&k["calls_per_task"], 2)),
        ("Succeeded#2", shown(&k["succeeded"], 0)),
        ("Failed#3", shown(&k["failed"], 0)),
        ("Met a fault#4", shown(&k["met_fault"], 0)),
        ("Failed after a fault#5", shown(&k["failed_after_fault"], 0)),
        ("Task success rate#6", shown(&k["success_rate"], 4)),
        ("Blast radius#7", shown(&k["blast_radius"], 4)),
    ] {
        assert_eq!(cell(&tasks_row, column), value, "tasks {column}\n{text}");
        checked += 1;
    }
    for row in report["comparison"].as_array().unwrap() {
        let name = row["run"].as_str().unwrap();
        for (column, key, decimals) in [
            ("A#1", "availability", 4),
            ("C#2", "correctness", 4),
            ("A×C#3", "effective_availability", 4),
            ("Task success rate#4", "task_success_rate", 4),
            ("Blast radius#5", "blast_radius", 4),
            ("p50 (ms)#6", "p50_ms", 2),
            ("p95 (ms)#7", "p95_ms", 2),
            ("p99 (ms)#8", "p99_ms", 2),
            ("Retries#9", "retries", 0),
        ] {
            assert_eq!(
                cell(name, column),
                shown(&row[key], decimals),
                "{name} {column}"
            );
            checked += 1;
        }
    }
    assert!(text.contains(&format!("p50 {}", run["sparkline_p50"].as_str().unwrap())));
    let hol = &run["head_of_line"];
    assert!(
        text.contains(&format!(
            "**Head-of-line blocking**: {}",
            hol["verdict"].as_str().unwrap()
        )),
        "{text}"
    );
    for t in hol["tools"].as_array().unwrap() {
        let name = t["tool"].as_str().unwrap();
        for (column, value) in [
            (
                "Behind a slower call, same session#1",
                shown(&t["behind_same_session"]["calls"], 0),
            ),
            ("Same p50#2", shown(&t["behind_same_session"]["p50_ms"], 2)),
            (
                "Behind one on another session only#5",
                shown(&t["behind_other_session"]["calls"], 0),
            ),
            ("Clear#9", shown(&t["clear"]["calls"], 0)),
            ("Clear p99#12", shown(&t["clear"]["p99_ms"], 2)),
            ("Ratio same#13", shown(&t["same_session_ratio"], 4)),
            ("Ratio other#14", shown(&t["other_session_ratio"], 4)),
        ] {
            assert_eq!(cell(name, column), value, "{name} {column}\n{text}");
            checked += 1;
        }
    }
    let judgement = &run["judgement"];
    assert!(
        text.contains(&format!(
            "**Judgement**: {}",
            judgement["verdict"].as_str().unwrap()
        )),
        "{text}"
    );
    for t in judgement["tools"].as_array().unwrap() {
        let name = t["tool"].as_str().unwrap();
        assert!(
            text.contains(t["sentence"].as_str().unwrap()),
            "{name}\n{text}"
        );
        for (column, value) in [
            ("Failures#2", shown(&t["failures"], 0)),
            ("Retried#3", shown(&t["retried"], 0)),
            ("Retry wait mean (ms)#4", shown(&t["retry_wait_mean_ms"], 2)),
            ("Retry wait min (ms)#5", shown(&t["retry_wait_min_ms"], 2)),
            ("Cancelled#6", shown(&t["cancelled"], 0)),
            ("Called another tool#7", shown(&t["called_another_tool"], 0)),
            ("Gave up#8", shown(&t["gave_up"], 0)),
            ("Recovered calls#9", shown(&t["recovered_calls"], 0)),
            ("Unrecovered calls#10", shown(&t["unrecovered_calls"], 0)),
            ("Runaways#11", shown(&t["runaways"], 0)),
            ("Max attempts#12", shown(&t["max_attempts"], 0)),
            ("Duplicate writes#13", shown(&t["duplicate_writes"], 0)),
            ("Harmless retries#14", shown(&t["harmless_retries"], 0)),
            (
                "Retry-After honoured#15",
                format!(
                    "{} of {}",
                    t["retry_after_honoured"], t["retry_after_asked"]
                ),
            ),
        ] {
            assert_eq!(cell(name, column), value, "{name} {column}\n{text}");
            checked += 1;
        }
    }
    assert!(checked > 200, "{checked} figures compared");
    // Something happened on each axis, so the comparison is not of zeros only.
    assert!(run["overall"]["faults_injected"].as_u64().unwrap() > 0);
    assert!(run["overall"]["client"]["retries"].as_u64().unwrap() > 0);
    assert_eq!(tool(&report, "slow")["client"]["cancels"], 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_input_names_the_field_and_a_dead_server_shows_its_stderr() {
    let client = common::spawn().await;
    for (args, field) in [
        (
            json!({"server": test_server()}),
            "missing required field: calls",
        ),
        (
            json!({"server": test_server(), "calls": [{"tool": "echo"}], "client": {"retries": 99}}),
            "client.retries",
        ),
        (
            json!({"server": test_server(), "calls": [{"arguments": {}}]}),
            "calls[0].tool",
        ),
        (
            json!({"server": test_server(), "calls": [{"tool": "echo"}], "plan": {"faults": [{"type": "nope"}]}}),
            "plan",
        ),
        (
            json!({"server": {}, "calls": [{"tool": "echo"}]}),
            "server.command",
        ),
    ] {
        let result = common::call(&client, "fault_run_mcp_chaos_scenario", args)
            .await
            .unwrap();
        assert!(common::is_error(&result));
        let message = common::text(&result);
        assert!(message.starts_with(field), "{field}: {message}");
    }
    let result = common::call(
        &client,
        "fault_run_mcp_chaos_scenario",
        json!({"server": {"command": "sh", "args": ["-c", "echo 'cannot open config.toml' >&2; exit 3"]},
               "calls": [{"tool": "echo"}]}),
    )
    .await
    .unwrap();
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(message.contains("did not start"), "{message}");
    assert!(message.contains("cannot open config.toml"), "{message}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_proxy_writes_its_report_on_sigusr1_and_at_exit() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:\n  - type: schema_drift\n    tools: [get_item]\n    rename: {name: title}\n  - type: error\n    tools: [echo]\n    first_n: 2\n",
    )
    .unwrap();
    let markdown = dir.path().join("report.md");
    let json_report = dir.path().join("report.json");
    let bin = common::fault_bin();
    let args_for = |report: &std::path::Path| {
        vec![
            "mcp-proxy".to_owned(),
            "--plan".to_owned(),
            plan.display().to_string(),
            "--report".to_owned(),
            report.display().to_string(),
            "--".to_owned(),
            bin.to_owned(),
            "mcp-test-server".to_owned(),
        ]
    };
    for report in [&markdown, &json_report] {
        let args = args_for(report);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let client = common::spawn_command(&args).await;
        client.list_all_tools().await.unwrap();
        for _ in 0..3 {
            let _ = common::call(&client, "echo", json!({"text": "same"})).await;
        }
        for id in 1..=2 {
            let _ = common::call(&client, "get_item", json!({"id": id})).await;
        }
        if report == &markdown {
            // SIGUSR1 writes the report while the session runs.
            let pid = std::process::Command::new("pgrep")
                .args(["-f", &report.display().to_string()])
                .output()
                .unwrap();
            let pid = String::from_utf8_lossy(&pid.stdout).trim().to_owned();
            assert!(!pid.is_empty());
            std::process::Command::new("kill")
                .args(["-USR1", &pid])
                .status()
                .unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while !report.exists() {
                assert!(std::time::Instant::now() < deadline, "no report on SIGUSR1");
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
        client.cancel().await.unwrap();
    }
    let text = std::fs::read_to_string(&markdown).unwrap();
    assert!(text.contains("# MCP Chaos Report"), "{text}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_report).unwrap()).unwrap();
    let echo = tool(&report, "echo");
    assert_eq!(echo["calls"], 3);
    assert_eq!(echo["outcomes"]["protocol_error"], 2);
    // Two identical calls followed the first failure: one logical call, retried twice, recovered in 2 calls.
    assert_eq!(echo["logical_calls"], 1);
    assert_eq!(echo["client"]["retries"], 2);
    assert_eq!(echo["client"]["recovery_max_calls"], 2);
    let get_item = tool(&report, "get_item");
    assert_eq!(get_item["correctness"], 0.0);
    assert_eq!(get_item["outcomes"]["schema_invalid"], 2);
}

/// A client that counts progress notifications.
#[derive(Clone, Default)]
struct ProgressCounter(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl rmcp::ClientHandler for ProgressCounter {
    async fn on_progress(
        &self,
        _params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

fn running(marker: &str) -> bool {
    std::process::Command::new("pgrep")
        .args(["-f", marker])
        .output()
        .is_ok_and(|o| !o.stdout.is_empty())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_each_second_and_cancellation_stops_the_server() {
    use rmcp::{
        model::{CallToolRequestParams, ClientRequest, Request},
        service::PeerRequestOptions,
    };
    let counter = ProgressCounter::default();
    let client = common::spawn_handler(common::ServerSpec::default(), counter.clone()).await;
    // The server runs under `sh` whose command line carries a marker, to see it go.
    let marker = format!("mcp-chaos-cancel-{}", std::process::id());
    let args = json!({
        "server": {"command": "sh", "args": ["-c", "\"$0\" mcp-test-server", common::fault_bin(), marker]},
        "plan": {"faults": [{"type": "hang", "tools": ["echo"]}]},
        "calls": [{"tool": "echo", "arguments": {"text": "x"}}],
        "repeat": 20,
        "client": {"timeout_ms": 60000},
    });
    let request = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("fault_run_mcp_chaos_scenario")
            .with_arguments(args.as_object().unwrap().clone()),
    ));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2600)).await;
    assert!(
        counter.0.load(std::sync::atomic::Ordering::Relaxed) >= 2,
        "progress notifications"
    );
    assert!(running(&marker), "the server runs during the scenario");
    handle.cancel(Some("test".into())).await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while running(&marker) {
        assert!(
            std::time::Instant::now() < deadline,
            "server still running after cancel"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_and_rate_schedule_the_calls_on_time() {
    let client = common::spawn().await;
    let (text, report) = run(
        &client,
        json!({
            "server": test_server(),
            "calls": [{"tool": "echo", "arguments": {"text": "a"}},
                      {"tool": "get_item", "arguments": {"id": 2}}],
            "duration": "2s",
            "rate": "10",
            "concurrency": 2,
        }),
    )
    .await;
    let overall = &report["run"]["overall"];
    assert_eq!(overall["logical_calls"], 20, "{text}");
    assert_eq!(tool(&report, "echo")["calls"], 10);
    assert_eq!(overall["effective_availability"], 1.0);
    // Ten calls are due in each of the two seconds (a loaded machine may start the last of a second late).
    let per_second: Vec<u64> = report["run"]["per_second"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["requests"].as_u64().unwrap())
        .collect();
    assert_eq!(per_second.iter().sum::<u64>(), 20);
    assert!(
        per_second.len() >= 2 && per_second[0] >= 8,
        "{per_second:?}"
    );
    assert_eq!(
        report["client"]["schedule"],
        "2 calls cycled at 10 calls/s for 2s"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_proxy_writes_its_report_on_sigterm() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let mut command = common::fault_command(&[
        "mcp-proxy",
        "--report",
        report.to_str().unwrap(),
        "--",
        common::fault_bin(),
        "mcp-test-server",
    ]);
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut proxy = command.spawn().unwrap();
    let mut stdin = proxy.stdin.take().unwrap();
    let mut lines = BufReader::new(proxy.stdout.take().unwrap()).lines();
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}"#,
    ] {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    // The answers to initialize and to the call.
    for _ in 0..2 {
        lines.next_line().await.unwrap().unwrap();
    }
    let pid = proxy.id().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    proxy.wait().await.unwrap();
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(tool(&report, "echo")["outcomes"]["ok"], 1);
}
