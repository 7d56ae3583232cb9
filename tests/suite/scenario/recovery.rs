//! Fault windows in the impact scenarios: the phases before, during and after a window, time to detect and to
//! recover, error budget burn and retry amplification, and several faults at once. Real parts: services on
//! 127.0.0.1 that call their upstream through the scenario's proxy with a 300 ms timeout, one with a 5 s
//! hold-down after its last upstream failure, one without, one that never recovers; the built binary drives
//! them through a real MCP client.
//!
//! Their bounds are seconds wide, so they share `TIMING` and run beside each other; the one that compares a
//! before phase's median with a baseline's, within 2 ms, holds it alone.

use crate::support::common;
use crate::support::scenario::{self, AfterFailure, TIMING};

use std::time::Duration;

use serde_json::{Value, json};

/// The upstream's timeout in the services.
const UPSTREAM_TIMEOUT: Duration = Duration::from_millis(300);

/// A service calling an upstream through the proxy port, with the mapping to give the tool.
struct Guarded {
    upstream: scenario::Server,
    app: scenario::Server,
    proxy_port: u16,
}

impl Guarded {
    async fn new(after: AfterFailure) -> Self {
        let upstream = scenario::upstream().await;
        let proxy_port = common::free_port();
        let app = scenario::guarded_app(
            format!("http://127.0.0.1:{proxy_port}"),
            UPSTREAM_TIMEOUT,
            after,
        )
        .await;
        Self {
            upstream,
            app,
            proxy_port,
        }
    }

    /// Scenario arguments: `rps` on the service for `duration`, the fault on its upstream calls, plus `extra`.
    fn args(&self, duration: &str, rps: u32, extra: Value) -> Value {
        let mut args = json!({
            "url": self.app.url("/"),
            "duration": duration,
            "num_clients": 1,
            "rps": rps,
            "timeout": 5,
            "proxies": [format!("{}={}", self.proxy_port, self.upstream.addr)],
        });
        for (key, value) in extra.as_object().unwrap() {
            args[key] = value.clone();
        }
        args
    }
}

/// Calls `tool` on a server of its own, expecting a report: its markdown, structuredContent and the text
/// alternative of its chart (kept as `chart`, see [`crate::report::charts::chart_png`]).
async fn scenario(tool: &str, args: Value, chart: &str) -> (String, Value, String) {
    let client = common::spawn().await;
    let result = common::call(&client, tool, args).await.expect("tool call");
    let text = common::text(&result).to_owned();
    assert!(!common::is_error(&result), "{tool} failed: {text}");
    let report = result
        .structured_content
        .clone()
        .expect("structuredContent");
    let (_, alt) = crate::report::charts::chart_png(&result, chart);
    client.cancel().await.expect("clean shutdown");
    (text, report, alt)
}

fn phase<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name} in {}", report["phases"]))
}

fn f(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("{value} is not a number"))
}

/// One line of figures for the test's output.
fn summary(name: &str, report: &Value) -> String {
    let window = &report["recovery"][0];
    let phases: Vec<String> = report["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{} {}–{} s: {} req, {}% errors, p99 {} ms, {} upstream/req, burn {}",
                p["name"].as_str().unwrap(),
                p["from_s"],
                p["until_s"],
                p["requests"],
                p["error_percent"],
                p["p99_ms"],
                p["upstream"]["requests_per_client_request"],
                p["slos"][0]["burn_rate"]
            )
        })
        .collect();
    format!(
        "{name}: detect {} s (second {}), recovery {}\n  {}",
        window["detect_s"],
        window["detected_at_second"],
        window["recovery"],
        phases.join("\n  ")
    )
}

