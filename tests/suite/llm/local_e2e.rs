//! Every LLM tool end to end against a real model served locally (`shared/llm/local-llm.sh start`: llama.cpp
//! with SmolLM2-135M behind the OpenAI API, an Ollama-API shim, an embedding server), through both APIs.
//!
//! Runs when the `FAULT_TEST_*` variables printed by `local-llm.sh env` are set; otherwise it is skipped out
//! loud (a failure under `FAULT_REQUIRE_ALL=1`). The model's answers are valid JSON but meaningless, so this
//! checks validity and plumbing: every result is well-formed (diffs apply, scores in range, SLOs typed) or is
//! the "no valid answer after one repair" or "stopped at N tokens" refusal; nothing else is accepted, and a
//! timeout is a failure. It prints, per tool and API, how many answers were valid first time, after one
//! repair, invalid after it, or stopped at the token limit.
//!
//! `FAULT_TEST_E2E_RUNS` (default 2) sets the calls per tool and API; `FAULT_TEST_E2E_MAX_TOKENS` (unset:
//! each task's own budget) bounds every answer alike; `FAULT_TEST_E2E_TIMEOUT_SECS` (default 900) each request;
//! `FAULT_TEST_E2E_PARALLEL` (default 4) how many tool/API pairs run at once; `FAULT_TEST_E2E_TOOLS`
//! (comma-separated suffixes, e.g. `score_performance,slo`) picks tools; `FAULT_TEST_E2E_REPORT` names a
//! file to write the table to. A request that times out fails the test (after the table is printed): raise
//! the timeout or lower the answer bound on a slow machine rather than let a silent model pass.

use crate::support::common;
use crate::support::optional;

use std::{
    collections::HashMap,
    fmt::Write as _,
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use fault::llm::{self, LlmSettings, Provider};
use futures::StreamExt;
use serde_json::{Value, json};

const SNIPPET: &str = "def fetch(url):\n    return requests.get(url).json()";
const APP: &str = "import requests\n\n\ndef fetch(url):\n    return requests.get(url).json()\n";

struct LocalStack {
    openai_base: String,
    openai_model: String,
    ollama_url: String,
    embed_base: String,
    embed_model: String,
    embed_dim: u32,
}

fn local_stack() -> Option<LocalStack> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    Some(LocalStack {
        openai_base: var("FAULT_TEST_OPENAI_BASE_URL")?,
        openai_model: var("FAULT_TEST_OPENAI_MODEL")?,
        ollama_url: var("FAULT_TEST_OLLAMA_URL")?,
        embed_base: var("FAULT_TEST_EMBED_BASE_URL")?,
        embed_model: var("FAULT_TEST_EMBED_MODEL")?,
        embed_dim: var("FAULT_TEST_EMBED_DIM")?.parse().ok()?,
    })
}

/// The local stack, or `None` after a skip notice naming what is missing.
fn local_stack_or_skip(test: &str) -> Option<LocalStack> {
    let stack = local_stack();
    if stack.is_none() {
        optional::skip(
            test,
            "the local LLM stack: FAULT_TEST_OPENAI_BASE_URL, FAULT_TEST_OPENAI_MODEL, FAULT_TEST_OLLAMA_URL, \
             FAULT_TEST_EMBED_BASE_URL, FAULT_TEST_EMBED_MODEL and FAULT_TEST_EMBED_DIM are not all set; run \
             `bash ../shared/llm/local-llm.sh start` and export what it prints",
        );
    }
    stack
}

#[derive(Default, Clone, Copy)]
struct Tally {
    first_time: u32,
    after_repair: u32,
    failed: u32,
    /// Refused because the model was still writing at the task's token limit.
    cut: u32,
    timed_out: u32,
}

/// How the last call went, from the log lines `llm::ask_json` writes.
fn outcome_from_log(log: &str) -> Option<&'static str> {
    let last = log.lines().rev().find(|l| {
        l.contains("answer valid first time")
            || l.contains("answer valid after one repair")
            || l.contains("answer invalid after one repair")
    })?;
    Some(if last.contains("answer valid first time") {
        "first"
    } else if last.contains("valid after one repair") {
        "repair"
    } else {
        "failed"
    })
}

fn patched(original: &str, diff: &str, name: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), original).unwrap();
    std::fs::write(dir.path().join("d.diff"), diff).unwrap();
    let output = Command::new("patch")
        .args(["-p1", "--batch", "-i", "d.diff"])
        .current_dir(dir.path())
        .output()
        .expect("patch");
    assert!(output.status.success(), "patch failed on:\n{diff}");
    std::fs::read_to_string(dir.path().join(name)).unwrap()
}

