//! The Qdrant store against a real Qdrant (`FAULT_TEST_QDRANT_URL`, its gRPC port; `bash
//! ../shared/qdrant/qdrant.sh start` prints it): through the library and through the MCP tool, and its
//! retrieval compared with the embedded store's. Without the variable each test is skipped out loud (a
//! failure under `FAULT_REQUIRE_ALL=1`). Every test uses collections of its own (test-unique names, or
//! project roots in temporary directories), so the tests run in parallel against one server.
//!
//! What a real server cannot be made to do on demand (be unavailable, hang) uses `qdrant_fake`.

use crate::support::common;
use crate::support::indexing;
use crate::support::llm_fakes;
use crate::support::optional;
use crate::support::qdrant_fake;

use std::{
    collections::HashMap,
    path::PathBuf,
    time::{Duration, Instant},
};

use fault::index::{
    self,
    project::{ProjectRecord, Registry, collection_name},
    store::{
        ChunkMeta, ChunkPoint, FileChanges, FileStamp, LineMove, SearchFilter, VectorStore,
        qdrant::{self, ClusterLayout, QdrantStore},
    },
};
use indexing::{
    EmbedConfig, EmbedServer, agent_args, fixture_repo, generated_files, index_call, index_with,
};
use qdrant_client::{
    Qdrant,
    qdrant::{CountPointsBuilder, Distance, Filter, ScrollPointsBuilder, vectors_config},
};
use serde_json::json;

/// The real Qdrant's gRPC URL, or `None` after a skip notice (also when it is set but does not answer).
async fn real_qdrant(test: &str) -> Option<String> {
    let Some(url) = std::env::var("FAULT_TEST_QDRANT_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        optional::skip(
            test,
            "a Qdrant server: FAULT_TEST_QDRANT_URL is not set (run `bash ../shared/qdrant/qdrant.sh start` \
             and export what it prints, or point it at any Qdrant's gRPC port)",
        );
        return None;
    };
    if !QdrantStore::answers(&url, api_key(), Duration::from_secs(3)).await {
        optional::skip(
            test,
            &format!(
                "a Qdrant server: none answers at FAULT_TEST_QDRANT_URL={url} (start it with \
                 `bash ../shared/qdrant/qdrant.sh start`)"
            ),
        );
        return None;
    }
    Some(url)
}

fn api_key() -> Option<String> {
    std::env::var("QDRANT_API_KEY")
        .ok()
        .filter(|k| !k.is_empty())
}

fn client(url: &str) -> Qdrant {
    Qdrant::from_url(url)
        .api_key(api_key())
        .skip_compatibility_check()
        .build()
        .unwrap()
}

/// A collection name no other test (or run) uses.
fn unique_collection(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("fault_test_{test}_{}_{nanos}", std::process::id())
}

async fn count(url: &str, collection: &str, filter: Option<Filter>) -> u64 {
    let mut request = CountPointsBuilder::new(collection).exact(true);
    if let Some(filter) = filter {
        request = request.filter(filter);
    }
    client(url)
        .count(request)
        .await
        .unwrap()
        .result
        .unwrap()
        .count
}

async fn drop_collection(url: &str, collection: &str) {
    client(url).delete_collection(collection).await.unwrap();
}

fn point(id: &str, path: &str, language: &str, vector: Vec<f32>) -> ChunkPoint {
    ChunkPoint {
        id: id.into(),
        meta: ChunkMeta {
            path: path.into(),
            language: language.into(),
            start_line: 1,
            end_line: 3,
            content_hash: format!("hash-{id}"),
            file_hash: "file".into(),
            file_chunks: 1,
        },
        kind: "function".into(),
        name: format!("fn_{}", &id[..4]),
        qualified_name: format!("mod.fn_{}", &id[..4]),
        text: format!("def fn_{}(): pass", &id[..4]),
        vector,
    }
}

const A: &str = "aaaaaaaa-0000-5000-8000-000000000001";
const B: &str = "bbbbbbbb-0000-5000-8000-000000000002";
const C: &str = "cccccccc-0000-5000-8000-000000000003";