/// Latency 1500 ms from 5 s to 10 s of a 24 s run, on the upstream calls of three services with a 300 ms
/// upstream timeout: with a 5 s hold-down the service recovers 5 ± 1.5 s after the window (the hold-down
/// counts from its last failure, a timeout up to 300 ms after the window); without one, at once; one that
/// never recovers is said not to have, with no recovery time. Each is detected within 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latency_window_is_detected_and_recovery_follows_the_services_hold_down() {
    let _timing = TIMING.share().await;
    let services = [
        (
            "5 s hold-down",
            AfterFailure::HoldDown(Duration::from_secs(5)),
            "window_hold_down.png",
        ),
        ("no hold-down", AfterFailure::Recover, "window_recover.png"),
        ("never recovers", AfterFailure::Never, "window_never.png"),
    ];
    let mut runs = Vec::new();
    for (name, after, chart) in services {
        runs.push(async move {
            let service = Guarded::new(after).await;
            let args = service.args(
                "24s",
                20,
                json!({"latency": 1500, "sched": "start:5s,duration:5s"}),
            );
            let (markdown, report, alt) =
                scenario("fault_run_latency_impact_scenario", args, chart).await;
            (name, markdown, report, alt)
        });
    }
    // The three at once, each with its own server, service and proxy: 60 requests per second in all.
    let runs = futures::future::join_all(runs).await;
    for (name, markdown, report, alt) in &runs {
        eprintln!("{}", summary(name, report));
        // The image says it too: the phases, and when the window was detected.
        assert!(alt.contains("Phase during (5–10 s): 100 requests"), "{alt}");
        assert!(
            alt.contains("Window 5–10 s: detected ")
                && alt.contains(" s after its start (second 5"),
            "{alt}"
        );
        let names: Vec<&str> = report["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["before", "during", "after"], "{markdown}");
        let before = phase(report, "before");
        assert_eq!(before["requests"], 100, "{markdown}");
        assert_eq!(before["errors"], 0, "{markdown}");
        assert_eq!(
            before["upstream"]["requests_per_client_request"], 1.0,
            "{markdown}"
        );
        assert!(before["slos"][0]["passed"].as_bool().unwrap());
        assert_eq!(before["slos"][0]["burn_rate"], 0.0);
        let during = phase(report, "during");
        assert!(f(&during["error_percent"]) > 90.0, "{markdown}");
        // All of the 99% SLO's budget for the whole run and more: 100 bad requests where 4.8 may fail.
        assert!(f(&during["slos"][0]["burn_rate"]) > 90.0, "{markdown}");
        let window = &report["recovery"][0];
        assert_eq!((f(&window["from_s"]), f(&window["until_s"])), (5.0, 10.0));
        let detect = f(&window["detect_s"]);
        assert!(
            detect < 2.0,
            "{name}: detected after {detect} s\n{markdown}"
        );
        // Every upstream answer in the window was delayed, but the service that never recovers stops calling.
        assert!(report["faults"][0]["applications"].as_u64().unwrap() > 0);
        assert_eq!(report["faults"][0]["sched"], "start:5s,duration:5s");
        assert!(markdown.contains("Time to detect runs from a window's start"));
        assert!(markdown.contains("| during | 5–10 |"), "{markdown}");
    }
    let recovery = |index: usize| &runs[index].2["recovery"][0]["recovery"];
    assert!(runs[2].3.contains("did not recover"), "{}", runs[2].3);
    assert_eq!(recovery(0)["outcome"], "recovered", "{}", runs[0].1);
    let held = f(&recovery(0)["recover_s"]);
    assert!((3.5..=6.5).contains(&held), "hold-down: {held} s");
    assert_eq!(recovery(1)["outcome"], "recovered", "{}", runs[1].1);
    let at_once = f(&recovery(1)["recover_s"]);
    assert!(at_once < 1.5, "no hold-down: {at_once} s");
    assert_eq!(recovery(2)["outcome"], "not_recovered", "{}", runs[2].1);
    assert!(recovery(2).get("recover_s").is_none());
    assert_eq!(f(&recovery(2)["after_s"]), 14.0);
    assert!(
        runs[2]
            .1
            .contains("**did not recover**: the run ended 14 s after the window"),
        "{}",
        runs[2].1
    );
    assert_eq!(f(&phase(&runs[2].2, "after")["error_percent"]), 100.0);
    // The services that keep calling their upstream call it once per request throughout.
    for (name, markdown, report, _) in &runs[..2] {
        assert!(
            report["faults"][0]["applications"].as_u64().unwrap() >= 99,
            "{name}\n{markdown}"
        );
        let phases = report["phases"].as_array().unwrap();
        assert!(!phases.is_empty(), "{name}: no phases\n{markdown}");
        for phase in phases {
            assert_eq!(
                phase["upstream"]["requests_per_client_request"], 1.0,
                "{name}\n{markdown}"
            );
        }
    }
}

