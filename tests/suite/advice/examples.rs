//! The guide's FastMCP example scripts (examples/*.py) run against our binary, unchanged but for reading
//! the result's text in both FastMCP shapes. The model is a stand-in OpenAI server on 127.0.0.1; a `fault`
//! wrapper first on PATH points the binary at it, since the scripts pass only OPENAI_API_KEY to the server.
//!
//! Needs a Python with `fastmcp` and `rich` (see [`common::python_with`]): skipped out loud without one (a
//! failure under `FAULT_REQUIRE_ALL=1`).

use crate::support::common;
use crate::support::llm_fakes;
use crate::support::optional;

use std::path::{Path, PathBuf};

use llm_fakes::{FakeServer, Recorded, Reply};
use serde_json::{Value, json};

const INDEX_NEW: &str = "@app.get(\"/\")\ndef index():\n    response = httpx.get(f\"{UPSTREAM_URL}/todos/1\", headers={\n        \"Host\": \"jsonplaceholder.typicode.com\"\n    }, timeout=5.0)\n    response.raise_for_status()\n    return response.json()";

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

/// Answers by the schema the request names, like a model that follows instructions.
fn answer(request: &Recorded) -> Reply {
    if request.path.ends_with("/embeddings") {
        let count = request.body["input"].as_array().map_or(1, Vec::len);
        let vectors: Vec<Vec<f32>> = (0..count).map(|i| vec![i as f32 / 10.0; 1536]).collect();
        return Reply::openai_embeddings("text-embedding-3-small", &vectors);
    }
    let content = match request.body["response_format"]["json_schema"]["name"].as_str() {
        Some("score") => json!({"score": 0.3, "explanation": "blocking call without timeout"}),
        Some("suggestion") => json!({"new_code": INDEX_NEW, "explanation": "adds a timeout"}),
        Some("slos") => json!({"slos": [{
            "type": "latency", "title": "95th percentile latency", "objective": 95.0,
            "explanation": "responsive service", "threshold": 0.3, "unit": "s", "window": "300s",
            "sli": {"prometheus": "histogram_quantile(0.95, sum(rate(http_request_duration_seconds_bucket[5m])) by (le))",
                    "gcp/cloudrun": {"displayName": "p95", "goal": 0.95, "calendarPeriod": "NONE",
                                     "serviceLevelIndicator": {"windowsBased": {"windowPeriod": "300s"}}}}
        }]}),
        Some("file_changes") => {
            let app =
                std::fs::read_to_string(examples_dir().join("app_fixture/app/app.py")).unwrap();
            let old_index = &app[app.find("@app.get").unwrap()..];
            json!({"score": 0.2, "explanation": "no timeout on the upstream call",
                   "new": app.replace(old_index.trim_end(), INDEX_NEW), "dependencies": []})
        }
        other => json!({"unexpected schema": other}),
    };
    Reply::openai_chat("o4-mini", &content.to_string())
}

/// A directory with a `fault` script that runs our binary against `server`.
fn wrapper_dir(server: &FakeServer) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "#!/bin/sh\nexport FAULT_AGENT_LLM_BASE_URL={}/v1\nexport FAULT_VECTOR_STORE=embedded\nexec {} \"$@\"\n",
        server.url(),
        env!("CARGO_BIN_EXE_fault")
    );
    let path = dir.path().join("fault");
    std::fs::write(&path, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

fn run(python: &str, wrapper: &Path, cwd: &Path, args: &[&str]) -> String {
    let path = format!(
        "{}:{}",
        wrapper.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The scripts' server (and any index it writes) lives in a sandbox, not the user's home.
    let sandbox = common::Sandbox::new(&format!("python {}", args.join(" ")));
    let output = common::python_command(python, &sandbox)
        .args(args)
        .current_dir(cwd)
        .env("PATH", path)
        .env("OPENAI_API_KEY", "sk-example")
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn guide_scripts_run_against_our_binary() {
    let python = match common::python_with(&["fastmcp", "rich"]) {
        Ok(python) => python,
        Err(why) => {
            return optional::skip(
                "advice::examples::guide_scripts_run_against_our_binary",
                &why,
            );
        }
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime.block_on(FakeServer::start(|_, request| answer(request)));
    let wrapper = wrapper_dir(&server);
    let examples = examples_dir();
    let app = examples.join("app_fixture/app/app.py");
    let app = app.to_str().unwrap();

    for kind in ["performance", "reliability"] {
        let out = run(
            &python,
            wrapper.path(),
            &examples,
            &[&format!("score_{kind}.py"), app, "index", "python"],
        );
        let score: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(score["score"], 0.3, "{out}");

        let out = run(
            &python,
            wrapper.path(),
            &examples,
            &[&format!("suggest_{kind}.py"), app, "index", "python", "0.9"],
        );
        assert!(
            out.starts_with("```diff\n--- a/snippet.py\n+++ b/snippet.py\n"),
            "{out}"
        );
        assert!(out.contains("+    }, timeout=5.0)"), "{out}");
    }

    let out = run(
        &python,
        wrapper.path(),
        &examples,
        &["slo.py", app, "index", "python"],
    );
    let slos: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(slos[0]["type"], "latency", "{out}");

    let out = run(
        &python,
        wrapper.path(),
        &examples.join("app_fixture"),
        &["../e2e.py", "--llm", "openai"],
    );
    assert!(out.contains("Score 0.2"), "{out}");
    assert!(out.contains("--- a/app.py"), "{out}");
    assert!(out.contains("+    }, timeout=5.0)"), "{out}");
}
