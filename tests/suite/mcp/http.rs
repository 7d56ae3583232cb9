//! `fault agent tool` and `fault mcp-test-server` over Streamable HTTP, driven by real clients: rmcp's own
//! HTTP client, the official Python SDK, FastMCP and the MCP Inspector's CLI; the `Host`, `Origin` and bearer
//! checks seen by raw HTTP requests; the flags' refusals; the shutdown on SIGTERM.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use rmcp::{
    ClientHandler, ServiceExt,
    model::{CallToolRequestParams, ClientRequest, Request, ServerResult},
    service::{PeerRequestOptions, RunningService},
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{
    mcp_chaos::test_server::{ProgressRecorder, structured},
    support::common::{self, FaultCommand, is_error, text},
    support::optional,
};

/// A `fault` MCP server on `--transport http --listen 127.0.0.1:0`, killed when dropped.
pub(crate) struct HttpServer {
    command: FaultCommand,
    child: tokio::process::Child,
    url: String,
}

impl HttpServer {
    /// Starts `fault <args> --transport http --listen 127.0.0.1:0 <extra>` with `env`, and reads its URL from
    /// the log.
    pub(crate) async fn start(args: &[&str], extra: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--transport", "http", "--listen", "127.0.0.1:0"]);
        all.extend(extra);
        let mut command = common::fault_command(&all);
        command.envs(env.iter().copied()).kill_on_drop(true);
        let child = command.spawn().expect("spawn fault");
        let deadline = Instant::now() + Duration::from_secs(30);
        let url = loop {
            let log = command.sandbox().stderr();
            if let Some(url) = log
                .split("serving MCP over Streamable HTTP at ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
            {
                break url.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "no URL logged within 30 s:\n{log}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        HttpServer {
            command,
            child,
            url,
        }
    }

    async fn agent_tool(extra: &[&str], env: &[(&str, &str)]) -> HttpServer {
        HttpServer::start(&["agent", "tool"], extra, env).await
    }

    async fn test_server(extra: &[&str]) -> HttpServer {
        HttpServer::start(&["mcp-test-server"], extra, &[]).await
    }

    /// `127.0.0.1:PORT` of the URL.
    fn authority(&self) -> &str {
        self.url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap()
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn stderr(&self) -> String {
        self.command.sandbox().stderr()
    }

    /// The server's process id, while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// rmcp's Streamable HTTP client, handshake done.
    pub(crate) async fn client<H: ClientHandler>(
        &self,
        handler: H,
    ) -> RunningService<rmcp::RoleClient, H> {
        // reqwest is built without a default TLS provider; it wants one even for plain http.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let transport = StreamableHttpClientTransport::from_uri(self.url.as_str());
        match handler.serve(transport).await {
            Ok(client) => client,
            Err(e) => panic!(
                "MCP handshake over HTTP: {e}\nserver stderr:\n{}",
                self.stderr()
            ),
        }
    }
}

/// Calls `tool` through any running client (HTTP or stdio) and fails unless it answers without error.
async fn call_ok<H: ClientHandler>(
    client: &RunningService<rmcp::RoleClient, H>,
    tool: &str,
    arguments: Value,
) -> rmcp::model::CallToolResult {
    let result = client
        .peer()
        .call_tool(
            CallToolRequestParams::new(tool.to_owned())
                .with_arguments(arguments.as_object().cloned().unwrap_or_default()),
        )
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert!(!is_error(&result), "{tool}: {}", text(&result));
    result
}

/// A Python module with two functions, in its own directory.
fn python_source() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shop.py");
    std::fs::write(
        &file,
        "def price(item):\n    return item.cost * 1.2\n\n\ndef total(items):\n    return sum(price(i) for i in items)\n",
    )
    .unwrap();
    (dir, file)
}

fn tool_names(tools: &[rmcp::model::Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

/// Over HTTP, rmcp's client sees the very tools a stdio client sees, and the code tools answer the same.
#[tokio::test]
async fn rmcp_client_lists_the_stdio_tools_and_calls_the_code_tools() {
    let server = HttpServer::agent_tool(&[], &[]).await;
    let client = server.client(()).await;
    let over_http = client.list_all_tools().await.unwrap();
    let stdio = common::spawn().await;
    let over_stdio = stdio.list_all_tools().await.unwrap();
    assert_eq!(
        serde_json::to_value(&over_http).unwrap(),
        serde_json::to_value(&over_stdio).unwrap()
    );
    assert!(tool_names(&over_http).contains(&"fault_extract_code_block".to_owned()));

    let (_dir, file) = python_source();
    let file = file.to_str().unwrap();
    let args = [
        ("fault_list_function_names", json!({"file": file})),
        (
            "fault_extract_code_block",
            json!({"file": file, "func": "total"}),
        ),
    ];
    for (tool, arguments) in args {
        let http_result = call_ok(&client, tool, arguments.clone()).await;
        let stdio_result = call_ok(&stdio, tool, arguments).await;
        assert_eq!(http_result, stdio_result, "{tool}");
    }
    let listed = call_ok(&client, "fault_list_function_names", json!({"file": file})).await;
    assert_eq!(
        serde_json::from_str::<Value>(text(&listed)).unwrap(),
        json!(["price", "total"])
    );
    client.cancel().await.unwrap();
    stdio.cancel().await.unwrap();
}

/// Progress notifications reach the HTTP client in order on the request's SSE stream, and a cancelled `slow`
/// ends on the server at once while the session keeps serving.
#[tokio::test]
async fn progress_and_cancellation_work_over_http() {
    let server = HttpServer::test_server(&[]).await;
    let recorder = ProgressRecorder::default();
    let client = server.client(recorder.clone()).await;

    let request = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("progress").with_arguments(
            json!({"steps": 4, "step_ms": 10})
                .as_object()
                .cloned()
                .unwrap(),
        ),
    ));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let token = handle.progress_token.clone();
    let ServerResult::CallToolResult(result) = handle.await_response().await.unwrap() else {
        panic!("not a tool result");
    };
    assert_eq!(structured(&result), json!({"steps": 4, "notifications": 4}));
    let steps: Vec<f64> = recorder
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|p| {
            assert_eq!(p.progress_token, token);
            p.progress
        })
        .collect();
    assert_eq!(steps, [1.0, 2.0, 3.0, 4.0]);

    let request = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("slow").with_arguments(
            json!({"milliseconds": 60_000})
                .as_object()
                .cloned()
                .unwrap(),
        ),
    ));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cancelled_at = Instant::now();
    handle
        .cancel(Some("test cancels".to_owned()))
        .await
        .unwrap();
    while !server.stderr().contains("slow: cancelled by the client") {
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(5),
            "the server did not log the cancellation within 5 s:\n{}",
            server.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let echo = call_ok(&client, "echo", json!({"text": "still here"})).await;
    assert_eq!(structured(&echo)["text"], "still here");
    client.cancel().await.unwrap();
}

