//! The standalone HTML report as a user gets it: a tool's `report_path` and `fault mcp-proxy --report x.html`
//! write one page that holds the report, its charts and its figures, with nothing to fetch; a `report_path`
//! that cannot be written is refused before the run starts, naming the field.

use std::{path::Path, time::Instant};

use serde_json::{Value, json};

use crate::report::charts::chart_dir;
use crate::support::common;
use crate::support::scenario;

/// The page at `path`, checked for what makes it whole on its own: the report's title and tables, every
/// chart as inline SVG, the figures as JSON, and no reference to anything outside the file.
fn checked_page(path: &Path, title: &str, charts: &[&str]) -> String {
    let html = std::fs::read_to_string(path).expect("the page was written");
    assert!(
        html.starts_with("<!DOCTYPE html>"),
        "{}",
        &html[..200.min(html.len())]
    );
    assert!(
        html.contains(&format!("<h1>{title}</h1>")),
        "the report's title"
    );
    assert!(html.contains("<table>"), "the report's tables");
    for chart in charts {
        assert!(
            html.contains(&format!("id=\"chart-{chart}\"")),
            "no {chart} chart"
        );
    }
    assert_eq!(html.matches("<svg").count(), charts.len());
    assert!(html.contains("<script type=\"application/json\" id=\"figures\">"));
    // Nothing to fetch: no src or href attribute, no stylesheet or script from elsewhere, and a policy that
    // forbids any fetch.
    for attribute in [" src=", " href=", "@import", "url("] {
        assert!(
            !html.contains(attribute),
            "the page refers to something outside it: {attribute}"
        );
    }
    assert!(html.contains("default-src 'none'"));
    html
}

