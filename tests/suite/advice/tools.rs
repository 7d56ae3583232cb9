//! The advice tools' results through a real MCP client, with a stand-in OpenAI server: diffs that apply
//! with `patch` and `git apply`, code that must parse, SLOs, whole-file changes and deep analysis.

use crate::support::common;
use crate::support::llm_fakes;

use std::{collections::HashMap, path::Path, process::Command};

use llm_fakes::{FakeServer, Recorded, Reply};
use serde_json::{Value, json};

const MODEL: &str = "gpt-test";

async fn fault_for(server: &FakeServer) -> common::Client {
    let base = format!("{}/v1", server.url());
    let args = [
        "--llm-base-url",
        base.as_str(),
        "--llm-prompt-reasoning-model",
        MODEL,
    ];
    common::spawn_with(common::ServerSpec {
        agent_args: &args,
        env: HashMap::from([("FAULT_LLM_TIMEOUT_SECS".to_owned(), "10".to_owned())]),
        ..Default::default()
    })
    .await
}

/// A stand-in whose answers are `answers[i]` (the last one repeats), each JSON-encoded as message content.
async fn answering(answers: Vec<Value>) -> FakeServer {
    FakeServer::start(move |i, _| {
        let answer = &answers[i.min(answers.len() - 1)];
        Reply::openai_chat(MODEL, &answer.to_string())
    })
    .await
}

fn user_prompt(request: &Recorded) -> String {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Applies `diff` with `patch -p1` to a file named `name` holding `original`; returns the patched text.
fn apply_with_patch(original: &str, diff: &str, name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), original).unwrap();
    std::fs::write(dir.path().join("change.diff"), diff).unwrap();
    let output = Command::new("patch")
        .args(["-p1", "--forward", "--batch", "-i", "change.diff"])
        .current_dir(dir.path())
        .output()
        .expect("run patch");
    assert!(
        output.status.success(),
        "patch failed: {}{}\n{diff}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read_to_string(dir.path().join(name)).unwrap()
}