/// One raw HTTP/1.1 request; the status code and the head of the response.
async fn raw_request(authority: &str, head: &str, body: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let request = format!(
        "{head}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    // An SSE answer may stay open: the status line and headers are all a test needs.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => response.extend_from_slice(&buffer[..n]),
            }
            if response.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
    })
    .await;
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {response:?}"));
    (status, response)
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// A foreign `Host` (DNS rebinding) and a foreign browser `Origin` get 403; an allowed origin, the loopback
/// hosts and a request without `Origin` pass; another path gets 404.
#[tokio::test]
async fn host_and_origin_are_checked() {
    let server = HttpServer::agent_tool(&["--allowed-origin", "http://localhost:5173"], &[]).await;
    let at = server.authority();
    let port = at.rsplit(':').next().unwrap();
    let post = |host: String, origin: Option<&str>| {
        let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {host}");
        if let Some(origin) = origin {
            head.push_str(&format!("\r\nOrigin: {origin}"));
        }
        head
    };
    let cases = [
        (post(format!("evil.example:{port}"), None), 403),
        (post(at.to_owned(), Some("http://evil.example")), 403),
        (post(at.to_owned(), Some("http://localhost:5174")), 403),
        (post(at.to_owned(), Some("http://localhost:5173")), 200),
        (post(format!("localhost:{port}"), None), 200),
        (post(at.to_owned(), None), 200),
        (format!("POST /other HTTP/1.1\r\nHost: {at}"), 404),
    ];
    for (head, expected) in cases {
        let (status, response) = raw_request(at, &head, INITIALIZE).await;
        assert_eq!(status, expected, "{head}\n{response}");
        if expected == 200 {
            assert!(
                response.to_ascii_lowercase().contains("mcp-session-id:"),
                "{response}"
            );
        }
    }
}

