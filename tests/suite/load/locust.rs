//! Locust as the impact scenarios' load engine: a real Locust (PyPI `locust`, found beside
//! `$FAULT_TEST_PYTHON`), its master and workers on 127.0.0.1, driven by the built binary over MCP. The
//! report's counts are Locust's own totals (its `--csv` statistics), its windows, recovery and SLOs fault's.
//! Without Locust the tests are skipped out loud (`pip install locust`), and fail under `FAULT_REQUIRE_ALL=1`.

use crate::support::common::{self, ServerSpec};
use crate::support::optional;
use crate::support::scenario::{self, TIMING};

use std::{collections::HashMap, path::Path};

use serde_json::{Value, json};

/// The `locust` program beside a Python that imports `locust` (`$FAULT_TEST_PYTHON`'s, else `python3`'s).
fn locust_program(test: &str) -> Option<String> {
    let python = match common::python_with(&["locust"]) {
        Ok(python) => python,
        Err(why) => {
            optional::skip(test, &why);
            return None;
        }
    };
    let output = std::process::Command::new(&python)
        .args([
            "-c",
            "import os, sys; print(os.path.join(os.path.dirname(sys.executable), 'locust'))",
        ])
        .output()
        .expect("run python");
    let program = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !Path::new(&program).exists() {
        optional::skip(
            test,
            &format!("{python} imports locust but has no `locust` program beside it"),
        );
        return None;
    }
    Some(program)
}

/// A fault MCP server whose scenarios run `program` as Locust.
async fn server(program: &str) -> common::Client {
    common::spawn_with(ServerSpec {
        env: HashMap::from([("FAULT_LOCUST".to_owned(), program.to_owned())]),
        ..ServerSpec::default()
    })
    .await
}

/// Locust's own totals from its `--csv` statistics: requests per name, and the aggregated row's.
fn csv_totals(prefix: &Path) -> (HashMap<String, u64>, u64) {
    let text = std::fs::read_to_string(format!("{}_stats.csv", prefix.display()))
        .expect("Locust's CSV statistics");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (name_at, count_at) = (column("Name"), column("Request Count"));
    let mut per_name = HashMap::new();
    let mut total = 0;
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        let count: u64 = cells[count_at].parse().unwrap();
        if cells[name_at] == "Aggregated" {
            total = count;
        } else {
            per_name.insert(cells[name_at].to_owned(), count);
        }
    }
    (per_name, total)
}

/// Requests of one entry of the result's `data.run.per_request`.
fn requests_of(samples: &Value) -> u64 {
    let sum = |key: &str| {
        samples[key]
            .as_object()
            .map_or(0, |m| m.values().map(|v| v.as_u64().unwrap()).sum::<u64>())
    };
    ["success", "transport_errors", "timeouts", "not_started"]
        .iter()
        .map(|key| samples[*key].as_u64().unwrap())
        .sum::<u64>()
        + sum("http_errors")
        + sum("unexpected")
}

/// The report's requests per name.
fn report_counts(report: &Value) -> HashMap<String, u64> {
    report["data"]["run"]["per_request"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_owned(),
                requests_of(&r["samples"]),
            )
        })
        .collect()
}

const TWO_TASKS: &str = r#"from locust import HttpUser, task, constant


class Shopper(HttpUser):
    wait_time = constant(0.05)

    @task(3)
    def todo(self):
        self.client.get("/todos/1", name="todo")

    @task(1)
    def payload(self):
        self.client.get("/bytes/512", name="payload")
"#;

