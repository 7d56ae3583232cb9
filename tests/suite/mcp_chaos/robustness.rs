//! `fault_run_mcp_chaos_scenario` against servers that misbehave the way real ones do: one that never answers
//! the handshake, one cancelled during it, one that floods its stdout without a line end, one that prints a
//! banner and exits, a URL nobody listens at, a call to a tool the server does not have, and a NUL byte in the
//! command. Each ends with an error naming the problem, and no process of the server is left behind.

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ClientRequest, JsonObject, Request};
use serde_json::{Value, json};

use crate::support::common::{self, is_error, text};

/// The processes whose command line contains `marker` (from /proc), this test's own excluded.
fn processes_with(marker: &str) -> Vec<u32> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != own)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).contains(marker))
        })
        .collect()
}

/// Waits up to 5 s for no process to carry `marker`; the ones left, if any.
async fn gone(marker: &str) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A shell server that runs `script`; `marker` is an argument of `sleep`, to find what it started.
fn shell_server(script: &str) -> Value {
    json!({"command": "sh", "args": ["-c", script]})
}

async fn refused(args: Value) -> (String, Duration) {
    let client = common::spawn().await;
    let started = Instant::now();
    let result = common::call(&client, "fault_run_mcp_chaos_scenario", args)
        .await
        .expect("an answer");
    let took = started.elapsed();
    assert!(is_error(&result), "{}", text(&result));
    let message = text(&result).to_owned();
    client.cancel().await.unwrap();
    (message, took)
}

/// A server that never answers `initialize` (here a shell that sleeps, and a child of its own that sleeps):
/// after its handshake bound (`server.start_timeout`, 3 s here) the call fails, and the server's whole process
/// group is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_is_ended_with_its_children() {
    let marker = "4242.101";
    let mut server = shell_server(&format!("sleep {marker} & sleep {marker}"));
    server["start_timeout"] = json!(3);
    let (message, took) = refused(json!({
        "server": server,
        "calls": [{"tool": "echo"}],
    }))
    .await;
    assert!(
        message.contains("no answer to initialize within 3s"),
        "{message}"
    );
    assert!(
        message.contains("It wrote nothing on stdout or stderr"),
        "{message}"
    );
    assert!(took < Duration::from_secs(13), "{took:?}");
    let left = gone(marker).await;
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

/// The client cancels the call during the handshake: the run ends at once and the server goes with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_the_handshake_ends_the_run_and_the_server_at_once() {
    let marker = "4242.202";
    let client = common::spawn().await;
    let mut arguments = JsonObject::new();
    arguments.insert(
        "server".into(),
        shell_server(&format!("sleep {marker} & sleep {marker}")),
    );
    arguments.insert("calls".into(), json!([{"tool": "echo"}]));
    let request = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("fault_run_mcp_chaos_scenario").with_arguments(arguments),
    ));
    let handle = client
        .peer()
        .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_with(marker).len() < 2 {
        assert!(Instant::now() < deadline, "the server never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cancelled = Instant::now();
    handle
        .cancel(Some("the user gave up".into()))
        .await
        .unwrap();
    let left = gone(marker).await;
    assert!(left.is_empty(), "processes left behind: {left:?}");
    assert!(
        cancelled.elapsed() < Duration::from_secs(2),
        "the server outlived the cancel by {:?}",
        cancelled.elapsed()
    );
    // The session goes on.
    let listed = client.list_all_tools().await.unwrap();
    assert!(!listed.is_empty());
    client.cancel().await.unwrap();
}

/// A server that writes far more than one message's worth without a line end: the run ends with an error
/// naming the bound, without holding the flood in memory, and the server is ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_flooding_its_stdout_is_ended_naming_the_bound() {
    let marker = "4242.303";
    let client = common::spawn().await;
    let result = common::call(
        &client,
        "fault_run_mcp_chaos_scenario",
        json!({
            "server": shell_server(&format!(
                "head -c 300000000 /dev/zero | tr '\\0' x; sleep {marker}"
            )),
            "calls": [{"tool": "echo"}],
        }),
    )
    .await
    .expect("an answer");
    assert!(is_error(&result), "{}", text(&result));
    let message = text(&result);
    assert!(
        message.contains("more than 67108864 bytes without a line end"),
        "{message}"
    );
    // The agent's peak memory: the bound on one message, not the flood.
    let home = client.sandbox().home();
    let agent = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|b| *b == 0)
                    .any(|var| var == format!("HOME={}", home.display()).as_bytes())
            }) && std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).contains("agent"))
        })
        .expect("the agent's process");
    let status = std::fs::read_to_string(format!("/proc/{agent}/status")).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(
        peak_kib < 200 * 1024,
        "the agent peaked at {peak_kib} KiB for a 300 MB flood"
    );
    let left = gone(marker).await;
    assert!(left.is_empty(), "processes left behind: {left:?}");
    client.cancel().await.unwrap();
}

/// A server that prints a banner on stdout and exits: the error quotes what it printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_banner_is_quoted_in_the_error() {
    let (message, took) = refused(json!({
        "server": shell_server("echo 'Starting demo MCP server on stdio...'; echo 'listening'; exit 3"),
        "calls": [{"tool": "echo"}],
    }))
    .await;
    assert!(
        message.contains("the first: Starting demo MCP server on stdio..."),
        "{message}"
    );
    assert!(message.contains("2 line(s)"), "{message}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// Nothing listens at the URL: the error says the connection was refused, and nothing about exiting.
#[tokio::test]
async fn a_url_nobody_listens_at_is_a_refused_connection() {
    let (message, took) = refused(json!({
        "server": {"url": "http://127.0.0.1:1/mcp"},
        "calls": [{"tool": "echo"}],
    }))
    .await;
    assert!(message.starts_with("server.url: "), "{message}");
    assert!(message.contains("connection refused"), "{message}");
    assert!(!message.contains("exited"), "{message}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// A call to a tool the server does not list is refused before any call, naming it and the listed tools.
#[tokio::test]
async fn a_tool_the_server_does_not_list_is_refused_up_front() {
    let (message, _) = refused(json!({
        "server": {"command": common::fault_bin(), "args": ["mcp-test-server"]},
        "calls": [{"tool": "echo"}, {"tool": "ecko", "arguments": {}}],
        "repeat": 3,
    }))
    .await;
    assert!(
        message.starts_with("calls[1].tool: the server lists no tool `ecko`"),
        "{message}"
    );
    assert!(message.contains("echo"), "{message}");
}

/// A NUL byte in the command (or its arguments or environment) is refused naming the field.
#[tokio::test]
async fn a_nul_byte_in_the_command_is_named() {
    for (server, field) in [
        (json!({"command": "py\u{0}thon"}), "server.command"),
        (
            json!({"command": "python", "args": ["a\u{0}b"]}),
            "server.args[0]",
        ),
        (
            json!({"command": "python", "env": {"A": "x\u{0}y"}}),
            "server.env.A",
        ),
    ] {
        let (message, _) = refused(json!({"server": server, "calls": [{"tool": "echo"}]})).await;
        assert!(
            message.starts_with(&format!("{field}: contains a NUL byte")),
            "{message}"
        );
    }
}