/// Checks a successful result's shape; panics with the tool name when it is wrong.
fn assert_valid(tool: &str, result: &rmcp::model::CallToolResult, app: &Path) {
    let text = common::text(result);
    let structured = result.structured_content.clone().unwrap_or(Value::Null);
    match tool {
        "fault_score_performance" | "fault_score_reliability" => {
            let v: Value = serde_json::from_str(text).unwrap();
            let score = v["score"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&score), "{tool}: {text}");
            assert!(!v["explanation"].as_str().unwrap().is_empty());
        }
        "fault_suggest_better_function_performance"
        | "fault_suggest_better_function_reliability" => {
            assert!(
                text.starts_with("```diff\n") && text.ends_with("```"),
                "{tool}: {text}"
            );
            let diff = structured["diff"].as_str().unwrap();
            let new_code = structured["new_code"].as_str().unwrap();
            if !diff.is_empty() {
                assert_eq!(patched(SNIPPET, diff, "snippet.py"), new_code, "{tool}");
            }
        }
        "fault_suggest_service_level_objectives_slo" => {
            let v: Value = serde_json::from_str(text).unwrap();
            for slo in v.as_array().unwrap() {
                assert!(
                    ["latency", "availability", "error"].contains(&slo["type"].as_str().unwrap())
                );
                let objective = slo["objective"].as_f64().unwrap();
                assert!((0.0..100.0).contains(&objective), "{tool}: {text}");
                assert!(slo["sli"]["gcp/cloudrun"].is_object());
            }
        }
        "fault_make_reliability_and_perf_changes" => {
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(v["old"], std::fs::read_to_string(app).unwrap());
            let diff = v["diff"].as_str().unwrap();
            if !diff.is_empty() {
                assert_eq!(patched(APP, diff, "app.py"), v["new"].as_str().unwrap());
            }
        }
        "fault_function_reliability_deep_analysis" => {
            assert!(
                text.starts_with("# Deep analysis of `fetch`"),
                "{tool}: {text}"
            );
        }
        other => panic!("unexpected tool {other}"),
    }
}

/// The seven tools with their arguments.
fn tool_calls(app_path: &str) -> Vec<(&'static str, Value)> {
    vec![
        (
            "fault_score_performance",
            json!({"snippet": SNIPPET, "lang": "python"}),
        ),
        (
            "fault_score_reliability",
            json!({"snippet": SNIPPET, "lang": "python"}),
        ),
        (
            "fault_suggest_better_function_performance",
            json!({"snippet": SNIPPET, "lang": "python", "score": 0.3, "target_score": 0.8}),
        ),
        (
            "fault_suggest_better_function_reliability",
            json!({"snippet": SNIPPET, "lang": "python", "score": 0.3, "target_score": 0.8}),
        ),
        (
            "fault_suggest_service_level_objectives_slo",
            json!({"snippet": SNIPPET, "lang": "python"}),
        ),
        (
            "fault_make_reliability_and_perf_changes",
            json!({"file": app_path}),
        ),
        (
            "fault_function_reliability_deep_analysis",
            json!({"file": app_path, "func": "fetch", "concerns": ["reliability"]}),
        ),
    ]
}

struct Settings {
    runs: u32,
    /// `FAULT_LLM_MAX_TOKENS` for every answer; `None` keeps each task's own budget.
    max_tokens: Option<String>,
    timeout_secs: String,
}