#[tokio::test]
async fn store_creates_upserts_searches_moves_and_deletes_on_a_real_qdrant() {
    let Some(url) = real_qdrant(
        "index::qdrant::store_creates_upserts_searches_moves_and_deletes_on_a_real_qdrant",
    )
    .await
    else {
        return;
    };
    let name = unique_collection("store");
    let store = QdrantStore::connect(
        &url,
        api_key(),
        &name,
        ClusterLayout::default(),
        qdrant::DEFAULT_TIMEOUT,
    )
    .unwrap();

    // Creation: the right dimension, cosine distance, a keyword index on path; idempotent.
    assert!(store.collection_info().await.unwrap().is_none());
    store.ensure_collection(4).await.unwrap();
    let again = store.ensure_collection(4).await.unwrap();
    assert_eq!((again.dimension, again.points), (4, 0));
    let info = client(&url)
        .collection_info(&name)
        .await
        .unwrap()
        .result
        .unwrap();
    let params = info.config.unwrap().params.unwrap();
    match params.vectors_config.unwrap().config.unwrap() {
        vectors_config::Config::Params(vectors) => {
            assert_eq!(vectors.size, 4);
            assert_eq!(vectors.distance, Distance::Cosine as i32);
        }
        other => panic!("named vectors: {other:?}"),
    }
    assert!(
        info.payload_schema.contains_key("path"),
        "{:?}",
        info.payload_schema
    );

    // Dimension mismatch: names both dimensions and the fix.
    let err = store.ensure_collection(8).await.unwrap_err().to_string();
    assert!(
        err.contains("4-dimensional") && err.contains("gives 8") && err.contains("DELETE"),
        "{err}"
    );

    // Upsert, list, nearest query with payload (with and without filters).
    store
        .upsert(vec![
            point(A, "a.py", "python", vec![1.0, 0.0, 0.0, 0.0]),
            point(B, "b.go", "go", vec![0.0, 1.0, 0.0, 0.0]),
            point(C, "b.go", "go", vec![0.6, 0.8, 0.0, 0.0]),
        ])
        .await
        .unwrap();
    let mut listed = store.list_points().await.unwrap();
    listed.sort_by(|x, y| x.id.cmp(&y.id));
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0].id, A);
    assert_eq!(listed[0].meta, point(A, "a.py", "python", vec![]).meta);
    let hits = store
        .search(vec![0.0, 1.0, 0.0, 0.0], 2, SearchFilter::default())
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(),
        ["fn_bbbb", "fn_cccc"]
    );
    assert_eq!(hits[0].path, "b.go");
    assert_eq!(hits[0].qualified_name, "mod.fn_bbbb");
    assert_eq!(hits[0].text, "def fn_bbbb(): pass");
    assert_eq!((hits[0].start_line, hits[0].end_line), (1, 3));
    assert!((hits[0].score - 1.0).abs() < 1e-5);
    assert!((hits[1].score - 0.8).abs() < 1e-5);
    let python_only = SearchFilter {
        languages: vec!["python".into()],
        ..Default::default()
    };
    let hits = store
        .search(vec![0.0, 1.0, 0.0, 0.0], 5, python_only)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].path, "a.py");

    // Line moves and file stamps update payloads only; each file's changes go in one request.
    let deleted = store
        .apply(vec![
            FileChanges {
                path: "a.py".into(),
                moves: vec![LineMove {
                    id: A.into(),
                    start_line: 10,
                    end_line: 12,
                }],
                ..Default::default()
            },
            FileChanges {
                path: "b.go".into(),
                stamp: Some(FileStamp {
                    path: "b.go".into(),
                    file_hash: "new".into(),
                    file_chunks: 2,
                }),
                ..Default::default()
            },
        ])
        .await
        .unwrap();
    assert_eq!(deleted, 0);
    let listed = store.list_points().await.unwrap();
    let a = listed.iter().find(|p| p.id == A).unwrap();
    assert_eq!((a.meta.start_line, a.meta.end_line), (10, 12));
    assert_eq!(a.meta.file_hash, "file");
    assert!(
        listed
            .iter()
            .filter(|p| p.meta.path == "b.go")
            .all(|p| p.meta.file_hash == "new" && p.meta.file_chunks == 2)
    );

    // Delete by path (a filter) and by id.
    assert_eq!(store.delete_paths(vec!["b.go".into()]).await.unwrap(), 2);
    assert_eq!(count(&url, &name, None).await, 1);
    let stale = FileChanges {
        path: "a.py".into(),
        stale_ids: vec![A.into()],
        ..Default::default()
    };
    assert_eq!(store.apply(vec![stale]).await.unwrap(), 1);
    assert_eq!(store.collection_info().await.unwrap().unwrap().points, 0);
    drop_collection(&url, &name).await;
}

fn qdrant_args(embed: &EmbedServer, url: &str) -> Vec<String> {
    let mut args = agent_args(&embed.base_url, "qdrant");
    args.extend(["--qdrant-url".to_string(), url.to_owned()]);
    args
}

