//! Support for the index tests: an embeddings server on 127.0.0.1 speaking OpenAI's `/v1/embeddings` that
//! counts every request and input. It forwards to the real local embedding server (all-MiniLM-L6-v2,
//! `FAULT_TEST_EMBED_BASE_URL`, default http://127.0.0.1:18081/v1) when that answers, and otherwise answers
//! itself with deterministic hashed bag-of-words vectors.
#![allow(dead_code)]

use std::{
    collections::HashMap,
    convert::Infallible,
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

pub const DIMENSION: usize = 384;

/// How the stand-in answers.
#[derive(Clone, Default)]
pub struct EmbedConfig {
    /// Wait this long before answering each request (to interrupt an index mid-way).
    pub delay: Duration,
    /// Never forward, even when the real server is up.
    pub local_only: bool,
    /// Answer 503 to every request after this many.
    pub fail_after: Option<u64>,
}

pub struct EmbedServer {
    /// Base URL to pass as `--llm-embed-base-url` (ends in `/v1`).
    pub base_url: String,
    /// `Some(url)` when requests are forwarded to the real local embedding server.
    pub upstream: Option<String>,
    pub state: Arc<EmbedState>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
pub struct EmbedState {
    pub requests: AtomicU64,
    /// Requests answered (the response was produced).
    pub answered: AtomicU64,
    pub inputs: Mutex<Vec<String>>,
}

impl Drop for EmbedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl EmbedServer {
    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::SeqCst)
    }

    pub fn answered(&self) -> u64 {
        self.state.answered.load(Ordering::SeqCst)
    }

    /// Every input received so far, in order.
    pub fn inputs(&self) -> Vec<String> {
        self.state.inputs.lock().unwrap().clone()
    }

    /// The `(path, qualified_name)` of each input received since `from`, read from the header line the
    /// indexer puts first: `<language> <kind> <qualified_name> in <path>`.
    pub fn identities_since(&self, from: usize) -> Vec<(String, String)> {
        self.inputs()[from..]
            .iter()
            .map(|input| {
                let header = input.lines().next().unwrap_or_default();
                let (left, path) = header.rsplit_once(" in ").unwrap_or((header, ""));
                let name = left.splitn(3, ' ').nth(2).unwrap_or_default();
                (path.to_owned(), name.to_owned())
            })
            .collect()
    }

    pub async fn start(config: EmbedConfig) -> EmbedServer {
        let upstream = if config.local_only {
            None
        } else {
            real_server().await
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(EmbedState::default());
        let shared = (state.clone(), upstream.clone(), config.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let shared = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let shared = shared.clone();
                        async move {
                            Ok::<_, Infallible>(
                                handle(req, &shared.0, shared.1.as_deref(), &shared.2).await,
                            )
                        }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        EmbedServer {
            base_url: format!("http://{addr}/v1"),
            upstream,
            state,
            task,
        }
    }
}

/// The real local embedding server's base URL, when it answers within a second (and
/// `FAULT_TEST_EMBED_STAND_IN` is not set).
pub async fn real_server() -> Option<String> {
    if std::env::var_os("FAULT_TEST_EMBED_STAND_IN").is_some() {
        return None;
    }
    let base = std::env::var("FAULT_TEST_EMBED_BASE_URL")
        .unwrap_or_else(|_| "http://127.0.0.1:18081/v1".into());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .ok()?;
    let response = client.get(format!("{base}/models")).send().await.ok()?;
    response.status().is_success().then_some(base)
}

/// The model name to pass as `--llm-embed-model`.
pub fn embed_model() -> String {
    std::env::var("FAULT_TEST_EMBED_MODEL").unwrap_or_else(|_| "all-minilm".into())
}

fn reply(status: u16, body: Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

async fn handle(
    req: Request<Incoming>,
    state: &EmbedState,
    upstream: Option<&str>,
    config: &EmbedConfig,
) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    if req.method() == hyper::Method::GET && path == "/v1/models" {
        return reply(
            200,
            json!({"object": "list", "data": [{"id": "stand-in", "object": "model"}]}),
        );
    }
    if path != "/v1/embeddings" {
        return reply(
            404,
            json!({"error": {"message": format!("no route {path}")}}),
        );
    }
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let inputs: Vec<String> = match &request["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => {
            return reply(
                400,
                json!({"error": {"message": "input must be a string or an array of strings"}}),
            );
        }
    };
    let seen = state.requests.fetch_add(1, Ordering::SeqCst);
    if config.fail_after.is_some_and(|limit| seen >= limit) {
        return reply(
            503,
            json!({"error": {"message": "embedding backend is down"}}),
        );
    }
    state.inputs.lock().unwrap().extend(inputs.iter().cloned());
    if !config.delay.is_zero() {
        tokio::time::sleep(config.delay).await;
    }
    let response = match upstream {
        Some(base) => {
            let client = reqwest::Client::new();
            match client
                .post(format!("{base}/embeddings"))
                .header("content-type", "application/json")
                .body(body.to_vec())
                .send()
                .await
            {
                Ok(r) => {
                    let status = r.status().as_u16();
                    let value: Value = r.json().await.unwrap_or(Value::Null);
                    reply(status, value)
                }
                Err(e) => reply(502, json!({"error": {"message": e.to_string()}})),
            }
        }
        None => {
            let data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(index, text)| json!({"object": "embedding", "index": index, "embedding": bag_of_words(text, DIMENSION)}))
                .collect();
            let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
            reply(
                200,
                json!({
                    "object": "list",
                    "data": data,
                    "model": request["model"],
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
                }),
            )
        }
    };
    state.answered.fetch_add(1, Ordering::SeqCst);
    response
}