/// Master and 2 workers on 127.0.0.1 through a 150 ms latency window 5–10 s of a 20 s run: the report counts
/// each task exactly as Locust's own statistics do, both workers carried at least 30 %, and the window, time
/// to recover and SLO verdicts are fault's.
#[tokio::test(flavor = "multi_thread")]
async fn locust_master_and_two_workers_count_in_the_report_as_in_locusts_own_totals() {
    let test = "locust_master_and_two_workers_count_in_the_report_as_in_locusts_own_totals";
    let Some(program) = locust_program(test) else {
        return;
    };
    let _timing = TIMING.lock().await;
    // Locust's processes load both cores: no other heavy test beside them.
    let _heavy = common::CPU_HEAVY.lock().await;
    let upstream = scenario::upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let locustfile = dir.path().join("shop.py");
    std::fs::write(&locustfile, TWO_TASKS).unwrap();
    let csv = dir.path().join("locust");
    let client = server(&program).await;
    let args = json!({
        "url": upstream.url("/todos/1"),
        "duration": "20s",
        "latency": 150,
        "sched": "start:5s,duration:5s",
        // 95 %: a request due in the last milliseconds before the window whose answer comes back through
        // it is slow, yet counts in the phase before.
        "slos": [{"objective": 95, "threshold_ms": 100}],
        "recovery_seconds": 2,
        "load": {
            "engine": "locust",
            "locustfile": locustfile.display().to_string(),
            "users": 4,
            "spawn_rate": 20,
            "workers": 2,
            "master_port": common::free_port(),
            "csv": csv.display().to_string(),
        },
    });
    let result = common::call(&client, "fault_run_latency_impact_scenario", args)
        .await
        .expect("tool call");
    let markdown = common::text(&result).to_owned();
    assert!(!common::is_error(&result), "{markdown}");
    let report = result
        .structured_content
        .clone()
        .expect("structuredContent");
    client.cancel().await.expect("clean shutdown");

    let (locust_counts, locust_total) = csv_totals(&csv);
    let counts = report_counts(&report);
    eprintln!("report {counts:?}, Locust {locust_counts:?} (total {locust_total})");
    assert_eq!(counts, locust_counts, "{markdown}");
    assert_eq!(report["run"]["requests"], locust_total, "{markdown}");
    assert!(locust_total > 200, "{markdown}");

    let engine = &report["engine"];
    assert_eq!(engine["engine"], "locust");
    assert!(engine["note"].as_str().unwrap().contains("Locust's"));
    let workers = engine["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2, "{engine}");
    for worker in workers {
        assert!(worker["percent"].as_f64().unwrap() >= 30.0, "{engine}");
    }
    assert!(markdown.contains("locust"), "{markdown}");
    assert!(
        markdown.contains("the latencies are Locust's"),
        "{markdown}"
    );

    let window = &report["recovery"][0];
    assert_eq!(
        (window["from_s"].as_f64(), window["until_s"].as_f64()),
        (Some(5.0), Some(10.0))
    );
    assert_eq!(window["recovery"]["outcome"], "recovered", "{markdown}");
    let names: Vec<&str> = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["before", "during", "after"], "{markdown}");
    let slo = |phase: usize| {
        report["phases"][phase]["slos"][0]["passed"]
            .as_bool()
            .unwrap()
    };
    assert!(slo(0) && !slo(1) && slo(2), "{markdown}");
    assert_eq!(report["run"]["slos"][0]["passed"], false, "{markdown}");
    assert!(report["faults"][0]["applications"].as_u64().unwrap() > 0);
}

/// Without a locustfile Locust runs one written from the mix: its tasks follow the mix's weights, each named
/// as its request, and the report has each request's row.
#[tokio::test(flavor = "multi_thread")]
async fn without_a_locustfile_locusts_tasks_follow_the_mixs_weights() {
    let test = "without_a_locustfile_locusts_tasks_follow_the_mixs_weights";
    let Some(program) = locust_program(test) else {
        return;
    };
    let _timing = TIMING.lock().await;
    // Locust's processes load both cores: no other heavy test beside them.
    let _heavy = common::CPU_HEAVY.lock().await;
    let upstream = scenario::upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("mix");
    let client = server(&program).await;
    let args = json!({
        "requests": [
            {"name": "todo", "url": upstream.url("/todos/1"), "weight": 3},
            {"name": "missing", "url": upstream.url("/status/404"), "weight": 1,
             "expect": {"status": ["404"]}},
        ],
        "duration": "6s",
        "latency": 1,
        "load": {
            "engine": "locust",
            "users": 4,
            "spawn_rate": 20,
            "master_port": common::free_port(),
            "csv": csv.display().to_string(),
        },
    });
    let result = common::call(&client, "fault_run_latency_impact_scenario", args)
        .await
        .expect("tool call");
    let markdown = common::text(&result).to_owned();
    assert!(!common::is_error(&result), "{markdown}");
    let report = result
        .structured_content
        .clone()
        .expect("structuredContent");
    client.cancel().await.expect("clean shutdown");
    let counts = report_counts(&report);
    let (locust_counts, _) = csv_totals(&csv);
    assert_eq!(counts, locust_counts, "{markdown}");
    let (todo, missing) = (counts["todo"], counts["missing"]);
    let share = todo as f64 / (todo + missing) as f64;
    eprintln!(
        "todo {todo}, missing {missing}: {share:.3} of the calls went to todo (weight 3 of 4)"
    );
    assert!(todo + missing > 400, "{markdown}");
    assert!((0.70..=0.80).contains(&share), "{share}\n{markdown}");
    // The expectation travelled with the request: a 404 it expects is a success.
    assert_eq!(report["run"]["errors"], 0, "{markdown}");
}

