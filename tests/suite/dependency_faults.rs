//! Our own fault proxy (the library `fault run` is built on, in process) in front of the real local embedding
//! server while the index tool runs, and in front of the real local chat model while an LLM tool runs: each
//! fault ends the call within its bound with an error naming the endpoint, what went wrong there and what to
//! do; the server keeps serving; and for the index nothing half-written is left: the next run without the fault
//! ends with exactly the chunks of a fault-free index.
//!
//! Needs the local LLM stack (`FAULT_TEST_EMBED_BASE_URL`, `FAULT_TEST_OPENAI_BASE_URL` and
//! `FAULT_TEST_OPENAI_MODEL` from `bash ../shared/llm/local-llm.sh start`); without it each test is skipped out
//! loud.

use crate::common;
use crate::index_support;
use crate::optional;

use std::{
    collections::HashMap,
    path::Path,
    time::{Duration, Instant},
};

use fault::proxy::{self, ProxyConfig, ProxyHandle, cli::parse_fault_flags};
use index_support::{agent_args, fixture_repo, server_env};
use serde_json::{Value, json};

/// The bound within which a faulted call must end: the request timeout (10 s) times the tries (1 + 1 retry),
/// backoff and the walk, with room for a loaded machine.
const BOUND: Duration = Duration::from_secs(45);

