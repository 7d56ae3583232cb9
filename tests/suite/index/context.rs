//! Index context for the advice prompts comes only from the project the user works in: the project holding
//! the file under review, or the projects under the client's MCP roots; otherwise none, and the result says
//! so. Two real projects indexed into the embedded store (embeddings from the local embedding server, or
//! its stand-in), a stand-in chat model that records every prompt, and the real binary over MCP.

use crate::support::common;
use crate::support::indexing;
use crate::support::llm_fakes;

use std::path::{Path, PathBuf};

use indexing::{EmbedConfig, EmbedServer, agent_args, server_env};
use llm_fakes::{FakeServer, Reply};
#[allow(deprecated)] // MCP roots are deprecated upstream but still what clients send.
use rmcp::model::{ListRootsResult, Root};
use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{ClientCapabilities, ClientConfig},
    service::RequestContext,
};
use serde_json::{Value, json};

const MODEL: &str = "gpt-test";

/// Both projects handle payments, so project B's chunks are close to any question about project A.
const PROJECT_A: &str = "def alpha_charge_card(client, amount):\n    \
    return client.post('/charge', json={'amount': amount}).json()\n\n\n\
    def alpha_refund_card(client, charge_id):\n    \
    return client.post('/refund', json={'charge': charge_id}).json()\n";
const PROJECT_B: &str = "def beta_charge_card(client, amount):\n    \
    return client.post('/charge', json={'amount': amount}, timeout=5).json()\n\n\n\
    def beta_refund_card(client, charge_id):\n    \
    return client.post('/refund', json={'charge': charge_id}, timeout=5).json()\n";
const SNIPPET: &str = "def alpha_charge_card(client, amount):\n    return client.post('/charge', json={'amount': amount}).json()";

fn project(parent: &Path, name: &str, source: &str) -> PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("payments.py"), source).unwrap();
    dir.canonicalize().unwrap()
}

/// A client that declares the roots capability and lists `roots`.
#[derive(Clone)]
struct RootsClient {
    roots: Vec<PathBuf>,
}

#[allow(deprecated)] // MCP roots are deprecated upstream but still what clients send.
impl ClientHandler for RootsClient {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.capabilities = ClientCapabilities::builder().enable_roots().build();
        info
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(
            self.roots
                .iter()
                .map(|r| Root::new(format!("file://{}", r.display())))
                .collect(),
        ))
    }
}

fn args(embed: &EmbedServer, chat: &FakeServer) -> Vec<String> {
    let mut args = agent_args(&embed.base_url, "embedded");
    args.extend([
        "--llm-base-url".to_owned(),
        format!("{}/v1", chat.url()),
        "--llm-prompt-reasoning-model".to_owned(),
        MODEL.to_owned(),
    ]);
    args
}

async fn spawn<H: ClientHandler>(
    data: &Path,
    embed: &EmbedServer,
    chat: &FakeServer,
    handler: H,
) -> common::Server<H> {
    let args = args(embed, chat);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut env = server_env(data);
    // The shared embedding server can queue a query for longer than the default 10 s under test load.
    env.insert(
        "FAULT_INDEX_CONTEXT_TIMEOUT_SECS".to_owned(),
        "300".to_owned(),
    );
    common::spawn_handler(
        common::ServerSpec {
            agent_args: &args,
            env,
            ..Default::default()
        },
        handler,
    )
    .await
}

