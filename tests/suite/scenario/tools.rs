//! The `fault_run_*_impact_scenario` tools end to end: a real MCP client drives the built binary; a demo app
//! on 127.0.0.1 calls an upstream on 127.0.0.1 through the scenario's proxy mapping. Timing-sensitive tests
//! take a shared lock so they do not measure each other; each run lasts 1-3 s.

use crate::support::common;
use crate::support::scenario::{self, TIMING};

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ClientHandler,
    model::{CallToolRequestParams, ClientRequest, Request},
    service::{NotificationContext, PeerRequestOptions},
};
use serde_json::{Value, json};

/// The demo app wired to the upstream through `proxy_port`, plus the mapping to give the tool.
struct Topology {
    upstream: scenario::Server,
    app: scenario::Server,
    proxy_port: u16,
}

/// How the demo app calls its upstream.
#[derive(Debug, Clone, Copy)]
enum Calls {
    KeepAlive,
    NewConnectionEach,
}

impl Topology {
    async fn new() -> Self {
        Self::with(Calls::KeepAlive).await
    }

    async fn with(calls: Calls) -> Self {
        let upstream = scenario::upstream().await;
        let proxy_port = common::free_port();
        let base = format!("http://127.0.0.1:{proxy_port}");
        let app = match calls {
            Calls::KeepAlive => scenario::demo_app(base).await,
            Calls::NewConnectionEach => scenario::demo_app_new_connection_per_call(base).await,
        };
        Self {
            upstream,
            app,
            proxy_port,
        }
    }

    fn mapping(&self) -> String {
        format!("{}={}", self.proxy_port, self.upstream.addr)
    }

    /// Scenario arguments: load on the app's `/api<path>`, fault on the proxy in front of the upstream.
    fn args(&self, path: &str, extra: Value) -> Value {
        let mut args = json!({
            "url": self.app.url(&format!("/api{path}")),
            "method": "GET",
            "body": "",
            "duration": "2s",
            "num_clients": 1,
            "rps": 5,
            "timeout": 10,
            "proxies": [self.mapping()],
        });
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    }
}

async fn scenario(client: &common::Client, tool: &str, args: Value) -> (String, Value) {
    let result = common::call(client, tool, args).await.expect("tool call");
    let text = common::text(&result).to_owned();
    assert!(!common::is_error(&result), "{tool} failed: {text}");
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent");
    (text, structured)
}

fn p(figures: &Value, name: &str) -> f64 {
    figures["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name)
        .unwrap()["latency_ms"]
        .as_f64()
        .unwrap()
}

/// Rows of the markdown table whose header starts with `header_start`, as cells.
fn table(markdown: &str, header_start: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = markdown.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with(&format!("| {header_start}")))
        .unwrap_or_else(|| panic!("no table '{header_start}' in\n{markdown}"));
    lines[start + 2..]
        .iter()
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_owned())
                .collect()
        })
        .collect()
}