/// The figures the page carries.
fn page_figures(html: &str) -> Value {
    let start = html
        .find("id=\"figures\">")
        .map(|i| i + "id=\"figures\">".len())
        .expect("figures");
    let end = start + html[start..].find("</script>").expect("end of figures");
    serde_json::from_str(&html[start..end]).expect("figures are JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_path_writes_the_impact_run_as_one_page() {
    let upstream = scenario::upstream().await;
    let client = common::spawn().await;
    let path = chart_dir().join("impact.html");
    let result = common::call_ok(
        &client,
        "fault_run_latency_impact_scenario",
        json!({
            "url": upstream.url("/todos/1"),
            "duration": "2s",
            "rps": 10,
            "latency": 80,
            "baseline": true,
            "report_path": path.display().to_string(),
        }),
    )
    .await;
    let report = result
        .structured_content
        .clone()
        .expect("structuredContent");
    let html = checked_page(
        &path,
        "Scenarios Report",
        &["latency", "distribution", "errors", "rate"],
    );
    let figures = page_figures(&html);
    assert_eq!(figures["kind"], "impact");
    assert_eq!(
        figures["report"], report,
        "the page's figures are the result's"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_path_writes_the_chaos_run_as_one_page() {
    let client = common::spawn().await;
    let path = chart_dir().join("chaos.html");
    let result = common::call_ok(
        &client,
        "fault_run_mcp_chaos_scenario",
        json!({
            "server": {"command": common::fault_bin(), "args": ["mcp-test-server"]},
            "plan": {"faults": [{"type": "error", "tools": ["echo"], "first_n": 2}]},
            "calls": [{"tool": "echo", "arguments": {"text": "a"}},
                      {"tool": "get_item", "arguments": {"id": 1}}],
            "repeat": 4,
            "report_path": path.display().to_string(),
        }),
    )
    .await;
    let report = result
        .structured_content
        .clone()
        .expect("structuredContent");
    let html = checked_page(&path, "MCP Chaos Report", &["timeline", "availability"]);
    assert_eq!(page_figures(&html)["report"], report);
    client.cancel().await.unwrap();
}

/// Whether this process may write where its file permissions say it may not (root).
fn overrides_permissions() -> bool {
    use std::os::unix::fs::MetadataExt;
    let probe = tempfile::NamedTempFile::new().expect("a temporary file");
    probe
        .as_file()
        .metadata()
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_path_that_cannot_be_written_is_refused_before_the_run() {
    let upstream = scenario::upstream().await;
    let client = common::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let read_only = dir.path().join("read-only");
    std::fs::create_dir(&read_only).unwrap();
    let mut cases: Vec<(String, String, &str)> = vec![
        (
            "a missing directory".into(),
            dir.path().join("missing/report.html").display().to_string(),
            "no such directory",
        ),
        (
            "a directory".into(),
            dir.path().display().to_string(),
            "is a directory",
        ),
        (
            "a path over 4096 bytes".into(),
            format!("{}/{}.html", dir.path().display(), "r".repeat(4100)),
            "at most 4096 bytes",
        ),
        // sysfs takes no new file, whoever asks.
        (
            "a directory nobody may write to".into(),
            "/sys/fault-report.html".into(),
            "Permission denied",
        ),
    ];
    if overrides_permissions() {
        eprintln!("root: the read-only directory case is the /sys one (root writes anywhere else)");
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&read_only, std::fs::Permissions::from_mode(0o555)).unwrap();
        cases.push((
            "a read-only directory".into(),
            read_only.join("report.html").display().to_string(),
            "Permission denied",
        ));
    }
    for (case, path, says) in &cases {
        let started = Instant::now();
        let result = common::call(
            &client,
            "fault_run_latency_impact_scenario",
            json!({"url": upstream.url("/todos/1"), "duration": "30s", "latency": 10, "report_path": path}),
        )
        .await
        .expect("a tool result");
        let text = common::text(&result);
        assert!(common::is_error(&result), "{case}: {text}");
        assert!(text.starts_with("report_path: "), "{case}: {text}");
        assert!(text.contains(says), "{case}: {text}");
        assert!(
            started.elapsed().as_secs() < 5,
            "{case}: refused only after a run"
        );
    }
    assert_eq!(upstream.served(), 0, "no run started");
    // The chaos tool refuses the same way.
    let result = common::call(
        &client,
        "fault_run_mcp_chaos_scenario",
        json!({
            "server": {"command": common::fault_bin(), "args": ["mcp-test-server"]},
            "calls": [{"tool": "echo", "arguments": {"text": "a"}}],
            "report_path": dir.path().display().to_string(),
        }),
    )
    .await
    .expect("a tool result");
    assert!(common::is_error(&result));
    assert!(
        common::text(&result).starts_with("report_path: "),
        "{}",
        common::text(&result)
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_proxy_report_html_is_the_sessions_page() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:\n  - type: error\n    tools: [echo]\n    first_n: 2\n",
    )
    .unwrap();
    let page = dir.path().join("session.html");
    let (plan_arg, page_arg) = (plan.display().to_string(), page.display().to_string());
    let client = common::spawn_command(&[
        "mcp-proxy",
        "--plan",
        &plan_arg,
        "--report",
        &page_arg,
        "--",
        common::fault_bin(),
        "mcp-test-server",
    ])
    .await;
    for _ in 0..4 {
        let _ = common::call(&client, "echo", json!({"text": "x"})).await;
    }
    client.cancel().await.unwrap();
    let html = checked_page(&page, "MCP Chaos Report", &["timeline", "availability"]);
    let figures = page_figures(&html);
    assert_eq!(figures["kind"], "chaos");
    assert_eq!(figures["report"]["run"]["overall"]["calls"], 4);
    assert_eq!(figures["report"]["run"]["overall"]["faults_injected"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_run_report_html_is_the_sessions_page() {
    use std::io::{Read, Write};
    let upstream = scenario::upstream().await;
    let port = common::free_port();
    let page = chart_dir().join("run.html");
    let (mapping, page_arg) = (
        format!("{port}={}", upstream.addr),
        page.display().to_string(),
    );
    let mut run = common::fault_command(&[
        "run",
        "--proxy",
        &mapping,
        "--duration",
        "3s",
        "--with-latency",
        "--latency-mean",
        "20",
        "--report",
        &page_arg,
    ]);
    let mut child = run.spawn().expect("start fault run");
    // Requests through the proxy for two seconds, from a plain socket.
    let answered = tokio::task::spawn_blocking(move || {
        let mut answered = 0;
        let deadline = Instant::now() + std::time::Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                let _ = stream
                    .write_all(b"GET /todos/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
                let mut answer = Vec::new();
                let _ = stream.read_to_end(&mut answer);
                answered += usize::from(answer.starts_with(b"HTTP/1.1 200"));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        answered
    })
    .await
    .unwrap();
    assert!(child.wait().await.expect("fault run ends").success());
    assert!(answered >= 5, "{answered} answers through the proxy");
    // The impact report of what passed, its HTML page.
    let html = checked_page(
        &page,
        "Fault Proxy Report",
        &["latency", "distribution", "errors", "rate"],
    );
    let report = &page_figures(&html)["report"];
    assert!(
        report["run"]["requests"].as_u64().unwrap() >= answered as u64,
        "{report}"
    );
    assert!(
        report["proxy"]["fault_applications"].as_u64().unwrap() > 0,
        "{report}"
    );
}

#[tokio::test]
async fn fault_run_refuses_a_report_in_a_missing_directory_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("missing/run.html").display().to_string();
    let mut run = common::fault_command(&["run", "--proxy", "0=127.0.0.1:9", "--report", &page]);
    let status = run.status().await.expect("run fault run");
    assert!(!status.success());
    let stderr = run.sandbox().stderr();
    assert!(stderr.contains("--report: no such directory"), "{stderr}");
}