/// Blackhole, HTTP error and packet loss, each from 3 s to 6 s of a 12 s run on the upstream calls of a
/// service without a hold-down, at 20 requests per second: detected within 2 s, recovered within 1.5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blackhole_http_error_and_packet_loss_windows_are_detected_and_recovered_from() {
    let _timing = TIMING.share().await;
    let faults = [
        ("fault_run_blackhole_impact_scenario", json!({})),
        (
            "fault_run_http_error_impact_scenario",
            json!({"status_code": 503}),
        ),
        // Both ways: a message lost once arrives 200 ms late, so two losses outlast the 300 ms timeout.
        (
            "fault_run_packet_loss_impact_scenario",
            json!({"loss_rate": 0.7, "direction": "both"}),
        ),
    ];
    let mut runs = Vec::new();
    for (tool, fields) in faults {
        runs.push(async move {
            let service = Guarded::new(AfterFailure::Recover).await;
            let mut extra = fields;
            extra["sched"] = json!("start:3s,duration:3s");
            extra["seed"] = json!(7);
            let chart = format!("window_{tool}.png");
            let (markdown, report, _) =
                scenario(tool, service.args("12s", 20, extra), &chart).await;
            (tool, markdown, report)
        });
    }
    for (tool, markdown, report) in futures::future::join_all(runs).await {
        eprintln!("{}", summary(tool, &report));
        let window = &report["recovery"][0];
        let detect = f(&window["detect_s"]);
        assert!(
            detect < 2.0,
            "{tool}: detected after {detect} s\n{markdown}"
        );
        assert_eq!(window["recovery"]["outcome"], "recovered", "{markdown}");
        let recover = f(&window["recovery"]["recover_s"]);
        assert!(
            recover < 1.5,
            "{tool}: recovered after {recover} s\n{markdown}"
        );
        assert_eq!(phase(&report, "before")["errors"], 0, "{markdown}");
        assert!(
            f(&phase(&report, "during")["error_percent"]) > 50.0,
            "{markdown}"
        );
        assert!(report["faults"][0]["applications"].as_u64().unwrap() > 0);
        assert!(report["inconclusive"].is_null(), "{markdown}");
    }
}

/// Latency and packet loss at once, in overlapping windows, on the demo app's upstream calls: the proxy
/// counts each fault's actions, the report names both and cuts the run at their merged window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compound_scenario_acts_every_fault_and_names_them_all() {
    let _timing = TIMING.share().await;
    let upstream = scenario::upstream().await;
    let proxy_port = common::free_port();
    let app = scenario::demo_app(format!("http://127.0.0.1:{proxy_port}")).await;
    let (markdown, report, alt) = scenario(
        "fault_run_impact_scenario",
        json!({
            "url": app.url("/api/todos/1"),
            "duration": "8s",
            "rps": 20,
            "proxies": [format!("{proxy_port}={}", upstream.addr)],
            "seed": 3,
            "faults": [
                {"type": "latency", "latency": 120, "sched": "start:2s,duration:3s"},
                {"type": "packet_loss", "loss_rate": "20%", "direction": "both",
                 "sched": "start:4s,duration:2s"},
            ],
        }),
        "compound.png",
    )
    .await;
    eprintln!("{}", summary("latency + packet loss", &report));
    let faults = report["faults"].as_array().unwrap();
    let kinds: Vec<&str> = faults.iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["latency", "packet_loss"]);
    for fault in faults {
        assert!(
            fault["applications"].as_u64().unwrap() > 0,
            "{fault}\n{markdown}"
        );
    }
    eprintln!(
        "applications: latency {}, packet loss {}",
        faults[0]["applications"], faults[1]["applications"]
    );
    assert!(alt.contains("The fault latency") && alt.contains("The fault packet_loss"));
    assert!(markdown.contains("| latency | "), "{markdown}");
    assert!(markdown.contains("| packet_loss | "), "{markdown}");
    assert!(markdown.contains("sched `start:2s,duration:3s`: active 2–5 s"));
    assert!(markdown.contains("sched `start:4s,duration:2s`: active 4–6 s"));
    // One window from 2 s to 6 s: the two overlap.
    let windows = report["recovery"].as_array().unwrap();
    assert_eq!(windows.len(), 1);
    assert_eq!(
        (f(&windows[0]["from_s"]), f(&windows[0]["until_s"])),
        (2.0, 6.0)
    );
    let during = phase(&report, "during");
    let before = phase(&report, "before");
    assert!(
        f(&during["p50_ms"]) > f(&before["p50_ms"]) + 100.0,
        "{markdown}"
    );
    assert!(report["inconclusive"].is_null(), "{markdown}");
}

