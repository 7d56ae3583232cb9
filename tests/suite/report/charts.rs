//! The reports' charts as a user gets them: the PNG image block after the markdown in the impact scenario
//! tools' and the MCP chaos tool's results (readable at 800 px, a few hundred KB at most, a text
//! alternative), drawn from the same run the text describes. The images are kept under
//! `target/tmp/report_charts/` to look at.

use std::path::PathBuf;

use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock, Role};
use serde_json::{Value, json};

use crate::support::common;
use crate::support::scenario;

/// The most an image block may weigh.
const MAX_PNG_BYTES: usize = 300 * 1024;

/// Where the charts of a test run are kept.
pub(crate) fn chart_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_charts");
    std::fs::create_dir_all(&dir).expect("chart directory");
    dir
}

/// Keeps a report's structuredContent beside its chart.
fn keep_json(name: &str, report: &Value) {
    std::fs::write(chart_dir().join(name), report.to_string()).expect("keep the report");
}

/// The PNG of `result`'s one image block, after its one text block, checked as a user's host would show it:
/// 800 px wide, not too tall or heavy, for the user, with a text alternative (returned).
pub(crate) fn chart_png(result: &CallToolResult, keep_as: &str) -> (Vec<u8>, String) {
    let kinds: Vec<&str> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(_) => "text",
            ContentBlock::Image(_) => "image",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["text", "image"], "the markdown, then the chart");
    let Some(ContentBlock::Image(image)) = result.content.get(1) else {
        unreachable!("checked above");
    };
    assert_eq!(image.mime_type, "image/png");
    let png = base64::engine::general_purpose::STANDARD
        .decode(&image.data)
        .expect("base64 image data");
    std::fs::write(chart_dir().join(keep_as), &png).expect("keep the chart");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG signature");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!(width, 800, "readable at 800 px wide");
    assert!((300..=2000).contains(&height), "height {height}");
    assert!(png.len() <= MAX_PNG_BYTES, "{} bytes", png.len());
    let audience = image
        .annotations
        .as_ref()
        .and_then(|a| a.audience.clone())
        .unwrap_or_default();
    assert_eq!(audience, [Role::User]);
    let alt = image
        .meta
        .as_ref()
        .and_then(|m| m.0.get("alt"))
        .and_then(Value::as_str)
        .expect("a text alternative in _meta.alt")
        .to_owned();
    eprintln!("{keep_as}: {} bytes, {width}×{height}\n{alt}", png.len());
    (png, alt)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_impact_result_has_its_charts_as_a_png_after_the_markdown() {
    let upstream = scenario::upstream().await;
    let client = common::spawn().await;
    let result = common::call_ok(
        &client,
        "fault_run_latency_impact_scenario",
        json!({
            "url": upstream.url("/todos/1"),
            "duration": "3s",
            "rps": 20,
            "latency": 120,
            "deviation": 30,
            "baseline": true,
            "seed": 7,
        }),
    )
    .await;
    let markdown = common::text(&result);
    let report = result
        .structured_content
        .clone()
        .expect("structuredContent");
    let (_, alt) = chart_png(&result, "impact.png");
    keep_json("impact.json", &report);
    assert!(markdown.starts_with(&format!("# {}", report["title"].as_str().unwrap())));
    // The figures the charts draw are in the model the text comes from.
    let run = &report["run"];
    assert!(
        run["per_second"][0]["p99_ms"].as_f64().unwrap() > 100.0,
        "{run}"
    );
    let curve = run["latency_curve"].as_array().unwrap();
    assert_eq!(curve.last().unwrap()["percentile"], 100.0);
    assert_eq!(curve.last().unwrap()["latency_ms"], run["max_ms"]);
    // The text alternative says what the picture shows, with the report's numbers.
    assert!(alt.contains("The fault latency"), "{alt}");
    let comparison = &report["comparison"];
    assert!(
        alt.contains(&format!("p99 {} ms", comparison["fault_p99_ms"])),
        "{alt}"
    );
    let slos = report["run"]["slos"].as_array().unwrap();
    assert!(!slos.is_empty(), "no SLO was judged: {report}");
    for slo in slos {
        assert!(
            alt.contains(&format!("SLO {}", slo["name"].as_str().unwrap())),
            "{alt}"
        );
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_that_never_acted_says_inconclusive_in_the_alternative_text() {
    let upstream = scenario::upstream().await;
    let client = common::spawn().await;
    // Side client, ingress: a latency on requests of a GET without a body still acts; an http_error on a
    // proxy no request goes through never does.
    let result = common::call_ok(
        &client,
        "fault_run_latency_impact_scenario",
        json!({
            "url": upstream.url("/todos/1"),
            "duration": "1s",
            "rps": 5,
            "latency": 10,
            "proxies": [format!("{}=127.0.0.1:9", common::free_port())],
        }),
    )
    .await;
    let report = result
        .structured_content
        .clone()
        .expect("structuredContent");
    let (_, alt) = chart_png(&result, "impact-inconclusive.png");
    let why = report["inconclusive"]
        .as_str()
        .expect("an inconclusive run");
    assert!(alt.contains(&format!("Inconclusive: {why}")), "{alt}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chaos_result_has_its_timeline_as_a_png_after_the_markdown() {
    let client = common::spawn().await;
    let result = common::call_ok(
        &client,
        "fault_run_mcp_chaos_scenario",
        json!({
            "server": {"command": common::fault_bin(), "args": ["mcp-test-server"]},
            "plan": {"seed": 7, "faults": [
                {"type": "error", "tools": ["echo"], "probability": 0.3},
                {"type": "schema_drift", "tools": ["get_item"], "probability": 0.3},
                {"type": "latency", "tools": ["list_items"], "ms": 40},
                {"type": "hang", "tools": ["slow"], "first_n": 2},
            ]},
            "calls": [
                {"tool": "echo", "arguments": {"text": "a"}},
                {"tool": "get_item", "arguments": {"id": 3}},
                {"tool": "list_items", "arguments": {"count": 3}},
                {"tool": "slow", "arguments": {"milliseconds": 1}},
            ],
            "duration": "3s",
            "rate": "12",
            "concurrency": 4,
            "client": {"timeout_ms": 300, "retries": 1},
        }),
    )
    .await;
    let report = result
        .structured_content
        .clone()
        .expect("structuredContent");
    let (_, alt) = chart_png(&result, "chaos.png");
    keep_json("chaos.json", &report);
    // One timeline row per tool, every call accounted for in its marks.
    let timeline = &report["run"]["timeline"];
    assert_eq!(
        timeline["tools"],
        json!(["echo", "get_item", "list_items", "slow"])
    );
    let marked: u64 = timeline["marks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(marked, report["run"]["overall"]["calls"].as_u64().unwrap());
    let kinds: Vec<&str> = timeline["marks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["kind"].as_str())
        .collect();
    for kind in ["ok", "injected_error", "cancelled"] {
        assert!(kinds.contains(&kind), "no {kind} mark in {kinds:?}");
    }
    for tool in ["echo", "get_item", "list_items", "slow"] {
        assert!(alt.contains(&format!(" {tool}: ")), "{alt}");
    }
    client.cancel().await.unwrap();
}

/// The MCP Inspector (CLI mode, over stdio) gets the image block of a scenario result, and lists and reads the
/// MCP App view.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_inspector_gets_the_image_and_the_view() {
    let test = "report::charts::the_mcp_inspector_gets_the_image_and_the_view";
    let inspector = match crate::mcp::http::inspector() {
        Ok(path) => path,
        Err(why) => return crate::support::optional::skip(test, &why),
    };
    let upstream = scenario::upstream().await;
    let run = |extra: Vec<String>| {
        let mut command = tokio::process::Command::new(&inspector);
        command
            .args(["--cli", common::fault_bin(), "agent", "tool"])
            .args(extra)
            .kill_on_drop(true);
        async move {
            let output =
                tokio::time::timeout(std::time::Duration::from_secs(120), command.output())
                    .await
                    .expect("the Inspector finishes within 120 s")
                    .unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(
                output.status.success(),
                "{stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            serde_json::from_str::<Value>(&stdout)
                .unwrap_or_else(|e| panic!("the Inspector's output is not JSON ({e}): {stdout}"))
        }
    };
    let args = |pairs: &[&str]| pairs.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let url = format!("url={}", upstream.url("/todos/1"));
    let called = run(args(&[
        "--method",
        "tools/call",
        "--tool-name",
        "fault_run_latency_impact_scenario",
        "--tool-arg",
        &url,
        "--tool-arg",
        "duration=1s",
        "--tool-arg",
        "latency=20",
    ]))
    .await;
    assert_ne!(called["isError"], true, "{called}");
    let types: Vec<&str> = called["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert_eq!(types, ["text", "image"], "{called}");
    assert_eq!(called["content"][1]["mimeType"], "image/png");
    let listed = run(args(&["--method", "resources/list"])).await;
    assert_eq!(
        listed["resources"][0]["uri"], "ui://fault/report",
        "{listed}"
    );
    assert_eq!(
        listed["resources"][0]["mimeType"],
        "text/html;profile=mcp-app"
    );
    let read = run(args(&[
        "--method",
        "resources/read",
        "--uri",
        "ui://fault/report",
    ]))
    .await;
    let html = read["contents"][0]["text"].as_str().unwrap_or_default();
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("ui/initialize"),
        "{read}"
    );
}
