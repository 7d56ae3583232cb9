//! `fault run` measuring whatever passes: a plain Python client's traffic counted and timed as the client saw
//! it, two proxies' results merged as one run over all their traffic, a real Prometheus scraping `fault run
//! --metrics` and `fault mcp-proxy --metrics`, and each refusal before anything starts.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{common, optional, scenario};

/// A plain Python client (`urllib`-level `http.client`, one keep-alive connection): `n` GETs of `paths` in
/// turn, printing each latency in ms as a JSON list.
const CLIENT: &str = r#"
import http.client, json, sys, time
port, n, paths = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
seen = []
for i in range(n):
    start = time.perf_counter()
    conn.request("GET", paths[i % len(paths)])
    response = conn.getresponse()
    response.read()
    seen.append((time.perf_counter() - start) * 1000.0)
print(json.dumps(seen))
"#;

/// Runs the Python client through `port`; its latencies (ms).
async fn python_client(port: u16, n: usize, paths: &str) -> Vec<f64> {
    let (port, n, paths) = (port.to_string(), n.to_string(), paths.to_owned());
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .args(["-c", CLIENT, &port, &n, &paths])
            .output()
            .expect("python3 runs")
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the client's JSON")
}

/// A running `fault run`, with the sandbox its stderr goes to.
struct Running {
    child: tokio::process::Child,
    command: common::FaultCommand,
}

impl Running {
    async fn wait(mut self) -> std::process::ExitStatus {
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("fault run ends by itself")
            .unwrap();
        if !status.success() {
            eprintln!("{}", self.command.sandbox().stderr());
        }
        status
    }
}

/// The body of `GET path` on 127.0.0.1:`port` (plain HTTP/1.0, so the answer ends at the close).
async fn http_get(port: u16, path: &str) -> String {
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_owned())
            .unwrap_or_default()
    })
    .await
    .unwrap()
}

