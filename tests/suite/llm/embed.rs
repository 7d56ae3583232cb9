//! Embeddings through our real clients against stand-in OpenAI and Ollama servers on 127.0.0.1.

use crate::support::llm_fakes;

use std::time::{Duration, Instant};

use fault::llm::{self, LlmError, LlmSettings, Provider, RetryPolicy};
use llm_fakes::{FakeServer, Reply};

fn options(provider: Provider, base: &str, dim: u32) -> LlmSettings {
    LlmSettings {
        provider,
        embed_model: "embed-small".into(),
        embed_dimension: dim,
        base_url: Some(base.parse().unwrap()),
        ..LlmSettings::default()
    }
}

fn quick_policy() -> RetryPolicy {
    RetryPolicy {
        timeout: Duration::from_secs(2),
        max_retries: 2,
        base_delay: Duration::from_millis(10),
        ..RetryPolicy::default()
    }
}

fn texts() -> Vec<String> {
    vec!["def a(): pass".into(), "def b(): pass".into()]
}

#[tokio::test]
async fn openai_compatible_embeddings_carry_model_and_inputs() {
    let server = FakeServer::start(|_, _| {
        Reply::openai_embeddings("embed-small", &[vec![0.1, 0.2, 0.3], vec![0.4, 0.5, 0.6]])
    })
    .await;
    let opts = options(Provider::OpenAi, &format!("{}/v1", server.url()), 3);
    let embedder = llm::embedder_with_policy(&opts, quick_policy()).unwrap();
    let vectors = embedder.embed(&texts()).await.unwrap();
    assert_eq!(vectors, vec![vec![0.1, 0.2, 0.3], vec![0.4, 0.5, 0.6]]);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/embeddings");
    assert_eq!(requests[0].body["model"], "embed-small");
    assert_eq!(requests[0].body["input"][1], "def b(): pass");
}

#[tokio::test]
async fn wrong_dimension_names_model_expected_and_received() {
    let server = FakeServer::start(|_, _| {
        Reply::openai_embeddings("embed-small", &[vec![0.1; 4], vec![0.1; 4]])
    })
    .await;
    let opts = options(Provider::OpenAi, &format!("{}/v1", server.url()), 3);
    let embedder = llm::embedder_with_policy(&opts, quick_policy()).unwrap();
    let err = embedder.embed(&texts()).await.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Dimension {
                expected: 3,
                received: 4,
                ..
            }
        ),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("embed-small") && text.contains('3') && text.contains('4'),
        "{text}"
    );
}

#[tokio::test]
async fn rate_limit_then_success_is_retried() {
    let server = FakeServer::start(|i, _| {
        if i == 0 {
            Reply::openai_429()
        } else {
            Reply::openai_embeddings("embed-small", &[vec![1.0], vec![2.0]])
        }
    })
    .await;
    let opts = options(Provider::OpenAi, &format!("{}/v1", server.url()), 1);
    let embedder = llm::embedder_with_policy(&opts, quick_policy()).unwrap();
    assert_eq!(embedder.embed(&texts()).await.unwrap().len(), 2);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn server_errors_are_retried_a_bounded_number_of_times() {
    let server = FakeServer::start(|_, _| Reply::text(503, "overloaded")).await;
    let opts = options(Provider::OpenAi, &format!("{}/v1", server.url()), 1);
    let embedder = llm::embedder_with_policy(&opts, quick_policy()).unwrap();
    let err = embedder.embed(&texts()).await.unwrap_err();
    assert!(err.to_string().contains("503"), "{err}");
    assert_eq!(server.requests().len(), 3, "one try and two retries");
}

#[tokio::test]
async fn missing_embeddings_endpoint_says_where_to_point_embeddings() {
    let server = FakeServer::start(|_, _| Reply::text(404, "Not Found")).await;
    let opts = options(Provider::OpenAi, &format!("{}/v1", server.url()), 3);
    let embedder = llm::embedder_with_policy(&opts, quick_policy()).unwrap();
    let err = embedder.embed(&texts()).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, LlmError::NoEmbeddings { .. }), "{text}");
    assert!(
        text.contains("--llm-embed-base-url") && text.contains("embed-small"),
        "{text}"
    );
}

#[tokio::test]
async fn ollama_embed_carries_model_and_inputs() {
    let server = FakeServer::start(|_, _| {
        Reply::ollama_embed("embed-small", &[vec![0.5, 0.5], vec![0.25, 0.75]])
    })
    .await;
    let opts = options(Provider::Ollama, &server.url(), 2);
    let embedder = llm::embedder_with_policy(&opts, quick_policy()).unwrap();
    let vectors = embedder.embed(&texts()).await.unwrap();
    assert_eq!(vectors[1], vec![0.25, 0.75]);
    let requests = server.requests();
    assert_eq!(requests[0].path, "/api/embed");
    assert_eq!(requests[0].body["model"], "embed-small");
    assert_eq!(requests[0].body["input"][0], "def a(): pass");
}

#[tokio::test]
async fn a_hanging_server_hits_our_timeout() {
    let server = FakeServer::start(|_, _| {
        Reply::ollama_embed("embed-small", &[vec![1.0]]).after(Duration::from_secs(30))
    })
    .await;
    let opts = options(Provider::Ollama, &server.url(), 1);
    let policy = RetryPolicy {
        timeout: Duration::from_millis(500),
        ..quick_policy()
    };
    let embedder = llm::embedder_with_policy(&opts, policy).unwrap();
    let started = Instant::now();
    let err = embedder.embed(&["x".to_owned()]).await.unwrap_err();
    assert!(matches!(err, LlmError::Timeout { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn empty_input_sends_nothing() {
    let server = FakeServer::start(|_, _| Reply::text(500, "unexpected")).await;
    let opts = options(Provider::Ollama, &server.url(), 2);
    let embedder = llm::embedder_with_policy(&opts, quick_policy()).unwrap();
    assert!(embedder.embed(&[]).await.unwrap().is_empty());
    assert!(server.requests().is_empty());
}
