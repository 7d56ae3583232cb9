//! The Qdrant store: against an in-process server speaking Qdrant's gRPC API (tests/qdrant_fake), through
//! the library and through the MCP tool; and against a real Qdrant when `QDRANT_URL` is set.

use crate::common;
use crate::index_support;
use crate::qdrant_fake;

use std::path::Path;

use fault::{
    cli::AgentOptions,
    index::{
        self,
        store::{
            ChunkMeta, ChunkPoint, FileStamp, LineMove, SearchFilter, VectorStore,
            qdrant::QdrantStore,
        },
    },
};
use index_support::{EmbedConfig, EmbedServer, agent_args, fixture_repo, server_env};
use qdrant_client::qdrant::Distance;
use qdrant_fake::FakeQdrant;
use serde_json::{Value, json};

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
async fn qdrant_store_creates_upserts_deletes_and_searches_over_grpc() {
    let fake = FakeQdrant::start().await;
    let store = QdrantStore::connect(&fake.url, None, "fault_demo_12345678").unwrap();

    // Creation: the right dimension, cosine distance, a keyword index on path; idempotent.
    assert!(store.collection_info().await.unwrap().is_none());
    store.ensure_collection(4).await.unwrap();
    store.ensure_collection(4).await.unwrap();
    let created = fake.state.collection("fault_demo_12345678").unwrap();
    assert_eq!(created.dimension, 4);
    assert_eq!(created.distance, Distance::Cosine as i32);
    assert_eq!(created.indexed_fields, ["path"]);
    assert_eq!(fake.state.calls("create_collection"), 1);

    // Dimension mismatch: names both dimensions and the fix.
    let err = store.ensure_collection(8).await.unwrap_err().to_string();
    assert!(
        err.contains("4-dimensional") && err.contains("gives 8") && err.contains("DELETE"),
        "{err}"
    );

    // Upsert, list, search (with and without filters).
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
    assert!((hits[0].score - 1.0).abs() < 1e-5);
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

    // Line moves and file stamps update payloads only.
    store
        .move_lines(vec![LineMove {
            id: A.into(),
            start_line: 10,
            end_line: 12,
        }])
        .await
        .unwrap();
    store
        .stamp_files(vec![FileStamp {
            path: "b.go".into(),
            file_hash: "new".into(),
            file_chunks: 2,
        }])
        .await
        .unwrap();
    let listed = store.list_points().await.unwrap();
    let a = listed.iter().find(|p| p.id == A).unwrap();
    assert_eq!((a.meta.start_line, a.meta.end_line), (10, 12));
    assert!(
        listed
            .iter()
            .filter(|p| p.meta.path == "b.go")
            .all(|p| p.meta.file_hash == "new" && p.meta.file_chunks == 2)
    );

    // Delete by path (a filter) and by id.
    assert_eq!(store.delete_paths(vec!["b.go".into()]).await.unwrap(), 2);
    assert_eq!(fake.state.calls("delete_by_filter"), 1);
    assert_eq!(store.list_points().await.unwrap().len(), 1);
    store.delete_ids(vec![A.into()]).await.unwrap();
    assert_eq!(store.collection_info().await.unwrap().unwrap().points, 0);
}

fn options_for(embed: &EmbedServer) -> AgentOptions {
    AgentOptions {
        llm_embed_base_url: Some(embed.base_url.parse().unwrap()),
        llm_embed_model: index_support::embed_model(),
        llm_embed_model_dim: index_support::DIMENSION as u32,
        ..AgentOptions::default()
    }
}

