//! `fault_index_source_code` end to end with the embedded store: the real binary over MCP, a real SQLite
//! store in a temp data dir, and embeddings from the local embedding server (or its stand-in), counted at
//! the server.

use crate::support::common;
use crate::support::indexing;

use std::{collections::BTreeSet, path::Path, time::Duration};

use fault::index;
use indexing::{EmbedConfig, EmbedServer, agent_args, fixture_repo, server_env};
use serde_json::{Value, json};

fn structured(result: &rmcp::model::CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .expect("structuredContent")
}

async fn spawn(data_dir: &Path, embed_url: &str, extra: &[&str]) -> common::Client {
    let mut args = agent_args(embed_url, "embedded");
    // An extra `--flag value` replaces the default one.
    for pair in extra.chunks(2) {
        match args.iter().position(|a| a == pair[0]) {
            Some(at) => args[at + 1] = pair[1].to_string(),
            None => args.extend(pair.iter().map(|s| s.to_string())),
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    common::spawn_with(common::ServerSpec {
        global_args: &[],
        agent_args: &args,
        env: server_env(data_dir),
    })
    .await
}

async fn index(client: &common::Client, dir: &Path, lang: Value) -> rmcp::model::CallToolResult {
    common::call(
        client,
        "fault_index_source_code",
        json!({"source_dir": dir.display().to_string(), "lang": lang}),
    )
    .await
    .expect("tool call")
}

fn count(v: &Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

#[tokio::test]
async fn reindex_embeds_exactly_the_changed_chunks_and_removes_deleted_ones() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("demo"));
    let embed = EmbedServer::start(EmbedConfig::default()).await;
    eprintln!(
        "embeddings: {}",
        embed
            .upstream
            .as_deref()
            .unwrap_or("stand-in (bag of words)")
    );
    let client = spawn(data.path(), &embed.base_url, &[]).await;

    // First run: every chunk of the 5 source files, nothing ignored or hidden.
    let first = index(&client, &repo, json!("auto")).await;
    assert!(!common::is_error(&first), "{}", common::text(&first));
    assert_eq!(common::text(&first), "done");
    let s = structured(&first);
    assert_eq!(s["store"], "embedded");
    assert_eq!(count(&s, "files_seen"), 5, "{s}");
    let first_inputs = embed.identities_since(0);
    assert_eq!(count(&s, "chunks_embedded") as usize, first_inputs.len());
    assert_eq!(count(&s, "chunks_total"), count(&s, "chunks_embedded"));
    let all_text = embed.inputs().join("\n");
    for absent in [
        "generated_build_step",
        "ignored_function",
        "hidden_function",
    ] {
        assert!(!all_text.contains(absent), "{absent} was indexed");
    }
    for present in [
        "retry_with_backoff",
        "ResponseCache.get",
        "Checksum",
        "loadTodos",
        "percentile",
    ] {
        assert!(
            first_inputs.iter().any(|(_, name)| name == present),
            "{present} not embedded: {first_inputs:?}"
        );
    }
    let chunks_of = |path: &str| first_inputs.iter().filter(|(p, _)| p == path).count() as u64;

    // Unchanged tree: no embedding call at all.
    let requests_before = embed.requests();
    let second = structured(&index(&client, &repo, json!("auto")).await);
    assert_eq!(count(&second, "chunks_embedded"), 0, "{second}");
    assert_eq!(
        count(&second, "chunks_unchanged"),
        count(&s, "chunks_embedded")
    );
    assert_eq!(
        embed.requests(),
        requests_before,
        "an unchanged tree made an embedding call"
    );

    // Change one function, shift a file by a line, delete a file, add a file.
    let server_py = repo.join("app/server.py");
    let source = std::fs::read_to_string(&server_py).unwrap();
    std::fs::write(&server_py, source.replace("timeout=2.0", "timeout=5.0")).unwrap();
    let histogram = repo.join("src/histogram.rs");
    let source = std::fs::read_to_string(&histogram).unwrap();
    std::fs::write(&histogram, format!("\n{source}")).unwrap();
    std::fs::remove_file(repo.join("web/client.js")).unwrap();
    std::fs::write(
        repo.join("app/health.py"),
        "def health_check():\n    return {\"status\": \"ok\"}\n",
    )
    .unwrap();

    let from = embed.inputs().len();
    let third = structured(&index(&client, &repo, json!("auto")).await);
    let embedded: BTreeSet<(String, String)> = embed.identities_since(from).into_iter().collect();
    let expected: BTreeSet<(String, String)> = [
        ("app/server.py", "fetch_todo"),
        ("app/health.py", "health_check"),
    ]
    .into_iter()
    .map(|(p, n)| (p.to_owned(), n.to_owned()))
    .collect();
    assert_eq!(embedded, expected, "{third}");
    assert_eq!(count(&third, "chunks_embedded"), 2);
    assert_eq!(count(&third, "files_deleted"), 1);
    assert_eq!(count(&third, "chunks_deleted"), chunks_of("web/client.js"));
    assert_eq!(count(&third, "chunks_moved"), chunks_of("src/histogram.rs"));
    assert_eq!(
        count(&third, "chunks_total"),
        count(&s, "chunks_total") - chunks_of("web/client.js") + 1
    );

    // Retrieval finds the function a question is about, with its absolute path and lines.
    let options = indexing::llm_settings(&embed);
    let hits = index::retrieve_context_in(
        data.path(),
        &options,
        Some(&server_py),
        "retry a flaky call with exponential backoff",
        3,
    )
    .await
    .unwrap();
    assert_eq!(hits[0].function, "retry_with_backoff", "{hits:#?}");
    assert_eq!(hits[0].path, server_py);
    assert_eq!(hits[0].start_line, 9);
    let hits = index::retrieve_context_in(
        data.path(),
        &options,
        None,
        "compute the percentile latency from histogram bucket counts",
        3,
    )
    .await
    .unwrap();
    assert_eq!(hits[0].function, "percentile", "{hits:#?}");
    // The shifted file's chunks carry their new lines.
    assert_eq!(hits[0].start_line, 18, "{hits:#?}");

    // A model of another dimension against this index: a clear error naming both.
    let other = spawn(
        data.path(),
        &embed.base_url,
        &["--llm-embed-model-dim", "128"],
    )
    .await;
    let mismatch = index(&other, &repo, json!("auto")).await;
    assert!(common::is_error(&mismatch));
    let message = common::text(&mismatch);
    assert!(
        message.contains("384") && message.contains("128"),
        "{message}"
    );
    other.cancel().await.unwrap();
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn lang_accepts_a_name_a_list_or_auto_and_rejects_unknown_ones() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("langs"));
    let embed = EmbedServer::start(EmbedConfig {
        local_only: true,
        ..Default::default()
    })
    .await;
    let client = spawn(data.path(), &embed.base_url, &[]).await;

    let python = structured(&index(&client, &repo, json!("python")).await);
    assert_eq!(count(&python, "files_seen"), 2, "{python}");
    assert_eq!(python["languages"], json!(["python"]));
    let list = structured(&index(&client, &repo, json!(["python", "golang"])).await);
    assert_eq!(count(&list, "files_seen"), 3, "{list}");
    assert_eq!(
        count(&list, "chunks_unchanged"),
        count(&python, "chunks_total")
    );

    let bad = index(&client, &repo, json!("cobol")).await;
    assert!(common::is_error(&bad));
    assert!(
        common::text(&bad).contains("'cobol'"),
        "{}",
        common::text(&bad)
    );
    let relative = common::call(
        &client,
        "fault_index_source_code",
        json!({"source_dir": "relative/dir", "lang": "python"}),
    )
    .await
    .unwrap();
    assert!(common::is_error(&relative));
    assert!(
        common::text(&relative).contains("absolute"),
        "{}",
        common::text(&relative)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn embedding_provider_failures_say_what_was_committed() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = generated_repo(&work.path().join("big"), 20, 8);

    // Nothing listens: fails before anything is committed.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1", listener.local_addr().unwrap())
    };
    let client = spawn(data.path(), &closed, &[]).await;
    let result = index(&client, &repo, json!("python")).await;
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(
        message.contains("after 0 chunks were committed"),
        "{message}"
    );
    client.cancel().await.unwrap();

    // The provider fails after one batch: that batch stays, and the next run embeds only the rest.
    let failing = EmbedServer::start(EmbedConfig {
        local_only: true,
        fail_after: Some(1),
        ..Default::default()
    })
    .await;
    let client = spawn(data.path(), &failing.base_url, &[]).await;
    let result = index(&client, &repo, json!("python")).await;
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(
        message.contains("after 64 chunks were committed"),
        "{message}"
    );
    client.cancel().await.unwrap();

    let healthy = EmbedServer::start(EmbedConfig {
        local_only: true,
        ..Default::default()
    })
    .await;
    let client = spawn(data.path(), &healthy.base_url, &[]).await;
    let done = structured(&index(&client, &repo, json!("python")).await);
    assert_eq!(count(&done, "chunks_unchanged"), 64, "{done}");
    assert_eq!(count(&done, "chunks_embedded"), 160 - 64, "{done}");
    client.cancel().await.unwrap();

    // Batches of `--llm-embed-batch-size`: a provider failing after two requests has embedded two batches of 10,
    // 20 chunks; the 16 of the two files they complete (8 functions each) are committed.
    let small = tempfile::tempdir().unwrap();
    let failing = EmbedServer::start(EmbedConfig {
        local_only: true,
        fail_after: Some(2),
        ..Default::default()
    })
    .await;
    let client = spawn(
        small.path(),
        &failing.base_url,
        &["--llm-embed-batch-size", "10"],
    )
    .await;
    let result = index(&client, &repo, json!("python")).await;
    assert!(common::is_error(&result));
    let message = common::text(&result);
    assert!(
        message.contains("after 16 chunks were committed"),
        "{message}"
    );
    client.cancel().await.unwrap();
}

