//! The binary as a process: stdout carries JSON-RPC only (even at trace level), logs go to stderr or
//! --log-file, the CLI explains itself and validates agent options, and closing stdin ends the server cleanly.
//! Each session is bounded by a 20 s timeout.

use crate::support::common;

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const LIMIT: Duration = Duration::from_secs(20);

/// `fault` in its own sandbox (no FAULT_* or provider settings inherited, a temporary data dir and HOME).
fn fault_command(args: &[&str], env: &[(&str, &str)]) -> common::FaultCommand {
    let mut command = common::fault_command(args);
    command.envs(env.iter().copied());
    command
}

struct Session {
    /// Every stdout line, parsed.
    messages: Vec<Value>,
    stderr: String,
    exit_code: Option<i32>,
}

/// Sends `requests` one by one (waiting for the answer of each request that has an id), closes stdin and
/// collects everything the process wrote until it exits.
async fn run_session(mut command: common::FaultCommand, requests: &[Value]) -> Session {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn fault");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr = child.stderr.take().unwrap();
    let stderr_task = tokio::spawn(async move {
        let mut text = String::new();
        stderr.read_to_string(&mut text).await.unwrap();
        text
    });
    let session = async {
        let mut messages = Vec::new();
        for request in requests {
            let mut line = serde_json::to_string(request).unwrap();
            line.push('\n');
            stdin.write_all(line.as_bytes()).await.unwrap();
            let Some(id) = request.get("id") else {
                continue;
            };
            loop {
                let line = stdout
                    .next_line()
                    .await
                    .unwrap()
                    .expect("an answer before stdout closed");
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                let answered = message.get("id") == Some(id);
                messages.push(message);
                if answered {
                    break;
                }
            }
        }
        drop(stdin);
        while let Some(line) = stdout.next_line().await.unwrap() {
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
            messages.push(message);
        }
        let status = child.wait().await.unwrap();
        (messages, status)
    };
    let (messages, status) = tokio::time::timeout(LIMIT, session)
        .await
        .expect("the session ends within the time limit");
    Session {
        messages,
        stderr: stderr_task.await.unwrap(),
        exit_code: status.code(),
    }
}

fn initialize() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "stdio-test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

/// A session touching every code path of the code tools: listing, extraction, errors, an unknown tool.
fn full_session() -> Vec<Value> {
    let mut requests = initialize();
    requests.extend([
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "fault_list_function_names", "arguments": {"file": common::code_fixture("sample.rs")}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "fault_extract_code_block", "arguments": {"file": common::code_fixture("sample.py"), "func": "Service.run"}}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "fault_extract_code_block", "arguments": {"file": "/nope/x.py", "func": "f"}}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
            "name": "no_such_tool", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "fault_list_function_names", "arguments": {"file": common::code_fixture("sample.js")}}}),
    ]);
    requests
}

fn assert_only_json_rpc(session: &Session, expected_answers: usize) {
    for message in &session.messages {
        assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC: {message}");
        assert!(
            message.get("result").is_some()
                || message.get("error").is_some()
                || message.get("method").is_some(),
            "not a JSON-RPC message: {message}"
        );
    }
    let answers = session
        .messages
        .iter()
        .filter(|m| m.get("id").is_some())
        .count();
    assert_eq!(answers, expected_answers);
}

fn answer(session: &Session, id: u64) -> &Value {
    session
        .messages
        .iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no answer to request {id}"))
}

#[tokio::test]
async fn trace_logging_leaves_stdout_to_json_rpc_and_logs_go_to_stderr() {
    let session = run_session(
        fault_command(&["--log-level", "trace", "agent", "tool"], &[]),
        &full_session(),
    )
    .await;
    assert_only_json_rpc(&session, 7);
    assert_eq!(session.exit_code, Some(0), "stderr: {}", session.stderr);
    assert!(session.stderr.contains("TRACE") || session.stderr.contains("DEBUG"));
    assert_eq!(answer(&session, 5)["result"]["isError"], true);
    assert!(
        answer(&session, 6).get("error").is_some(),
        "unknown tool is a protocol error"
    );
    let listed = answer(&session, 7)["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(listed.contains("\"plain\""));
}

#[tokio::test]
async fn log_file_receives_the_logs_and_stdout_stays_json_rpc() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fault.log");
    let log_arg = log.to_string_lossy().into_owned();
    let session = run_session(
        fault_command(
            &[
                "--log-file",
                &log_arg,
                "--log-level",
                "debug",
                "agent",
                "tool",
            ],
            &[],
        ),
        &full_session(),
    )
    .await;
    assert_only_json_rpc(&session, 7);
    assert_eq!(session.exit_code, Some(0));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("serving MCP on stdio"), "{logged}");
    assert!(
        logged.contains("file not found"),
        "tool errors are logged at debug"
    );
}