/// Our fault proxy in front of `upstream`'s port with the faults of `flags` (as `fault run` takes them), and
/// `upstream` with the proxy's port instead.
async fn behind_the_proxy(upstream: &url::Url, flags: &str) -> (ProxyHandle, String) {
    let port = upstream.port_or_known_default().unwrap();
    let proxy = proxy::start(ProxyConfig {
        mappings: vec![format!("0=127.0.0.1:{port}").parse().unwrap()],
        faults: parse_fault_flags(flags).unwrap(),
        seed: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    let mut faulted = upstream.clone();
    faulted
        .set_port(Some(proxy.local_addrs()[0].port()))
        .unwrap();
    let faulted = faulted.as_str().trim_end_matches('/').to_owned();
    (proxy, faulted)
}

async fn index_on(client: &common::Client, repo: &Path) -> rmcp::model::CallToolResult {
    common::call(
        client,
        "fault_index_source_code",
        json!({"source_dir": repo.display().to_string(), "lang": "python"}),
    )
    .await
    .expect("tool call")
}

/// A server indexing with the embeddings at `embed_base`: with a 10 s request timeout and one retry when
/// `faulted`, else the suite's generous defaults (the real model on a loaded machine).
async fn server(data: &Path, embed_base: &str, faulted: bool) -> common::Client {
    let args = agent_args(embed_base, "embedded");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut env: HashMap<String, String> = server_env(data);
    if faulted {
        env.insert("FAULT_LLM_TIMEOUT_SECS".into(), "10".into());
        env.insert("FAULT_LLM_MAX_RETRIES".into(), "1".into());
    }
    common::spawn_with(common::ServerSpec {
        agent_args: &args,
        env,
        ..Default::default()
    })
    .await
}

#[tokio::test]
async fn each_fault_in_front_of_the_embeddings_ends_the_index_clearly_and_loses_nothing() {
    let test = "dependency_faults::each_fault_in_front_of_the_embeddings_ends_the_index_clearly_and_loses_nothing";
    let Some(embed_base) = std::env::var("FAULT_TEST_EMBED_BASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        optional::skip(
            test,
            "the local embedding server: FAULT_TEST_EMBED_BASE_URL is not set (run `bash \
             ../shared/llm/local-llm.sh start` and export what it prints)",
        );
        return;
    };
    let upstream = url::Url::parse(&embed_base).unwrap();

    // A fault-free index of the same tree: what every run must end with.
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("faults-demo"));
    let clean_data = tempfile::tempdir().unwrap();
    let clean = server(clean_data.path(), &embed_base, false).await;
    let expected = index_on(&clean, &repo).await;
    assert!(!common::is_error(&expected), "{}", common::text(&expected));
    let expected = expected.structured_content.unwrap()["chunks_total"].clone();
    clean.cancel().await.unwrap();

    // The fault, and what the error must say about it.
    let cases: [(&str, &[&str]); 7] = [
        (
            "--with-http-error --http-error-status-code 503",
            &["HTTP 503", "run again when it is back"],
        ),
        (
            "--with-http-error --http-error-status-code 429",
            &["HTTP 429", "limiting the rate", "wait, then run again"],
        ),
        (
            "--with-http-error --http-error-status-code 500",
            &["HTTP 500", "run again when it is back"],
        ),
        (
            "--with-latency --latency-mean 15000",
            &["did not answer within 10s", "FAULT_LLM_TIMEOUT_SECS"],
        ),
        (
            "--with-blackhole",
            &["did not answer within 10s", "FAULT_LLM_TIMEOUT_SECS"],
        ),
        (
            "--with-reset --reset-after-bytes 0",
            &["cannot reach", "Connection reset"],
        ),
        (
            "--with-limit-data --limit-data-bytes 100",
            &["connection closed before message completed"],
        ),
    ];
    for (flags, says) in cases {
        let (proxy, faulted) = behind_the_proxy(&upstream, flags).await;

        let data = tempfile::tempdir().unwrap();
        let client = server(data.path(), &faulted, true).await;
        let started = Instant::now();
        let result = index_on(&client, &repo).await;
        let took = started.elapsed();
        let message = common::text(&result).to_owned();
        println!("{flags}: {:.1} s: {message}", took.as_secs_f64());
        assert!(common::is_error(&result), "{flags}: {message}");
        assert!(took < BOUND, "{flags}: {took:?}");
        // The dependency named by its address, the fault seen, what to do; and that a re-run continues.
        let address = format!("127.0.0.1:{}", proxy.local_addrs()[0].port());
        assert!(message.contains(&address), "{flags}: {message}");
        assert!(
            message.contains("running the index again continues from there"),
            "{flags}: {message}"
        );
        for word in says {
            assert!(message.contains(word), "{flags}: {message}");
        }
        // The server keeps serving.
        let listed = common::call(
            &client,
            "fault_list_function_names",
            json!({"file": repo.join("app/server.py").display().to_string()}),
        )
        .await
        .unwrap();
        assert!(!common::is_error(&listed), "{flags}: {listed:?}");
        client.cancel().await.unwrap();
        proxy.stop().await;

        // Nothing half-written: the next run, without the fault, ends with the fault-free index's chunks.
        let healed = server(data.path(), &embed_base, false).await;
        let result = index_on(&healed, &repo).await;
        assert!(
            !common::is_error(&result),
            "{flags}: {}",
            common::text(&result)
        );
        let summary: Value = result.structured_content.unwrap();
        assert_eq!(summary["chunks_total"], expected, "{flags}: {summary}");
        healed.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn each_fault_in_front_of_the_chat_model_ends_the_llm_tool_clearly() {
    let test = "dependency_faults::each_fault_in_front_of_the_chat_model_ends_the_llm_tool_clearly";
    let (Some(chat_base), Some(model)) = (
        std::env::var("FAULT_TEST_OPENAI_BASE_URL")
            .ok()
            .filter(|u| !u.trim().is_empty()),
        std::env::var("FAULT_TEST_OPENAI_MODEL")
            .ok()
            .filter(|m| !m.trim().is_empty()),
    ) else {
        optional::skip(
            test,
            "the local chat model: FAULT_TEST_OPENAI_BASE_URL and FAULT_TEST_OPENAI_MODEL are not set (run \
             `bash ../shared/llm/local-llm.sh start` and export what it prints)",
        );
        return;
    };
    let upstream = url::Url::parse(&chat_base).unwrap();
    let cases: [(&str, &[&str]); 5] = [
        (
            "--with-http-error --http-error-status-code 503",
            &["HTTP 503", "run again when it is back"],
        ),
        (
            "--with-http-error --http-error-status-code 429",
            &["HTTP 429", "wait, then run again"],
        ),
        (
            "--with-blackhole",
            &["did not answer within 10s", "FAULT_LLM_TIMEOUT_SECS"],
        ),
        (
            "--with-reset --reset-after-bytes 0",
            &["cannot reach", "Connection reset"],
        ),
        (
            "--with-limit-data --limit-data-bytes 100",
            &["connection closed before message completed"],
        ),
    ];
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("app.py");
    std::fs::write(
        &file,
        "def fetch(url):\n    return requests.get(url).json()\n",
    )
    .unwrap();
    for (flags, says) in cases {
        let (proxy, faulted) = behind_the_proxy(&upstream, flags).await;
        let data = tempfile::tempdir().unwrap();
        let mut env: HashMap<String, String> = server_env(data.path());
        // The HTTP error fault replaces the model's answer when it comes: a short answer keeps that quick.
        env.insert("FAULT_LLM_MAX_TOKENS".into(), "16".into());
        env.insert("FAULT_LLM_TIMEOUT_SECS".into(), "10".into());
        env.insert("FAULT_LLM_MAX_RETRIES".into(), "1".into());
        let client = common::spawn_with(common::ServerSpec {
            agent_args: &[
                "--llm-base-url",
                faulted.as_str(),
                "--llm-prompt-reasoning-model",
                model.as_str(),
            ],
            env,
            ..Default::default()
        })
        .await;
        let started = Instant::now();
        let result = common::call(
            &client,
            "fault_score_reliability",
            json!({"snippet": "def fetch(url):\n    return requests.get(url).json()", "lang": "python"}),
        )
        .await
        .unwrap();
        let took = started.elapsed();
        let message = common::text(&result).to_owned();
        println!("{flags}: {:.1} s: {message}", took.as_secs_f64());
        assert!(common::is_error(&result), "{flags}: {message}");
        assert!(took < BOUND, "{flags}: {took:?}");
        let address = format!("127.0.0.1:{}", proxy.local_addrs()[0].port());
        assert!(message.contains(&address), "{flags}: {message}");
        for word in says {
            assert!(message.contains(word), "{flags}: {message}");
        }
        // The server keeps serving.
        let listed = common::call(
            &client,
            "fault_list_function_names",
            json!({"file": file.display().to_string()}),
        )
        .await
        .unwrap();
        assert!(!common::is_error(&listed), "{flags}: {listed:?}");
        client.cancel().await.unwrap();
        proxy.stop().await;
    }
}