/// With --auth-token-env, a request without the token or with a wrong one gets 401 and
/// `WWW-Authenticate: Bearer`; the right token is served.
#[tokio::test]
async fn the_bearer_token_is_required_when_set() {
    let token = "t0ken-for-the-http-test";
    let server = HttpServer::agent_tool(
        &["--auth-token-env", "FAULT_TEST_HTTP_TOKEN"],
        &[("FAULT_TEST_HTTP_TOKEN", token)],
    )
    .await;
    let at = server.authority();
    let head = |authorization: Option<&str>| {
        let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {at}");
        if let Some(value) = authorization {
            head.push_str(&format!("\r\nAuthorization: {value}"));
        }
        head
    };
    for authorization in [None, Some("Bearer wrong"), Some("Basic dDBrZW4=")] {
        let (status, response) = raw_request(at, &head(authorization), INITIALIZE).await;
        assert_eq!(status, 401, "{authorization:?}: {response}");
        assert!(
            response
                .to_ascii_lowercase()
                .contains("www-authenticate: bearer"),
            "{response}"
        );
    }
    let (status, response) =
        raw_request(at, &head(Some(&format!("Bearer {token}"))), INITIALIZE).await;
    assert_eq!(status, 200, "{response}");
    assert!(
        !server.stderr().contains(token),
        "the token leaked into the log"
    );
}

/// --stateless answers a plain request with application/json and no session.
#[tokio::test]
async fn stateless_mode_answers_with_json() {
    let server = HttpServer::test_server(&["--stateless"]).await;
    let at = server.authority();
    let (status, response) =
        raw_request(at, &format!("POST /mcp HTTP/1.1\r\nHost: {at}"), INITIALIZE).await;
    assert_eq!(status, 200, "{response}");
    let lower = response.to_ascii_lowercase();
    assert!(
        lower.contains("content-type: application/json"),
        "{response}"
    );
    assert!(!lower.contains("mcp-session-id:"), "{response}");
}

/// SIGTERM ends the server cleanly (exit 0) while a client holds an open session.
#[tokio::test]
async fn sigterm_shuts_down_cleanly() {
    let mut server = HttpServer::test_server(&[]).await;
    let client = server.client(()).await;
    call_ok(&client, "echo", json!({"text": "before"})).await;
    let pid = server.child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(10), server.child.wait())
        .await
        .expect("the server exits within 10 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}\n{}", server.stderr());
    assert!(
        server.stderr().contains("shutting down"),
        "{}",
        server.stderr()
    );
    drop(client);
}

