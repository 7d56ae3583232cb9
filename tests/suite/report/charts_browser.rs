//! The report pages in a real browser: Chromium, driven by Playwright from Python, opens the standalone HTML
//! of a real impact run and of a real MCP chaos run and checks what a person sees: every chart drawn,
//! hovering a chart shows the values under the pointer, a series toggle hides that series, no console error,
//! no request beyond the file itself. The screenshots it takes are the book's and the README's (`FAULT_UPDATE_SCREENSHOTS=1`
//! copies them to `docs/src/charts/`). Needs Chromium (`$FAULT_TEST_CHROMIUM`, else `chromium` on PATH) and a
//! Python with Playwright; skips out loud without them.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::report::charts::chart_dir;
use crate::support::common;
use crate::support::optional;
use crate::support::scenario;

/// Chromium and a Python that can drive it, or why not.
fn browser() -> Result<(String, String), String> {
    let chromium = std::env::var("FAULT_TEST_CHROMIUM")
        .ok()
        .map(PathBuf::from)
        .or_else(|| {
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.exists())
        })
        .ok_or("no Chromium (apt-get install chromium, or set FAULT_TEST_CHROMIUM)")?;
    let python = common::python_with(&["playwright"])?;
    Ok((chromium.display().to_string(), python))
}

/// What the browser saw of `page`; screenshots named `prefix-<chart>.png` in the chart directory.
fn open_in_browser(chromium: &str, python: &str, page: &Path, prefix: &str) -> Value {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/report/browser/check_page.py");
    let sandbox = common::Sandbox::new("report-browser");
    let output = common::python_command(python, &sandbox)
        .arg(script)
        .args([
            chromium,
            &page.display().to_string(),
            &chart_dir().display().to_string(),
            prefix,
        ])
        .output()
        .expect("run the browser script");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "browser script failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// The page made no request but for its own file, and logged no error.
fn assert_self_contained(seen: &Value, page: &Path) {
    assert_eq!(seen["console_errors"], json!([]), "console errors");
    let own = format!("file://{}", page.display());
    let requests: Vec<&str> = seen["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(requests, [own.as_str()], "the page fetched something");
}

fn keep_screenshots(names: &[&str]) {
    if std::env::var("FAULT_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1") {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/charts");
        std::fs::create_dir_all(&docs).unwrap();
        for name in names {
            std::fs::copy(chart_dir().join(name), docs.join(name)).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_impact_page_draws_its_charts_and_shows_values_on_hover_in_chromium() {
    let test = "the_impact_page_draws_its_charts_and_shows_values_on_hover_in_chromium";
    let (chromium, python) = match browser() {
        Ok(found) => found,
        Err(why) => return optional::skip(test, &why),
    };
    let upstream = scenario::upstream().await;
    let client = common::spawn().await;
    let page = chart_dir().join("browser-impact.html");
    common::call_ok(
        &client,
        "fault_run_latency_impact_scenario",
        json!({
            "url": upstream.url("/todos/1"),
            "duration": "6s",
            "rps": 25,
            "latency": 150,
            "deviation": 60,
            "baseline": true,
            "seed": 3,
            "report_path": page.display().to_string(),
        }),
    )
    .await;
    client.cancel().await.unwrap();
    let _heavy = common::CPU_HEAVY.lock().await;
    let seen = open_in_browser(&chromium, &python, &page, "impact");
    assert_self_contained(&seen, &page);
    let charts = &seen["charts"];
    for chart in ["latency", "distribution", "errors", "rate"] {
        assert!(
            charts[chart]["marks"].as_u64().unwrap() > 10,
            "{chart} drawn: {seen}"
        );
        assert!(
            charts[chart]["series_hidden"].as_u64().unwrap() > 0,
            "{chart} toggle: {seen}"
        );
        assert_eq!(
            charts[chart]["series_hidden"], charts[chart]["series_drawn"],
            "{chart}"
        );
    }
    let hover = |chart: &str| {
        charts[chart]["hover"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(hover("latency").starts_with("second "), "{seen}");
    assert!(
        hover("latency").contains("p99 ") && hover("latency").contains("baseline"),
        "{seen}"
    );
    assert!(hover("distribution").contains("with the fault"), "{seen}");
    assert!(hover("errors").contains("errors"), "{seen}");
    assert!(
        hover("rate").contains(" offered, ") && hover("rate").contains(" achieved"),
        "{seen}"
    );
    keep_screenshots(&[
        "impact-latency.png",
        "impact-distribution.png",
        "impact-errors.png",
    ]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chaos_page_draws_its_timeline_and_shows_calls_on_hover_in_chromium() {
    let test = "the_chaos_page_draws_its_timeline_and_shows_calls_on_hover_in_chromium";
    let (chromium, python) = match browser() {
        Ok(found) => found,
        Err(why) => return optional::skip(test, &why),
    };
    let client = common::spawn().await;
    let page = chart_dir().join("browser-chaos.html");
    common::call_ok(
        &client,
        "fault_run_mcp_chaos_scenario",
        json!({
            "server": {"command": common::fault_bin(), "args": ["mcp-test-server"]},
            "plan": {"seed": 7, "faults": [
                {"type": "error", "tools": ["echo"], "probability": 0.2},
                {"type": "schema_drift", "tools": ["get_item"], "probability": 0.2},
                {"type": "latency", "tools": ["list_items"], "ms": 40},
                {"type": "hang", "tools": ["slow"], "first_n": 3},
            ]},
            "calls": [
                {"tool": "echo", "arguments": {"text": "a"}},
                {"tool": "get_item", "arguments": {"id": 3}},
                {"tool": "list_items", "arguments": {"count": 3}},
                {"tool": "slow", "arguments": {"milliseconds": 1}},
            ],
            "duration": "5s",
            "rate": "16",
            "concurrency": 4,
            "client": {"timeout_ms": 300, "retries": 1},
            "report_path": page.display().to_string(),
        }),
    )
    .await;
    client.cancel().await.unwrap();
    let _heavy = common::CPU_HEAVY.lock().await;
    let seen = open_in_browser(&chromium, &python, &page, "chaos");
    assert_self_contained(&seen, &page);
    let charts = &seen["charts"];
    for chart in ["timeline", "availability"] {
        assert!(
            charts[chart]["marks"].as_u64().unwrap() > 10,
            "{chart} drawn: {seen}"
        );
    }
    assert!(
        charts["timeline"]["series_hidden"].as_u64().unwrap() > 0,
        "{seen}"
    );
    let hover = charts["timeline"]["hover"].as_str().unwrap_or_default();
    assert!(hover.contains(" s: ") && hover.contains(" ms"), "{seen}");
    assert!(
        charts["availability"]["hover"]
            .as_str()
            .unwrap_or_default()
            .contains("A×C"),
        "{seen}"
    );
    keep_screenshots(&["chaos-timeline.png"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_app_view_shows_the_chaos_report_in_a_minimal_host() {
    let test = "the_mcp_app_view_shows_the_chaos_report_in_a_minimal_host";
    let (chromium, python) = match browser() {
        Ok(found) => found,
        Err(why) => return optional::skip(test, &why),
    };
    if let Err(why) = common::python_with(&["mcp", "playwright"]) {
        return optional::skip(test, &why);
    }
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/report/browser/app_host.py");
    let sandbox = common::Sandbox::new("report-app");
    let _heavy = common::CPU_HEAVY.lock().await;
    let output = common::python_command(&python, &sandbox)
        .arg(script)
        .args([
            common::fault_bin(),
            &chromium,
            &chart_dir().display().to_string(),
        ])
        .output()
        .expect("run the host script");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "host script failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    // The client that declared MCP Apps: the tool names the view, the view is an MCP App, the result has the
    // image and what the view shows.
    assert_eq!(
        seen["tool_meta"],
        json!({"ui": {"resourceUri": "ui://fault/report"}})
    );
    assert_eq!(seen["view_mime"], "text/html;profile=mcp-app");
    assert_eq!(seen["content_types"], json!(["text", "image"]));
    assert_eq!(seen["result_meta_keys"], json!(["io.github.fault/view"]));
    // A client that declared nothing: no view named, nothing in _meta; the text and the image.
    assert_eq!(seen["plain_tool_meta"], Value::Null);
    assert_eq!(seen["plain_result_meta"], Value::Null);
    assert_eq!(seen["plain_content_types"], json!(["text", "image"]));
    // In the host's frame: the handshake as the specification orders it, the charts, a value on hover, the
    // frame grown to the view, no error and no fetch.
    let log: Vec<&str> = seen["host_log"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        log[..2],
        ["ui/initialize", "ui/notifications/initialized"],
        "{log:?}"
    );
    assert!(log.contains(&"ui/notifications/size-changed"), "{log:?}");
    assert_eq!(seen["charts"], 2, "{seen}");
    assert!(seen["frame_height"].as_f64().unwrap() > 600.0, "{seen}");
    let hover = seen["hover"].as_str().unwrap_or_default();
    assert!(hover.contains(" s: "), "{seen}");
    assert_eq!(seen["console_errors"], json!([]));
    let requests: Vec<&str> = seen["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(requests.len(), 1, "only the host page itself: {requests:?}");
}

/// The rows of the markdown's Requests table for `name`, as cells.
fn request_row<'a>(rows: &'a [Vec<String>], name: &str) -> &'a [String] {
    rows.iter()
        .find(|row| row.first().is_some_and(|c| c == name) && row.len() == 11)
        .unwrap_or_else(|| panic!("no Requests row for {name} in {rows:?}"))
}

/// A three-request mix built by hand (checkout slow in the fault's window): the standalone page and the MCP
/// App view each show the chart per request and the Requests table, a row per request with its SLO verdicts,
/// and hovering the chart names the request under the pointer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_the_app_view_show_each_request_of_a_mix_in_chromium() {
    let test = "the_page_and_the_app_view_show_each_request_of_a_mix_in_chromium";
    let (chromium, python) = match browser() {
        Ok(found) => found,
        Err(why) => return optional::skip(test, &why),
    };
    if let Err(why) = common::python_with(&["mcp", "playwright"]) {
        return optional::skip(test, &why);
    }
    let report = crate::report::figures::mixed_report();

    // The standalone page.
    let page = chart_dir().join("browser-impact-mix.html");
    std::fs::write(
        &page,
        fault::report::chart::page::impact_page(&report).unwrap(),
    )
    .unwrap();
    let _heavy = common::CPU_HEAVY.lock().await;
    let seen = open_in_browser(&chromium, &python, &page, "impact-mix");
    assert_self_contained(&seen, &page);
    let charts = &seen["charts"];
    assert!(charts["requests"]["marks"].as_u64().unwrap() > 10, "{seen}");
    // The first toggle is checkout's: it hides checkout's marks.
    assert!(
        charts["requests"]["series_hidden"].as_u64().unwrap() > 0,
        "{seen}"
    );
    // Hovering 40% across three columns: search, the second.
    let hover = charts["requests"]["hover"].as_str().unwrap_or_default();
    assert!(
        hover.starts_with("search: GET http://127.0.0.1:9090/search")
            && hover.contains("SLO search: 99% @ 350ms: met"),
        "{seen}"
    );
    assert!(
        charts["rate"]["hover"]
            .as_str()
            .unwrap_or_default()
            .contains("30 offered"),
        "{seen}"
    );

    // The MCP App view, given the result a scenario tool returns: what to show in _meta, the figures in
    // structuredContent.
    let view = chart_dir().join("app-view.html");
    std::fs::write(&view, fault::report::chart::app::view_html()).unwrap();
    let result = chart_dir().join("app-view-result.json");
    let body = fault::report::chart::page::impact_body(&report).unwrap();
    std::fs::write(
        &result,
        json!({
            "content": [{"type": "text", "text": fault::report::impact::render(&report)}],
            "structuredContent": report,
            "_meta": {(fault::report::chart::app::VIEW_META_KEY): {"kind": "impact", "body": body}},
        })
        .to_string(),
    )
    .unwrap();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/report/browser/app_view.py");
    let sandbox = common::Sandbox::new("report-app-mix");
    let output = common::python_command(&python, &sandbox)
        .arg(script)
        .args([
            chromium.as_str(),
            &view.display().to_string(),
            &result.display().to_string(),
            &chart_dir().display().to_string(),
            "requests",
        ])
        .output()
        .expect("run the view script");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "view script failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(
        seen["charts"],
        json!(["latency", "requests", "distribution", "errors", "rate"])
    );
    let rows: Vec<Vec<String>> = serde_json::from_value(seen["rows"].clone()).unwrap();
    let checkout = request_row(&rows, "checkout");
    assert_eq!(checkout[2], "100");
    assert_eq!(checkout[10], "❌ checkout: 99% @ 350ms");
    assert_eq!(request_row(&rows, "search")[10], "✅ search: 99% @ 350ms");
    let home = request_row(&rows, "home");
    assert_eq!(
        (home[3].as_str(), home[4].as_str()),
        ("1 (1.0%)", "HTTP 503×1")
    );
    // Hovering 15% across: checkout, the first column.
    let hover = seen["hover"].as_str().unwrap_or_default();
    assert!(
        hover.starts_with("checkout: POST") && hover.contains("SLO checkout: 99% @ 350ms: missed"),
        "{seen}"
    );
    assert_eq!(seen["console_errors"], json!([]));
    let requests: Vec<&str> = seen["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(requests.len(), 1, "only the host page itself: {requests:?}");
}