#[tokio::test]
async fn index_tool_writes_batches_reindexes_incrementally_and_deletes_by_file() {
    let Some(url) = real_qdrant(
        "index::qdrant::index_tool_writes_batches_reindexes_incrementally_and_deletes_by_file",
    )
    .await
    else {
        return;
    };
    let embed = EmbedServer::start(EmbedConfig::default()).await;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("qdrant-demo"));
    generated_files(&repo.join("stages"), 10, 10); // 100 more chunks: several batches of 64
    let args = qdrant_args(&embed, &url);

    let first = index_with(data.path(), &args, &[], &repo).await;
    assert_eq!(first["store"], "qdrant");
    assert_eq!(first["store_location"], url);
    // Collection naming: directory name + a hash of the root.
    let collection = first["collection"].as_str().unwrap().to_owned();
    assert_eq!(collection, collection_name(&repo));
    assert!(collection.starts_with("fault_qdrant-demo_"), "{collection}");
    let total = first["chunks_embedded"].as_u64().unwrap();
    assert!(total > 100, "{first}");
    // Upserted in batches of 64, one embedding request each, every batch committed.
    assert_eq!(embed.requests(), total.div_ceil(64), "{first}");
    assert_eq!(count(&url, &collection, None).await, total);
    let some = client(&url)
        .scroll(
            ScrollPointsBuilder::new(&collection)
                .filter(Filter::must([qdrant_client::qdrant::Condition::matches(
                    "path",
                    "app/server.py".to_owned(),
                )]))
                .with_payload(true)
                .limit(1),
        )
        .await
        .unwrap()
        .result;
    let payload = &some[0].payload;
    for field in [
        "path",
        "language",
        "function",
        "qualified_name",
        "start_line",
        "end_line",
        "content_hash",
        "text",
    ] {
        assert!(payload.contains_key(field), "payload lacks {field}");
    }

    // Unchanged tree: nothing embedded, nothing written.
    let requests = embed.requests();
    let second = index_with(data.path(), &args, &[], &repo).await;
    assert_eq!(second["chunks_embedded"], 0, "{second}");
    assert_eq!(second["chunks_unchanged"], total);
    assert_eq!(embed.requests(), requests);

    // A deleted file: its points go, by a filter on path.
    let db_chunks = count(
        &url,
        &collection,
        Some(Filter::must([qdrant_client::qdrant::Condition::matches(
            "path",
            "app/db.py".to_owned(),
        )])),
    )
    .await;
    assert!(db_chunks > 0);
    std::fs::remove_file(repo.join("app/db.py")).unwrap();
    let third = index_with(data.path(), &args, &[], &repo).await;
    assert_eq!(third["files_deleted"], 1, "{third}");
    assert_eq!(third["chunks_deleted"], db_chunks);
    assert_eq!(count(&url, &collection, None).await, total - db_chunks);

    let hits = index::retrieve_context_in(
        data.path(),
        &indexing::llm_settings(&embed),
        Some(&repo.join("app/server.py")),
        "retry a flaky call with exponential backoff",
        2,
    )
    .await
    .unwrap();
    assert_eq!(hits[0].function, "retry_with_backoff", "{hits:#?}");
    assert_eq!(hits[0].path, repo.join("app/server.py"));
    drop_collection(&url, &collection).await;
}

#[tokio::test]
async fn a_collection_of_another_dimension_is_refused_naming_both_and_the_fix() {
    let Some(url) = real_qdrant(
        "index::qdrant::a_collection_of_another_dimension_is_refused_naming_both_and_the_fix",
    )
    .await
    else {
        return;
    };
    let embed = EmbedServer::start(EmbedConfig {
        local_only: true,
        ..Default::default()
    })
    .await;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("dimensions"));
    let collection = collection_name(&repo);
    QdrantStore::connect(
        &url,
        api_key(),
        &collection,
        ClusterLayout::default(),
        qdrant::DEFAULT_TIMEOUT,
    )
    .unwrap()
    .ensure_collection(8)
    .await
    .unwrap();
    let result = index_call(data.path(), &qdrant_args(&embed, &url), &[], &repo).await;
    let message = common::text(&result).to_owned();
    drop_collection(&url, &collection).await;
    assert!(common::is_error(&result), "{message}");
    assert!(
        message.contains(&collection)
            && message.contains("8-dimensional")
            && message.contains(&format!("gives {}", indexing::DIMENSION))
            && message.contains("DELETE"),
        "{message}"
    );
    assert_eq!(
        embed.requests(),
        0,
        "embedded before checking the collection"
    );
}

