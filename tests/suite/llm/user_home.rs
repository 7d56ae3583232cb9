//! Someone who has already used `fault` must still pass this suite. A temporary HOME gets what the index tool
//! leaves behind under the default data directory (`$HOME/.local/share/fault`: the registry and an embedded
//! store of the fixture project); then an LLM tool runs against that HOME, first the way servers used to be
//! spawned (the default data directory in effect: the tool embeds the snippet to look up context, so the
//! model's stand-in sees an embeddings request first), then as the suite spawns them (`common::spawn_with`:
//! only chat requests, as in a clean home).

use crate::support::common;
use crate::support::indexing;
use crate::support::llm_fakes;

use std::{collections::HashMap, path::Path};

use llm_fakes::{FakeServer, Recorded, Reply};
use serde_json::json;

const MODEL: &str = "gpt-test";
/// The default embedding model's dimension (`--llm-embed-model-dim`), which the index records.
const DEFAULT_DIMENSION: usize = 1536;
const SNIPPET: &str = "def fetch(url):\n    return requests.get(url).json()";
const BETTER: &str =
    "def fetch(url, timeout=5.0):\n    return requests.get(url, timeout=timeout).json()";

/// A stand-in OpenAI server: embeddings for `/embeddings`, a suggestion for chat.
async fn model() -> FakeServer {
    FakeServer::start(|_, request| {
        if request.path.ends_with("/embeddings") {
            let inputs: Vec<String> = match &request.body["input"] {
                serde_json::Value::Array(items) => items
                    .iter()
                    .map(|v| v.as_str().unwrap_or_default().to_owned())
                    .collect(),
                other => vec![other.as_str().unwrap_or_default().to_owned()],
            };
            let vectors: Vec<Vec<f32>> = inputs
                .iter()
                .map(|text| indexing::bag_of_words(text, DEFAULT_DIMENSION))
                .collect();
            return Reply::openai_embeddings("text-embedding-3-small", &vectors);
        }
        Reply::openai_chat(
            MODEL,
            &json!({"new_code": BETTER, "explanation": "adds a timeout"}).to_string(),
        )
    })
    .await
}

/// The environment of a process whose data directory is the default one under `home`.
fn default_data_dir_under(home: &Path) -> HashMap<String, String> {
    HashMap::from([
        ("HOME".to_owned(), home.display().to_string()),
        (
            "XDG_DATA_HOME".to_owned(),
            home.join(".local/share").display().to_string(),
        ),
        // Empty is "not set" for `fault`.
        ("FAULT_DATA_DIR".to_owned(), String::new()),
        ("OPENAI_API_KEY".to_owned(), "test-key".to_owned()),
    ])
}

fn paths(requests: &[Recorded]) -> Vec<String> {
    requests.iter().map(|r| r.path.clone()).collect()
}

/// A suggestion for a snippet of `file`: context may come only from the project containing it.
async fn suggest(client: &common::Client, file: &Path) {
    let result = common::call_ok(
        client,
        "fault_suggest_better_function_reliability",
        json!({"snippet": SNIPPET, "lang": "python", "score": 0.3, "target_score": 0.8,
               "file": file.display().to_string()}),
    )
    .await;
    assert!(common::text(&result).starts_with("```diff\n"));
}

#[tokio::test]
async fn servers_ignore_an_index_left_under_the_users_default_data_directory() {
    let model = model().await;
    let base = format!("{}/v1", model.url());
    let args = [
        "--llm-base-url",
        base.as_str(),
        "--llm-prompt-reasoning-model",
        MODEL,
    ];
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = indexing::fixture_repo(&work.path().join("project"));

    // What a user has after indexing a project with the MCP tool and default settings.
    let indexer = common::spawn_with(common::ServerSpec {
        agent_args: &args,
        env: default_data_dir_under(home.path()),
        ..Default::default()
    })
    .await;
    let indexed = common::call_ok(
        &indexer,
        "fault_index_source_code",
        json!({"source_dir": repo.display().to_string(), "lang": "auto"}),
    )
    .await;
    assert_eq!(
        indexed.structured_content.as_ref().unwrap()["store"],
        "embedded"
    );
    indexer.cancel().await.unwrap();
    let default_data_dir = home.path().join(".local/share/fault");
    assert!(
        default_data_dir.join("index").is_dir(),
        "the index is not under the default data directory {}",
        default_data_dir.display()
    );
    let after_index = model.requests().len();
    assert!(after_index > 0);

    // Control: with that data directory in effect, the tool looks up context first (what broke the suite).
    let exposed = common::spawn_with(common::ServerSpec {
        agent_args: &args,
        env: default_data_dir_under(home.path()),
        ..Default::default()
    })
    .await;
    suggest(&exposed, &repo.join("app/server.py")).await;
    exposed.cancel().await.unwrap();
    let seen = paths(&model.requests()[after_index..]);
    assert_eq!(
        seen,
        ["/v1/embeddings", "/v1/chat/completions"],
        "the reproduction no longer reproduces"
    );

    // The suite's servers, even handed that HOME: chat only, as in a clean home.
    let before = model.requests().len();
    let hermetic = common::spawn_with(common::ServerSpec {
        agent_args: &args,
        env: HashMap::from([("HOME".to_owned(), home.path().display().to_string())]),
        ..Default::default()
    })
    .await;
    suggest(&hermetic, &repo.join("app/server.py")).await;
    hermetic.cancel().await.unwrap();
    let requests = model.requests();
    assert_eq!(paths(&requests[before..]), ["/v1/chat/completions"]);
    let first = &requests[before];
    assert_eq!(first.body["model"], MODEL);
    assert!(
        first.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "user" && m["content"].as_str().unwrap().contains(SNIPPET))
    );
}
