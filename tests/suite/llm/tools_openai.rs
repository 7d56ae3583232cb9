//! The LLM tools through a real MCP client, against a stand-in OpenAI server on 127.0.0.1 that speaks
//! `/v1/chat/completions` with `response_format` json_schema: what the request carries, how answers of every
//! shape are handled, retries, timeouts and missing keys.

use crate::support::common;
use crate::support::llm_fakes;

use std::{collections::HashMap, time::Duration};

use llm_fakes::{FakeServer, Recorded, Reply};
use serde_json::{Value, json};

const MODEL: &str = "gpt-test";
const SNIPPET: &str = "def fetch(url):\n    return requests.get(url).json()";

/// A fault server using the stand-in at `server`, with `extra_env` on top of a test key (a custom base URL's
/// own variable).
async fn fault_for(server: &FakeServer, extra_env: &[(&str, &str)]) -> common::Client {
    fault_for_model(server, MODEL, extra_env).await
}

/// [`fault_for`] with another chat model.
async fn fault_for_model(
    server: &FakeServer,
    model: &str,
    extra_env: &[(&str, &str)],
) -> common::Client {
    let base = format!("{}/v1", server.url());
    let mut env: HashMap<String, String> = HashMap::from([
        ("FAULT_LLM_API_KEY".to_owned(), "sk-test-key".to_owned()),
        ("FAULT_LLM_TIMEOUT_SECS".to_owned(), "10".to_owned()),
    ]);
    for (k, v) in extra_env {
        env.insert((*k).to_owned(), (*v).to_owned());
    }
    let args = [
        "--llm-base-url",
        base.as_str(),
        "--llm-prompt-reasoning-model",
        model,
    ];
    common::spawn_with(common::ServerSpec {
        agent_args: &args,
        env,
        ..Default::default()
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

fn score_args() -> Value {
    json!({"snippet": SNIPPET, "lang": "python"})
}

#[tokio::test]
async fn score_request_carries_model_snippet_and_schema() {
    let server = FakeServer::start(|_, _| {
        Reply::openai_chat(MODEL, r#"{"score": 0.42, "explanation": "no timeout"}"#)
    })
    .await;
    let client = fault_for(&server, &[]).await;
    let result = common::call_ok(&client, "fault_score_performance", score_args()).await;
    let text: Value = serde_json::from_str(common::text(&result)).unwrap();
    assert_eq!(text, json!({"score": 0.42, "explanation": "no timeout"}));
    assert_eq!(result.structured_content.as_ref().unwrap()["score"], 0.42);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-key"));
    assert_eq!(request.body["model"], MODEL);
    assert!(user_prompt(request).contains(SNIPPET));
    let format = &request.body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "score");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["score", "explanation"])
    );
    client.cancel().await.unwrap();
}

/// The `max_completion_tokens` of the request a call of `tool` sent.
async fn asked(server: &FakeServer, client: &common::Client, tool: &str) -> Value {
    let before = server.requests().len();
    // Only the request matters here: the stand-in's answer fits the score tools alone.
    let mut args = score_args();
    if tool.starts_with("fault_suggest_better_function") {
        args["score"] = json!(0.3);
        args["target_score"] = json!(0.8);
    }
    let result = common::call(client, tool, args).await;
    let requests = server.requests();
    let request = requests
        .get(before)
        .unwrap_or_else(|| panic!("{tool} sent no request: {result:?}"));
    request.body["max_completion_tokens"].clone()
}

#[tokio::test]
async fn each_task_asks_for_at_most_the_tokens_its_answer_can_need() {
    let server = FakeServer::start(|_, _| {
        Reply::openai_chat(MODEL, r#"{"score": 0.5, "explanation": "fine"}"#)
    })
    .await;
    let client = fault_for(&server, &[]).await;
    // The token budgets' table (docs/src/llm-tools.md): a score 600; a rewrite 800 plus one token per two
    // bytes of the function; SLOs 2,000.
    assert_eq!(
        asked(&server, &client, "fault_score_performance").await,
        600
    );
    let rewrite = 800 + SNIPPET.len().div_ceil(2);
    assert_eq!(
        asked(
            &server,
            &client,
            "fault_suggest_better_function_reliability"
        )
        .await,
        rewrite
    );
    assert_eq!(
        asked(
            &server,
            &client,
            "fault_suggest_service_level_objectives_slo"
        )
        .await,
        2_000
    );
    client.cancel().await.unwrap();

    // A reasoning model thinks in output tokens: it gets room for that on top.
    let reasoning = fault_for_model(&server, "o4-mini", &[]).await;
    assert_eq!(
        asked(&server, &reasoning, "fault_score_reliability").await,
        600 + 25_000
    );
    reasoning.cancel().await.unwrap();

    // FAULT_LLM_MAX_TOKENS replaces every budget.
    let configured = fault_for(&server, &[("FAULT_LLM_MAX_TOKENS", "50")]).await;
    assert_eq!(
        asked(&server, &configured, "fault_score_performance").await,
        50
    );
    assert_eq!(
        asked(
            &server,
            &configured,
            "fault_suggest_service_level_objectives_slo"
        )
        .await,
        50
    );
    configured.cancel().await.unwrap();
}

#[tokio::test]
async fn an_answer_cut_at_the_token_limit_is_refused_at_once_naming_the_limit() {
    const CUT: &str = r#"{"score": 0.5, "explanation": "the function calls the network and then"#;
    // At the limit asked for: the model kept writing. Earlier: its context window filled up.
    for (written, expected) in [
        (
            600,
            "was stopped at 600 tokens, the most this answer can need",
        ),
        (40, "ran out of context after 40 tokens"),
    ] {
        let server =
            FakeServer::start(move |_, _| Reply::openai_chat_cut(MODEL, CUT, written)).await;
        let client = fault_for(&server, &[]).await;
        let result = common::call(&client, "fault_score_performance", score_args())
            .await
            .unwrap();
        assert!(common::is_error(&result));
        let message = common::text(&result);
        assert!(
            message.contains(&format!("model '{MODEL}'")) && message.contains(expected),
            "{message}"
        );
        if written == 600 {
            assert!(message.contains("FAULT_LLM_MAX_TOKENS"), "{message}");
        }
        assert_eq!(
            server.requests().len(),
            1,
            "a repair of a cut answer would be cut too: none is asked for"
        );
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn fenced_and_prose_wrapped_answers_are_accepted() {
    let server = FakeServer::start(|i, _| {
        let content = if i == 0 {
            "```json\n{\"score\": 0.8, \"explanation\": \"fine\"}\n```"
        } else {
            "Sure! Here it is: {\"score\": 0.3, \"explanation\": \"slow\"} Hope it helps."
        };
        Reply::openai_chat(MODEL, content)
    })
    .await;
    let client = fault_for(&server, &[]).await;
    for expected in [0.8, 0.3] {
        let result = common::call_ok(&client, "fault_score_reliability", score_args()).await;
        let text: Value = serde_json::from_str(common::text(&result)).unwrap();
        assert_eq!(text["score"], expected);
    }
    assert_eq!(server.requests().len(), 2, "no repair needed");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn malformed_answer_gets_one_repair_request_quoting_the_problem() {
    let server = FakeServer::start(|i, _| {
        let content = if i == 0 {
            "I think the score is high."
        } else {
            r#"{"score": 0.9, "explanation": "ok"}"#
        };
        Reply::openai_chat(MODEL, content)
    })
    .await;
    let client = fault_for(&server, &[]).await;
    common::call_ok(&client, "fault_score_performance", score_args()).await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let repair = user_prompt(&requests[1]);
    assert!(repair.contains("not JSON"), "{repair}");
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .any(|m| m["role"] == "assistant" && m["content"] == "I think the score is high.")
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn schema_violations_twice_are_a_tool_error_naming_model_and_problem() {
    let server = FakeServer::start(|_, _| {
        Reply::openai_chat(MODEL, r#"{"score": "high", "explanation": "ok"}"#)
    })
    .await;
    let client = fault_for(&server, &[]).await;
    let result = common::call(&client, "fault_score_performance", score_args())
        .await
        .unwrap();
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(message.contains(MODEL), "{message}");
    assert!(
        message.contains("schema") && message.contains("/score"),
        "{message}"
    );
    assert_eq!(server.requests().len(), 2, "one repair, then give up");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn numeric_scores_out_of_range_are_clamped() {
    let server = FakeServer::start(|_, _| {
        Reply::openai_chat(MODEL, r#"{"score": 1.7, "explanation": "great"}"#)
    })
    .await;
    let client = fault_for(&server, &[]).await;
    let result = common::call(&client, "fault_score_performance", score_args())
        .await
        .unwrap();
    let text: Value = serde_json::from_str(common::text(&result)).unwrap();
    assert_eq!(text["score"], 1.0);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn rate_limit_then_success() {
    let server = FakeServer::start(|i, _| {
        if i == 0 {
            Reply::openai_429()
        } else {
            Reply::openai_chat(MODEL, r#"{"score": 0.5, "explanation": "ok"}"#)
        }
    })
    .await;
    let client = fault_for(&server, &[]).await;
    common::call_ok(&client, "fault_score_performance", score_args()).await;
    assert_eq!(server.requests().len(), 2);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn persistent_rate_limit_is_reported_after_bounded_retries() {
    let server = FakeServer::start(|_, _| Reply::openai_429()).await;
    let client = fault_for(&server, &[("FAULT_LLM_MAX_RETRIES", "2")]).await;
    let result = common::call(&client, "fault_score_performance", score_args())
        .await
        .unwrap();
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(
        message.contains("429") && message.contains(MODEL),
        "{message}"
    );
    assert_eq!(server.requests().len(), 3);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_hanging_provider_hits_our_timeout() {
    let server =
        FakeServer::start(|_, _| Reply::openai_chat(MODEL, "{}").after(Duration::from_secs(30)))
            .await;
    let client = fault_for(&server, &[("FAULT_LLM_TIMEOUT_SECS", "1")]).await;
    let started = std::time::Instant::now();
    let result = common::call(&client, "fault_score_performance", score_args())
        .await
        .unwrap();
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(message.contains("did not answer within 1s"), "{message}");
    assert!(message.contains("FAULT_LLM_TIMEOUT_SECS"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(10));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn missing_key_is_reported_when_a_tool_is_called_not_at_start() {
    // OpenAI itself (no base URL): the key is required, and nothing is sent without it.
    let client = common::spawn().await;
    let result = common::call(&client, "fault_score_performance", score_args())
        .await
        .unwrap();
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(message.contains("OPENAI_API_KEY"), "{message}");
    client.cancel().await.unwrap();

    // OpenRouter itself (no base URL) needs its own key.
    let client = common::spawn_with(common::ServerSpec {
        agent_args: &["--llm-client", "open-router"],
        ..Default::default()
    })
    .await;
    let result = common::call(&client, "fault_score_reliability", score_args())
        .await
        .unwrap();
    assert!(common::is_error(&result));
    assert!(common::text(&result).contains("OPENROUTER_API_KEY"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn placeholders_inside_the_snippet_stay_literal() {
    let server = FakeServer::start(|_, _| {
        Reply::openai_chat(MODEL, r#"{"score": 0.5, "explanation": "ok"}"#)
    })
    .await;
    let client = fault_for(&server, &[]).await;
    let snippet = "def render():\n    return '{{snippet}} {{lang}} {{context}}'";
    common::call(
        &client,
        "fault_score_performance",
        json!({"snippet": snippet, "lang": "python"}),
    )
    .await
    .unwrap();
    let prompt = user_prompt(&server.requests()[0]);
    assert!(prompt.contains(snippet), "{prompt}");
    assert_eq!(prompt.matches(snippet).count(), 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn blank_snippet_is_refused_without_calling_the_model() {
    let server = FakeServer::start(|_, _| Reply::openai_chat(MODEL, "{}")).await;
    let client = fault_for(&server, &[]).await;
    let result = common::call(
        &client,
        "fault_score_performance",
        json!({"snippet": "  ", "lang": "python"}),
    )
    .await
    .unwrap();
    assert!(common::is_error(&result));
    assert!(common::text(&result).contains("snippet is empty"));
    assert!(server.requests().is_empty());
    client.cancel().await.unwrap();
}