#[tokio::test]
async fn an_interrupted_index_keeps_its_batches_and_the_next_run_completes_it() {
    let Some(url) = real_qdrant(
        "index::qdrant::an_interrupted_index_keeps_its_batches_and_the_next_run_completes_it",
    )
    .await
    else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("interrupted");
    generated_files(&repo, 25, 8); // 200 chunks, 8 a file: batches of 64, 64, 64, 8, each ending with a file
    let repo = repo.canonicalize().unwrap();
    let collection = collection_name(&repo);

    // The embedding provider goes down after two batches.
    let failing = EmbedServer::start(EmbedConfig {
        local_only: true,
        fail_after: Some(2),
        ..Default::default()
    })
    .await;
    let result = index_call(data.path(), &qdrant_args(&failing, &url), &[], &repo).await;
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(message.contains("128 chunks were committed"), "{message}");
    assert_eq!(count(&url, &collection, None).await, 128);

    let working = EmbedServer::start(EmbedConfig {
        local_only: true,
        ..Default::default()
    })
    .await;
    let resumed = index_with(data.path(), &qdrant_args(&working, &url), &[], &repo).await;
    assert_eq!(resumed["chunks_unchanged"], 128, "{resumed}");
    assert_eq!(resumed["chunks_embedded"], 72, "{resumed}");
    assert_eq!(working.inputs().len(), 72);
    assert_eq!(count(&url, &collection, None).await, 200);
    drop_collection(&url, &collection).await;
}

#[tokio::test]
async fn auto_picks_qdrant_from_qdrant_url_and_otherwise_the_embedded_store() {
    let Some(url) = real_qdrant(
        "index::qdrant::auto_picks_qdrant_from_qdrant_url_and_otherwise_the_embedded_store",
    )
    .await
    else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("auto"));
    let embed = EmbedServer::start(EmbedConfig {
        local_only: true,
        ..Default::default()
    })
    .await;
    let args = agent_args(&embed.base_url, "auto");

    let with_url = index_with(data.path(), &args, &[("QDRANT_URL", &url)], &repo).await;
    assert_eq!(with_url["store"], "qdrant");
    assert_eq!(with_url["store_location"], url);
    drop_collection(&url, with_url["collection"].as_str().unwrap()).await;

    if QdrantStore::answers(
        index::DEFAULT_QDRANT_URL,
        None,
        std::time::Duration::from_millis(500),
    )
    .await
    {
        eprintln!(
            "a Qdrant answers at {}: auto would use it; embedded fallback not checked",
            index::DEFAULT_QDRANT_URL
        );
        return;
    }
    let started = Instant::now();
    let without = index_with(data.path(), &args, &[], &repo).await;
    assert_eq!(without["store"], "embedded");
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Questions about the index fixture, each closest to a different part of it.
const QUERIES: [&str; 10] = [
    "retry a flaky call with exponential backoff",
    "fetch one todo item from the upstream service",
    "in-memory cache with an expiry time",
    "open a connection to the database",
    "run an SQL query with parameters",
    "checksum of a payload",
    "parse a timeout duration from a string",
    "record a latency in a histogram bucket",
    "percentile of a latency histogram",
    "load the todo list in the browser and render it",
];

/// The identity of a retrieved chunk, as a user would cite it.
fn cited(chunk: &index::RetrievedChunk) -> (PathBuf, String, u32, u32) {
    (
        chunk.path.clone(),
        chunk.qualified_name.clone(),
        chunk.start_line,
        chunk.end_line,
    )
}