/// A windowed run's before phase is the service as a baseline run sees it: the same errors (none), and
/// latency within the load generator's noise on loopback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_before_phase_matches_a_baseline_run() {
    let _timing = TIMING.lock().await;
    let service = Guarded::new(AfterFailure::Recover).await;
    let (markdown, report, _) = scenario(
        "fault_run_latency_impact_scenario",
        service.args(
            "12s",
            20,
            json!({"latency": 1500, "sched": "start:8s,duration:2s", "baseline": true}),
        ),
        "window_with_baseline.png",
    )
    .await;
    let before = phase(&report, "before");
    let baseline = &report["baseline"];
    let p = |figures: &Value, name: &str| {
        figures["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["name"] == name)
            .map(|row| f(&row["latency_ms"]))
            .unwrap()
    };
    eprintln!(
        "before phase: {} requests, {} errors, p50 {} ms, p95 {} ms, p99 {} ms, {} upstream/req; baseline: {} \
         requests, {} errors, p50 {} ms, p95 {} ms, p99 {} ms; the faulted run: {} upstream/req",
        before["requests"],
        before["errors"],
        before["p50_ms"],
        before["p95_ms"],
        before["p99_ms"],
        before["upstream"]["requests_per_client_request"],
        baseline["requests"],
        baseline["errors"],
        p(baseline, "p50"),
        p(baseline, "p95"),
        p(baseline, "p99"),
        report["upstream"]["requests_per_client_request"],
    );
    assert_eq!(before["requests"], 160);
    assert_eq!(before["errors"], baseline["errors"], "{markdown}");
    assert_eq!(before["errors"], 0, "{markdown}");
    // Loopback answers in a few ms: the two medians are within 2 ms or a third of each other.
    let (a, b) = (f(&before["p50_ms"]), p(baseline, "p50"));
    assert!(
        (a - b).abs() <= 2.0_f64.max(a.max(b) / 3.0),
        "before p50 {a} ms, baseline p50 {b} ms\n{markdown}"
    );
    // One upstream request per client request; on a busy machine one due in the phase's last milliseconds may
    // reach the upstream after the window opened, and count there.
    let per_request = f(&before["upstream"]["requests_per_client_request"]);
    assert!((0.98..=1.0).contains(&per_request), "{markdown}");
    let slos = before["slos"].as_array().unwrap();
    assert!(
        !slos.is_empty(),
        "no SLO judged before the fault\n{markdown}"
    );
    for slo in slos {
        assert!(slo["passed"].as_bool().unwrap(), "{markdown}");
    }
}