async fn index_with(
    data_dir: &Path,
    args: &[String],
    extra_env: &[(&str, &str)],
    repo: &Path,
) -> Value {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut env = server_env(data_dir);
    env.extend(
        extra_env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let client = common::spawn_with(common::ServerSpec {
        global_args: &[],
        agent_args: &args,
        env,
    })
    .await;
    let result = common::call_ok(
        &client,
        "fault_index_source_code",
        json!({"source_dir": repo.display().to_string(), "lang": "auto"}),
    )
    .await;
    assert_eq!(common::text(&result), "done");
    client.cancel().await.unwrap();
    result.structured_content.unwrap()
}

#[tokio::test]
async fn index_tool_writes_to_qdrant_incrementally_and_retrieval_reads_it_back() {
    let fake = FakeQdrant::start().await;
    let embed = EmbedServer::start(EmbedConfig::default()).await;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("qdrant-demo"));
    let mut args = agent_args(&embed.base_url, "qdrant");
    args.extend(["--qdrant-url".to_string(), fake.url.clone()]);

    let first = index_with(data.path(), &args, &[], &repo).await;
    assert_eq!(first["store"], "qdrant");
    assert_eq!(first["store_location"], fake.url);
    let collection = first["collection"].as_str().unwrap().to_owned();
    assert!(collection.starts_with("fault_qdrant-demo_"), "{collection}");
    let total = first["chunks_embedded"].as_u64().unwrap();
    assert!(total > 5);
    let stored = fake.state.collection(&collection).unwrap();
    assert_eq!(stored.points.len() as u64, total);
    assert_eq!(stored.dimension, index_support::DIMENSION as u64);
    let some = stored.points.values().next().unwrap();
    for field in [
        "path",
        "language",
        "function",
        "start_line",
        "end_line",
        "content_hash",
        "text",
    ] {
        assert!(some.payload.contains_key(field), "payload lacks {field}");
    }

    let requests = embed.requests();
    let second = index_with(data.path(), &args, &[], &repo).await;
    assert_eq!(second["chunks_embedded"], 0);
    assert_eq!(second["chunks_unchanged"], total);
    assert_eq!(embed.requests(), requests);

    std::fs::remove_file(repo.join("app/db.py")).unwrap();
    let third = index_with(data.path(), &args, &[], &repo).await;
    assert_eq!(third["files_deleted"], 1);
    assert!(fake.state.calls("delete_by_filter") >= 1);
    assert_eq!(
        fake.state.collection(&collection).unwrap().points.len() as u64,
        total - third["chunks_deleted"].as_u64().unwrap()
    );

    let hits = index::retrieve_context_in(
        data.path(),
        &options_for(&embed),
        Some(&repo.join("app/server.py")),
        "retry a flaky call with exponential backoff",
        2,
    )
    .await
    .unwrap();
    assert_eq!(hits[0].function, "retry_with_backoff", "{hits:#?}");
    assert_eq!(hits[0].path, repo.join("app/server.py"));
}

#[tokio::test]
async fn auto_picks_qdrant_from_qdrant_url_and_otherwise_the_embedded_store() {
    let fake = FakeQdrant::start().await;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("auto"));
    let embed = EmbedServer::start(EmbedConfig {
        local_only: true,
        ..Default::default()
    })
    .await;
    let args = agent_args(&embed.base_url, "auto");

    let with_url = index_with(data.path(), &args, &[("QDRANT_URL", &fake.url)], &repo).await;
    assert_eq!(with_url["store"], "qdrant");

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
    let started = std::time::Instant::now();
    let without = index_with(data.path(), &args, &[], &repo).await;
    assert_eq!(without["store"], "embedded");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

/// Runs only when `QDRANT_URL` points at a real Qdrant (gRPC port, e.g. http://localhost:6334).
#[tokio::test]
async fn real_qdrant_when_qdrant_url_is_set() {
    let Some(url) = std::env::var("QDRANT_URL").ok().filter(|u| !u.is_empty()) else {
        eprintln!(
            "skipped: set QDRANT_URL (e.g. http://localhost:6334) to test against a real Qdrant"
        );
        return;
    };
    let embed = EmbedServer::start(EmbedConfig::default()).await;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("real-qdrant"));
    let mut args = agent_args(&embed.base_url, "qdrant");
    args.extend(["--qdrant-url".to_string(), url.clone()]);
    let api_key = std::env::var("QDRANT_API_KEY").unwrap_or_default();
    let env = [("QDRANT_API_KEY", api_key.as_str())];

    let first = index_with(data.path(), &args, &env, &repo).await;
    assert_eq!(first["store"], "qdrant");
    let collection = first["collection"].as_str().unwrap().to_owned();
    let second = index_with(data.path(), &args, &env, &repo).await;
    assert_eq!(second["chunks_embedded"], 0);
    let hits = index::retrieve_context_in(
        data.path(),
        &options_for(&embed),
        None,
        "retry a flaky call with exponential backoff",
        2,
    )
    .await;

    // Clean up before asserting on the search.
    let client = qdrant_client::Qdrant::from_url(&url)
        .api_key(std::env::var("QDRANT_API_KEY").ok())
        .skip_compatibility_check()
        .build()
        .unwrap();
    client.delete_collection(&collection).await.unwrap();
    let hits = hits.unwrap();
    assert_eq!(hits[0].function, "retry_with_backoff", "{hits:#?}");
}
