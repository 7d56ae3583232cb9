//! Two `fault agent tool` servers, one on stdio and one over Streamable HTTP (as a team runs them), indexing
//! the same project into the same Qdrant at once: the store ends with one copy of each chunk, as one server
//! alone would leave it; and queries made while one server re-indexes changed files see each file as it was or
//! as it is, never half of each.
//!
//! Needs the local embedding server and a Qdrant (`FAULT_TEST_EMBED_BASE_URL`, `FAULT_TEST_QDRANT_URL`).

use crate::mcp::http::HttpServer;
use crate::support::common;
use crate::support::indexing;
use crate::support::optional;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
    time::Duration,
};

use indexing::{fixture_repo, generated_files, server_env, small_batch_args};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

/// Files of the tree the re-index changes, and the functions of each.
const CHANGED_FILES: usize = 10;
const FUNCTIONS: usize = 5;

/// Version `version` of the generated files `stage_000.py`… under `dir`: every function's name and body
/// carry the version, so each file's chunks differ wholly from one version to the next.
fn stages(dir: &Path, version: u32) {
    std::fs::create_dir_all(dir).unwrap();
    for f in 0..CHANGED_FILES {
        let source: String = (0..FUNCTIONS)
            .map(|g| {
                format!(
                    "def v{version}_step_{f}_{g}(request):\n    \"\"\"Step {g} of stage {f}, version {version}.\"\"\"\n    return request.get(\"{version}-{f}-{g}\")\n\n\n"
                )
            })
            .collect();
        std::fs::write(dir.join(format!("stage_{f:03}.py")), source).unwrap();
    }
}

