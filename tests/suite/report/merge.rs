//! Results other tools read and merge: the histograms of an impact result in HdrHistogram's encoding (read back
//! by the PyPI `hdrhistogram` package), `fault report merge` on two real runs against a service on 127.0.0.1
//! (the merged percentiles are those of the two runs' histograms added, the counts their sums), and every
//! refusal of the command with its message.

use std::{path::Path, process::Stdio, time::Duration};

use fault::{
    load::{LoadReport, RequestOutcome, RequestSamples, Samples, Timing, phase_of, phases},
    report::{
        impact::{
            self as report, ActiveWindow, CallInfo, FaultInfo, LatencySlo, ReportInput,
            RequestInfo, StrategyInfo, data::EncodedHistogram,
        },
        result::write_result,
    },
};
use hdrhistogram::Histogram;
use serde_json::{Value, json};

use crate::support::{common, optional, scenario};

/// `fault report merge <args>`: its exit status, stdout and stderr.
async fn merge(args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["report", "merge"];
    all.extend_from_slice(args);
    let mut command = common::fault_command(&all);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("fault report merge ends")
        .expect("fault report merge runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

fn write_json(dir: &Path, name: &str, value: &Value) -> String {
    let file = path(dir, name);
    std::fs::write(&file, serde_json::to_vec_pretty(value).unwrap()).unwrap();
    file
}

/// The histogram encoded at `value` (a "HISTFAAA…" string).
fn decoded(value: &Value) -> Histogram<u64> {
    EncodedHistogram(value.as_str().expect("an encoded histogram").to_owned())
        .decode()
        .expect("a histogram")
}

fn added(a: &Value, b: &Value) -> Histogram<u64> {
    let mut sum = decoded(a);
    sum.add(decoded(b)).unwrap();
    sum
}

/// A percentile as the report gives it: the middle of its bucket, in ms.
fn percentile_ms(histogram: &Histogram<u64>, q: f64) -> f64 {
    let us = histogram.median_equivalent(histogram.value_at_quantile(q));
    (us as f64 / 10.0).round() / 100.0
}

fn count(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("a count, got {value}"))
}

/// One impact scenario through the MCP server: its structuredContent.
async fn impact_run(args: Value) -> Value {
    let client = common::spawn().await;
    let result = common::call(&client, "fault_run_latency_impact_scenario", args)
        .await
        .expect("tool call");
    assert!(!common::is_error(&result), "{}", common::text(&result));
    let report = result
        .structured_content
        .clone()
        .expect("structuredContent");
    client.cancel().await.expect("clean shutdown");
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_real_runs_merged_give_the_percentiles_and_counts_of_both() {
    // The before phase is judged against 15 ms on loopback: no other measuring scenario beside it.
    let _timing = scenario::TIMING.lock().await;
    let upstream = scenario::upstream().await;
    // Two "machines" at once against one service: a baseline, then 20 ms of latency in the middle second.
    let args = json!({
        "url": upstream.url("/todos/1"), "latency": 20, "sched": "start:1s,duration:1s",
        "duration": "3s", "rps": 20, "num_clients": 1, "baseline": true,
        "slos": [{"objective": 90, "threshold_ms": 15}],
    });
    let (a, b) = tokio::join!(impact_run(args.clone()), impact_run(args));
    let dir = tempfile::tempdir().unwrap();
    let (file_a, file_b) = (
        write_json(dir.path(), "a.json", &a),
        write_json(dir.path(), "b.json", &b),
    );
    let (markdown, html) = (
        path(dir.path(), "merged.md"),
        path(dir.path(), "merged.html"),
    );
    let (status, stdout, stderr) =
        merge(&[&file_a, &file_b, "--markdown", &markdown, "--html", &html]).await;
    assert_eq!(status, 0, "{stderr}");
    let merged: Value = serde_json::from_str(&stdout).expect("the merged result on stdout");
    assert_eq!(merged["schema_version"], 1);

    // The latency histograms are the two runs' added, exactly, and so are the percentiles.
    let (run_a, run_b, run) = (&a["data"]["run"], &b["data"]["run"], &merged["data"]["run"]);
    let all = added(&run_a["samples"]["all_us"], &run_b["samples"]["all_us"]);
    assert_eq!(decoded(&run["samples"]["all_us"]), all);
    for row in merged["run"]["percentiles"].as_array().unwrap() {
        let q = row["percentile"].as_f64().unwrap() / 100.0;
        let shown = row["latency_ms"].as_f64().unwrap();
        let expected = percentile_ms(&all, q);
        assert!(
            (shown - expected).abs() < 0.006,
            "{}: {shown} ms, expected {expected} ms",
            row["name"]
        );
        // Within the histogram's precision of the value it stands for (and the report's 10 µs rounding).
        let us = all.value_at_quantile(q);
        let precision = all.equivalent_range(us) as f64 + 5.0;
        assert!(
            (shown * 1000.0 - us as f64).abs() <= precision,
            "{row}: {us} µs"
        );
    }
    let baseline = added(
        &a["data"]["baseline"]["samples"]["all_us"],
        &b["data"]["baseline"]["samples"]["all_us"],
    );
    assert_eq!(
        decoded(&merged["data"]["baseline"]["samples"]["all_us"]),
        baseline
    );
    assert_eq!(
        merged["comparison"]["baseline_p99_ms"].as_f64().unwrap(),
        percentile_ms(&baseline, 0.99)
    );

    // Counts are summed: the run, each second, each phase, the request of the mix, faults, proxies, upstream.
    let sum = |field: &dyn Fn(&Value) -> &Value| count(field(&a)) + count(field(&b));
    assert_eq!(
        count(&merged["run"]["requests"]),
        sum(&|r| &r["run"]["requests"])
    );
    assert_eq!(
        count(&merged["run"]["errors"]),
        sum(&|r| &r["run"]["errors"])
    );
    assert_eq!(
        count(&merged["baseline"]["requests"]),
        sum(&|r| &r["baseline"]["requests"])
    );
    assert_eq!(count(&merged["strategy"]["num_clients"]), 2);
    for second in 0..3 {
        assert_eq!(
            count(&merged["run"]["per_second"][second]["requests"]),
            sum(&|r| &r["run"]["per_second"][second]["requests"]),
            "second {second}"
        );
    }
    let names: Vec<&str> = merged["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["before", "during", "after"]);
    for phase in 0..3 {
        assert_eq!(
            count(&merged["phases"][phase]["requests"]),
            sum(&|r| &r["phases"][phase]["requests"]),
            "phase {phase}"
        );
        let during = added(
            &run_a["samples"]["phases"][phase]["all_us"],
            &run_b["samples"]["phases"][phase]["all_us"],
        );
        assert_eq!(decoded(&run["samples"]["phases"][phase]["all_us"]), during);
    }
    // The latency of the middle second breaks the SLO there, judged on the merged phase.
    assert_eq!(
        merged["phases"][1]["slos"][0]["passed"], false,
        "{}",
        merged["phases"][1]
    );
    assert_eq!(
        merged["phases"][0]["slos"][0]["passed"], true,
        "{}",
        merged["phases"][0]
    );
    assert_eq!(
        count(&run["per_request"][0]["samples"]["success"]),
        sum(&|r| &r["data"]["run"]["per_request"][0]["samples"]["success"])
    );
    assert_eq!(
        count(&merged["faults"][0]["applications"]),
        sum(&|r| &r["faults"][0]["applications"])
    );
    assert_eq!(
        count(&merged["proxy"]["connections"]),
        sum(&|r| &r["proxy"]["connections"])
    );
    assert_eq!(
        count(&merged["upstream"]["requests"]),
        sum(&|r| &r["upstream"]["requests"])
    );

    // The renderings exist and name the merged request count; the merged result merges again.
    let requests = merged["run"]["requests"].to_string();
    let text = std::fs::read_to_string(&markdown).unwrap();
    // The run overview's row starts with the number of requests.
    assert!(text.contains(&format!("\n| {requests} | ")), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.starts_with("<!DOCTYPE html>") && page.contains(&format!("\"requests\":{requests}"))
    );
    let again = write_json(dir.path(), "merged.json", &merged);
    let (status, stdout, stderr) = merge(&[&again, &file_a]).await;
    assert_eq!(status, 0, "{stderr}");
    let thrice: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        count(&thrice["run"]["requests"]),
        count(&merged["run"]["requests"]) + count(&a["run"]["requests"])
    );
    // Size of a result: a few KB of histograms for this run.
    eprintln!(
        "a 3 s result with a baseline: {} bytes of JSON",
        serde_json::to_vec(&a).unwrap().len()
    );
}

/// A result built from known samples: `seconds` seconds at `rate` per second, the latency fault in the middle
/// third (so three phases), one in 97 requests a 503.
fn known_result(seconds: u64, rate: u64) -> report::Report {
    let duration = Duration::from_secs(seconds);
    let third = seconds as f64 / 3.0;
    let mut samples = Samples::new(seconds as usize);
    samples.phases = phases(
        &[
            Duration::from_secs_f64(third),
            Duration::from_secs_f64(2.0 * third),
        ],
        duration,
    );
    for k in 0..seconds * rate {
        let due_at = Duration::from_micros(k * 1_000_000 / rate);
        let due = tokio::time::Instant::now();
        let latency = Duration::from_micros(700 + (k * 7_919) % 90_000);
        let timing = Timing {
            due,
            sent: Some(due + Duration::from_micros(20)),
            ended: due + latency,
        };
        let outcome = if k % 97 == 0 {
            RequestOutcome::HttpError(503)
        } else {
            RequestOutcome::Success
        };
        if let Some(phase) = phase_of(&samples.phases, due_at) {
            samples.phases[phase].add(latency, &outcome);
        }
        samples.per_second[due_at.as_secs() as usize].answered += 1;
        samples.record(due_at.as_secs() as usize, &timing, outcome, 83);
    }
    let now = chrono::Utc::now();
    let load = LoadReport {
        started_at: now,
        ended_at: now,
        elapsed: duration,
        planned: Some(seconds * rate),
        connections_opened: 1,
        cut_short: false,
        offered_per_second: vec![rate; seconds as usize],
        per_request: vec![RequestSamples {
            name: "GET /todos/1".into(),
            samples: samples.clone(),
        }],
        samples,
    };
    let input = ReportInput {
        call: CallInfo {
            url: "http://127.0.0.1:9090/todos/1".into(),
            method: "GET".into(),
            timeout_ms: 5000,
            headers: vec![],
            has_body: false,
        },
        requests: vec![RequestInfo {
            name: "GET /todos/1".into(),
            method: "GET".into(),
            url: "http://127.0.0.1:9090/todos/1".into(),
            weight: 1.0,
            expect: "a status below 400".into(),
            headers: vec![],
            has_body: false,
        }],
        strategy: StrategyInfo {
            duration_s: seconds as f64,
            num_clients: 1,
            rps: rate as u32,
            stages: Vec::new(),
        },
        faults: vec![FaultInfo {
            kind: "latency".into(),
            description: "Latency: mean 20.00ms".into(),
            sched: Some(format!("start:{third}s,duration:{third}s")),
            windows: vec![ActiveWindow {
                from_s: third,
                until_s: 2.0 * third,
            }],
            applied_on: "proxy 127.0.0.1:34000 → 127.0.0.1:9090".into(),
            applications: Some(seconds * rate / 3),
        }],
        slos: LatencySlo::defaults(),
        recovery_seconds: 3,
        upstream: None,
    };
    report::build(input, &load, None)
}

/// Every histogram of a result (its "HISTFAAA…" strings), with where it is.
fn histograms(value: &Value, at: String, found: &mut Vec<(String, String)>) {
    match value {
        Value::String(text) if text.starts_with("HISTFAAA") => found.push((at, text.clone())),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .for_each(|(i, v)| histograms(v, format!("{at}[{i}]"), found)),
        Value::Object(fields) => fields
            .iter()
            .for_each(|(k, v)| histograms(v, format!("{at}.{k}"), found)),
        _ => {}
    }
}

/// The PyPI `hdrhistogram` package reads every histogram of a result to the same buckets and counts.
#[tokio::test]
async fn the_python_hdrhistogram_package_reads_every_histogram_of_a_result() {
    let test = "report::merge::the_python_hdrhistogram_package_reads_every_histogram_of_a_result";
    // The PyPI package `hdrhistogram` is imported as `hdrh`.
    let python = match common::python_with(&["hdrh.histogram"]) {
        Ok(python) => python,
        Err(_) => {
            return optional::skip(
                test,
                "no Python can `import hdrh` (pip install hdrhistogram, or set FAULT_TEST_PYTHON to a Python \
                 that has it)",
            );
        }
    };
    let result = serde_json::to_value(known_result(6, 400)).unwrap();
    let mut found = Vec::new();
    histograms(&result["data"], "data".into(), &mut found);
    // The run's four, 6 seconds and 3 phases of two: for the whole run and for its one request.
    assert_eq!(
        found.len(),
        2 * (4 + 6 + 3 * 2),
        "{:?}",
        found.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    let script = r#"
import json, sys
from hdrh.histogram import HdrHistogram
out = []
for encoded in json.load(sys.stdin):
    h = HdrHistogram.decode(encoded)
    out.append({"total": h.get_total_count(),
                "buckets": [[i.value_iterated_to, i.count_at_value_iterated_to] for i in h.get_recorded_iterator()]})
print(json.dumps(out))
"#;
    let mut child = tokio::process::Command::new(&python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    let encoded: Vec<&str> = found.iter().map(|(_, text)| text.as_str()).collect();
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(
        &mut stdin,
        serde_json::to_string(&encoded).unwrap().as_bytes(),
    )
    .await
    .unwrap();
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(seen.len(), found.len());
    for ((at, text), python) in found.iter().zip(&seen) {
        let ours = decoded(&Value::String(text.clone()));
        let buckets: Vec<Value> = ours
            .iter_recorded()
            .map(|v| json!([v.value_iterated_to(), v.count_at_value()]))
            .collect();
        assert_eq!(python["total"], ours.len(), "{at}");
        assert_eq!(python["buckets"], Value::Array(buckets), "{at}");
    }
}

/// Each refusal of `fault report merge`, with the file and what is wrong.
#[tokio::test]
async fn merge_refuses_what_it_cannot_add_up_naming_the_file_and_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    let original = known_result(3, 50);
    let a = path(dir.path(), "a.json");
    write_result(&original, Path::new(&a)).unwrap();
    let result = serde_json::to_value(&original).unwrap();
    let variant = |name: &str, change: &dyn Fn(&mut Value)| {
        let mut changed = result.clone();
        change(&mut changed);
        write_json(dir.path(), name, &changed)
    };
    let text = std::fs::read_to_string(&a).unwrap();
    let truncated = path(dir.path(), "truncated.json");
    std::fs::write(&truncated, &text[..text.len() / 2]).unwrap();
    let not_json = path(dir.path(), "notes.json");
    std::fs::write(&not_json, "p99 was fine\n").unwrap();
    let missing = path(dir.path(), "missing.json");
    let cases: Vec<(Vec<String>, String)> = vec![
        (vec![a.clone()], "at least two results of the same scenario, 1 given".into()),
        (vec![], "at least two results of the same scenario, 0 given".into()),
        (vec![a.clone(), missing.clone()], format!("file not found: {missing}")),
        (vec![a.clone(), truncated.clone()], format!("{truncated}: truncated: the JSON ends at line")),
        (vec![not_json.clone(), a.clone()], format!("{not_json}: not JSON (")),
        (
            vec![a.clone(), write_json(dir.path(), "other.json", &json!({"p99_ms": 12.5}))],
            "other.json: not an impact scenario result: it has no schema_version".into(),
        ),
        (
            vec![a.clone(), variant("chaos.json", &|r| {
                r["server"] = json!("python server.py");
                r["seed"] = json!(7);
            })],
            "chaos.json: not an impact scenario result: it is an MCP chaos scenario's result".into(),
        ),
        (
            vec![a.clone(), variant("gutted.json", &|r| {
                r.as_object_mut().unwrap().remove("data");
            })],
            "gutted.json: not an impact scenario result: missing field `data`".into(),
        ),
        (
            vec![a.clone(), variant("v2.json", &|r| r["schema_version"] = json!(2))],
            "v2.json: schema_version 2, but this fault reads results of schema_version 1".into(),
        ),
        (
            vec![a.clone(), variant("url.json", &|r| r["call"]["url"] = json!("http://127.0.0.1:9090/search"))],
            format!(
                "url.json is not a result of the same scenario as {a}: the call differs: call.url is \
                 \"http://127.0.0.1:9090/search\" there and \"http://127.0.0.1:9090/todos/1\" in {a}"
            ),
        ),
        (
            vec![a.clone(), variant("long.json", &|r| r["strategy"]["duration_s"] = json!(10.0))],
            format!("the load differs: strategy.duration_s is 10.0 there and 3.0 in {a}"),
        ),
        (
            vec![a.clone(), variant("fault.json", &|r| r["faults"][0]["description"] = json!("Latency: mean 50.00ms"))],
            "the faults differ: faults[0].description is \"Latency: mean 50.00ms\" there".into(),
        ),
        (
            vec![a.clone(), variant("window.json", &|r| r["faults"][0]["windows"][0]["from_s"] = json!(0.5))],
            "the faults differ: faults[0].windows[0].from_s is 0.5 there and 1.0 in".into(),
        ),
        (
            vec![a.clone(), variant("slos.json", &|r| r["data"]["slos"][1]["threshold_ms"] = json!(250.0))],
            "the SLOs differ: data.slos[1].threshold_ms is 250.0 there and 200.0 in".into(),
        ),
        (
            vec![a.clone(), variant("fewer-slos.json", &|r| {
                r["data"]["slos"].as_array_mut().unwrap().pop();
            })],
            "the SLOs differ: data.slos is 1 items there and 2 items in".into(),
        ),
        (
            vec![a.clone(), variant("bad-histogram.json", &|r| r["data"]["run"]["samples"]["per_second"][2]["latency_us"] = json!("HISTFAAAnope"))],
            "bad-histogram.json: data.run.samples.per_second[2].latency_us: is not an HdrHistogram V2".into(),
        ),
    ];
    for (files, expected) in cases {
        let args: Vec<&str> = files.iter().map(String::as_str).collect();
        let (status, stdout, stderr) = merge(&args).await;
        assert_eq!(status, 1, "{files:?}: {stderr}");
        assert!(stdout.is_empty(), "{files:?} printed {stdout}");
        assert!(
            stderr.contains(&expected),
            "{files:?}: expected «{expected}» in:\n{stderr}"
        );
    }
    // The same result twice merges: every count doubles.
    let (status, stdout, stderr) = merge(&[&a, &a]).await;
    assert_eq!(status, 0, "{stderr}");
    let merged: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(count(&merged["run"]["requests"]), 2 * 150);
    let latencies = |r: &Value| -> Vec<Value> {
        r["run"]["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["latency_ms"].clone())
            .collect()
    };
    assert_eq!(latencies(&merged), latencies(&result));
}