fn last_prompt(chat: &FakeServer) -> String {
    let requests = chat.requests();
    let last = requests.last().expect("the model was asked");
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

fn suggestion_args(file: Option<&Path>) -> Value {
    let mut args = json!({"snippet": SNIPPET, "lang": "python", "score": 0.3, "target_score": 0.8});
    if let Some(file) = file {
        args["file"] = json!(file.display().to_string());
    }
    args
}

fn texts(result: &rmcp::model::CallToolResult) -> Vec<String> {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

#[tokio::test]
async fn a_suggestion_carries_context_only_from_the_project_under_review() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let project_a = project(work.path(), "shop-a", PROJECT_A);
    let project_b = project(work.path(), "shop-b", PROJECT_B);
    let embed = EmbedServer::start(EmbedConfig::default()).await;
    eprintln!(
        "embeddings: {}",
        embed
            .upstream
            .as_deref()
            .unwrap_or("stand-in (bag of words)")
    );
    let better = SNIPPET.replace(
        "json={'amount': amount})",
        "json={'amount': amount}, timeout=5)",
    );
    let answer = json!({"new_code": better, "explanation": "adds a timeout"}).to_string();
    let chat = FakeServer::start(move |_, _| Reply::openai_chat(MODEL, &answer)).await;

    let client = spawn(data.path(), &embed, &chat, ()).await;
    // B indexed last: the project a lookup without scope would have used.
    for dir in [&project_a, &project_b] {
        common::call_ok(
            &client,
            "fault_index_source_code",
            json!({"source_dir": dir.display().to_string(), "lang": "python"}),
        )
        .await;
    }

    // A file of project A: only A's chunks reach the model, and the result names them.
    let file_a = project_a.join("payments.py");
    for tool in [
        "fault_suggest_better_function_reliability",
        "fault_suggest_better_function_performance",
    ] {
        let result = common::call_ok(&client, tool, suggestion_args(Some(&file_a))).await;
        let prompt = last_prompt(&chat);
        assert!(prompt.contains("alpha_refund_card"), "{prompt}");
        assert!(!prompt.contains("beta_"), "project B leaked: {prompt}");
        let context = &result.structured_content.as_ref().unwrap()["index_context"];
        assert_eq!(context["used"], true, "{context}");
        assert_eq!(context["scope"], "file");
        assert_eq!(
            context["projects"],
            json!([project_a.display().to_string()])
        );
        let texts = texts(&result);
        assert!(texts[0].starts_with("```diff\n"), "{texts:?}");
        assert!(
            texts[1].starts_with("index context: ") && texts[1].contains("shop-a"),
            "{texts:?}"
        );
    }

    // The whole-file tool: its own project only.
    // (The stand-in answers a suggestion, not a file review: the call ends in an error after a repair round;
    // what matters here is what the prompts carried.)
    let asked_before = chat.requests().len();
    common::call(
        &client,
        "fault_make_reliability_and_perf_changes",
        json!({"file": file_a.display().to_string()}),
    )
    .await
    .expect("tool call");
    let requests = chat.requests();
    assert!(requests.len() > asked_before);
    for request in &requests[asked_before..] {
        let body = request.body.to_string();
        assert!(body.contains("alpha_refund_card"), "{body}");
        assert!(!body.contains("beta_"), "project B leaked: {body}");
    }

    // A snippet alone, from a client without roots: no context at all, and the result says so.
    let result = common::call_ok(
        &client,
        "fault_suggest_better_function_reliability",
        suggestion_args(None),
    )
    .await;
    let prompt = last_prompt(&chat);
    assert!(
        !prompt.contains("beta_") && !prompt.contains("alpha_refund_card"),
        "{prompt}"
    );
    let context = &result.structured_content.as_ref().unwrap()["index_context"];
    assert_eq!(context["used"], false, "{context}");
    assert_eq!(context["scope"], "none");
    assert!(
        context["reason"].as_str().unwrap().contains("MCP roots"),
        "{context}"
    );
    assert!(
        texts(&result)[1].starts_with("index context: none ("),
        "{:?}",
        texts(&result)
    );
    client.cancel().await.unwrap();

    // A snippet alone, from a client whose root is project A: A's chunks, never B's.
    let client = spawn(
        data.path(),
        &embed,
        &chat,
        RootsClient {
            roots: vec![project_a.clone()],
        },
    )
    .await;
    let result = common::call_ok(
        &client,
        "fault_suggest_better_function_reliability",
        suggestion_args(None),
    )
    .await;
    let prompt = last_prompt(&chat);
    assert!(prompt.contains("alpha_refund_card"), "{prompt}");
    assert!(!prompt.contains("beta_"), "project B leaked: {prompt}");
    let context = &result.structured_content.as_ref().unwrap()["index_context"];
    assert_eq!(context["scope"], "roots", "{context}");
    assert_eq!(
        context["projects"],
        json!([project_a.display().to_string()])
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_file_outside_every_indexed_project_gets_no_context_and_says_so() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let project_b = project(work.path(), "shop-b", PROJECT_B);
    let elsewhere = project(work.path(), "scratch", PROJECT_A);
    let embed = EmbedServer::start(EmbedConfig::default()).await;
    let better = SNIPPET.replace(
        "json={'amount': amount})",
        "json={'amount': amount}, timeout=5)",
    );
    let answer = json!({"new_code": better, "explanation": "adds a timeout"}).to_string();
    let chat = FakeServer::start(move |_, _| Reply::openai_chat(MODEL, &answer)).await;
    let client = spawn(data.path(), &embed, &chat, ()).await;
    common::call_ok(
        &client,
        "fault_index_source_code",
        json!({"source_dir": project_b.display().to_string(), "lang": "python"}),
    )
    .await;
    let result = common::call_ok(
        &client,
        "fault_suggest_better_function_reliability",
        suggestion_args(Some(&elsewhere.join("payments.py"))),
    )
    .await;
    assert!(!last_prompt(&chat).contains("beta_"));
    let context = &result.structured_content.as_ref().unwrap()["index_context"];
    assert_eq!(context["used"], false, "{context}");
    assert_eq!(context["scope"], "file");
    assert!(
        context["reason"]
            .as_str()
            .unwrap()
            .contains("no indexed project contains"),
        "{context}"
    );
    client.cancel().await.unwrap();
}
