//! examples/index_source.py (the guide's index script) run with FastMCP against the built binary, the
//! embedded store and the embeddings stand-in. Needs a Python with `fastmcp` (see
//! [`common::python_with`]); skipped out loud without one (a failure under `FAULT_REQUIRE_ALL=1`).

use crate::support::common;
use crate::support::indexing;
use crate::support::optional;

use indexing::{EmbedConfig, EmbedServer, fixture_repo};

#[tokio::test]
async fn index_source_example_prints_done_and_the_summary() {
    let python = match common::python_with(&["fastmcp"]) {
        Ok(python) => python,
        Err(why) => {
            return optional::skip(
                "index::example::index_source_example_prints_done_and_the_summary",
                &why,
            );
        }
    };
    let embed = EmbedServer::start(EmbedConfig {
        local_only: true,
        ..Default::default()
    })
    .await;
    let sandbox = common::Sandbox::new("examples/index_source.py");
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("example"));
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/index_source.py");
    let dim = indexing::DIMENSION.to_string();
    let mut command = common::python_command(&python, &sandbox);
    command
        .arg(script)
        .arg(&repo)
        .args(["--lang", "python", "--embed-base-url", &embed.base_url])
        .args([
            "--embed-model",
            "all-minilm",
            "--embed-dim",
            &dim,
            "--vector-store",
            "embedded",
        ])
        .env("FAULT_BIN", common::fault_bin())
        .env("OPENAI_API_KEY", "test-key");
    let output = tokio::process::Command::from(command)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut lines = stdout.lines().skip_while(|l| l.starts_with("  "));
    assert_eq!(lines.next(), Some("done"), "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_str(&lines.collect::<Vec<_>>().join("\n")).unwrap();
    assert_eq!(summary["store"], "embedded");
    assert_eq!(summary["files_seen"], 2);
    assert_eq!(
        summary["chunks_embedded"].as_u64().unwrap() as usize,
        embed.inputs().len()
    );
}