#[test]
fn an_embedding_batch_size_out_of_its_range_is_refused_naming_the_flag() {
    for value in ["0", "2049", "many"] {
        let output = std::process::Command::new(common::fault_bin())
            .args(["agent", "--llm-embed-batch-size", value, "tool"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{value}: {stderr}");
        assert!(
            stderr.contains("--llm-embed-batch-size") && stderr.contains(&format!("'{value}'")),
            "{value}: {stderr}"
        );
        assert!(
            output.stdout.is_empty(),
            "{value}: stdout is for JSON-RPC only"
        );
    }
}

/// A tree of `files` Python files with `functions` functions each.
fn generated_repo(dir: &Path, files: usize, functions: usize) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for f in 0..files {
        let mut source = String::new();
        for g in 0..functions {
            source.push_str(&format!(
                "def handler_{f}_{g}(request):\n    \"\"\"Handle request kind {g} of module {f}.\"\"\"\n    return request.get(\"{f}-{g}\")\n\n\n"
            ));
        }
        std::fs::write(dir.join(format!("module_{f:03}.py")), source).unwrap();
    }
    dir.canonicalize().unwrap()
}

#[tokio::test]
async fn killing_the_server_mid_index_keeps_a_consistent_index_that_the_next_run_completes() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = generated_repo(&work.path().join("killed"), 25, 8); // 200 chunks: 4 batches of 64
    let slow = EmbedServer::start(EmbedConfig {
        local_only: true,
        delay: Duration::from_millis(400),
        ..Default::default()
    })
    .await;

    let args = agent_args(&slow.base_url, "embedded");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (transport, sandbox) = common::spawn_process(common::ServerSpec {
        agent_args: &args,
        env: server_env(data.path()),
        ..Default::default()
    });
    let pid = transport.id().expect("child pid");
    let client = common::handshake(transport, sandbox, ()).await;
    let source_dir = repo.display().to_string();
    let call = tokio::spawn(async move {
        let _ = common::call(
            &client,
            "fault_index_source_code",
            json!({"source_dir": source_dir, "lang": "python"}),
        )
        .await;
        client
    });

    // Wait for two answered batches, give the second one time to commit, then SIGKILL.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while slow.answered() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "indexing never got going"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    call.abort();

    // The store opens, passes SQLite's integrity check and holds whole batches only.
    let collection = index::project::collection_name(&repo);
    let file = data
        .path()
        .join("index")
        .join(format!("{collection}.sqlite3"));
    let conn = rusqlite::Connection::open(&file).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let (rows, good_vectors): (i64, i64) = conn
        .query_row(
            "SELECT COUNT(*), SUM(length(vector) = ?1) FROM chunks",
            [indexing::DIMENSION as i64 * 4],
            |r| Ok((r.get(0)?, r.get::<_, Option<i64>>(1)?.unwrap_or(0))),
        )
        .unwrap();
    assert!(
        (64..200).contains(&rows) && (rows as u64).is_multiple_of(64),
        "{rows} rows after the kill"
    );
    assert_eq!(rows, good_vectors);
    drop(conn);

    // The next run embeds exactly what is missing; the one after embeds nothing.
    let fast = EmbedServer::start(EmbedConfig {
        local_only: true,
        ..Default::default()
    })
    .await;
    let client = spawn(data.path(), &fast.base_url, &[]).await;
    let resumed = structured(&index(&client, &repo, json!("python")).await);
    assert_eq!(
        count(&resumed, "chunks_unchanged"),
        rows as u64,
        "{resumed}"
    );
    assert_eq!(
        count(&resumed, "chunks_embedded"),
        200 - rows as u64,
        "{resumed}"
    );
    assert_eq!(count(&resumed, "chunks_total"), 200);
    let again = structured(&index(&client, &repo, json!("python")).await);
    assert_eq!(count(&again, "chunks_embedded"), 0, "{again}");
    client.cancel().await.unwrap();
}