#[tokio::test]
async fn closing_stdin_ends_the_server_cleanly_with_nothing_on_stdout() {
    // Before any handshake.
    let session = run_session(fault_command(&["agent", "tool"], &[]), &[]).await;
    assert!(session.messages.is_empty());
    assert_eq!(session.exit_code, Some(0), "stderr: {}", session.stderr);

    // After a handshake: only the initialize answer, then a clean exit.
    let session = run_session(fault_command(&["agent", "tool"], &[]), &initialize()).await;
    assert_only_json_rpc(&session, 1);
    assert_eq!(session.exit_code, Some(0), "stderr: {}", session.stderr);
}

/// The agent options the server logged at start-up, read from its log file.
async fn logged_options(
    args_before_tool: &[&str],
    args_after_tool: &[&str],
    env: &[(&str, &str)],
) -> String {
    let dir = tempfile::tempdir().unwrap();
    let log: PathBuf = dir.path().join("fault.log");
    let log_arg = log.to_string_lossy().into_owned();
    let mut args = vec!["--log-file", log_arg.as_str(), "agent"];
    args.extend_from_slice(args_before_tool);
    args.push("tool");
    args.extend_from_slice(args_after_tool);
    let session = run_session(fault_command(&args, env), &initialize()).await;
    assert_eq!(session.exit_code, Some(0), "stderr: {}", session.stderr);
    read_options_line(&log)
}

fn read_options_line(log: &Path) -> String {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .find(|line| line.contains("AgentOptions"))
        .expect("start-up line with the options")
        .to_owned()
}

#[tokio::test]
async fn agent_options_before_or_after_tool_and_from_the_environment() {
    let before = logged_options(
        &["--llm-client", "ollama", "--llm-embed-model-dim", "768"],
        &[],
        &[],
    )
    .await;
    assert!(before.contains("llm_client: Ollama"), "{before}");
    assert!(before.contains("llm_embed_model_dim: 768"), "{before}");

    let after = logged_options(
        &[],
        &[
            "--llm-client",
            "openrouter",
            "--llm-prompt-reasoning-model",
            "gpt-x",
        ],
        &[],
    )
    .await;
    assert!(after.contains("llm_client: OpenRouter"), "{after}");
    assert!(after.contains("\"gpt-x\""), "{after}");

    let from_env = logged_options(
        &[],
        &[],
        &[
            ("FAULT_AGENT_CLIENT", "open-ai"),
            ("FAULT_AGENT_EMBED_MODEL", "nomic-embed-text"),
            ("FAULT_AGENT_LLM_BASE_URL", "http://127.0.0.1:11434"),
            ("QDRANT_URL", "http://127.0.0.1:6334"),
        ],
    )
    .await;
    assert!(from_env.contains("llm_client: OpenAi"), "{from_env}");
    assert!(from_env.contains("\"nomic-embed-text\""), "{from_env}");
    assert!(from_env.contains("Some(11434)"), "{from_env}");
    assert!(from_env.contains("Some(6334)"), "{from_env}");

    let defaults = logged_options(&[], &[], &[]).await;
    for default in [
        "llm_client: OpenAi",
        "\"o4-mini\"",
        "\"text-embedding-3-small\"",
        "1536",
    ] {
        assert!(defaults.contains(default), "{default} in {defaults}");
    }
}

#[tokio::test]
async fn invalid_llm_client_is_refused_with_the_accepted_values() {
    let output = tokio::time::timeout(
        LIMIT,
        fault_command(&["agent", "tool", "--llm-client", "gemini"], &[])
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("'gemini'"), "{stderr}");
    for value in ["openai", "open-router", "ollama"] {
        assert!(stderr.contains(value), "{value} in {stderr}");
    }

    let output = fault_command(&["agent", "tool"], &[("FAULT_AGENT_CLIENT", "nope")])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("nope"));
}

#[tokio::test]
async fn version_and_help_explain_themselves() {
    let output = fault_command(&["--version"], &[]).output().await.unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("fault {}", env!("CARGO_PKG_VERSION"))
    );

    let output = fault_command(&["agent", "tool", "--help"], &[])
        .output()
        .await
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for needle in [
        "MCP",
        "fault_list_function_names",
        "fault_extract_code_block",
        "--llm-client",
        "FAULT_AGENT_CLIENT",
        "--llm-embed-model-dim",
        "--qdrant-url",
        "--log-file",
        "--log-level",
    ] {
        assert!(help.contains(needle), "help lacks {needle}:\n{help}");
    }
}