#[tokio::test]
async fn retrieval_through_qdrant_returns_the_embedded_stores_top_5() {
    let Some(url) =
        real_qdrant("index::qdrant::retrieval_through_qdrant_returns_the_embedded_stores_top_5")
            .await
    else {
        return;
    };
    let embed = EmbedServer::start(EmbedConfig::default()).await;
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("same-top-5"));
    let in_qdrant = tempfile::tempdir().unwrap();
    let embedded = tempfile::tempdir().unwrap();
    let q = index_with(in_qdrant.path(), &qdrant_args(&embed, &url), &[], &repo).await;
    let e = index_with(
        embedded.path(),
        &agent_args(&embed.base_url, "embedded"),
        &[],
        &repo,
    )
    .await;
    assert_eq!(q["chunks_total"], e["chunks_total"]);
    let options = indexing::llm_settings(&embed);

    let mut same_order = 0;
    let mut differences = Vec::new();
    for query in QUERIES {
        let from_qdrant = index::retrieve_context_in(in_qdrant.path(), &options, None, query, 5)
            .await
            .unwrap();
        let from_embedded = index::retrieve_context_in(embedded.path(), &options, None, query, 5)
            .await
            .unwrap();
        assert_eq!(from_qdrant.len(), 5, "{query}");
        let q_ids: Vec<_> = from_qdrant.iter().map(cited).collect();
        let e_ids: Vec<_> = from_embedded.iter().map(cited).collect();
        // Equal scores may come in either order; nothing else may differ.
        let tie_only = q_ids.len() == e_ids.len()
            && q_ids
                .iter()
                .zip(&e_ids)
                .zip(from_qdrant.iter().zip(&from_embedded))
                .all(|((qi, ei), (qc, ec))| {
                    (qc.score - ec.score).abs() < 1e-4
                        && (qi == ei || {
                            let tied: Vec<_> = from_embedded
                                .iter()
                                .filter(|c| (c.score - qc.score).abs() < 1e-4)
                                .map(cited)
                                .collect();
                            tied.contains(qi)
                        })
                });
        if q_ids == e_ids {
            same_order += 1;
        } else if !tie_only {
            differences.push(format!(
                "{query}:\n  qdrant:   {:?}\n  embedded: {:?}",
                from_qdrant
                    .iter()
                    .map(|c| (&c.qualified_name, c.score))
                    .collect::<Vec<_>>(),
                from_embedded
                    .iter()
                    .map(|c| (&c.qualified_name, c.score))
                    .collect::<Vec<_>>()
            ));
        }
    }
    println!(
        "top-5 agreement, Qdrant vs embedded ({} embeddings): {same_order}/{} queries in the same order, \
         {} differing beyond ties",
        embed.upstream.as_deref().unwrap_or("stand-in"),
        QUERIES.len(),
        differences.len()
    );
    drop_collection(&url, q["collection"].as_str().unwrap()).await;
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[tokio::test]
async fn an_unavailable_qdrant_is_named_in_the_error_at_once() {
    let embed = EmbedServer::start(EmbedConfig {
        local_only: true,
        ..Default::default()
    })
    .await;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("unavailable"));
    let url = qdrant_fake::unavailable_url();
    let started = Instant::now();
    let result = index_call(data.path(), &qdrant_args(&embed, &url), &[], &repo).await;
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(message.contains(&format!("Qdrant at {url}")), "{message}");
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(embed.requests(), 0);
}

#[tokio::test]
async fn a_hung_qdrant_does_not_stall_a_suggestion() {
    let hung = qdrant_fake::HungQdrant::start().await;
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("hung"));
    let data = tempfile::tempdir().unwrap();
    // A project indexed earlier into a Qdrant that now never answers.
    Registry::open(data.path())
        .unwrap()
        .record(&ProjectRecord {
            root: repo.clone(),
            collection: collection_name(&repo),
            store: "qdrant".into(),
            location: hung.url.clone(),
            embed_model: "text-embedding-3-small".into(),
            dimension: 1536,
            indexed_at_ms: 0,
        })
        .unwrap();
    let model = llm_fakes::FakeServer::start(|_, request| {
        if request.path.ends_with("/embeddings") {
            return llm_fakes::Reply::openai_embeddings(
                "text-embedding-3-small",
                &[vec![0.1; 1536]],
            );
        }
        llm_fakes::Reply::openai_chat(
            "gpt-test",
            &json!({"new_code": "def f(url, timeout=5):\n    pass", "explanation": "timeout"})
                .to_string(),
        )
    })
    .await;
    let base = format!("{}/v1", model.url());
    let args = [
        "--llm-base-url",
        base.as_str(),
        "--llm-prompt-reasoning-model",
        "gpt-test",
    ];
    let client = common::spawn_with(common::ServerSpec {
        agent_args: &args,
        env: HashMap::from([
            (
                "FAULT_DATA_DIR".to_owned(),
                data.path().display().to_string(),
            ),
            ("OPENAI_API_KEY".to_owned(), "test-key".to_owned()),
        ]),
        ..Default::default()
    })
    .await;
    let started = Instant::now();
    let result = common::call_ok(
        &client,
        "fault_suggest_better_function_reliability",
        json!({"snippet": "def f(url):\n    pass", "lang": "python", "score": 0.3, "target_score": 0.8,
               "file": repo.join("app/server.py").display().to_string()}),
    )
    .await;
    let elapsed = started.elapsed();
    assert!(common::text(&result).starts_with("```diff\n"));
    // The context lookup has a budget of 10 s; the suggestion comes without context.
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
    let chat = model
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .unwrap();
    assert!(!chat.body.to_string().contains("Related code"));
    assert!(
        client.stderr().contains("no index context") || client.stderr().contains("too slow"),
        "{}",
        client.stderr()
    );
    client.cancel().await.unwrap();
}