/// `runs` calls of one tool through one API, on a server of its own (its own log tells how each went).
async fn run_tool(
    api: &'static str,
    tool: &'static str,
    stack: &LocalStack,
    settings: &Settings,
) -> (Tally, f64) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fault.log");
    let app = dir.path().join("app.py");
    std::fs::write(&app, APP).unwrap();
    let log_arg = log.to_str().unwrap().to_owned();
    let global = ["--log-file", log_arg.as_str(), "--log-level", "fault=info"];
    let base = if api == "openai" {
        &stack.openai_base
    } else {
        &stack.ollama_url
    };
    let agent_args = [
        "--llm-client",
        api,
        "--llm-base-url",
        base.as_str(),
        "--llm-prompt-reasoning-model",
        stack.openai_model.as_str(),
    ];
    let mut env = HashMap::from([(
        "FAULT_LLM_TIMEOUT_SECS".to_owned(),
        settings.timeout_secs.clone(),
    )]);
    if let Some(max_tokens) = &settings.max_tokens {
        env.insert("FAULT_LLM_MAX_TOKENS".to_owned(), max_tokens.clone());
    }
    let client = common::spawn_with(common::ServerSpec {
        global_args: &global,
        agent_args: &agent_args,
        env,
    })
    .await;
    let args = tool_calls(app.to_str().unwrap())
        .into_iter()
        .find(|(name, _)| *name == tool)
        .map(|(_, args)| args)
        .unwrap();
    let mut tally = Tally::default();
    let started = Instant::now();
    for _ in 0..settings.runs {
        let result = common::call(&client, tool, args.clone()).await.unwrap();
        let log_text = std::fs::read_to_string(&log).unwrap_or_default();
        if common::is_error(&result) {
            let message = common::text(&result);
            if message.contains("did not answer within") {
                // Counted here so the table shows it; the test fails on it at the end.
                tally.timed_out += 1;
            } else if message.contains("tokens, the most this answer can need") {
                tally.cut += 1;
            } else {
                assert!(
                    message.contains("did not give a valid answer after one repair"),
                    "{api} {tool}: plumbing failure, not a model failure: {message}"
                );
                tally.failed += 1;
            }
        } else {
            assert_valid(tool, &result, &app);
            match outcome_from_log(&log_text) {
                Some("repair") => tally.after_repair += 1,
                _ => tally.first_time += 1,
            }
        }
        // Each call is judged on its own log lines.
        std::fs::write(&log, "").unwrap();
    }
    println!(
        "{api} {tool}: first={} repair={} failed={} cut={} timed_out={}",
        tally.first_time, tally.after_repair, tally.failed, tally.cut, tally.timed_out
    );
    client.cancel().await.unwrap();
    (
        tally,
        started.elapsed().as_secs_f64() / f64::from(settings.runs),
    )
}

#[tokio::test]
async fn every_llm_tool_against_the_local_model_through_openai_and_ollama_apis() {
    let Some(stack) = local_stack_or_skip(
        "llm::local_e2e::every_llm_tool_against_the_local_model_through_openai_and_ollama_apis",
    ) else {
        return;
    };
    let _model = optional::LOCAL_CHAT_MODEL.lock().await;
    let env_or =
        |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.to_owned());
    let settings = Settings {
        runs: env_or("FAULT_TEST_E2E_RUNS", "2").parse().unwrap_or(2),
        max_tokens: std::env::var("FAULT_TEST_E2E_MAX_TOKENS")
            .ok()
            .filter(|v| !v.trim().is_empty()),
        timeout_secs: env_or("FAULT_TEST_E2E_TIMEOUT_SECS", "900"),
    };
    let parallel: usize = env_or("FAULT_TEST_E2E_PARALLEL", "4").parse().unwrap_or(4);
    let only = std::env::var("FAULT_TEST_E2E_TOOLS").ok();
    let pairs: Vec<(&'static str, &'static str)> = ["openai", "ollama"]
        .into_iter()
        .flat_map(|api| tool_calls("").into_iter().map(move |(tool, _)| (api, tool)))
        .filter(|(_, tool)| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|t| tool.ends_with(t.trim())))
        })
        .collect();
    // llama.cpp serves several sequences at once for little more than one: run calls side by side.
    let results: Vec<_> = futures::stream::iter(pairs.iter().map(|(api, tool)| {
        let settings = &settings;
        let stack = &stack;
        async move { ((*api, *tool), run_tool(api, tool, stack, settings).await) }
    }))
    .buffer_unordered(parallel.max(1))
    .collect()
    .await;
    let mut report = String::from(
        "| API | tool | runs | valid first time | valid after one repair | invalid after one repair | \
         stopped at the token limit | timed out | mean s per call |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    let mut totals = Tally::default();
    for (api, tool) in &pairs {
        let (t, secs) = results
            .iter()
            .find(|(key, _)| key == &(*api, *tool))
            .map(|(_, r)| *r)
            .unwrap();
        let _ = writeln!(
            report,
            "| {api} | {tool} | {} | {} | {} | {} | {} | {} | {secs:.0} |",
            settings.runs, t.first_time, t.after_repair, t.failed, t.cut, t.timed_out
        );
        totals.first_time += t.first_time;
        totals.after_repair += t.after_repair;
        totals.failed += t.failed;
        totals.cut += t.cut;
        totals.timed_out += t.timed_out;
    }
    let _ = writeln!(
        report,
        "\nTotal: {} valid first time, {} after one repair, {} invalid after one repair, {} stopped at the token \
         limit, {} timed out (max tokens {}, timeout {}s).",
        totals.first_time,
        totals.after_repair,
        totals.failed,
        totals.cut,
        totals.timed_out,
        settings
            .max_tokens
            .as_deref()
            .unwrap_or("each task's budget"),
        settings.timeout_secs
    );
    println!("{report}");
    if let Ok(path) = std::env::var("FAULT_TEST_E2E_REPORT") {
        std::fs::write(path, &report).unwrap();
    }
    assert_eq!(
        totals.timed_out,
        0,
        "{} calls timed out (FAULT_TEST_E2E_TIMEOUT_SECS={}, max tokens {}):\n{report}",
        totals.timed_out,
        settings.timeout_secs,
        settings
            .max_tokens
            .as_deref()
            .unwrap_or("each task's budget")
    );
    assert!(
        totals.first_time + totals.after_repair > 0,
        "no tool gave a single valid answer:\n{report}"
    );
}