/// Words of `text`, lowercased, with snake_case and camelCase split.
pub fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = c.is_lowercase();
            current.extend(c.to_lowercase());
        } else {
            previous_lower = false;
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// A deterministic embedding: each word adds ±1 at a hashed position (FNV-1a), then unit length.
pub fn bag_of_words(text: &str, dimension: usize) -> Vec<f32> {
    let mut vector = vec![0f32; dimension];
    for word in words(text) {
        let mut hash: u64 = 0xcbf29ce484222325;
        for byte in word.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x100000001b3);
        }
        let sign = if hash >> 63 == 0 { 1.0 } else { -1.0 };
        vector[(hash % dimension as u64) as usize] += sign;
    }
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
    vector
}

/// Copies the fixture repository to `dst` and adds the files it must not index (ignored, hidden), which
/// cannot live in the repository itself because its .gitignore would hide them from git too.
pub fn fixture_repo(dst: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/index/repo");
    copy_dir(&src, dst);
    std::fs::write(dst.join(".gitignore"), "build/\nignored.py\n").unwrap();
    std::fs::create_dir_all(dst.join("build")).unwrap();
    std::fs::write(
        dst.join("build/generated.py"),
        "def generated_build_step():\n    return 1\n",
    )
    .unwrap();
    std::fs::write(
        dst.join("ignored.py"),
        "def ignored_function():\n    return 2\n",
    )
    .unwrap();
    std::fs::create_dir_all(dst.join(".hidden")).unwrap();
    std::fs::write(
        dst.join(".hidden/secret.py"),
        "def hidden_function():\n    return 3\n",
    )
    .unwrap();
    dst.canonicalize().unwrap()
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let target = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Environment for a spawned server: the data dir, a dummy key, fast failure on an unreachable provider.
pub fn server_env(data_dir: &Path) -> HashMap<String, String> {
    HashMap::from([
        ("FAULT_DATA_DIR".to_owned(), data_dir.display().to_string()),
        ("OPENAI_API_KEY".to_owned(), "test-key".to_owned()),
        ("FAULT_LLM_MAX_RETRIES".to_owned(), "0".to_owned()),
        // The real local model on a loaded 2-core machine can take tens of seconds per batch.
        ("FAULT_LLM_TIMEOUT_SECS".to_owned(), "300".to_owned()),
    ])
}

/// `fault agent` options for the embedded store and the embeddings at `embed_url`.
pub fn agent_args(embed_url: &str, store: &str) -> Vec<String> {
    vec![
        "--llm-embed-base-url".into(),
        embed_url.into(),
        "--llm-embed-model".into(),
        embed_model(),
        "--llm-embed-model-dim".into(),
        DIMENSION.to_string(),
        "--vector-store".into(),
        store.into(),
    ]
}

/// Chunks per embedding request in the tests that index with the real embedding model: a tree of tens of
/// chunks, which that model embeds in seconds, then still makes several batches.
pub const SMALL_BATCH: usize = 16;

/// [`agent_args`] with embedding requests of [`SMALL_BATCH`] chunks (`--llm-embed-batch-size`).
pub fn small_batch_args(embed_url: &str, store: &str) -> Vec<String> {
    let mut args = agent_args(embed_url, store);
    args.extend(["--llm-embed-batch-size".into(), SMALL_BATCH.to_string()]);
    args
}

/// Settings for the library's retrieval with the embeddings at `embed` (its model and dimension).
pub fn llm_settings(embed: &EmbedServer) -> fault::llm::LlmSettings {
    llm_settings_at(&embed.base_url)
}

/// Settings for the library's retrieval with the embeddings at `base_url` (the suite's model and dimension).
pub fn llm_settings_at(base_url: &str) -> fault::llm::LlmSettings {
    fault::llm::LlmSettings {
        embed_base_url: Some(base_url.parse().unwrap()),
        embed_model: embed_model(),
        embed_dimension: DIMENSION as u32,
        ..fault::llm::LlmSettings::default()
    }
}

/// The embedded store an index call wrote, from its summary (`store_location`, `collection`).
pub fn embedded_store(summary: &Value) -> fault::index::store::sqlite::SqliteStore {
    fault::index::store::sqlite::SqliteStore::open_uncached(
        Path::new(summary["store_location"].as_str().unwrap()),
        summary["collection"].as_str().unwrap(),
    )
    .unwrap()
}

/// `QDRANT_API_KEY` when set.
pub fn qdrant_api_key() -> Option<String> {
    std::env::var("QDRANT_API_KEY")
        .ok()
        .filter(|k| !k.is_empty())
}

/// The store of `collection` in the Qdrant at `url`, for reading back what an index wrote.
pub fn qdrant_store(url: &str, collection: &str) -> fault::index::store::qdrant::QdrantStore {
    fault::index::store::qdrant::QdrantStore::connect(
        url,
        qdrant_api_key(),
        collection,
        Default::default(),
        fault::index::store::qdrant::DEFAULT_TIMEOUT,
    )
    .unwrap()
}

/// Removes a collection a test made. Up to 60 s: a node back from a kill may still be catching up, and a
/// cluster-wide delete then takes longer than the client's default 5 s.
pub async fn drop_qdrant_collection(url: &str, collection: &str) {
    qdrant_client::Qdrant::from_url(url)
        .api_key(qdrant_api_key())
        .timeout(Duration::from_secs(60))
        .skip_compatibility_check()
        .build()
        .unwrap()
        .delete_collection(collection)
        .await
        .unwrap();
}

/// `files` Python files of `functions` functions each under `dir`: chunks for several batches.
pub fn generated_files(dir: &Path, files: usize, functions: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for f in 0..files {
        let source: String = (0..functions)
            .map(|g| {
                format!(
                    "def step_{f}_{g}(request):\n    \"\"\"Step {g} of stage {f}.\"\"\"\n    return request.get(\"{f}-{g}\")\n\n\n"
                )
            })
            .collect();
        std::fs::write(dir.join(format!("stage_{f:03}.py")), source).unwrap();
    }
}

/// One `fault_index_source_code` call of `repo` on a server of its own (`args`, the test env plus
/// `extra_env`); the result, error or not.
pub async fn index_call(
    data_dir: &Path,
    args: &[String],
    extra_env: &[(&str, &str)],
    repo: &Path,
) -> rmcp::model::CallToolResult {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut env = server_env(data_dir);
    env.extend(
        extra_env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let client = crate::support::common::spawn_with(crate::support::common::ServerSpec {
        agent_args: &args,
        env,
        ..Default::default()
    })
    .await;
    let result = crate::support::common::call(
        &client,
        "fault_index_source_code",
        json!({"source_dir": repo.display().to_string(), "lang": "auto"}),
    )
    .await
    .expect("tool call");
    client.cancel().await.unwrap();
    result
}

/// [`index_call`] that must succeed; its structured summary.
pub async fn index_with(
    data_dir: &Path,
    args: &[String],
    extra_env: &[(&str, &str)],
    repo: &Path,
) -> Value {
    let result = index_call(data_dir, args, extra_env, repo).await;
    assert!(
        !crate::support::common::is_error(&result),
        "{}",
        crate::support::common::text(&result)
    );
    assert_eq!(crate::support::common::text(&result), "done");
    result.structured_content.unwrap()
}

/// The chunks a store holds, as (path, lines, content hash), sorted; and whether any chunk is there twice.
pub async fn stored_chunks(
    store: &dyn fault::index::store::VectorStore,
) -> (Vec<(String, u32, u32, String)>, usize) {
    let points = store.list_points().await.unwrap();
    let mut chunks: Vec<_> = points
        .iter()
        .map(|p| {
            (
                p.meta.path.clone(),
                p.meta.start_line,
                p.meta.end_line,
                p.meta.content_hash.clone(),
            )
        })
        .collect();
    chunks.sort();
    let before = chunks.len();
    let mut unique = chunks.clone();
    unique.dedup();
    (chunks, before - unique.len())
}
