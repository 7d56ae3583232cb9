//! The official MCP Python SDK as a test client: `mcp_python/client.py` runs a JSON script of calls against
//! a server command and prints one JSON line per call with what the client saw (result, JSON-RPC error,
//! timeout, cancellation or SDK exception) and its wall time. The Python is `FAULT_TEST_PYTHON`, else
//! `python3`; it must be able to `import mcp` (`pip install fastmcp` or `pip install mcp`).
#![allow(dead_code)] // fields and helpers for every MCP test that drives a server with the Python SDK

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    sync::OnceLock,
    time::Duration,
};

use serde::Deserialize;
use serde_json::{Value, json};

/// Longest a whole script may run (importing the SDK alone can take seconds on a loaded machine).
const SCRIPT_LIMIT: Duration = Duration::from_secs(180);

/// A JSON-RPC error as the client received it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

/// An exception the SDK raised (e.g. `RuntimeError` when structuredContent fails the outputSchema).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SdkException {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
}

/// What the client saw for one call of the script.
#[derive(Debug, Clone, Deserialize)]
pub struct CallSeen {
    /// Position of the call in the script.
    pub index: usize,
    pub method: String,
    pub tool: Option<String>,
    /// "result", "error", "timeout", "cancelled" or "exception".
    pub outcome: String,
    pub is_error: Option<bool>,
    pub content: Option<Vec<Value>>,
    pub structured_content: Option<Value>,
    pub error: Option<RpcError>,
    pub exception: Option<SdkException>,
    /// For `tools/list`: each tool's name, input_schema and output_schema.
    pub tools: Option<Vec<Value>>,
    /// The `notifications/progress` received, for a call with `"progress": true`.
    pub progress: Option<Vec<Value>>,
    /// When the call started, from the end of the handshake.
    pub started_ms: f64,
    pub wall_ms: f64,
}

impl CallSeen {
    /// The first text content block.
    pub fn text(&self) -> Option<&str> {
        self.content
            .as_ref()?
            .iter()
            .find(|block| block["type"] == "text")?["text"]
            .as_str()
    }
}

/// A whole run of the script.
#[derive(Debug)]
pub struct ScriptRun {
    /// One per call, in script order.
    pub calls: Vec<CallSeen>,
    pub server_info: Value,
    pub protocol_version: String,
    /// Every server notification the client received: `{"method", "at_ms"}` (from the end of the handshake).
    pub notifications: Vec<Value>,
    /// What the client's transport could not read (e.g. a malformed line): `{"type", "message", "at_ms"}`.
    pub stream_exceptions: Vec<Value>,
    /// The client's stderr, which includes the server's (the SDK passes it through).
    pub stderr: String,
}

/// The Python that can run the client, or `None` after skipping `test` out loud.
pub fn python_with_mcp(test: &str) -> Option<PathBuf> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        let python = std::env::var_os("FAULT_TEST_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("python3"));
        let probe = std::process::Command::new(&python)
            .args(["-c", "import mcp.client.stdio"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        match probe {
            Ok(status) if status.success() => Ok(python),
            _ => Err(format!(
                "{} cannot `import mcp` (set FAULT_TEST_PYTHON to a Python with it, e.g. \
                 `python3 -m venv ~/.cache/fault-ci/venv && ~/.cache/fault-ci/venv/bin/pip install fastmcp`)",
                python.display()
            )),
        }
    });
    match found {
        Ok(python) => Some(python.clone()),
        Err(why) => {
            crate::support::optional::skip(test, why);
            None
        }
    }
}

/// The `server` entry of a script for the built `fault` binary started with `args`.
pub fn fault_server(args: &[&str]) -> Value {
    json!({"command": crate::support::common::fault_bin(), "args": args})
}

/// Runs `script` (see `mcp_python/client.py`) and returns what the client saw; panics with the client's
/// stderr if it fails.
pub async fn run_script(python: &Path, script: &Value) -> ScriptRun {
    run(tokio::process::Command::new(python), script, None).await
}

/// [`run_script`] in `sandbox`'s hermetic environment: the client runs isolated and hands the sandbox's
/// settings (data directory, HOME, XDG) to the server it starts; the client's stderr, which carries the
/// server's, is appended to the sandbox's log, printed if the test fails.
pub async fn run_script_in(
    python: &Path,
    script: &Value,
    sandbox: &crate::support::common::Sandbox,
) -> ScriptRun {
    let python = python.to_string_lossy();
    let command = crate::support::common::python_command(&python, sandbox);
    let mut script = script.clone();
    let env: serde_json::Map<String, Value> = sandbox
        .env()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::from(v.to_string_lossy().into_owned())))
        .collect();
    script["server"]["env"] = Value::Object(env);
    run(command.into(), &script, Some(sandbox)).await
}

async fn run(
    mut command: tokio::process::Command,
    script: &Value,
    sandbox: Option<&crate::support::common::Sandbox>,
) -> ScriptRun {
    let client =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/support/mcp_python/client.py");
    command
        .arg(&client)
        .arg(script.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(SCRIPT_LIMIT, command.output())
        .await
        .unwrap_or_else(|_| panic!("the Python MCP client ran over {SCRIPT_LIMIT:?}"))
        .expect("start the Python MCP client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if let Some(sandbox) = sandbox {
        use std::io::Write;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(sandbox.stderr_path());
        if let Ok(mut log) = log {
            let _ = log.write_all(stderr.as_bytes());
        }
    }
    assert!(
        output.status.success(),
        "the Python MCP client failed ({}):\n{stderr}",
        output.status
    );
    let mut calls = Vec::new();
    let mut done = None;
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON line from the client ({e}): {line}"));
        if value["done"] == true {
            done = Some(value);
        } else {
            calls.push(
                serde_json::from_value::<CallSeen>(value)
                    .unwrap_or_else(|e| panic!("unexpected call line ({e}): {line}")),
            );
        }
    }
    let done = done.unwrap_or_else(|| panic!("the client did not finish:\n{stdout}\n{stderr}"));
    calls.sort_by_key(|call| call.index);
    ScriptRun {
        calls,
        server_info: done["server_info"].clone(),
        protocol_version: done["protocol_version"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        notifications: done["notifications"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        stream_exceptions: done["stream_exceptions"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        stderr,
    }
}