#[tokio::test]
async fn embeddings_from_the_local_servers_through_both_apis() {
    let Some(stack) =
        local_stack_or_skip("llm::local_e2e::embeddings_from_the_local_servers_through_both_apis")
    else {
        return;
    };
    let texts = vec!["def fetch(url): pass".to_owned(), "fn main() {}".to_owned()];
    for (provider, base) in [
        (Provider::OpenAi, stack.embed_base.clone()),
        (Provider::Ollama, stack.ollama_url.clone()),
    ] {
        let options = LlmSettings {
            provider,
            embed_model: stack.embed_model.clone(),
            embed_dimension: stack.embed_dim,
            embed_base_url: Some(base.parse().unwrap()),
            ..LlmSettings::default()
        };
        let policy = llm::RetryPolicy {
            timeout: Duration::from_secs(300),
            ..llm::RetryPolicy::default()
        };
        let embedder = llm::embedder_with_policy(&options, policy).unwrap();
        let vectors = embedder.embed(&texts).await.unwrap();
        assert_eq!(vectors.len(), 2);
        assert!(vectors.iter().all(|v| v.len() == stack.embed_dim as usize));
        assert_ne!(vectors[0], vectors[1]);

        // A wrong configured dimension is caught and explained.
        let wrong = LlmSettings {
            embed_dimension: stack.embed_dim + 1,
            ..options
        };
        let err = llm::embedder_with_policy(&wrong, policy)
            .unwrap()
            .embed(&texts)
            .await
            .unwrap_err();
        assert!(err.to_string().contains(&stack.embed_model), "{err}");
    }
}

#[tokio::test]
async fn a_model_still_writing_at_the_limit_is_stopped_and_refused_through_both_apis() {
    let Some(stack) = local_stack_or_skip(
        "llm::local_e2e::a_model_still_writing_at_the_limit_is_stopped_and_refused_through_both_apis",
    ) else {
        return;
    };
    let _model = optional::LOCAL_CHAT_MODEL.lock().await;
    for (api, base) in [
        ("openai", &stack.openai_base),
        ("ollama", &stack.ollama_url),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("fault.log");
        let log_arg = log.to_str().unwrap().to_owned();
        let agent_args = [
            "--llm-client",
            api,
            "--llm-base-url",
            base.as_str(),
            "--llm-prompt-reasoning-model",
            stack.openai_model.as_str(),
        ];
        // No SLO list fits in 16 tokens: the real server stops the model there and says so.
        let client = common::spawn_with(common::ServerSpec {
            global_args: &["--log-file", log_arg.as_str(), "--log-level", "fault=info"],
            agent_args: &agent_args,
            env: HashMap::from([("FAULT_LLM_MAX_TOKENS".to_owned(), "16".to_owned())]),
        })
        .await;
        let result = common::call(
            &client,
            "fault_suggest_service_level_objectives_slo",
            json!({"snippet": SNIPPET, "lang": "python"}),
        )
        .await
        .unwrap();
        assert!(common::is_error(&result), "{api}: {result:?}");
        let message = common::text(&result);
        assert!(
            message.contains("was stopped at 16 tokens")
                && message.contains("FAULT_LLM_MAX_TOKENS"),
            "{api}: {message}"
        );
        let log_text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            log_text.contains("answer cut at the token limit")
                && !log_text.contains("asking for a repair"),
            "{api}: one request, no repair:\n{log_text}"
        );
        client.cancel().await.unwrap();
    }
}
