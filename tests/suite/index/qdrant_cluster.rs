//! The Qdrant store on a real 3-node Qdrant cluster (`bash ../shared/qdrant/qdrant.sh cluster start 3` prints
//! `FAULT_TEST_QDRANT_CLUSTER_URLS` and `FAULT_TEST_QDRANT_CLUSTER_REST_URLS`): a collection laid out as the
//! flags ask, indexed and queried through the MCP tool, and answering with a node SIGKILLed. Without the
//! variables the test is skipped out loud (a failure under `FAULT_REQUIRE_ALL=1`). The node is killed and
//! brought back with the same script (`FAULT_TEST_QDRANT_SCRIPT`, default `../shared/qdrant/qdrant.sh`).

use crate::support::common;
use crate::support::indexing;
use crate::support::optional;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use fault::{index, index::store::qdrant::QdrantStore};
use indexing::{
    EmbedConfig, EmbedServer, agent_args, fixture_repo, generated_files, index_call, index_with,
    llm_settings, small_batch_args,
};
use qdrant_client::{Qdrant, qdrant::CountPointsBuilder};
use serde_json::{Value, json};

struct Cluster {
    grpc: Vec<String>,
    rest: Vec<String>,
    script: PathBuf,
}

/// The running cluster, or `None` after a skip notice naming what is missing.
async fn cluster(test: &str) -> Option<Cluster> {
    let urls = |name: &str| -> Vec<String> {
        std::env::var(name)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let (grpc, rest) = (
        urls("FAULT_TEST_QDRANT_CLUSTER_URLS"),
        urls("FAULT_TEST_QDRANT_CLUSTER_REST_URLS"),
    );
    let script = std::env::var_os("FAULT_TEST_QDRANT_SCRIPT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/qdrant/qdrant.sh")
        });
    let missing = if grpc.len() < 3 || rest.len() != grpc.len() {
        Some(
            "a 3-node Qdrant cluster: FAULT_TEST_QDRANT_CLUSTER_URLS and FAULT_TEST_QDRANT_CLUSTER_REST_URLS are \
             not set (run `bash ../shared/qdrant/qdrant.sh cluster start 3` and export what it prints)"
                .to_owned(),
        )
    } else if !script.is_file() {
        Some(format!(
            "the Qdrant script that kills and restarts a node: {} is not a file (set FAULT_TEST_QDRANT_SCRIPT)",
            script.display()
        ))
    } else if !QdrantStore::answers(&grpc[0], None, Duration::from_secs(3)).await {
        Some(format!(
            "a 3-node Qdrant cluster: none answers at {}",
            grpc[0]
        ))
    } else {
        None
    };
    if let Some(why) = missing {
        optional::skip(test, &why);
        return None;
    }
    Some(Cluster { grpc, rest, script })
}

impl Cluster {
    fn node(&self, action: &str, index: usize) {
        let status = Command::new("bash")
            .arg(&self.script)
            .args(["cluster", action, &index.to_string()])
            .status()
            .expect("run the Qdrant script");
        assert!(
            status.success(),
            "qdrant.sh cluster {action} {index}: {status}"
        );
    }
}

/// Node `index` killed for as long as this lives; started again when it is dropped, whatever the test did.
struct NodeDown<'a> {
    cluster: &'a Cluster,
    index: usize,
}

impl<'a> NodeDown<'a> {
    fn kill(cluster: &'a Cluster, index: usize) -> Self {
        cluster.node("kill", index);
        NodeDown { cluster, index }
    }
}

impl Drop for NodeDown<'_> {
    fn drop(&mut self) {
        self.cluster.node("restart", self.index);
    }
}

async fn count(url: &str, collection: &str) -> u64 {
    Qdrant::from_url(url)
        .skip_compatibility_check()
        .build()
        .unwrap()
        .count(CountPointsBuilder::new(collection).exact(true))
        .await
        .unwrap()
        .result
        .unwrap()
        .count
}