/// The refusals of the flags: a non-loopback address without --allow-remote, an HTTP flag with stdio, an
/// unset token variable; each names its flag and nothing is written on stdout.
#[tokio::test]
async fn bad_transport_flags_are_refused_by_name() {
    for (args, needle) in [
        (
            vec![
                "agent",
                "tool",
                "--transport",
                "http",
                "--listen",
                "0.0.0.0:0",
            ],
            "--allow-remote",
        ),
        (
            vec!["mcp-test-server", "--listen", "127.0.0.1:0"],
            "--listen needs --transport http",
        ),
        (
            vec![
                "agent",
                "tool",
                "--transport",
                "http",
                "--auth-token-env",
                "FAULT_TEST_SURELY_UNSET_VARIABLE",
            ],
            "--auth-token-env: the environment variable FAULT_TEST_SURELY_UNSET_VARIABLE is not set",
        ),
    ] {
        let mut command = common::fault_command(&args);
        command.stderr(std::process::Stdio::piped());
        let output = tokio::time::timeout(Duration::from_secs(20), command.output())
            .await
            .expect("refused within 20 s")
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

/// The official Python SDK (`streamable_http_client`) and FastMCP's `Client(url)` list the tools and call
/// both code tools over HTTP.
#[tokio::test]
async fn python_sdk_and_fastmcp_call_the_code_tools() {
    let test = "mcp::http::python_sdk_and_fastmcp_call_the_code_tools";
    let python = match common::python_with(&["mcp", "fastmcp"]) {
        Ok(python) => python,
        Err(why) => return optional::skip(test, &why),
    };
    let server = HttpServer::agent_tool(&[], &[]).await;
    let (_dir, file) = python_source();
    let script = r#"
import json, sys, anyio
from mcp import ClientSession
import mcp.client.streamable_http as sdk_http
from fastmcp import Client

url, file = sys.argv[1], sys.argv[2]
connect = getattr(sdk_http, "streamable_http_client", None) or sdk_http.streamablehttp_client

def failed(result):
    # The SDK's field is `isError` in 1.x and `is_error` in later releases.
    return getattr(result, "is_error", getattr(result, "isError", None))

async def sdk():
    async with connect(url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            listed = await session.call_tool("fault_list_function_names", {"file": file})
            block = await session.call_tool("fault_extract_code_block", {"file": file, "func": "price"})
            return {"tools": len(tools), "listed": listed.structured_content,
                    "block": block.structured_content, "errors": [failed(listed), failed(block)]}

async def fastmcp():
    async with Client(url) as client:
        tools = await client.list_tools()
        listed = await client.call_tool("fault_list_function_names", {"file": file})
        block = await client.call_tool("fault_extract_code_block", {"file": file, "func": "price"})
        return {"tools": len(tools), "listed": listed.structured_content,
                "block": block.structured_content, "errors": [listed.is_error, block.is_error]}

async def main():
    print(json.dumps({"sdk": await sdk(), "fastmcp": await fastmcp()}))

anyio.run(main)
"#;
    let sandbox = server.command.sandbox();
    let mut command = common::python_command(&python, sandbox);
    command.args(["-c", script, &server.url, file.to_str().unwrap()]);
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::from(command).output(),
    )
    .await
    .expect("the Python clients finish within 120 s")
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(!stderr.contains("Session termination failed"), "{stderr}");
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap();
    let expected_tools = server
        .client(())
        .await
        .list_all_tools()
        .await
        .unwrap()
        .len();
    for client in ["sdk", "fastmcp"] {
        let seen = &seen[client];
        assert_eq!(seen["tools"], expected_tools, "{client}: {seen}");
        assert_eq!(seen["errors"], json!([false, false]), "{client}: {seen}");
        let names: Vec<&str> = seen["listed"]["functions"]
            .as_array()
            .unwrap_or_else(|| panic!("{client}: {seen}"))
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["price", "total"], "{client}: {seen}");
        assert_eq!(
            seen["block"]["function"]["name"], "price",
            "{client}: {seen}"
        );
    }
}

/// The MCP Inspector: `$FAULT_TEST_MCP_INSPECTOR`, else the copy `.ci/run` installs.
pub(crate) fn inspector() -> Result<PathBuf, String> {
    let path = std::env::var_os("FAULT_TEST_MCP_INSPECTOR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| {
                Path::new(&home).join(".cache/fault-ci/inspector/node_modules/.bin/mcp-inspector")
            })
        })
        .ok_or("HOME is not set")?;
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "no MCP Inspector at {} (npm install --prefix ~/.cache/fault-ci/inspector @modelcontextprotocol/inspector, \
             or set FAULT_TEST_MCP_INSPECTOR)",
            path.display()
        ))
    }
}

/// The MCP Inspector's CLI mode lists the tools and calls a code tool over HTTP.
#[tokio::test]
async fn mcp_inspector_cli_lists_tools_and_calls_a_code_tool() {
    let test = "mcp::http::mcp_inspector_cli_lists_tools_and_calls_a_code_tool";
    let inspector = match inspector() {
        Ok(path) => path,
        Err(why) => return optional::skip(test, &why),
    };
    let server = HttpServer::agent_tool(&[], &[]).await;
    let (_dir, file) = python_source();
    let run = |extra: Vec<String>| {
        let mut command = tokio::process::Command::new(&inspector);
        command
            .args(["--cli", server.url.as_str(), "--transport", "http"])
            .args(extra)
            .kill_on_drop(true);
        async move {
            let output = tokio::time::timeout(Duration::from_secs(120), command.output())
                .await
                .expect("the Inspector finishes within 120 s")
                .unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(
                output.status.success(),
                "{stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
            serde_json::from_str::<Value>(&stdout)
                .unwrap_or_else(|e| panic!("the Inspector's output is not JSON ({e}): {stdout}"))
        }
    };
    let listed = run(vec!["--method".into(), "tools/list".into()]).await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"fault_list_function_names"), "{names:?}");
    assert!(names.contains(&"fault_extract_code_block"), "{names:?}");

    let called = run(vec![
        "--method".into(),
        "tools/call".into(),
        "--tool-name".into(),
        "fault_extract_code_block".into(),
        "--tool-arg".into(),
        format!("file={}", file.display()),
        "--tool-arg".into(),
        "func=total".into(),
    ])
    .await;
    assert_ne!(called["isError"], true, "{called}");
    assert_eq!(
        called["structuredContent"]["function"]["name"], "total",
        "{called}"
    );
}

