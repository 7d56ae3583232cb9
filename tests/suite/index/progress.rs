//! Progress notifications per committed batch, and cancellation that keeps what was committed, through a
//! real MCP client that asks for progress (rmcp's cancellable requests carry a progress token).

use crate::support::common;
use crate::support::indexing;

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::Duration,
};

use indexing::{EmbedConfig, EmbedServer, agent_args, server_env};
use rmcp::{
    ClientHandler, RoleClient,
    model::{
        CallToolRequestParams, CallToolResult, ClientRequest, ProgressNotificationParam, Request,
        ServerResult,
    },
    service::{NotificationContext, PeerRequestOptions},
};
use serde_json::json;

#[derive(Clone, Default)]
struct ProgressRecorder {
    seen: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for ProgressRecorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.lock().unwrap().push(params);
    }
}

async fn spawn(
    data_dir: &Path,
    embed_url: &str,
) -> (common::Server<ProgressRecorder>, ProgressRecorder) {
    let args = agent_args(embed_url, "embedded");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let recorder = ProgressRecorder::default();
    let client = common::spawn_handler(
        common::ServerSpec {
            agent_args: &args,
            env: server_env(data_dir),
            ..Default::default()
        },
        recorder.clone(),
    )
    .await;
    (client, recorder)
}

fn generated_repo(dir: &Path, files: usize, functions: usize) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for f in 0..files {
        let source: String = (0..functions)
            .map(|g| format!("def step_{f}_{g}(x):\n    return x + {g}\n\n\n"))
            .collect();
        std::fs::write(dir.join(format!("m{f:03}.py")), source).unwrap();
    }
    dir.canonicalize().unwrap()
}

fn call_params(repo: &Path) -> ClientRequest {
    let arguments = json!({"source_dir": repo.display().to_string(), "lang": "python"});
    ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("fault_index_source_code")
            .with_arguments(arguments.as_object().unwrap().clone()),
    ))
}

fn tool_result(result: ServerResult) -> CallToolResult {
    match result {
        ServerResult::CallToolResult(r) => r,
        other => panic!("not a tool result: {other:?}"),
    }
}

#[tokio::test]
async fn progress_is_notified_per_batch_and_cancellation_keeps_committed_batches() {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = generated_repo(&work.path().join("progress"), 25, 8); // 200 chunks, 8 a file: batches of 64+64+64+8, each ending with a file
    let embed = EmbedServer::start(EmbedConfig {
        local_only: true,
        delay: Duration::from_millis(300),
        ..Default::default()
    })
    .await;
    let (client, recorder) = spawn(data.path(), &embed.base_url).await;

    // Cancel once the first batch is reported committed.
    let handle = client
        .send_cancellable_request(call_params(&repo), PeerRequestOptions::no_options())
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while recorder.seen.lock().unwrap().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no progress notification"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    handle.cancel(Some("test".into())).await.unwrap();
    let first = recorder.seen.lock().unwrap()[0].clone();
    assert_eq!(first.progress, 64.0);
    assert_eq!(first.total, Some(200.0));
    assert!(
        first
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("64/200")
    );
    // Let the server notice the cancellation at its next batch boundary.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let answered_at_cancel = embed.answered();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        embed.answered(),
        answered_at_cancel,
        "embedding went on after the cancellation"
    );

    // The same server continues from what was committed, reporting every batch.
    recorder.seen.lock().unwrap().clear();
    let handle = client
        .send_cancellable_request(call_params(&repo), PeerRequestOptions::no_options())
        .await
        .unwrap();
    let result = tool_result(handle.await_response().await.unwrap());
    assert!(!result.is_error.unwrap_or(false));
    let summary = result.structured_content.unwrap();
    let kept = summary["chunks_unchanged"].as_u64().unwrap();
    assert!(kept >= 64 && kept.is_multiple_of(64), "{summary}");
    assert_eq!(summary["chunks_embedded"].as_u64().unwrap(), 200 - kept);
    assert_eq!(summary["chunks_total"], 200);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let seen = recorder.seen.lock().unwrap().clone();
    let remaining = 200 - kept;
    assert_eq!(seen.len() as u64, remaining.div_ceil(64), "{seen:?}");
    assert_eq!(seen.last().unwrap().progress, remaining as f64);
    assert!(seen.iter().all(|p| p.total == Some(remaining as f64)));
    client.cancel().await.unwrap();
}