/// `GET /collections/<name>` on a node's REST port: the collection's parameters as Qdrant reports them.
async fn collection_params(rest: &str, collection: &str) -> Value {
    let body: Value = reqwest::get(format!("{rest}/collections/{collection}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["result"]["config"]["params"].clone()
}

/// The tests kill and restart nodes of the one cluster: one at a time.
static CLUSTER: crate::support::locks::TestLock =
    crate::support::locks::TestLock::new("qdrant_cluster");

#[tokio::test]
async fn a_collection_laid_out_over_the_cluster_answers_with_a_node_killed() {
    let Some(cluster) = cluster(
        "index::qdrant_cluster::a_collection_laid_out_over_the_cluster_answers_with_a_node_killed",
    )
    .await
    else {
        return;
    };
    let _one_at_a_time = CLUSTER.lock().await;
    let embed = EmbedServer::start(EmbedConfig::default()).await;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("cluster-demo"));
    let layout = |replication: &str| {
        let mut args = agent_args(&embed.base_url, "qdrant");
        args.extend(
            [
                "--qdrant-url",
                cluster.grpc[0].as_str(),
                "--qdrant-shards",
                "3",
                "--qdrant-replication-factor",
                replication,
                "--qdrant-write-consistency",
                "1",
            ]
            .map(str::to_owned),
        );
        args
    };

    // Created as asked: 3 shards, 2 copies of each, as every node reports it.
    let first = index_with(data.path(), &layout("2"), &[], &repo).await;
    let collection = first["collection"].as_str().unwrap().to_owned();
    let total = first["chunks_embedded"].as_u64().unwrap();
    assert!(total > 0 && first.get("notes").is_none(), "{first}");
    for rest in &cluster.rest {
        let params = collection_params(rest, &collection).await;
        assert_eq!(
            (
                &params["shard_number"],
                &params["replication_factor"],
                &params["write_consistency_factor"]
            ),
            (&json!(3), &json!(2), &json!(1)),
            "{rest}: {params}"
        );
    }
    assert_eq!(count(&cluster.grpc[0], &collection).await, total);

    // Node 3 SIGKILLed: every point is still there (each shard has a copy elsewhere), the query answers, and
    // a re-index of the unchanged tree reads the collection whole and writes nothing.
    {
        let _down = NodeDown::kill(&cluster, 3);
        assert_eq!(count(&cluster.grpc[0], &collection).await, total);
        let hits = index::retrieve_context_in(
            data.path(),
            &llm_settings(&embed),
            Some(&repo.join("app/server.py")),
            "retry a flaky call with exponential backoff",
            2,
        )
        .await
        .unwrap();
        assert_eq!(hits[0].function, "retry_with_backoff", "{hits:#?}");
        let again = index_with(data.path(), &layout("2"), &[], &repo).await;
        assert_eq!(
            (&again["chunks_embedded"], &again["chunks_unchanged"]),
            (&json!(0), &json!(total)),
            "{again}"
        );
    }

    // An existing collection keeps its layout; a run asking for another says so.
    let other = index_with(data.path(), &layout("3"), &[], &repo).await;
    let notes = other["notes"].to_string();
    assert!(
        notes.contains(
            "--qdrant-replication-factor 3 asked for, but the collection has replication_factor 2"
        ),
        "{other}"
    );
    indexing::drop_qdrant_collection(&cluster.grpc[0], &collection).await;
}

#[tokio::test]
async fn an_index_goes_on_through_the_next_node_when_its_node_is_killed_mid_way() {
    let Some(cluster) = cluster(
        "index::qdrant_cluster::an_index_goes_on_through_the_next_node_when_its_node_is_killed_mid_way",
    )
    .await
    else {
        return;
    };
    let _one_at_a_time = CLUSTER.lock().await;
    // Slow batches, so that the kill lands while the index is writing.
    let embed = EmbedServer::start(EmbedConfig {
        delay: Duration::from_millis(400),
        ..EmbedConfig::default()
    })
    .await;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("failover-demo"));
    generated_files(&repo.join("stages"), 10, 5); // 50 more chunks: four batches of SMALL_BATCH at least
    let mut args = small_batch_args(&embed.base_url, "qdrant");
    let nodes = cluster.grpc.join(",");
    args.extend(
        [
            "--qdrant-url",
            nodes.as_str(),
            "--qdrant-shards",
            "3",
            "--qdrant-replication-factor",
            "2",
        ]
        .map(str::to_owned),
    );

    let running = {
        let (data, args, repo) = (data.path().to_owned(), args.clone(), repo.clone());
        tokio::spawn(async move { index_call(&data, &args, &[], &repo).await })
    };
    let started = std::time::Instant::now();
    while embed.answered() < 1 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no batch embedded"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Node 1, the one the index talks to, SIGKILLed mid-way.
    let down = NodeDown::kill(&cluster, 1);
    let result = running.await.unwrap();
    let summary = if common::is_error(&result) {
        // A clear error is acceptable; the next run must then complete it.
        let message = common::text(&result);
        println!("the run under the kill was refused: {message}");
        assert!(message.contains("Qdrant"), "{message}");
        index_with(data.path(), &args, &[], &repo).await
    } else {
        println!("the run under the kill completed");
        result.structured_content.unwrap()
    };
    assert_eq!(summary["store_location"], nodes, "{summary}");
    let collection = summary["collection"].as_str().unwrap().to_owned();
    let total = summary["chunks_total"].as_u64().unwrap();
    assert!(total > 4 * indexing::SMALL_BATCH as u64, "{summary}");
    // Every chunk there, once: the point count is the tree's chunk count, read through a live node.
    assert_eq!(count(&cluster.grpc[1], &collection).await, total);
    let again = index_with(data.path(), &args, &[], &repo).await;
    assert_eq!(
        (&again["chunks_embedded"], &again["chunks_total"]),
        (&json!(0), &json!(total)),
        "{again}"
    );
    // A query with node 1 still down goes to the next node too.
    let hits = index::retrieve_context_in(
        data.path(),
        &llm_settings(&embed),
        Some(&repo.join("app/server.py")),
        "retry a flaky call with exponential backoff",
        2,
    )
    .await
    .unwrap();
    assert_eq!(hits[0].function, "retry_with_backoff", "{hits:#?}");
    drop(down);
    assert_eq!(count(&cluster.grpc[0], &collection).await, total);
    indexing::drop_qdrant_collection(&cluster.grpc[1], &collection).await;
}

#[test]
fn a_write_consistency_above_the_replication_factor_is_refused_at_start() {
    let output = Command::new(env!("CARGO_BIN_EXE_fault"))
        .args([
            "agent",
            "tool",
            "--qdrant-replication-factor",
            "2",
            "--qdrant-write-consistency",
            "3",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "stdout carries JSON-RPC only");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--qdrant-write-consistency 3")
            && stderr.contains("--qdrant-replication-factor"),
        "{stderr}"
    );
}
