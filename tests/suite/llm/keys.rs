//! Keys go only where they belong: a custom base URL (an OpenAI-compatible stand-in on 127.0.0.1 that records
//! request headers) gets no `Authorization` from OPENAI_API_KEY or OPENROUTER_API_KEY, only from its own
//! FAULT_LLM_API_KEY; and a server logging at `trace` writes neither a key nor a URL password.

use crate::support::common;
use crate::support::llm_fakes::{FakeServer, Reply};

use std::collections::HashMap;

use serde_json::json;

const MODEL: &str = "gpt-test";
const OPENAI_KEY: &str = "sk-openai-never-sent-1";
const OPENROUTER_KEY: &str = "sk-openrouter-never-sent-2";
const OWN_KEY: &str = "sk-own-variable-3";
const URL_PASSWORD: &str = "url-password-4";

fn score_args() -> serde_json::Value {
    json!({"snippet": "def f():\n    return 1", "lang": "python"})
}

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The `Authorization` header the stand-in received for one score call by a server started with `args`.
async fn authorization_sent(args: &[&str], env: HashMap<String, String>) -> Option<String> {
    let server = FakeServer::start(|_, _| {
        Reply::openai_chat(MODEL, r#"{"score": 0.5, "explanation": "ok"}"#)
    })
    .await;
    let base = format!("{}/v1", server.url());
    let mut agent_args = vec![
        "--llm-base-url",
        base.as_str(),
        "--llm-prompt-reasoning-model",
        MODEL,
    ];
    agent_args.extend_from_slice(args);
    let client = common::spawn_with(common::ServerSpec {
        agent_args: &agent_args,
        env,
        ..Default::default()
    })
    .await;
    common::call_ok(&client, "fault_score_performance", score_args()).await;
    client.cancel().await.expect("clean shutdown");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    requests[0].header("authorization").map(str::to_owned)
}

#[tokio::test]
async fn a_custom_base_url_gets_only_its_own_key() {
    let provider_keys = [
        ("OPENAI_API_KEY", OPENAI_KEY),
        ("OPENROUTER_API_KEY", OPENROUTER_KEY),
    ];
    for client in ["openai", "open-router"] {
        let sent = authorization_sent(&["--llm-client", client], env(&provider_keys)).await;
        assert_eq!(sent, None, "--llm-client {client}: a provider key left");
    }
    let mut with_own = provider_keys.to_vec();
    with_own.push(("FAULT_LLM_API_KEY", OWN_KEY));
    for client in ["openai", "open-router"] {
        let sent = authorization_sent(&["--llm-client", client], env(&with_own)).await;
        assert_eq!(
            sent,
            Some(format!("Bearer {OWN_KEY}")),
            "--llm-client {client}"
        );
    }
}

#[tokio::test]
async fn trace_logs_and_errors_carry_no_key_and_no_url_password() {
    let server = FakeServer::start(|_, request| {
        if request.path.ends_with("/embeddings") {
            Reply::openai_embeddings("embed-test", &[vec![0.1, 0.2]])
        } else {
            Reply::openai_chat(MODEL, r#"{"score": 0.5, "explanation": "ok"}"#)
        }
    })
    .await;
    let base = format!("http://user:{URL_PASSWORD}@{}/v1", server.addr);
    // A closed port: the error names the URL.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let unreachable = format!("http://user:{URL_PASSWORD}@127.0.0.1:{closed_port}/v1");
    let qdrant = format!("http://user:{URL_PASSWORD}@127.0.0.1:{closed_port}");
    let client = common::spawn_with(common::ServerSpec {
        global_args: &["--log-level", "trace"],
        agent_args: &[
            "--llm-base-url",
            &base,
            "--llm-embed-base-url",
            &unreachable,
            "--qdrant-url",
            &qdrant,
            "--vector-store",
            "qdrant",
            "--llm-prompt-reasoning-model",
            MODEL,
        ],
        env: env(&[
            ("OPENAI_API_KEY", OPENAI_KEY),
            ("OPENROUTER_API_KEY", OPENROUTER_KEY),
            ("FAULT_LLM_API_KEY", OWN_KEY),
            ("FAULT_LLM_MAX_RETRIES", "0"),
        ]),
    })
    .await;
    // Whatever the chat call makes of the query in the base URL, its answer and the logs must not leak.
    let mut answers = Vec::new();
    let chat = common::call(&client, "fault_score_performance", score_args())
        .await
        .expect("score");
    answers.push(common::text(&chat).to_owned());
    let source = client.sandbox().home().join("project");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(source.join("a.py"), "def f():\n    return 1\n").unwrap();
    let index = common::call(
        &client,
        "fault_index_source_code",
        json!({"source_dir": source.to_string_lossy(), "lang": "python"}),
    )
    .await
    .expect("index");
    assert!(common::is_error(&index), "{}", common::text(&index));
    answers.push(common::text(&index).to_owned());
    let stderr = client.stderr();
    client.cancel().await.expect("clean shutdown");
    assert!(stderr.contains("TRACE"), "the log is at trace level");
    for secret in [OPENAI_KEY, OPENROUTER_KEY, OWN_KEY, URL_PASSWORD] {
        assert!(
            !stderr.contains(secret),
            "the log carries {secret}:\n{stderr}"
        );
        for answer in &answers {
            assert!(
                !answer.contains(secret),
                "an answer carries {secret}: {answer}"
            );
        }
    }
}

/// A base URL with a query string (which requests would append their path after) is refused at start-up,
/// naming the option, without echoing the query (it may carry a key).
#[tokio::test]
async fn a_base_url_with_a_query_string_is_refused_without_echoing_it() {
    for (flag, url) in [
        (
            "--llm-base-url",
            "http://127.0.0.1:9/v1?api-key=query-secret-5",
        ),
        (
            "--llm-embed-base-url",
            "http://127.0.0.1:9/v1#query-secret-5",
        ),
        ("--qdrant-url", "http://127.0.0.1:9/?api-key=query-secret-5"),
    ] {
        let mut command = common::fault_command(&["agent", "tool", flag, url]);
        command.stdin(std::process::Stdio::null());
        command.stdout(std::process::Stdio::piped());
        command.stderr(std::process::Stdio::piped());
        let out = tokio::time::timeout(std::time::Duration::from_secs(30), command.output())
            .await
            .expect("exits at once")
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flag} {url} accepted");
        assert!(out.stdout.is_empty(), "stdout: {:?}", out.stdout);
        assert!(
            stderr.contains(flag) && stderr.contains("query string"),
            "{stderr}"
        );
        assert!(!stderr.contains("query-secret-5"), "{stderr}");
    }
}
