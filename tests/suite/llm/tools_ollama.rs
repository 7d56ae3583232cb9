//! The LLM tools through a real MCP client against a stand-in Ollama server on 127.0.0.1 speaking `/api/chat`
//! with a `format` JSON Schema; plus MCP progress notifications and cancellation of a long call.

use crate::support::common;
use crate::support::llm_fakes;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use llm_fakes::{FakeServer, Reply};
use rmcp::{
    ClientHandler, RoleClient,
    model::{CallToolRequestParams, ClientRequest, ProgressNotificationParam, Request},
    service::{NotificationContext, PeerRequestOptions},
};
use serde_json::{Value, json};

const MODEL: &str = "llama-test";
const SNIPPET: &str = "def fetch(url):\n    return requests.get(url).json()";

async fn fault_for(server: &FakeServer, extra_env: &[(&str, &str)]) -> common::Client {
    let base = server.url();
    let args = [
        "--llm-client",
        "ollama",
        "--llm-base-url",
        base.as_str(),
        "--llm-prompt-reasoning-model",
        MODEL,
    ];
    let mut env = HashMap::from([("FAULT_LLM_TIMEOUT_SECS".to_owned(), "10".to_owned())]);
    for (k, v) in extra_env {
        env.insert((*k).to_owned(), (*v).to_owned());
    }
    common::spawn_with(common::ServerSpec {
        agent_args: &args,
        env,
        ..Default::default()
    })
    .await
}

fn score_args() -> Value {
    json!({"snippet": SNIPPET, "lang": "python"})
}