/// `fault run` on a free port in front of `upstream`, with `extra` flags; waits until it listens.
async fn fault_run(upstream: &str, extra: &[&str]) -> (Running, u16) {
    let port = common::free_port();
    let mapping = format!("{port}={upstream}");
    let mut args = vec!["run", "--proxy", &mapping];
    args.extend_from_slice(extra);
    let mut command = common::fault_command(&args);
    let child = command.spawn().expect("start fault run");
    common::wait_until_listening(port, "fault run").await;
    (Running { child, command }, port)
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn percentile(report: &Value, name: &str) -> f64 {
    report["run"]["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["name"] == name)
        .unwrap()["latency_ms"]
        .as_f64()
        .unwrap()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_clients_traffic_is_counted_and_timed_as_the_client_saw_it() {
    let upstream = scenario::upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let (report, result) = (dir.path().join("run.md"), dir.path().join("run.json"));
    let (report_arg, result_arg) = (report.display().to_string(), result.display().to_string());
    let (run, port) = fault_run(
        &upstream.addr.to_string(),
        &[
            "--duration",
            "8s",
            "--report",
            &report_arg,
            "--result",
            &result_arg,
            "--group",
            "/delay/{ms}",
            "--with-latency",
            "--latency-mean",
            "15",
            "--latency-sched",
            "start:2s,duration:2s",
        ],
    )
    .await;
    // Latencies spread from 1 to 19 ms (no percentile at the edge of two clusters), and one error path.
    let mut paths: Vec<String> = (1..20).map(|ms| format!("/delay/{ms}")).collect();
    paths.push("/status/503".into());
    let seen = python_client(port, 200, &paths.join(",")).await;
    let status = run.wait().await;
    assert!(status.success());
    let result = read_json(&result);
    assert_eq!(
        result["run"]["requests"], 200,
        "every request the client sent"
    );
    assert_eq!(result["run"]["outcomes"]["http_error_by_status"]["503"], 10);
    let groups: Vec<(&str, u64)> = result["data"]["run"]["per_request"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["name"].as_str().unwrap(),
                g["samples"]["success"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(groups.contains(&("GET /delay/{ms}", 190)), "{groups:?}");
    let mut sorted = seen.clone();
    sorted.sort_by(f64::total_cmp);
    // The proxy never sees more than the client did; it misses the client's own time before sending and after
    // receiving, which a busy machine stretches to a few milliseconds.
    for (name, q) in [("p50", 0.50), ("p75", 0.75), ("p95", 0.95)] {
        let (ours, theirs) = (percentile(&result, name), quantile(&sorted, q));
        assert!(
            ours <= theirs + (theirs * 0.10).max(1.0) && ours >= theirs - (theirs * 0.15).max(3.0),
            "{name}: the report's {ours} ms, the client's {theirs} ms"
        );
    }
    assert!(
        !result["faults"][0]["windows"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let markdown = std::fs::read_to_string(&report).unwrap();
    assert!(markdown.starts_with("# Fault Proxy Report"), "{markdown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_proxies_results_merged_are_one_report_over_all_their_traffic() {
    use fault::report::impact::data::EncodedHistogram;
    let upstream = scenario::upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<String> = ["a.json", "b.json"]
        .iter()
        .map(|name| dir.path().join(name).display().to_string())
        .collect();
    let (a, port_a) = fault_run(
        &upstream.addr.to_string(),
        &[
            "--duration",
            "4s",
            "--result",
            &paths[0],
            "--group",
            "/delay/{ms}",
        ],
    )
    .await;
    let (b, port_b) = fault_run(
        &upstream.addr.to_string(),
        &[
            "--duration",
            "5s",
            "--result",
            &paths[1],
            "--group",
            "/delay/{ms}",
        ],
    )
    .await;
    let (seen_a, seen_b) = tokio::join!(
        python_client(port_a, 60, "/todos/1,/delay/3"),
        python_client(port_b, 90, "/delay/8,/status/404"),
    );
    assert!(a.wait().await.success() && b.wait().await.success());
    let mut merge = common::fault_command(&["report", "merge", &paths[0], &paths[1]]);
    let output = merge.output().await.unwrap();
    assert!(output.status.success(), "{}", merge.sandbox().stderr());
    let merged: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        merged["run"]["requests"],
        (seen_a.len() + seen_b.len()) as u64
    );
    let count = |report: &Value, name: &str| {
        report["data"]["run"]["per_request"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .map_or(0, |g| g["samples"]["success"].as_u64().unwrap())
    };
    assert_eq!(count(&merged, "GET /delay/{ms}"), 30 + 45);
    assert_eq!(count(&merged, "GET /todos/1"), 30);
    assert_eq!(merged["run"]["outcomes"]["http_error_by_status"]["404"], 45);
    // The merged percentiles are those of the two histograms added.
    let histogram = |report: &Value| {
        EncodedHistogram(
            report["data"]["run"]["samples"]["all_us"]
                .as_str()
                .unwrap()
                .to_owned(),
        )
        .decode()
        .unwrap()
    };
    let (ra, rb) = (
        read_json(Path::new(&paths[0])),
        read_json(Path::new(&paths[1])),
    );
    let mut all = histogram(&ra);
    all.add(histogram(&rb)).unwrap();
    for (name, q) in [("p50", 0.50), ("p95", 0.95)] {
        let expected = all.value_at_quantile(q) as f64 / 1000.0;
        let got = percentile(&merged, name);
        assert!(
            (got - expected).abs() <= expected * 0.001 + 0.01,
            "{name}: merged {got} ms, the histograms added {expected} ms"
        );
    }
}

/// A Prometheus started on 127.0.0.1 scraping `targets` every second, its storage in `dir`; `None` (skipped
/// out loud) when the Debian package is not installed.
fn prometheus(dir: &Path, targets: &[String]) -> Option<(std::process::Child, u16)> {
    let found = std::process::Command::new("prometheus")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        optional::skip(
            "prometheus",
            "`prometheus` is not installed (apt-get install prometheus)",
        );
        return None;
    }
    let port = common::free_port();
    let config = dir.join("prometheus.yml");
    let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: fault\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        ),
    )
    .unwrap();
    let child = std::process::Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start prometheus");
    Some((child, port))
}

/// The value of `query` (a single-valued PromQL expression) on the Prometheus at `port`.
async fn promql(port: u16, query: &str) -> Option<f64> {
    let encoded: String = query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let body = http_get(port, &format!("/api/v1/query?query={encoded}")).await;
    let answer: Value = serde_json::from_str(&body).ok()?;
    answer["data"]["result"][0]["value"][1]
        .as_str()?
        .parse()
        .ok()
}

/// `promtool check metrics` over the metrics page on `port`: its complaints, empty when clean.
async fn promtool_check(port: u16) -> String {
    let page = http_get(port, "/metrics").await;
    assert!(page.contains("# TYPE"), "a metrics page: {page}");
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
    .trim()
    .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_fault_run_and_mcp_proxy_and_its_counts_are_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    let (run_metrics, mcp_metrics) = (common::free_port(), common::free_port());
    let Some((mut prometheus, prom_port)) = prometheus(
        dir.path(),
        &[
            format!("127.0.0.1:{run_metrics}"),
            format!("127.0.0.1:{mcp_metrics}"),
        ],
    ) else {
        return;
    };
    let upstream = scenario::upstream().await;
    let result = dir.path().join("run.json");
    let (result_arg, metrics_arg) = (
        result.display().to_string(),
        format!("127.0.0.1:{run_metrics}"),
    );
    let (run, port) = fault_run(
        &upstream.addr.to_string(),
        &[
            "--duration",
            "12s",
            "--result",
            &result_arg,
            "--metrics",
            &metrics_arg,
            "--with-latency",
            "--latency-mean",
            "2",
        ],
    )
    .await;
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:\n  - type: error\n    tools: [echo]\n    first_n: 2\n",
    )
    .unwrap();
    let (plan_arg, mcp_arg) = (
        plan.display().to_string(),
        format!("127.0.0.1:{mcp_metrics}"),
    );
    let client = common::spawn_command(&[
        "mcp-proxy",
        "--plan",
        &plan_arg,
        "--metrics",
        &mcp_arg,
        "--",
        common::fault_bin(),
        "mcp-test-server",
    ])
    .await;
    for _ in 0..5 {
        let _ = common::call(&client, "echo", json!({"text": "x"})).await;
    }
    python_client(port, 120, "/todos/1,/status/500").await;
    for port in [run_metrics, mcp_metrics] {
        assert_eq!(promtool_check(port).await, "", "promtool on port {port}");
    }
    // A few scrapes after the last request.
    let mut exchanges = None;
    let mut calls = None;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        exchanges = promql(prom_port, "sum(fault_exchanges_total)").await;
        calls = promql(prom_port, "sum(fault_mcp_calls_total)").await;
        if exchanges == Some(120.0) && calls == Some(5.0) {
            break;
        }
    }
    assert_eq!(exchanges, Some(120.0));
    assert_eq!(calls, Some(5.0));
    let errors = promql(
        prom_port,
        "sum(fault_exchanges_total{outcome=\"http_error\"})",
    )
    .await;
    let faults = promql(prom_port, "sum(fault_mcp_faults_total{type=\"error\"})").await;
    client.cancel().await.unwrap();
    assert!(run.wait().await.success());
    let _ = prometheus.kill();
    let _ = prometheus.wait();
    let report = read_json(&result);
    assert_eq!(report["run"]["requests"], 120);
    assert_eq!(errors, report["run"]["outcomes"]["http_error"].as_f64());
    assert_eq!(faults, Some(2.0));
}

#[tokio::test]
async fn fault_run_refuses_bad_measuring_input_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    let missing = dir.path().join("missing/run.md").display().to_string();
    let cases: [(&[&str], &str); 6] = [
        (&["--metrics", &taken], "--metrics: cannot listen on"),
        (&["--metrics", "localhost:x"], "not an address"),
        (&["--group", "orders/{id}"], "does not start with '/'"),
        (&["--group", "/orders/{id"], "unclosed '{'"),
        (&["--report", &missing], "--report: no such directory"),
        (&["--slo", "99%"], "not an SLO"),
    ];
    for (flags, expected) in cases {
        let mut args = vec!["run", "--proxy", "0=127.0.0.1:9", "--duration", "30s"];
        args.extend_from_slice(flags);
        let mut run = common::fault_command(&args);
        let status = tokio::time::timeout(Duration::from_secs(20), run.status())
            .await
            .expect("refused at once")
            .unwrap();
        assert!(!status.success(), "{flags:?}");
        let stderr = run.sandbox().stderr();
        assert!(stderr.contains(expected), "{flags:?}: {stderr}");
        assert!(!stderr.contains("proxying"), "{flags:?} started: {stderr}");
    }
}