/// Calls the latency tool with Locust's `load`, expecting a tool error; its text.
async fn refused(client: &common::Client, url: &str, load: Value) -> String {
    let args = json!({"url": url, "duration": "5s", "latency": 10, "load": load});
    let result = common::call(client, "fault_run_latency_impact_scenario", args)
        .await
        .expect("tool call");
    let text = common::text(&result).to_owned();
    assert!(common::is_error(&result), "expected a refusal, got: {text}");
    text
}

/// Each bad input is a clear error: Locust absent or too old (naming `pip install locust`), a locustfile
/// missing or failing to import (Locust's own error relayed), the master's port in use, workers that never
/// come (after the bound, saying how many came) with no Locust process left behind.
#[tokio::test(flavor = "multi_thread")]
async fn locusts_bad_inputs_are_each_refused_clearly() {
    let test = "locusts_bad_inputs_are_each_refused_clearly";
    let Some(program) = locust_program(test) else {
        return;
    };
    let upstream = scenario::upstream().await;
    let url = upstream.url("/todos/1");
    let dir = tempfile::tempdir().unwrap();
    let locust = |port: u16| json!({"engine": "locust", "master_port": port});

    // Absent, then too old.
    let absent = server(&dir.path().join("no-such-locust").display().to_string()).await;
    let text = refused(&absent, &url, locust(common::free_port())).await;
    assert!(
        text.contains("Locust is not installed") && text.contains("pip install locust"),
        "{text}"
    );
    absent.cancel().await.unwrap();
    let old = dir.path().join("old-locust");
    std::fs::write(
        &old,
        "#!/bin/sh\necho 'locust 2.8.6 from /old (Python 3.9)'\n",
    )
    .unwrap();
    std::fs::set_permissions(&old, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let too_old = server(&old.display().to_string()).await;
    let text = refused(&too_old, &url, locust(common::free_port())).await;
    assert!(
        text.contains("Locust 2.8.6 is too old") && text.contains("pip install locust"),
        "{text}"
    );
    too_old.cancel().await.unwrap();

    let client = server(&program).await;
    // A locustfile that is not there: refused as the fields are read.
    let mut load = locust(common::free_port());
    load["locustfile"] = json!(dir.path().join("absent.py").display().to_string());
    let text = refused(&client, &url, load).await;
    assert!(
        text.contains("load.locustfile") && text.contains("not found"),
        "{text}"
    );
    // One that fails to import: Locust's own error.
    let broken = dir.path().join("broken.py");
    std::fs::write(&broken, "import no_such_module_for_fault\n").unwrap();
    let mut load = locust(common::free_port());
    load["locustfile"] = json!(broken.display().to_string());
    let text = refused(&client, &url, load).await;
    assert!(
        text.contains("load.locustfile")
            && text.contains("No module named 'no_such_module_for_fault'"),
        "{text}"
    );
    // The master's port in use.
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let text = refused(&client, &url, locust(port)).await;
    assert!(
        text.contains("load.master_port") && text.contains("in use"),
        "{text}"
    );
    drop(holder);
    // Workers that never come: refused after the bound, and the master is gone (its port free again).
    let port = common::free_port();
    let started = std::time::Instant::now();
    let text = refused(
        &client,
        &url,
        json!({"engine": "locust", "master_port": port, "workers": {"external": 2}, "workers_wait": "3s"}),
    )
    .await;
    assert!(
        text.contains("0 of 2 Locust workers came within 3s"),
        "{text}"
    );
    assert!(started.elapsed() >= std::time::Duration::from_secs(3));
    let mut freed = false;
    for _ in 0..50 {
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            freed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(freed, "Locust's master still holds port {port}");
    // Fields of fault's own generator make no sense for Locust's users.
    let args = json!({"url": url, "rps": 5, "latency": 10, "load": {"engine": "locust"}});
    let result = common::call(&client, "fault_run_latency_impact_scenario", args)
        .await
        .expect("tool call");
    assert!(
        common::text(&result).starts_with("rps: is for fault's own generator"),
        "{}",
        common::text(&result)
    );
    client.cancel().await.unwrap();
}