fn leading_number(cell: &str) -> f64 {
    cell.split_whitespace().next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_raises_p50_by_the_latency_and_tables_agree_with_structured_content() {
    let _timing = TIMING.lock().await;
    let topology = Topology::new().await;
    let client = common::spawn().await;
    let (markdown, report) = scenario(
        &client,
        "fault_run_latency_impact_scenario",
        topology.args(
            "/todos/1",
            json!({"latency": 300, "deviation": 0, "per_read_write_op": false, "direction": "ingress",
                   "side": "server", "num_clients": "2", "rps": "10", "baseline": true}),
        ),
    )
    .await;
    eprintln!("{markdown}");
    let run = &report["run"];
    let baseline = &report["baseline"];
    // Open model: exactly num_clients × rps × duration requests, slow or not.
    assert_eq!(run["requests"], 40, "{markdown}");
    assert_eq!(baseline["requests"], 40);
    assert_eq!(run["errors"], 0, "{markdown}");
    let rise = p(run, "p50") - p(baseline, "p50");
    assert!(
        (285.0..=315.0).contains(&rise),
        "p50 rose by {rise} ms\n{markdown}"
    );
    let comparison = &report["comparison"];
    assert_eq!(comparison["fault_p50_ms"].as_f64().unwrap(), p(run, "p50"));
    // Default SLOs: 95% @ 200ms must fail with +300 ms, so the scenario fails.
    assert_eq!(report["status"], "Failed");
    assert!(markdown.contains("| Failed"));

    // The markdown tables say what structuredContent says.
    let overview = table(&markdown, "Num. Requests");
    assert_eq!(leading_number(&overview[0][0]), 40.0);
    assert_eq!(leading_number(&overview[0][1]), 0.0);
    assert_eq!(
        leading_number(&overview[0][4]),
        run["mean_ms"].as_f64().unwrap()
    );
    let percentiles = table(&markdown, "Latency Percentile");
    assert_eq!(percentiles.len(), 5);
    for row in &percentiles {
        assert_eq!(leading_number(&row[1]), p(run, &row[0]), "{row:?}");
    }
    let parts = table(&markdown, "Part");
    assert_eq!(parts.len(), 2);
    for (row, key) in parts.iter().zip(["queueing", "service"]) {
        let part = &run[key];
        assert_eq!(leading_number(&row[1]), part["requests"].as_f64().unwrap());
        for (cell, field) in row[2..]
            .iter()
            .zip(["p50_ms", "p95_ms", "p99_ms", "max_ms"])
        {
            assert_eq!(
                cell,
                &format!("{:.2}", part[field].as_f64().unwrap()),
                "{key} {field}"
            );
        }
    }
    // The fault delays the answer, not the send.
    let service_p50 = run["service"]["p50_ms"].as_f64().unwrap();
    assert!(
        (p(run, "p50") - service_p50).abs() <= 5.0,
        "service p50 {service_p50} ms\n{markdown}"
    );
    let slos = table(&markdown, "SLO");
    assert_eq!(slos.len(), 2);
    for (row, verdict) in slos.iter().zip(run["slos"].as_array().unwrap()) {
        assert_eq!(row[0], verdict["name"].as_str().unwrap());
        assert_eq!(row[1] == "✅", verdict["passed"].as_bool().unwrap());
        assert_eq!(
            leading_number(&row[4]),
            verdict["bad_requests"].as_f64().unwrap()
        );
    }
    let impact = table(&markdown, "Run");
    assert_eq!(impact[0][0], "Baseline (no fault)");
    assert_eq!(leading_number(&impact[1][1]), p(run, "p50"));
    assert_eq!(run["per_second"].as_array().unwrap().len(), 2);
    assert_eq!(run["sparkline_p50"].as_str().unwrap().chars().count(), 2);
    // The proxy port is free again.
    std::net::TcpListener::bind(("127.0.0.1", topology.proxy_port)).expect("port freed");
}

/// Latencies in seconds of a 1024 B/s bandwidth scenario: a 4096-byte body, 1 call per second.
async fn bandwidth_run(calls: Calls, scope: &str, duration_s: u64) -> (String, Value) {
    let topology = Topology::with(calls).await;
    let client = common::spawn().await;
    scenario(
        &client,
        "fault_run_bandwidth_impact_scenario",
        topology.args(
            "/bytes/4096",
            json!({"rate": 1024, "unit": "bps", "scope": scope, "duration": format!("{duration_s}s"),
                   "rps": 1, "timeout": 30}),
        ),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bandwidth_per_connection_makes_every_4kb_response_take_about_4s() {
    // Not under TIMING: at this bandwidth each call takes seconds, and the bounds are hundreds of milliseconds wide.
    for calls in [Calls::NewConnectionEach, Calls::KeepAlive] {
        let (markdown, report) = bandwidth_run(calls, "connection", 5).await;
        let run = &report["run"];
        assert_eq!(run["requests"], 5, "{calls:?}\n{markdown}");
        assert_eq!(run["outcomes"]["success"], 5, "{calls:?}\n{markdown}");
        eprintln!(
            "bandwidth per connection, {calls:?}: p25 {} ms, p50 {} ms, p99 {} ms",
            p(run, "p25"),
            p(run, "p50"),
            p(run, "p99")
        );
        // 4096 bytes of body and about 80 of head at 1024 B/s: 4.1 s, ± 15% for every call.
        for name in ["p25", "p99"] {
            let seconds = p(run, name) / 1000.0;
            assert!(
                (3.4..=4.6).contains(&seconds),
                "{calls:?}: {name} {seconds}s\n{markdown}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bandwidth_with_proxy_scope_queues_the_calls_on_one_link() {
    // Not under TIMING: at this bandwidth each call takes seconds, and the bounds are hundreds of milliseconds wide.
    let (markdown, report) = bandwidth_run(Calls::KeepAlive, "proxy", 3).await;
    let run = &report["run"];
    assert_eq!(run["outcomes"]["success"], 3, "{markdown}");
    // Three bodies of 4.1 KB share 1024 B/s: the link is busy for 12 s, the last call ends near 12 s - 2 s.
    let last = p(run, "p99") / 1000.0;
    eprintln!(
        "bandwidth per proxy: p25 {} ms, p50 {} ms, p99 {} ms",
        p(run, "p25"),
        p(run, "p50"),
        p(run, "p99")
    );
    assert!(
        (8.5..=11.5).contains(&last),
        "slowest call {last}s\n{markdown}"
    );
    assert!(markdown.contains("shared by all connections"), "{markdown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_that_never_acted_makes_the_run_inconclusive() {
    // The app calls its upstream directly: the proxy in the mapping carries nothing.
    let upstream = scenario::upstream().await;
    let app = scenario::demo_app(format!("http://{}", upstream.addr)).await;
    let unused = common::free_port();
    let client = common::spawn().await;
    let (markdown, report) = scenario(
        &client,
        "fault_run_latency_impact_scenario",
        json!({"url": app.url("/api/todos/1"), "latency": 100, "duration": "1s", "rps": 2,
               "proxies": [format!("{unused}={}", upstream.addr)]}),
    )
    .await;
    assert_eq!(report["status"], "Passed");
    assert_eq!(report["proxy"]["fault_applications"], 0);
    assert!(
        report["inconclusive"]
            .as_str()
            .unwrap()
            .contains("acted 0 times"),
        "{report}"
    );
    assert!(markdown.contains("| Passed (inconclusive)"), "{markdown}");
    assert!(markdown.contains("acted 0 times"), "{markdown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blackhole_with_a_1s_timeout_makes_every_request_a_counted_timeout() {
    let topology = Topology::new().await;
    let client = common::spawn().await;
    let started = std::time::Instant::now();
    let (markdown, report) = scenario(
        &client,
        "fault_run_blackhole_impact_scenario",
        topology.args("/todos/1", json!({"timeout": 1, "rps": 3})),
    )
    .await;
    let run = &report["run"];
    assert_eq!(run["requests"], 6, "{markdown}");
    assert_eq!(run["outcomes"]["timeout"], 6, "{markdown}");
    assert_eq!(run["errors"], 6);
    assert_eq!(report["status"], "Failed");
    let outcomes = table(&markdown, "Outcome");
    assert_eq!(outcomes[3][0], "Timeout");
    assert_eq!(leading_number(&outcomes[3][1]), 6.0);
    // Never outlives duration + timeout + grace.
    assert!(started.elapsed() < Duration::from_secs(2 + 1 + 3));
}

/// Open files of process `pid` now.
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |dir| dir.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blackhole_at_2000_rps_stays_within_the_file_limit_and_the_time_bound() {
    let _timing = TIMING.lock().await;
    let upstream = scenario::upstream().await;
    let (transport, sandbox) = common::spawn_process(common::ServerSpec {
        agent_args: &["--max-scenario-rps", "2000"],
        ..Default::default()
    });
    let pid = transport.id().expect("server pid");
    // The server runs under a common default limit of 1024 open files.
    rustix::process::prlimit(
        rustix::process::Pid::from_raw(pid as i32),
        rustix::process::Resource::Nofile,
        rustix::process::Rlimit {
            current: Some(1024),
            maximum: rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum,
        },
    )
    .expect("lower the server's open-file limit");
    let client = common::handshake(transport, sandbox, ()).await;
    let watching = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let most_open = Arc::new(AtomicU64::new(0));
    let watcher = {
        let (watching, most_open) = (watching.clone(), most_open.clone());
        tokio::spawn(async move {
            while watching.load(Ordering::Relaxed) {
                most_open.fetch_max(open_files(pid) as u64, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let started = std::time::Instant::now();
    let (markdown, report) = scenario(
        &client,
        "fault_run_blackhole_impact_scenario",
        json!({"url": upstream.url("/todos/1"), "duration": "2s", "rps": 2000, "timeout": 5}),
    )
    .await;
    let took = started.elapsed();
    watching.store(false, Ordering::Relaxed);
    watcher.await.unwrap();
    let outcomes = &report["run"]["outcomes"];
    assert_eq!(report["run"]["requests"], 4000, "{markdown}");
    assert_eq!(outcomes["transport_error"], 0, "{markdown}");
    let (timeouts, not_started) = (
        outcomes["timeout"].as_u64().unwrap(),
        outcomes["not_started"].as_u64().unwrap(),
    );
    assert_eq!(timeouts + not_started, 4000, "{markdown}");
    assert!(
        timeouts <= u64::from(fault::load::DEFAULT_MAX_IN_FLIGHT),
        "{markdown}"
    );
    assert!(not_started > 3000, "{markdown}");
    assert!(
        markdown.contains("| Could not start (in-flight cap) |"),
        "{markdown}"
    );
    let most_open = most_open.load(Ordering::Relaxed);
    assert!(most_open < 1024, "{most_open} files open at most");
    // duration + timeout + grace, plus the server's start and report.
    assert!(took < Duration::from_secs(2 + 5 + 2 + 1), "took {took:?}");
    eprintln!(
        "blackhole at 2000 rps: {most_open} files open at most, {timeouts} timeouts, {not_started} not started, {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packet_loss_raises_the_tail_and_bodies_arrive_intact() {
    let _timing = TIMING.lock().await;
    let topology = Topology::new().await;
    let client = common::spawn().await;
    let (markdown, report) = scenario(
        &client,
        "fault_run_packet_loss_impact_scenario",
        topology.args(
            "/bytes/20000",
            // A segment lost 5 times in a row arrives 6.2 s late: a timeout long enough to see it arrive.
            json!({"loss_rate": 0.2, "direction": "ingress", "side": "server", "seed": 7,
                   "baseline": true, "rps": 10, "timeout": 30}),
        ),
    )
    .await;
    let run = &report["run"];
    // The demo app answers 502 on any corrupt byte: none.
    assert_eq!(run["errors"], 0, "{markdown}");
    assert_eq!(run["requests"], 20);
    let tail_rise = p(run, "p99") - p(&report["baseline"], "p99");
    assert!(tail_rise > 100.0, "p99 rose by {tail_rise} ms\n{markdown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jitter_widens_the_spread_whatever_the_connection_pattern() {
    let _timing = TIMING.lock().await;
    for calls in [Calls::NewConnectionEach, Calls::KeepAlive] {
        let topology = Topology::with(calls).await;
        let client = common::spawn().await;
        let (markdown, report) = scenario(
            &client,
            "fault_run_jitter_impact_scenario",
            topology.args(
                "/todos/1",
                json!({"amplitude": 150, "frequency": 5, "seed": 3, "baseline": true, "rps": 10,
                       "duration": "3s"}),
            ),
        )
        .await;
        let spread = |f: &Value| p(f, "p95") - p(f, "p25");
        let (with, without) = (spread(&report["run"]), spread(&report["baseline"]));
        eprintln!("jitter, {calls:?}: p95-p25 {without} ms → {with} ms");
        assert!(
            with >= without + 50.0,
            "{calls:?}: p95-p25 {without} → {with}\n{markdown}"
        );
        assert!(report["inconclusive"].is_null(), "{markdown}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_error_replaces_responses_and_keeps_connections_in_sync() {
    let topology = Topology::new().await;
    let client = common::spawn().await;
    let (markdown, report) = scenario(
        &client,
        "fault_run_http_error_impact_scenario",
        topology.args(
            "/todos/1",
            json!({"status_code": 500, "error_body": "injected", "probability": 1.0, "rps": 5}),
        ),
    )
    .await;
    let run = &report["run"];
    assert_eq!(
        run["outcomes"]["http_error_by_status"]["500"], 10,
        "{markdown}"
    );
    assert!(markdown.contains("500×10"));
    // The fault acted once per response it replaced.
    assert_eq!(report["proxy"]["fault_applications"], 10, "{markdown}");
    assert!(markdown.contains("fault acted 10 times"), "{markdown}");

    // Half the responses, on kept-alive connections: every answer is a clean 200 or 500.
    let (markdown, report) = scenario(
        &client,
        "fault_run_http_error_impact_scenario",
        topology.args(
            "/todos/1",
            json!({"status_code": 503, "probability": 0.5, "seed": 11, "rps": 20}),
        ),
    )
    .await;
    let outcomes = &report["run"]["outcomes"];
    let injected = outcomes["http_error_by_status"]["503"]
        .as_u64()
        .unwrap_or(0);
    assert_eq!(outcomes["transport_error"], 0, "{markdown}");
    assert_eq!(
        outcomes["success"].as_u64().unwrap() + injected,
        40,
        "{markdown}"
    );
    assert!((8..=32).contains(&injected), "{injected}\n{markdown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_error_answers_head_requests_without_a_body() {
    // An answer to HEAD announces a length but has no body: replaced or passed, the next answer on the
    // same kept-alive connection must still be read as an answer, not as that body.
    let upstream = scenario::upstream().await;
    let client = common::spawn().await;
    for probability in [1.0, 0.5] {
        let (markdown, report) = scenario(
            &client,
            "fault_run_http_error_impact_scenario",
            json!({"url": upstream.url("/todos/1"), "method": "HEAD", "status_code": 503,
                   "probability": probability, "seed": 3, "duration": "1s", "rps": 20, "timeout": 2}),
        )
        .await;
        let outcomes = &report["run"]["outcomes"];
        assert_eq!(outcomes["timeout"], 0, "{markdown}");
        assert_eq!(outcomes["transport_error"], 0, "{markdown}");
        let injected = outcomes["http_error_by_status"]["503"]
            .as_u64()
            .unwrap_or(0);
        assert_eq!(
            outcomes["success"].as_u64().unwrap_or(0) + injected,
            20,
            "{markdown}"
        );
        assert!(injected >= 5, "{injected}\n{markdown}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_topology_puts_the_proxy_in_front_of_the_url() {
    let upstream = scenario::upstream().await;
    let client = common::spawn().await;
    let (markdown, report) = scenario(
        &client,
        "fault_run_latency_impact_scenario",
        json!({"url": upstream.url("/todos/1"), "latency": 100, "duration": "1s", "rps": 4}),
    )
    .await;
    assert_eq!(report["run"]["requests"], 4);
    assert!(p(&report["run"], "p50") >= 100.0, "{markdown}");
    assert_eq!(upstream.served(), 4);
    assert!(
        report["faults"][0]["applied_on"]
            .as_str()
            .unwrap()
            .contains(&upstream.addr.to_string())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_topology_works_for_https_with_the_service_certificate() {
    let upstream = scenario::upstream_tls().await;
    let ca = scenario::tls_fixtures().join("ca.pem");
    let client = common::spawn_with(common::ServerSpec {
        env: [(
            "FAULT_PROXY_EXTRA_CA".to_owned(),
            ca.to_string_lossy().into_owned(),
        )]
        .into(),
        ..Default::default()
    })
    .await;
    let url = format!("https://127.0.0.1:{}/todos/1", upstream.addr.port());
    let (markdown, report) = scenario(
        &client,
        "fault_run_latency_impact_scenario",
        json!({"url": url, "latency": 100, "duration": "1s", "rps": 4}),
    )
    .await;
    assert_eq!(report["run"]["outcomes"]["success"], 4, "{markdown}");
    assert!(p(&report["run"], "p50") >= 100.0, "{markdown}");
    assert_eq!(upstream.served(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_error_on_an_https_url_without_proxies_replaces_every_response() {
    let upstream = scenario::upstream_tls().await;
    let ca = scenario::tls_fixtures().join("ca.pem");
    let client = common::spawn_with(common::ServerSpec {
        env: [(
            "FAULT_PROXY_EXTRA_CA".to_owned(),
            ca.to_string_lossy().into_owned(),
        )]
        .into(),
        ..Default::default()
    })
    .await;
    let url = format!("https://127.0.0.1:{}/todos/1", upstream.addr.port());
    let (markdown, report) = scenario(
        &client,
        "fault_run_http_error_impact_scenario",
        json!({"url": url, "status_code": 503, "probability": 1, "duration": "1s", "rps": 5,
               "timeout": 3}),
    )
    .await;
    let outcomes = &report["run"]["outcomes"];
    assert_eq!(outcomes["http_error_by_status"]["503"], 5, "{markdown}");
    assert_eq!(outcomes["timeout"], 0, "{markdown}");
    assert_eq!(report["proxy"]["fault_applications"], 5, "{markdown}");
    // The proxy spoke TLS to the service on the load generator's behalf.
    assert_eq!(upstream.served(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_are_tool_errors_naming_the_field() {
    let upstream = scenario::upstream().await;
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port();
    let closed_port = common::free_port();
    let url = upstream.url("/todos/1");
    let client = common::spawn().await;
    let cases = [
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "rps": 0}),
            "rps",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "num_clients": 0}),
            "num_clients",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "duration": "abc"}),
            "duration",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "duration": "0s"}),
            "duration",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "timeout": -1}),
            "timeout",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "rps": 1e12}),
            "rps",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": -5}),
            "latency",
        ),
        // Strings Rust would parse as NaN and infinity: refused by name, no panic of the handler.
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": "NaN"}),
            "latency",
        ),
        (
            "fault_run_jitter_impact_scenario",
            json!({"url": url, "amplitude": "NaN", "frequency": 5}),
            "amplitude",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "deviation": "inf"}),
            "deviation",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url}),
            "latency",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"latency": 10}),
            "url",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": "not a url", "latency": 10}),
            "url",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": format!("http://127.0.0.1:{closed_port}/"), "latency": 10}),
            "connect",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "direction": "up"}),
            "direction",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "side": "left"}),
            "side",
        ),
        (
            "fault_run_bandwidth_impact_scenario",
            json!({"url": url, "rate": 10, "unit": "furlongs"}),
            "unit",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "proxies": ["nonsense"]}),
            "proxies[0]",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "proxies": [format!("{busy_port}=127.0.0.1:1")]}),
            "proxies",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "slos": [{"objective": 120, "threshold_ms": 1}]}),
            "slos[0].objective",
        ),
        (
            "fault_run_http_error_impact_scenario",
            json!({"url": url, "status_code": 200}),
            "status_code",
        ),
        (
            "fault_run_http_error_impact_scenario",
            json!({"url": url, "probability": 2}),
            "probability",
        ),
    ];
    for (tool, args, field) in cases {
        let started = std::time::Instant::now();
        let result = common::call(&client, tool, args.clone())
            .await
            .expect("call");
        let text = common::text(&result);
        assert!(
            common::is_error(&result),
            "{args}: expected an error, got {text}"
        );
        assert!(
            text.contains(field),
            "{args}: '{text}' does not name {field}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{args}: slow refusal"
        );
    }
    // Still serving, and the busy port's owner is untouched.
    let (_, report) = scenario(
        &client,
        "fault_run_latency_impact_scenario",
        json!({"url": url, "latency": 1, "duration": "1s", "rps": 2}),
    )
    .await;
    assert_eq!(report["run"]["requests"], 2);
    drop(busy);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_required_field_is_named_like_every_other_field_error() {
    let upstream = scenario::upstream().await;
    let url = upstream.url("/todos/1");
    let client = common::spawn().await;
    let cases = [
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url}),
            "missing required field: latency",
        ),
        (
            "fault_run_blackhole_impact_scenario",
            json!({}),
            "url: is required: an absolute http:// or https:// URL (or give `requests`, a traffic mix)",
        ),
        (
            "fault_run_latency_impact_scenario",
            json!({"url": url, "latency": 10, "slos": [{"objective": 99}]}),
            "slos[0].threshold_ms: is required: a number of ms, more than 0 and at most 3600000, e.g. 350",
        ),
        (
            "fault_run_limit_data_impact_scenario",
            json!({"url": url, "bytes": " "}),
            "bytes: is required: a whole number of bytes, 0 to 1000000000000, e.g. 1024",
        ),
    ];
    for (tool, args, message) in cases {
        let result = common::call(&client, tool, args.clone())
            .await
            .expect("call");
        assert!(common::is_error(&result), "{args}: expected an error");
        // A top-level required field is named by the server before the tool reads its input.
        let top_level = message
            .split_once(": is required")
            .filter(|(field, _)| !field.contains(['.', '[']))
            .map(|(field, _)| format!("missing required field: {field}"));
        let text = common::text(&result);
        assert!(
            text == message || top_level.as_deref() == Some(text),
            "{args}: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blank_lists_mean_defaults_and_booleans_ignore_case() {
    let upstream = scenario::upstream().await;
    let client = common::spawn().await;
    let (_, report) = scenario(
        &client,
        "fault_run_latency_impact_scenario",
        json!({"url": upstream.url("/todos/1"), "latency": 1, "duration": "1s", "rps": 2,
               "slos": "", "headers": " ", "baseline": "True", "per_read_write_op": "FALSE"}),
    )
    .await;
    let slos: Vec<(f64, f64)> = report["run"]["slos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["objective"].as_f64().unwrap(),
                v["threshold_ms"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(slos, [(99.0, 350.0), (95.0, 200.0)]);
    assert_eq!(report["call"]["headers"], json!([]));
    assert_eq!(
        report["baseline"]["requests"], 2,
        "baseline \"True\" runs one"
    );
    assert_eq!(report["run"]["requests"], 2);

    let refused = common::call(
        &client,
        "fault_run_latency_impact_scenario",
        json!({"url": upstream.url("/todos/1"), "latency": 1, "baseline": "yes"}),
    )
    .await
    .expect("call");
    assert!(common::is_error(&refused));
    assert!(
        common::text(&refused).starts_with("baseline: expected true or false"),
        "{}",
        common::text(&refused)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_scenario_at_the_same_time_is_refused_clearly() {
    let upstream = scenario::upstream().await;
    let client = Arc::new(common::spawn().await);
    let args = json!({"url": upstream.url("/todos/1"), "latency": 10, "duration": "2s", "rps": 2});
    let first = {
        let client = client.clone();
        let args = args.clone();
        tokio::spawn(async move {
            common::call(&client, "fault_run_latency_impact_scenario", args).await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let second = common::call(&client, "fault_run_jitter_impact_scenario", {
        // The jitter tool's own fields: it refuses the latency tool's.
        let mut a = args.clone();
        a.as_object_mut().unwrap().remove("latency");
        a["amplitude"] = json!(10);
        a["frequency"] = json!(1);
        a
    })
    .await
    .unwrap();
    assert!(common::is_error(&second));
    assert!(
        common::text(&second).contains("one at a time"),
        "{}",
        common::text(&second)
    );
    let first = first.await.unwrap().unwrap();
    assert!(!common::is_error(&first), "{}", common::text(&first));
}

/// A client that counts progress notifications.
#[derive(Clone, Default)]
struct ProgressCounter(Arc<AtomicU64>);

impl ClientHandler for ProgressCounter {
    async fn on_progress(
        &self,
        _params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_each_second_and_cancellation_frees_the_ports() {
    let topology = Topology::new().await;
    let counter = ProgressCounter::default();
    let client = common::spawn_handler(common::ServerSpec::default(), counter.clone()).await;
    let args = topology.args("/hang", json!({"duration": "30s", "timeout": 30}));
    let request = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("fault_run_blackhole_impact_scenario")
            .with_arguments(args.as_object().unwrap().clone()),
    ));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2600)).await;
    assert!(
        counter.0.load(Ordering::Relaxed) >= 2,
        "progress notifications"
    );
    // The proxy holds its port while the scenario runs.
    assert!(std::net::TcpListener::bind(("127.0.0.1", topology.proxy_port)).is_err());
    handle.cancel(Some("test".into())).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while std::net::TcpListener::bind(("127.0.0.1", topology.proxy_port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "port not freed after cancel"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The slot is free again: a new scenario runs.
    let result = client
        .call_tool(
            CallToolRequestParams::new("fault_run_latency_impact_scenario").with_arguments(
                json!({"url": topology.upstream.url("/todos/1"), "latency": 1, "duration": "1s", "rps": 2})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await
        .unwrap();
    assert!(!result.is_error.unwrap_or(false), "{:?}", result.content);
}

#[tokio::test]
async fn a_public_listen_address_needs_the_operator_flag() {
    let upstream = scenario::upstream().await;
    let upstream_port = upstream.addr.port();
    let port = common::free_port();
    let args = json!({"url": upstream.url("/todos/1"), "latency": 5, "duration": "1s", "rps": 2,
                      "proxies": [format!("0.0.0.0:{port}=127.0.0.1:{upstream_port}")]});

    let client = common::spawn().await;
    let result = common::call(&client, "fault_run_latency_impact_scenario", args.clone())
        .await
        .expect("call");
    let text = common::text(&result);
    assert!(common::is_error(&result), "{text}");
    assert!(
        text.contains("proxies[0]") && text.contains("--allow-public-proxies"),
        "{text}"
    );
    client.cancel().await.unwrap();

    let client = common::spawn_with(common::ServerSpec {
        agent_args: &["--allow-public-proxies"],
        ..Default::default()
    })
    .await;
    let (markdown, _) = scenario(&client, "fault_run_latency_impact_scenario", args).await;
    assert!(markdown.contains(&format!("0.0.0.0:{port}")), "{markdown}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn load_beyond_the_operator_caps_names_the_field_and_the_flag() {
    let upstream = scenario::upstream().await;
    let url = upstream.url("/todos/1");
    let client = common::spawn().await;
    for (args, field, flag) in [
        (
            json!({"url": url, "latency": 5, "num_clients": 2, "rps": 600}),
            "rps",
            "--max-scenario-rps",
        ),
        (
            json!({"url": url, "latency": 5, "duration": "3m"}),
            "duration",
            "--max-scenario-duration",
        ),
    ] {
        let result = common::call(&client, "fault_run_latency_impact_scenario", args.clone())
            .await
            .expect("call");
        let text = common::text(&result);
        assert!(common::is_error(&result), "{args}: {text}");
        assert!(
            text.starts_with(field) && text.contains(flag),
            "{args}: {text}"
        );
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_and_limit_data_are_scenario_tools_with_the_full_report() {
    let upstream = scenario::upstream().await;
    let client = common::spawn().await;
    for (tool, kind, fault) in [
        (
            "fault_run_reset_impact_scenario",
            "reset",
            json!({"after_bytes": 10}),
        ),
        (
            "fault_run_limit_data_impact_scenario",
            "limit_data",
            json!({"bytes": "10"}),
        ),
    ] {
        let mut args = json!({"url": upstream.url("/todos/1"), "duration": "1s", "rps": 4,
                              "timeout": 2, "baseline": true});
        for (k, v) in fault.as_object().unwrap() {
            args[k] = v.clone();
        }
        let (markdown, report) = scenario(&client, tool, args).await;
        // Every answer is cut after 10 bytes of the response: none arrives whole.
        let run = &report["run"];
        assert_eq!(run["requests"], 4, "{tool}\n{markdown}");
        assert_eq!(run["errors"], 4, "{tool}\n{markdown}");
        assert_eq!(run["outcomes"]["transport_error"], 4, "{tool}\n{markdown}");
        assert_eq!(report["baseline"]["errors"], 0, "{tool}\n{markdown}");
        assert_eq!(report["status"], "Failed");
        assert_eq!(report["faults"][0]["kind"], kind);
        assert!(
            report["proxy"]["fault_applications"].as_u64().unwrap() >= 4,
            "{tool}\n{markdown}"
        );
        assert!(markdown.contains("Impact versus baseline"), "{markdown}");
    }
    let refused = common::call(
        &client,
        "fault_run_reset_impact_scenario",
        json!({"url": upstream.url("/todos/1"), "after_ms": -1}),
    )
    .await
    .expect("call");
    assert!(common::is_error(&refused));
    assert!(
        common::text(&refused).starts_with("after_ms: -1 is out of range"),
        "{}",
        common::text(&refused)
    );
}

#[tokio::test]
async fn every_routed_tool_is_named_in_the_instructions_and_the_tool_help() {
    let client = common::spawn().await;
    let instructions = client
        .peer_info()
        .and_then(|info| info.instructions.clone())
        .expect("instructions at initialize");
    let tools = client.list_all_tools().await.expect("tools/list");
    let help = common::fault_command(&["agent", "tool", "--help"])
        .output()
        .await
        .expect("fault agent tool --help");
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    for tool in &tools {
        let name = tool.name.as_ref();
        assert!(instructions.contains(name), "{name} not in: {instructions}");
        assert!(help.contains(name), "{name} not in: {help}");
    }
    // Every registered TCP fault has its tool, reset and limit_data included.
    for kind in ["reset", "limit_data"] {
        let name = format!("fault_run_{kind}_impact_scenario");
        assert!(tools.iter().any(|tool| tool.name == name), "{name}");
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_makes_every_call_through_damaged_answers_fail() {
    let topology = Topology::new().await;
    let client = common::spawn().await;
    let (markdown, report) = scenario(
        &client,
        "fault_run_corrupt_impact_scenario",
        topology.args(
            "/bytes/4000",
            json!({"rate": "1", "seed": 5, "baseline": true, "duration": "1s", "rps": 4,
                   "timeout": 2}),
        ),
    )
    .await;
    // Each of the three segments of every upstream answer has a bit flipped: the demo app finds the body corrupt
    // (502), or cannot read the answer (502, or a timeout when a length grew).
    let run = &report["run"];
    assert_eq!(run["requests"], 4, "{markdown}");
    assert_eq!(run["errors"], 4, "{markdown}");
    assert_eq!(report["baseline"]["errors"], 0, "{markdown}");
    assert_eq!(report["faults"][0]["kind"], "corrupt");
    assert!(markdown.contains("Corrupt: 100.0% of chunks"), "{markdown}");
    let refused = common::call(
        &client,
        "fault_run_corrupt_impact_scenario",
        json!({"url": topology.app.url("/api/todos/1"), "rate": 1.5}),
    )
    .await
    .expect("call");
    assert!(
        common::text(&refused).starts_with("rate: 1.5 is out of range; accepted: 0 to 1"),
        "{}",
        common::text(&refused)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extra_ca_that_is_not_a_file_fails_the_https_scenario_at_once() {
    let upstream = scenario::upstream_tls().await;
    let client = common::spawn_with(common::ServerSpec {
        env: [("FAULT_PROXY_EXTRA_CA".to_owned(), "/dev/zero".to_owned())].into(),
        ..Default::default()
    })
    .await;
    let url = format!("https://127.0.0.1:{}/todos/1", upstream.addr.port());
    let started = std::time::Instant::now();
    let result = common::call(
        &client,
        "fault_run_latency_impact_scenario",
        json!({"url": url, "latency": 10, "duration": "1s", "rps": 2}),
    )
    .await
    .expect("call");
    let text = common::text(&result);
    assert!(common::is_error(&result), "{text}");
    assert!(
        text.contains("/dev/zero") && text.contains("not a regular file"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    client.cancel().await.unwrap();
}
