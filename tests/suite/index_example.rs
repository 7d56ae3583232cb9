//! examples/index_source.py (the guide's index script) run with FastMCP against the built binary, the
//! embedded store and the embeddings stand-in. Needs a Python with `fastmcp`: `$FAULT_EXAMPLES_PYTHON`, else
//! `$FAULT_TEST_PYTHON`, else `python3`; skipped with a message without one.

use crate::common;
use crate::index_support;

use std::process::Command;

use index_support::{EmbedConfig, EmbedServer, fixture_repo};

fn python() -> Option<String> {
    let python = std::env::var("FAULT_EXAMPLES_PYTHON")
        .or_else(|_| std::env::var("FAULT_TEST_PYTHON"))
        .unwrap_or_else(|_| "python3".to_owned());
    let ok = Command::new(&python)
        .args(["-c", "import fastmcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("SKIPPED examples/index_source.py: `{python}` cannot import fastmcp");
    }
    ok.then_some(python)
}

#[tokio::test]
async fn index_source_example_prints_done_and_the_summary() {
    let Some(python) = python() else {
        return;
    };
    let embed = EmbedServer::start(EmbedConfig {
        local_only: true,
        ..Default::default()
    })
    .await;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("example"));
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/index_source.py");
    let dim = index_support::DIMENSION.to_string();
    let output = tokio::process::Command::new(&python)
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
        .env("FAULT_DATA_DIR", data.path())
        .env("OPENAI_API_KEY", "test-key")
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