#[tokio::test]
async fn score_request_carries_model_snippet_and_format_schema() {
    let server = FakeServer::start(|_, _| {
        Reply::ollama_chat(MODEL, r#"{"score": 0.25, "explanation": "no timeout"}"#)
    })
    .await;
    let client = fault_for(&server, &[]).await;
    let result = common::call_ok(&client, "fault_score_reliability", score_args()).await;
    let text: Value = serde_json::from_str(common::text(&result)).unwrap();
    assert_eq!(text, json!({"score": 0.25, "explanation": "no timeout"}));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/api/chat");
    assert_eq!(request.body["model"], MODEL);
    assert_eq!(request.body["stream"], false);
    assert_eq!(request.body["format"]["type"], "object");
    assert_eq!(
        request.body["format"]["required"],
        json!(["score", "explanation"])
    );
    let user = request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert!(user["content"].as_str().unwrap().contains(SNIPPET));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn ollama_host_comes_from_the_environment_without_a_base_url() {
    let server = FakeServer::start(|_, _| {
        Reply::ollama_chat(MODEL, r#"{"score": 0.5, "explanation": "ok"}"#)
    })
    .await;
    let args = [
        "--llm-client",
        "ollama",
        "--llm-prompt-reasoning-model",
        MODEL,
    ];
    let client = common::spawn_with(common::ServerSpec {
        agent_args: &args,
        env: HashMap::from([("OLLAMA_HOST".to_owned(), server.addr.to_string())]),
        ..Default::default()
    })
    .await;
    common::call_ok(&client, "fault_score_performance", score_args()).await;
    assert_eq!(server.requests().len(), 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn fenced_suggestion_answer_is_accepted_and_diffed() {
    let better = "def fetch(url):\n    return requests.get(url, timeout=5).json()";
    let answer = format!(
        "```json\n{}\n```",
        json!({"new_code": better, "explanation": "timeout"})
    );
    let server = FakeServer::start(move |_, _| Reply::ollama_chat(MODEL, &answer)).await;
    let client = fault_for(&server, &[]).await;
    let result = common::call_ok(
        &client,
        "fault_suggest_better_function_reliability",
        json!({"snippet": SNIPPET, "lang": "python", "score": 0.2, "target_score": 0.9}),
    )
    .await;
    let text = common::text(&result);
    assert!(
        text.starts_with("```diff\n--- a/snippet.py\n+++ b/snippet.py\n"),
        "{text}"
    );
    assert!(text.contains("+    return requests.get(url, timeout=5).json()"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn server_error_then_success_is_retried() {
    let server = FakeServer::start(|i, _| {
        if i == 0 {
            Reply::json(503, json!({"error": "server busy, please try again"}))
        } else {
            Reply::ollama_chat(MODEL, r#"{"score": 0.5, "explanation": "ok"}"#)
        }
    })
    .await;
    let client = fault_for(&server, &[]).await;
    common::call_ok(&client, "fault_score_performance", score_args()).await;
    assert_eq!(server.requests().len(), 2);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn unknown_model_is_reported_with_ollamas_message() {
    let server = FakeServer::start(|_, _| {
        Reply::json(
            404,
            json!({"error": "model \"llama-test\" not found, try pulling it first"}),
        )
    })
    .await;
    let client = fault_for(&server, &[]).await;
    let result = common::call(&client, "fault_score_performance", score_args())
        .await
        .unwrap();
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(
        message.contains("Ollama") && message.contains("404"),
        "{message}"
    );
    assert!(message.contains("try pulling it first"), "{message}");
    assert_eq!(server.requests().len(), 1, "a 404 is not retried");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn schema_violating_answers_end_in_an_error_naming_the_model() {
    let server = FakeServer::start(|_, _| Reply::ollama_chat(MODEL, r#"{"rating": 3}"#)).await;
    let client = fault_for(&server, &[]).await;
    let result = common::call(&client, "fault_score_performance", score_args())
        .await
        .unwrap();
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(message.contains("'llama-test' (Ollama)"), "{message}");
    assert!(message.contains("schema"), "{message}");
    assert_eq!(server.requests().len(), 2);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_hanging_ollama_hits_our_timeout() {
    let server =
        FakeServer::start(|_, _| Reply::ollama_chat(MODEL, "{}").after(Duration::from_secs(30)))
            .await;
    let client = fault_for(&server, &[("FAULT_LLM_TIMEOUT_SECS", "1")]).await;
    let result = common::call(&client, "fault_score_performance", score_args())
        .await
        .unwrap();
    assert!(common::is_error(&result));
    assert!(common::text(&result).contains("Ollama did not answer within 1s"));
    client.cancel().await.unwrap();
}

/// A client that keeps every progress notification it receives.
#[derive(Clone, Default)]
struct ProgressRecorder {
    notes: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.notes.lock().unwrap().push(params);
    }
}

async fn spawn_recording(server: &FakeServer) -> common::Server<ProgressRecorder> {
    let base = server.url();
    let args = [
        "--llm-client",
        "ollama",
        "--llm-base-url",
        base.as_str(),
        "--llm-prompt-reasoning-model",
        MODEL,
    ];
    common::spawn_handler(
        common::ServerSpec {
            agent_args: &args,
            env: HashMap::from([("FAULT_LLM_TIMEOUT_SECS".to_owned(), "30".to_owned())]),
            ..Default::default()
        },
        ProgressRecorder::default(),
    )
    .await
}

fn score_request() -> ClientRequest {
    let args = score_args().as_object().unwrap().clone();
    ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("fault_score_performance").with_arguments(args),
    ))
}

#[tokio::test]
async fn long_calls_send_progress_notifications() {
    let server = FakeServer::start(|_, _| {
        Reply::ollama_chat(MODEL, r#"{"score": 0.5, "explanation": "ok"}"#)
            .after(Duration::from_millis(300))
    })
    .await;
    let client = spawn_recording(&server).await;
    let handle = client
        .send_cancellable_request(score_request(), PeerRequestOptions::no_options())
        .await
        .unwrap();
    let token = handle.progress_token.clone();
    handle.await_response().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let notes = client.service().notes.lock().unwrap().clone();
    assert!(notes.len() >= 2, "{notes:?}");
    assert!(notes.iter().all(|n| n.progress_token == token));
    assert!(notes.windows(2).all(|w| w[0].progress < w[1].progress));
    let messages: Vec<String> = notes.iter().filter_map(|n| n.message.clone()).collect();
    assert!(
        messages[0].contains("asking Ollama model 'llama-test'"),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m == "answer validated"),
        "{messages:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_call_stops_the_request_to_the_model() {
    let server =
        FakeServer::start(|_, _| Reply::ollama_chat(MODEL, "{}").after(Duration::from_secs(30)))
            .await;
    let client = spawn_recording(&server).await;
    let handle = client
        .send_cancellable_request(score_request(), PeerRequestOptions::no_options())
        .await
        .unwrap();
    // Wait until the model has the request, then cancel.
    for _ in 0..100 {
        if !server.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.requests().len(), 1);
    handle
        .cancel(Some("user changed their mind".into()))
        .await
        .unwrap();
    let mut abandoned = 0;
    for _ in 0..100 {
        abandoned = server.abandoned();
        if abandoned > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(abandoned, 1, "the HTTP request to the model was dropped");
    // The server is still there for the next call.
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "fault_score_performance"));
    client.cancel().await.unwrap();
}
