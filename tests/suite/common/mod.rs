//! Shared test support: the built `fault` binary driven by rmcp's MCP client over stdio.
#![allow(dead_code)]

use std::{collections::HashMap, process::Stdio};

use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult, JsonObject},
    service::RunningService,
    transport::{ConfigureCommandExt, TokioChildProcess},
};
use serde_json::Value;

pub type Client = RunningService<RoleClient, ()>;

/// Path of the `fault` binary built for these tests.
pub fn fault_bin() -> &'static str {
    env!("CARGO_BIN_EXE_fault")
}

/// A `fault agent tool` server spawned with `args` before `agent` (e.g. logging flags), `agent_args` after
/// `tool`, and `env` added to a cleaned environment (no inherited provider keys or FAULT_* settings).
#[derive(Default)]
pub struct ServerSpec<'a> {
    pub global_args: &'a [&'a str],
    pub agent_args: &'a [&'a str],
    pub env: HashMap<String, String>,
}

/// Spawns the server with default settings and completes the MCP handshake.
pub async fn spawn() -> Client {
    spawn_with(ServerSpec::default()).await
}

pub async fn spawn_with(spec: ServerSpec<'_>) -> Client {
    let command = tokio::process::Command::new(fault_bin()).configure(|cmd| {
        cmd.args(spec.global_args)
            .arg("agent")
            .arg("tool")
            .args(spec.agent_args);
        for (key, _) in std::env::vars() {
            if key.starts_with("FAULT_")
                || key.ends_with("_API_KEY")
                || key == "QDRANT_URL"
                || key == "OLLAMA_HOST"
            {
                cmd.env_remove(key);
            }
        }
        cmd.envs(&spec.env);
    });
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the fault binary");
    ().serve(transport).await.expect("MCP handshake with fault")
}

/// The built `fault` binary started with exactly `args` (e.g. `["mcp-test-server"]`) as an MCP server over
/// stdio, with the handshake done; its stderr is discarded.
pub async fn spawn_command(args: &[&str]) -> Client {
    spawn_command_with(args, (), false).await.0
}

/// Like [`spawn_command`] with a client `handler` (e.g. one that records notifications), and the child's
/// stderr piped back when `capture_stderr` (to read what the server logged), else discarded.
pub async fn spawn_command_with<H: ClientHandler>(
    args: &[&str],
    handler: H,
    capture_stderr: bool,
) -> (
    RunningService<RoleClient, H>,
    Option<tokio::process::ChildStderr>,
) {
    let command = tokio::process::Command::new(fault_bin()).configure(|cmd| {
        cmd.args(args);
    });
    let stderr = if capture_stderr {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let (transport, child_stderr) = TokioChildProcess::builder(command)
        .stderr(stderr)
        .spawn()
        .expect("spawn the fault binary");
    let client = handler
        .serve(transport)
        .await
        .expect("MCP handshake with fault");
    (client, child_stderr)
}

/// Calls `tool` with a JSON object of arguments; protocol errors come back as `Err`.
pub async fn call(
    client: &Client,
    tool: &str,
    args: Value,
) -> Result<CallToolResult, rmcp::ServiceError> {
    let arguments: JsonObject = match args {
        Value::Object(map) => map,
        other => panic!("tool arguments must be a JSON object, got {other}"),
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
}

/// The path of a file under `tests/fixtures/code`, as a tool argument.
pub fn code_fixture(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/code")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Calls `tool` and fails the test, with the tool's message, unless it answers without error.
pub async fn call_ok(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let result = call(client, tool, args)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert!(!is_error(&result), "{}", text(&result));
    result
}

/// The first text content of a result.
pub fn text(result: &CallToolResult) -> &str {
    result
        .content
        .iter()
        .find_map(|block| block.as_text().map(|t| t.text.as_str()))
        .expect("a text content block")
}

pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error.unwrap_or(false)
}