/// `fault_run_mcp_chaos_scenario` with `server: {url, headers}` drives `fault mcp-test-server --transport http`
/// directly: the bearer header goes on every request, results are judged against the output schemas, errors
/// counted, and a timed-out `slow` is cancelled on the server (`notifications/cancelled` in the session).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_scenario_drives_an_http_server_by_url() {
    let token = "chaos-run-token";
    let server = HttpServer::start(
        &["mcp-test-server"],
        &["--auth-token-env", "FAULT_TEST_HTTP_TOKEN"],
        &[("FAULT_TEST_HTTP_TOKEN", token)],
    )
    .await;
    let agent = common::spawn().await;
    let result = common::call_ok(
        &agent,
        "fault_run_mcp_chaos_scenario",
        json!({
            "server": {"url": server.url, "headers": {"Authorization": format!("Bearer {token}")}},
            "calls": [
                {"tool": "echo", "arguments": {"text": "hi"}},
                {"tool": "get_item", "arguments": {"id": 7}},
                {"tool": "error", "arguments": {"category": "tool"}},
                {"tool": "slow", "arguments": {"milliseconds": 5000}},
            ],
            "repeat": 2,
            "client": {"timeout_ms": 500},
        }),
    )
    .await;
    let report = result.structured_content.clone().unwrap();
    let tool = |name: &str| {
        report["run"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tool"] == name)
            .unwrap_or_else(|| panic!("no figures for {name}: {report}"))
            .clone()
    };
    for name in ["echo", "get_item"] {
        let figures = tool(name);
        assert_eq!(figures["calls"], 2, "{name}: {figures}");
        assert_eq!(figures["outcomes"]["ok"], 2, "{name}: {figures}");
        assert_eq!(figures["effective_availability"], 1.0, "{name}: {figures}");
    }
    assert_eq!(tool("error")["outcomes"]["protocol_error"], 2);
    assert_eq!(tool("slow")["outcomes"]["timeout"], 2);
    let server_line = report["server"].as_str().unwrap();
    assert!(server_line.starts_with(&server.url), "{server_line}");
    assert!(server_line.contains("authorization"), "{server_line}");
    assert!(
        !text(&result).contains(token),
        "the token leaked into the report"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while server
        .stderr()
        .matches("slow: cancelled by the client")
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "{}", server.stderr());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    agent.cancel().await.unwrap();
}

/// With `server.url`: stdio-only fields, a bad URL or header, too many clients or calls per second are refused
/// by name, and a server that does not answer (directly or behind the proxy a plan needs) is named.
#[tokio::test]
async fn chaos_scenario_by_url_refuses_what_it_cannot_do() {
    let agent = common::spawn().await;
    let url = "http://127.0.0.1:1/mcp";
    let calls = json!([{"tool": "echo", "arguments": {"text": "hi"}}]);
    for (args, field) in [
        (
            // Through `fault mcp-proxy --upstream`: the unreachable server is still named.
            json!({"server": {"url": url}, "calls": calls,
                   "plan": {"faults": [{"type": "error", "tools": ["echo"]}]}}),
            "server.url: the MCP server at http://127.0.0.1:1/mcp did not answer",
        ),
        (
            json!({"server": {"url": url}, "calls": calls, "num_clients": 257}),
            "num_clients",
        ),
        (
            json!({"server": {"command": "python"}, "calls": calls, "num_clients": 33}),
            "num_clients",
        ),
        (
            json!({"server": {"url": url}, "calls": calls, "num_clients": 100, "rps": 20,
                   "duration": "1s"}),
            "rps: num_clients × rps = 2000",
        ),
        (
            json!({"server": {"url": url}, "calls": calls, "rps": 5}),
            "rps: only goes with `duration`",
        ),
        (
            json!({"server": {"url": url, "command": "python"}, "calls": calls}),
            "server.url: give either",
        ),
        (
            json!({"server": {"url": url, "args": ["x"]}, "calls": calls}),
            "server.args",
        ),
        (
            json!({"server": {"url": "ftp://127.0.0.1/mcp"}, "calls": calls}),
            "server.url",
        ),
        (
            json!({"server": {"url": url, "headers": {"bad name": "x"}}, "calls": calls}),
            "server.headers",
        ),
        (
            json!({"server": {"command": "python", "headers": {"A": "x"}}, "calls": calls}),
            "server.headers",
        ),
        (
            json!({"server": {"url": url}, "calls": calls}),
            "server.url: the MCP server at http://127.0.0.1:1/mcp did not answer",
        ),
    ] {
        let result = common::call(&agent, "fault_run_mcp_chaos_scenario", args)
            .await
            .unwrap();
        assert!(is_error(&result), "{field}");
        let message = text(&result);
        assert!(message.starts_with(field), "{field}: {message}");
    }
    agent.cancel().await.unwrap();
}