/// Bad `sched` windows (starting or ending past the run, overlapping, of zero or negative length, in an
/// unknown unit or none) are refused by name before anything starts, on both tools, as are a misspelt fault
/// type or key, a missing value and an empty fault list; the server still serves after them, and a window shorter than a second acts and is reported as such.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_windows_are_refused_by_name_and_a_window_under_a_second_acts() {
    let _timing = TIMING.share().await;
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let service = Guarded::new(AfterFailure::Recover).await;
    let client = common::spawn().await;
    let latency = |sched: &str| {
        json!({"url": service.app.url("/"), "duration": "10s", "latency": 50, "sched": sched,
               "report_path": page.to_string_lossy()})
    };
    let compound = |sched: &str| {
        json!({"url": service.app.url("/"), "duration": "10s", "report_path": page.to_string_lossy(),
               "faults": [{"type": "latency", "latency": 50},
                          {"type": "blackhole", "sched": sched}]})
    };
    let cases = [
        (
            latency("start:12s"),
            "sched: window 1 (start:12s) starts at 12s, at or after the run's end at 10s",
        ),
        (
            latency("start:8s,duration:5s"),
            "sched: window 1 (start:8s,duration:5s) ends at 13s, after the run's end at 10s",
        ),
        (
            latency("start:1s,duration:4s;start:3s,duration:1s"),
            "sched: window 2 (start:3s,duration:1s) overlaps window 1 (start:1s,duration:4s)",
        ),
        (
            latency("start:10%,duration:50%;start:40%,duration:10%"),
            "sched: window 2 (start:40%,duration:10%) overlaps window 1 (start:10%,duration:50%)",
        ),
        (
            latency("start:2s,duration:0s"),
            "sched: window 1 has a zero duration (0s)",
        ),
        (
            latency("start:2s,duration:-3s"),
            "sched: duration '-3s' is negative",
        ),
        (
            latency("start:2s,duration:3 fortnights"),
            "sched: duration '3 fortnights' has an unknown unit",
        ),
        (latency("start:2"), "sched: start '2' has no unit"),
        (
            compound("start:20s"),
            "faults[1].sched: window 1 (start:20s) starts at 20s, at or after the run's end at 10s",
        ),
        (
            compound("start:1s,duration:0ms"),
            "faults[1].sched: window 1 has a zero duration",
        ),
    ];
    for (args, expected) in cases {
        let tool = if args.get("faults").is_some() {
            "fault_run_impact_scenario"
        } else {
            "fault_run_latency_impact_scenario"
        };
        let started = std::time::Instant::now();
        let result = common::call(&client, tool, args.clone()).await.unwrap();
        let text = common::text(&result);
        assert!(common::is_error(&result), "{args}: {text}");
        assert!(text.starts_with(expected), "{args}: {text}");
        assert!(started.elapsed() < Duration::from_secs(2), "{args}: slow");
        assert!(!page.exists(), "{args}: nothing started, no page written");
    }
    assert_eq!(service.app.served(), 0, "no load was sent");
    for (args, expected) in [
        (
            json!({"url": service.app.url("/"), "faults": [{"type": "latncy", "latency": 5}]}),
            "faults[0].type: unknown fault 'latncy'; did you mean 'latency'?",
        ),
        (
            json!({"url": service.app.url("/"), "faults": [{"type": "latency", "latency": 5, "deviaton": 1}]}),
            "faults[0]: unknown field 'deviaton'; did you mean 'deviation'? (it takes: type, latency, deviation, ",
        ),
        (
            json!({"url": service.app.url("/"), "faults": [{"type": "latency"}]}),
            "faults[0].latency: is required",
        ),
        (
            json!({"url": service.app.url("/"), "faults": []}),
            "faults: 0 faults; give between 1 and 10",
        ),
    ] {
        let result = common::call(&client, "fault_run_impact_scenario", args.clone())
            .await
            .unwrap();
        let text = common::text(&result);
        assert!(common::is_error(&result), "{args}: {text}");
        assert!(text.starts_with(expected), "{args}: {text}");
    }
    // Still serving: a window of 400 ms acts, and the report says it was shorter than a second.
    let result = common::call(
        &client,
        "fault_run_latency_impact_scenario",
        json!({"url": service.app.url("/"), "duration": "4s", "rps": 20, "latency": 1000,
               "sched": "start:1500ms,duration:400ms",
               "proxies": [format!("{}={}", service.proxy_port, service.upstream.addr)]}),
    )
    .await
    .unwrap();
    let markdown = common::text(&result);
    assert!(!common::is_error(&result), "{markdown}");
    let report = result.structured_content.clone().unwrap();
    eprintln!("{}", summary("400 ms window", &report));
    assert!(report["faults"][0]["applications"].as_u64().unwrap() > 0);
    let window = &report["recovery"][0];
    assert_eq!(window["shorter_than_a_second"], true);
    assert_eq!((f(&window["from_s"]), f(&window["until_s"])), (1.5, 1.9));
    let during = phase(&report, "during");
    assert_eq!(during["requests"], 8, "{markdown}");
    assert!(f(&during["error_percent"]) > 50.0, "{markdown}");
    assert!(
        markdown.contains("Window 1.5–1.9 s (0.4 s, shorter than a second"),
        "{markdown}"
    );
    client.cancel().await.unwrap();
}