fn index_arguments(repo: &Path) -> serde_json::Map<String, Value> {
    json!({"source_dir": repo.display().to_string(), "lang": "auto"})
        .as_object()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn two_servers_index_one_store_and_queries_never_see_half_a_file() {
    let test = "index::two_servers::two_servers_index_one_store_and_queries_never_see_half_a_file";
    let Some([embed_base, qdrant_url]) = optional::env_vars(
        test,
        ["FAULT_TEST_EMBED_BASE_URL", "FAULT_TEST_QDRANT_URL"],
        &[optional::LOCAL_LLM, optional::QDRANT],
    ) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("two-servers"));
    generated_files(&repo.join("more"), 5, 4);
    stages(&repo.join("stages"), 1);

    // One data directory, one Qdrant: the same user's two clients.
    let data = tempfile::tempdir().unwrap();
    let mut args = small_batch_args(&embed_base, "qdrant");
    args.extend(["--qdrant-url".into(), qdrant_url.clone()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = server_env(data.path());
    let stdio = common::spawn_with(common::ServerSpec {
        agent_args: &args,
        env: env.clone(),
        ..Default::default()
    })
    .await;
    let mut http_args = vec!["agent"];
    http_args.extend(&args);
    http_args.push("tool");
    let env_pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let http_server = HttpServer::start(&http_args, &[], &env_pairs).await;
    let http = http_server.client(()).await;

    // Both index the tree at the same time.
    let call =
        |arguments| CallToolRequestParams::new("fault_index_source_code").with_arguments(arguments);
    let (over_stdio, over_http) = tokio::join!(
        stdio.peer().call_tool(call(index_arguments(&repo))),
        http.peer().call_tool(call(index_arguments(&repo))),
    );
    let (over_stdio, over_http) = (over_stdio.unwrap(), over_http.unwrap());
    for (name, result) in [("stdio", &over_stdio), ("http", &over_http)] {
        assert!(
            !common::is_error(result),
            "{name}: {}",
            common::text(result)
        );
    }
    let summary = over_stdio.structured_content.clone().unwrap();
    let other = over_http.structured_content.clone().unwrap();
    println!(
        "at once: stdio embedded {}, http embedded {}, {} chunks in all",
        summary["chunks_embedded"], other["chunks_embedded"], summary["chunks_total"]
    );
    let collection = summary["collection"].as_str().unwrap().to_owned();
    assert_eq!(other["collection"], summary["collection"]);
    let store = indexing::qdrant_store(&qdrant_url, &collection);
    let (chunks, twice) = indexing::stored_chunks(&store).await;
    assert_eq!(twice, 0, "a chunk stored twice");
    assert_eq!(
        chunks.len() as u64,
        summary["chunks_total"].as_u64().unwrap()
    );
    assert_eq!(other["chunks_total"], summary["chunks_total"]);

    // The same as one server alone leaves: the embedded store of a single run holds the same chunks.
    let alone = tempfile::tempdir().unwrap();
    let single = indexing::index_with(
        alone.path(),
        &small_batch_args(&embed_base, "embedded"),
        &[],
        &repo,
    )
    .await;
    let single_store = indexing::embedded_store(&single);
    let (single_chunks, _) = indexing::stored_chunks(&single_store).await;
    let (single_chunks, both): (BTreeSet<_>, BTreeSet<_>) = (
        single_chunks.into_iter().collect(),
        chunks.iter().cloned().collect(),
    );
    assert!(
        both == single_chunks,
        "two servers left {} chunks, one alone {}; only in the first: {:?}; only in the second: {:?}",
        both.len(),
        single_chunks.len(),
        both.difference(&single_chunks).collect::<Vec<_>>(),
        single_chunks.difference(&both).collect::<Vec<_>>()
    );

    // Version 2 of the stage files; the HTTP server re-indexes while queries run, every query reading every
    // chunk (k above the chunk count) through the registry, as the LLM tools' context lookup does.
    stages(&repo.join("stages"), 2);
    let llm = indexing::llm_settings_at(&embed_base);
    let k = chunks.len() + 100;
    let http_peer = http.peer().clone();
    let reindex = http_peer.call_tool(call(index_arguments(&repo)));
    tokio::pin!(reindex);
    let (mut old, mut new, mut mixed) = (0, 0, Vec::new());
    let reindexed = loop {
        tokio::select! {
            result = &mut reindex => break result.unwrap(),
            hits = fault::index::retrieve_context_in(data.path(), &llm, Some(&repo), "step of a stage", k) => {
                let hits = hits.unwrap();
                let mut versions: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
                for hit in &hits {
                    if hit.path.starts_with(repo.join("stages")) {
                        let name = hit.path.file_name().unwrap().to_string_lossy().into_owned();
                        let version = hit.function.split('_').next().unwrap_or_default().to_owned();
                        versions.entry(name).or_default().insert(version);
                    }
                }
                // Each file whole: all its FUNCTIONS chunks, of one version.
                let whole = versions.len() == CHANGED_FILES
                    && versions.values().all(|v| v.len() == 1)
                    && hits.iter().filter(|h| h.path.starts_with(repo.join("stages"))).count()
                        == CHANGED_FILES * FUNCTIONS;
                if !whole {
                    mixed.push(versions);
                } else if versions.values().all(|v| v.contains("v1")) {
                    old += 1;
                } else {
                    new += 1;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    assert!(
        !common::is_error(&reindexed),
        "{}",
        common::text(&reindexed)
    );
    let after = reindexed.structured_content.unwrap();
    println!(
        "during the re-index ({} chunks embedded, {} deleted): {old} queries saw every file as it was, {new} some \
         as it is, {} a file half-written",
        after["chunks_embedded"],
        after["chunks_deleted"],
        mixed.len()
    );
    assert_eq!(after["chunks_embedded"], CHANGED_FILES * FUNCTIONS);
    assert!(
        mixed.is_empty(),
        "queries saw half-written files: {mixed:?}"
    );
    assert!(old + new > 0, "no query ran during the re-index");
    let (chunks, twice) = indexing::stored_chunks(&store).await;
    assert_eq!(twice, 0);
    assert_eq!(chunks.len() as u64, after["chunks_total"].as_u64().unwrap());

    stdio.cancel().await.unwrap();
    http.cancel().await.unwrap();
    indexing::drop_qdrant_collection(&qdrant_url, &collection).await;
}