/// Applies `diff` with `git apply` (no repository needed) to `name` in `dir`.
fn apply_with_git(dir: &Path, diff: &str) {
    std::fs::write(dir.join("change.diff"), diff).unwrap();
    let output = Command::new("git")
        .args(["apply", "--verbose", "change.diff"])
        .current_dir(dir)
        .output()
        .expect("run git apply");
    assert!(
        output.status.success(),
        "git apply failed: {}\n{diff}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn diff_in_block(text: &str) -> &str {
    text.strip_prefix("```diff\n")
        .and_then(|t| t.strip_suffix("```"))
        .unwrap_or_else(|| panic!("not a ```diff block: {text}"))
}

const PY_SNIPPET: &str = "def fetch(url):\n    return requests.get(url).json()";
const PY_BETTER: &str = "def fetch(url, timeout=5.0):\n    response = requests.get(url, timeout=timeout)\n    response.raise_for_status()\n    return response.json()";

#[tokio::test]
async fn suggestion_is_a_diff_block_that_patches_the_snippet_into_the_new_code() {
    let server = answering(vec![
        json!({"new_code": PY_BETTER, "explanation": "adds a timeout"}),
    ])
    .await;
    let client = fault_for(&server).await;
    for tool in [
        "fault_suggest_better_function_reliability",
        "fault_suggest_better_function_performance",
    ] {
        let result = common::call_ok(
            &client,
            tool,
            json!({"snippet": PY_SNIPPET, "lang": "python", "score": 0.3, "target_score": 0.8}),
        )
        .await;
        let diff = diff_in_block(common::text(&result));
        assert!(
            diff.starts_with("--- a/snippet.py\n+++ b/snippet.py\n"),
            "{diff}"
        );
        assert_eq!(apply_with_patch(PY_SNIPPET, diff, "snippet.py"), PY_BETTER);
        let structured = result.structured_content.as_ref().unwrap();
        assert_eq!(structured["new_code"], PY_BETTER);
        assert_eq!(structured["diff"], diff);
        assert_eq!(structured["explanation"], "adds a timeout");
    }
    let prompt = user_prompt(&server.requests()[0]);
    assert!(prompt.contains("0.30") && prompt.contains("0.80") && prompt.contains(PY_SNIPPET));
    assert_eq!(
        server.requests()[0].body["response_format"]["json_schema"]["name"],
        "suggestion"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn fenced_new_code_and_trailing_newlines_still_give_an_exact_patch() {
    let original = "fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";
    let fenced = "```rust\nfn add(a: i32, b: i32) -> i32 {\n    a.saturating_add(b)\n}\n```";
    let server = answering(vec![
        json!({"new_code": fenced, "explanation": "saturating"}),
    ])
    .await;
    let client = fault_for(&server).await;
    let result = common::call_ok(
        &client,
        "fault_suggest_better_function_reliability",
        json!({"snippet": original, "lang": "rust", "score": 0.5, "target_score": 0.9}),
    )
    .await;
    let structured = result.structured_content.as_ref().unwrap();
    let new_code = structured["new_code"].as_str().unwrap();
    assert_eq!(
        new_code,
        "fn add(a: i32, b: i32) -> i32 {\n    a.saturating_add(b)\n}\n"
    );
    let diff = diff_in_block(common::text(&result));
    assert_eq!(apply_with_patch(original, diff, "snippet.rs"), new_code);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn new_code_that_does_not_parse_gets_one_repair_round() {
    let server = answering(vec![
        json!({"new_code": "def fetch(url:\n    return", "explanation": "broken"}),
        json!({"new_code": PY_BETTER, "explanation": "fixed"}),
    ])
    .await;
    let client = fault_for(&server).await;
    common::call_ok(
        &client,
        "fault_suggest_better_function_performance",
        json!({"snippet": PY_SNIPPET, "lang": "python", "score": 0.3, "target_score": 0.8}),
    )
    .await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let repair = user_prompt(&requests[1]);
    assert!(repair.contains("does not parse as python"), "{repair}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn new_code_that_never_parses_is_a_clear_error() {
    let server = answering(vec![
        json!({"new_code": "func fetch( {", "explanation": "broken"}),
    ])
    .await;
    let client = fault_for(&server).await;
    let result = common::call(
        &client,
        "fault_suggest_better_function_reliability",
        json!({"snippet": "func fetch() {}", "lang": "go", "score": 0.3, "target_score": 0.8}),
    )
    .await
    .unwrap();
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(
        message.contains(MODEL) && message.contains("does not parse as go"),
        "{message}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn scores_outside_zero_to_one_are_refused() {
    let server = answering(vec![json!({})]).await;
    let client = fault_for(&server).await;
    let result = common::call(
        &client,
        "fault_suggest_better_function_performance",
        json!({"snippet": PY_SNIPPET, "lang": "python", "score": 0.3, "target_score": 8}),
    )
    .await
    .unwrap();
    assert!(common::is_error(&result));
    assert!(
        common::text(&result).contains("target_score: 8 is out of range; accepted: 0 to 1"),
        "{}",
        common::text(&result)
    );
    assert!(server.requests().is_empty());
    // The schema states the range the check holds to.
    let tools = client.list_all_tools().await.unwrap();
    let suggest = tools
        .iter()
        .find(|tool| tool.name == "fault_suggest_better_function_performance")
        .expect("the suggestion tool is listed");
    for field in ["score", "target_score"] {
        let schema = &suggest.input_schema["properties"][field];
        assert_eq!(schema["minimum"], json!(0.0), "{field}: {schema}");
        assert_eq!(schema["maximum"], json!(1.0), "{field}: {schema}");
    }
    client.cancel().await.unwrap();
}

fn slo(kind: &str, objective: f64) -> Value {
    json!({
        "type": kind,
        "title": format!("{kind} objective"),
        "objective": objective,
        "explanation": "keeps users happy",
        "threshold": 0.3,
        "unit": "s",
        "window": "300s",
        "sli": {
            "prometheus": "histogram_quantile(0.95, sum(rate(http_request_duration_seconds_bucket[5m])) by (le))",
            "gcp/cloudrun": {
                "displayName": "p95 latency",
                "goal": 0.95,
                "calendarPeriod": "NONE",
                "serviceLevelIndicator": {"windowsBased": {"windowPeriod": "300s"}}
            }
        }
    })
}

#[tokio::test]
async fn slos_come_back_as_a_validated_json_array() {
    let server = answering(vec![
        // An objective of 100 is outside [0, 100): repaired once.
        json!({"slos": [slo("latency", 100.0)]}),
        // A bare array is accepted as the list.
        json!([slo("latency", 95.0), slo("availability", 99.9)]),
    ])
    .await;
    let client = fault_for(&server).await;
    let result = common::call_ok(
        &client,
        "fault_suggest_service_level_objectives_slo",
        json!({"snippet": PY_SNIPPET, "lang": "python"}),
    )
    .await;
    let array: Value = serde_json::from_str(common::text(&result)).unwrap();
    assert_eq!(
        array,
        json!([slo("latency", 95.0), slo("availability", 99.9)])
    );
    assert_eq!(result.structured_content.as_ref().unwrap()["slos"], array);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(user_prompt(&requests[1]).contains("/slos/0/objective"));
    assert_eq!(
        requests[0].body["response_format"]["json_schema"]["strict"],
        false
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn slo_of_an_unknown_type_is_an_error_after_one_repair() {
    let server = answering(vec![json!({"slos": [slo("throughput", 90.0)]})]).await;
    let client = fault_for(&server).await;
    let result = common::call(
        &client,
        "fault_suggest_service_level_objectives_slo",
        json!({"snippet": PY_SNIPPET, "lang": "python"}),
    )
    .await
    .unwrap();
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(
        message.contains("/slos/0/type") && message.contains(MODEL),
        "{message}"
    );
    client.cancel().await.unwrap();
}

const APP: &str = r#"import os

import httpx
from fastapi import FastAPI

UPSTREAM_URL = os.getenv("UPSTREAM_URL", "https://jsonplaceholder.typicode.com")

app = FastAPI()


@app.get("/")
def index():
    return httpx.get(f"{UPSTREAM_URL}/todos/1", headers={
        "Host": "jsonplaceholder.typicode.com"
    }).json()
"#;

const APP_NEW: &str = r#"import os

import httpx
from fastapi import FastAPI

UPSTREAM_URL = os.getenv("UPSTREAM_URL", "https://jsonplaceholder.typicode.com")

app = FastAPI()
client = httpx.Client(timeout=httpx.Timeout(5.0, connect=2.0))


@app.get("/")
def index():
    response = client.get(f"{UPSTREAM_URL}/todos/1", headers={
        "Host": "jsonplaceholder.typicode.com"
    })
    response.raise_for_status()
    return response.json()"#;

#[tokio::test]
async fn file_changes_return_the_file_as_read_and_a_diff_that_applies() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.py");
    std::fs::write(&file, APP).unwrap();
    let server = answering(vec![json!({
        "score": 0.2,
        "explanation": "blocking call without timeout",
        "new": APP_NEW,
        "dependencies": ["httpx", " "]
    })])
    .await;
    let client = fault_for(&server).await;
    let result = common::call_ok(
        &client,
        "fault_make_reliability_and_perf_changes",
        json!({"file": file.to_str().unwrap()}),
    )
    .await;
    let r: Value = serde_json::from_str(common::text(&result)).unwrap();
    assert_eq!(r["old"], APP);
    assert_eq!(r["score"], 0.2);
    assert_eq!(r["dependencies"], json!(["httpx"]));
    let new = r["new"].as_str().unwrap();
    assert_eq!(
        new,
        format!("{APP_NEW}\n"),
        "final newline follows the original"
    );
    let diff = r["diff"].as_str().unwrap();
    assert!(diff.starts_with("--- a/app.py\n+++ b/app.py\n"), "{diff}");
    assert_eq!(apply_with_patch(APP, diff, "app.py"), new);
    apply_with_git(dir.path(), diff);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), new);
    assert!(user_prompt(&server.requests()[0]).contains("`app.py`"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn file_changes_for_a_missing_file_say_so() {
    let server = answering(vec![json!({})]).await;
    let client = fault_for(&server).await;
    let result = common::call(
        &client,
        "fault_make_reliability_and_perf_changes",
        json!({"file": "/no/such/dir/app.py"}),
    )
    .await
    .unwrap();
    assert!(common::is_error(&result));
    assert!(common::text(&result).contains("file not found: /no/such/dir/app.py"));
    assert!(server.requests().is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn file_changes_refuse_devices_fifos_directories_large_and_non_source_files_at_once() {
    let server = answering(vec![json!({})]).await;
    let client = fault_for(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.py");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo failed");
    let large = dir.path().join("large.py");
    std::fs::write(&large, vec![b'#'; 20 * 1024 * 1024]).unwrap();
    let secret = dir.path().join("credentials");
    std::fs::write(&secret, "aws_secret_access_key = x\n").unwrap();
    let cases = [
        ("/dev/zero".to_owned(), "not a regular file"),
        (fifo.display().to_string(), "not a regular file"),
        (dir.path().display().to_string(), "directory"),
        (large.display().to_string(), "limit"),
        (secret.display().to_string(), "unsupported file type"),
        ("file:///tmp/\u{e9}t\u{e9}/app.py".to_owned(), "not found"),
    ];
    for (file, expected) in cases {
        let started = std::time::Instant::now();
        let result = common::call(
            &client,
            "fault_make_reliability_and_perf_changes",
            json!({ "file": file }),
        )
        .await
        .unwrap();
        let elapsed = started.elapsed();
        assert!(common::is_error(&result), "{file}: {result:?}");
        let text = common::text(&result).to_lowercase();
        assert!(
            text.contains(expected),
            "{file}: expected '{expected}' in: {text}"
        );
        assert!(
            elapsed < std::time::Duration::from_secs(1),
            "{file}: {elapsed:?}"
        );
    }
    assert!(
        server.requests().is_empty(),
        "nothing was sent to the model"
    );
    client.cancel().await.unwrap();
}

fn analysis(concerns: &[&str]) -> Value {
    let entries: Vec<Value> = concerns
        .iter()
        .map(|c| {
            json!({
                "concern": c,
                "summary": format!("{c} summary"),
                "findings": [{
                    "title": format!("{c} finding"),
                    "severity": "high",
                    "detail": "the upstream call has no timeout",
                    "recommendation": "set a timeout"
                }]
            })
        })
        .collect();
    json!({ "concerns": entries })
}

#[tokio::test]
async fn deep_analysis_reports_each_requested_concern_in_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.py");
    std::fs::write(&file, APP).unwrap();
    let server = answering(vec![
        analysis(&["reliability"]),
        analysis(&["threat", "reliability", "performance"]),
    ])
    .await;
    let client = fault_for(&server).await;
    let result = common::call_ok(
        &client,
        "fault_function_reliability_deep_analysis",
        json!({"file": file.to_str().unwrap(), "func": "index", "concerns": ["reliability", "threat"]}),
    ).await;
    let markdown = common::text(&result);
    assert!(
        markdown.starts_with("# Deep analysis of `index` (app.py, lines 11-15)"),
        "{markdown}"
    );
    let reliability = markdown
        .find("## Reliability")
        .expect("reliability section");
    let threats = markdown.find("## Threats").expect("threat section");
    assert!(reliability < threats, "in the order asked");
    assert!(!markdown.contains("## Performance"), "not asked for");
    assert!(markdown.contains("**reliability finding** (high)"));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the first answer lacked `threat`");
    assert!(user_prompt(&requests[1]).contains("lacks an entry for: threat"));
    let prompt = user_prompt(&requests[0]);
    assert!(prompt.contains("def index():") && !prompt.contains("import httpx"));
    let structured = result.structured_content.as_ref().unwrap();
    assert_eq!(structured["function"]["name"], "index");
    assert_eq!(structured["concerns"].as_array().unwrap().len(), 2);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn deep_analysis_refuses_unknown_concerns_and_mismatched_lang() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.py");
    std::fs::write(&file, APP).unwrap();
    let server = answering(vec![analysis(&["reliability"])]).await;
    let client = fault_for(&server).await;
    let path = file.to_str().unwrap();
    let result = common::call(
        &client,
        "fault_function_reliability_deep_analysis",
        json!({"file": path, "func": "index", "concerns": ["speed"]}),
    )
    .await
    .unwrap();
    assert!(common::is_error(&result));
    assert!(
        common::text(&result)
            .contains("unknown concern 'speed'; expected performance, reliability or threat")
    );
    let result = common::call(
        &client,
        "fault_function_reliability_deep_analysis",
        json!({"file": path, "func": "index", "lang": "go"}),
    )
    .await
    .unwrap();
    assert!(common::is_error(&result));
    assert!(
        common::text(&result).contains("lang 'go' does not match"),
        "{}",
        common::text(&result)
    );
    let result = common::call(
        &client,
        "fault_function_reliability_deep_analysis",
        json!({"file": path, "func": "nope"}),
    )
    .await
    .unwrap();
    assert!(common::is_error(&result));
    assert!(server.requests().is_empty());
    client.cancel().await.unwrap();
}
