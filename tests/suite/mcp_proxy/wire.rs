//! `fault mcp-proxy` on the wire, read line by line: untouched messages byte for byte, malformed lines,
//! `notifications/tools/list_changed`, the plan errors and the peer plan formats of `examples/mcp-chaos`.

use std::{process::Stdio, time::Duration};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::{Child, ChildStdin, ChildStdout},
};

use crate::support::common;

/// A client that writes and reads raw lines to `fault` run in its own sandbox (its stderr, with the
/// server's, is kept there and printed if the test fails).
/// Runs `command` with no input and checks that it is refused: it exits unsuccessfully within 5 s with nothing
/// on stdout. Its stderr; `what` names the case in a failure.
async fn refused_within_5_s(command: &mut tokio::process::Command, what: &str) -> String {
    let out = tokio::time::timeout(
        Duration::from_secs(5),
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("{what}: no answer within 5 s"))
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{what}: {stderr}");
    assert!(out.stdout.is_empty(), "{what}: stdout {:?}", out.stdout);
    stderr
}

struct Raw {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
    _command: common::FaultCommand,
}

impl Raw {
    fn start(args: &[&str]) -> Raw {
        let mut command = common::fault_command(args);
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        Raw {
            stdin: child.stdin.take().unwrap(),
            out: BufReader::new(child.stdout.take().unwrap()),
            child,
            _command: command,
        }
    }

    /// `fault mcp-proxy [proxy_args] -- fault mcp-test-server`, initialised.
    async fn test_server(proxy_args: &[&str]) -> Raw {
        let mut args = vec!["mcp-proxy"];
        args.extend_from_slice(proxy_args);
        args.extend(["--", common::fault_bin(), "mcp-test-server"]);
        let mut raw = Raw::start(&args);
        raw.send(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#).await;
        let answer: Value = serde_json::from_slice(&raw.line().await).unwrap();
        assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
        raw.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        raw
    }

    /// Ends the session as a client does, by closing stdin, and waits (at most 10 s) for the proxy to exit:
    /// what it writes at the end (the last events, the report) is then on disk.
    async fn end(self) {
        let Raw {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .expect("the proxy ends within 10 s of stdin closing")
            .unwrap();
    }

    async fn send(&mut self, line: &[u8]) {
        self.stdin.write_all(line).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
    }

    async fn line(&mut self) -> Vec<u8> {
        let mut line = Vec::new();
        tokio::time::timeout(
            Duration::from_secs(10),
            self.out.read_until(b'\n', &mut line),
        )
        .await
        .expect("a line within 10 s")
        .unwrap();
        line
    }

    async fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Vec<u8> {
        let request = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":arguments}});
        self.send(request.to_string().as_bytes()).await;
        self.line().await
    }
}

fn python() -> Option<&'static str> {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "python3")
}

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/mcp_proxy/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[tokio::test]
async fn untouched_messages_pass_byte_for_byte_both_ways() {
    let Some(python) = python() else {
        crate::support::optional::skip(
            "untouched_messages_pass_byte_for_byte_both_ways",
            "python3 is not on PATH (apt-get install python3)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(&plan, "faults:\n  - type: error\n    tools: [other]\n").unwrap();
    let events = dir.path().join("events.jsonl");
    let server = fixture("fixed_lines_server.py");
    let with_plan = [
        "mcp-proxy",
        "--plan",
        plan.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
        "--",
        python,
        &server,
    ];
    let bare = ["mcp-proxy", "--", python, &server];
    let mut sessions = Vec::new();
    for args in [&bare[..], &with_plan[..]] {
        let mut raw = Raw::start(args);
        // Client → server → client: the fake server echoes what it got.
        let odd = "{\"method\" : \"notifications/message\",  \"params\":{\"text\":\"h\u{e9}llo \u{4e16}\u{754c} \u{1F600}\", \"b\":1,\"a\":2}, \"jsonrpc\":\"2.0\"}";
        raw.send(odd.as_bytes()).await;
        assert_eq!(
            String::from_utf8(raw.line().await).unwrap(),
            format!("{odd}\n")
        );
        let request = "{\"jsonrpc\":\"2.0\", \"id\":\"\u{e9}-1\",\"method\":\"ping\" }";
        raw.send(request.as_bytes()).await;
        assert_eq!(
            String::from_utf8(raw.line().await).unwrap(),
            format!("{request}\n")
        );
        // A tracked tools/call: its response passes untouched too.
        raw.send(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"z":1,"a":"x"}}}"#).await;
        let response = raw.line().await;
        assert_eq!(
            response,
            "{\"result\" :{\"z\": \"\u{e9}t\u{e9} \u{6f22}\u{5b57}\",  \"a\":[1, 2.50, {\"y\":null}], \"content\": []},\"id\":7,   \"jsonrpc\":\"2.0\"}\n".as_bytes()
        );
        sessions.push(raw);
    }
    // The tracked call was recorded (the event is written just after the answer is sent).
    let logged = crate::mcp_proxy::faults::wait_events(&events, 1).await;
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0]["client"]["kind"], "result");
}

/// A client message over the bound ends the session with an error naming the bound, whether the proxy has
/// nothing to do (a thread per direction) or a plan (the core), and a fault-free call before it is answered.
#[tokio::test]
async fn a_client_message_over_the_bound_ends_the_session_with_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(&plan, "faults:\n  - type: error\n    tools: [other]\n").unwrap();
    let plan = plan.to_str().unwrap();
    for proxy_args in [&[][..], &["--plan", plan][..]] {
        let mut raw = Raw::test_server(proxy_args).await;
        let answer = raw.call(1, "echo", json!({"text": "hi"})).await;
        assert!(
            String::from_utf8_lossy(&answer).contains("hi"),
            "{proxy_args:?}: {}",
            String::from_utf8_lossy(&answer)
        );
        let Raw {
            mut child,
            mut stdin,
            _command: command,
            ..
        } = raw;
        // More than the bound without a line end; the write fails once the proxy has stopped reading.
        let flood = tokio::spawn(async move {
            let chunk = vec![b'x'; 1024 * 1024];
            for _ in 0..65 {
                if stdin.write_all(&chunk).await.is_err() {
                    return;
                }
            }
            let _ = stdin.write_all(b"x").await;
        });
        let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .unwrap_or_else(|_| panic!("{proxy_args:?}: the proxy still runs 20 s after the flood"))
            .unwrap();
        flood.abort();
        let stderr = std::fs::read_to_string(command.sandbox().stderr_path()).unwrap_or_default();
        assert!(!status.success(), "{proxy_args:?}: {stderr}");
        assert!(
            stderr.contains("the client sent a message of more than 67108864 bytes"),
            "{proxy_args:?}: {stderr}"
        );
    }
}

#[tokio::test]
async fn malformed_keeps_the_framing() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:\n  - type: malformed\n    tools: [echo]\n  - type: malformed\n    tools: [get_item]\n    variant: truncate_json\n    at: 20\n  - type: malformed\n    tools: [list_items]\n    variant: bad_envelope\n",
    )
    .unwrap();
    let mut raw = Raw::test_server(&["--plan", plan.to_str().unwrap()]).await;
    assert_eq!(
        raw.call(1, "echo", json!({"text": "a"})).await,
        b"<<<CORRUPTED_RESPONSE>>>{{{{not json\n"
    );
    let cut = raw.call(2, "get_item", json!({"id": 1})).await;
    assert_eq!(cut.len(), 21);
    assert!(cut.starts_with(b"{\"jsonrpc\":\"2.0\",\"id") && cut.ends_with(b"\n"));
    let envelope: Value =
        serde_json::from_slice(&raw.call(3, "list_items", json!({"count": 1})).await).unwrap();
    assert!(
        envelope.get("jsonrpc").is_none() && envelope["id"] == 3 && envelope["result"].is_object()
    );
    // The session goes on.
    let ok: Value =
        serde_json::from_slice(&raw.call(4, "slow", json!({"milliseconds": 1})).await).unwrap();
    assert_eq!(ok["result"]["structuredContent"]["slept_ms"], 1);
}

#[tokio::test]
async fn drop_tool_after_calls_notifies_list_changed() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:\n  - type: drop_tool\n    tools: [echo]\n    after_calls: 1\n",
    )
    .unwrap();
    let mut raw = Raw::test_server(&["--plan", plan.to_str().unwrap()]).await;
    raw.send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .await;
    let listed: Value = serde_json::from_slice(&raw.line().await).unwrap();
    assert!(
        listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "echo")
    );
    let first: Value =
        serde_json::from_slice(&raw.call(2, "echo", json!({"text": "a"})).await).unwrap();
    assert_eq!(first["result"]["structuredContent"]["text"], "a");
    let notification = raw.call(3, "echo", json!({"text": "a"})).await;
    assert_eq!(
        notification,
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n"
    );
    let error: Value = serde_json::from_slice(&raw.line().await).unwrap();
    assert_eq!(
        error,
        json!({"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unknown tool: echo"}})
    );
    raw.send(br#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#)
        .await;
    let listed: Value = serde_json::from_slice(&raw.line().await).unwrap();
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        !names.contains(&"echo") && names.contains(&"get_item"),
        "{names:?}"
    );
}

async fn print_plan(path: &str) -> std::process::Output {
    common::fault_command(&["mcp-proxy", "--plan", path, "--print-plan"])
        .stderr(Stdio::piped())
        .output()
        .await
        .unwrap()
}

#[tokio::test]
async fn unknown_keys_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "seed: 4\nfaults:\n  - type: latency\n    ms: 10\n    jiter_ms: 3\n",
    )
    .unwrap();
    let out = print_plan(plan.to_str().unwrap()).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 5") && stderr.contains("unknown key `jiter_ms`"),
        "{stderr}"
    );
}

/// Each peer format's example loads, and normalises to the faults it names.
#[tokio::test]
async fn the_peer_plan_formats_load() {
    for (file, expected) in [
        (
            "mcp-chaos.yaml",
            &["latency", "flaky", "schema_drift", "burst_error"][..],
        ),
        ("mcptest.yaml", &["hang", "latency", "recover_after"][..]),
        (
            "mcp-chaos-monkey.json",
            &["latency", "rate_limit", "schema_drift", "error", "timeout"][..],
        ),
        ("plan.yaml", &["latency", "timeout", "schema_drift"][..]),
    ] {
        let path = format!("{}/examples/mcp-chaos/{file}", env!("CARGO_MANIFEST_DIR"));
        let out = print_plan(&path).await;
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let plan: Value = serde_yaml_ng::from_slice(&out.stdout).unwrap();
        let types: Vec<&str> = plan["faults"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["type"].as_str())
            .collect();
        for t in expected {
            assert!(types.contains(t), "{file}: {t} missing from {types:?}");
        }
    }
}

/// `--plan` naming something that is not a plan of bounded size is refused at once, before any server is
/// started, naming the path and the problem, with nothing on stdout: /dev/zero, a FIFO, a directory, a file
/// over the size cap, and 256 KiB of malformed YAML nesting `x: [` (which a YAML parser takes minutes on).
#[tokio::test]
async fn a_plan_that_is_not_a_bounded_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("plan.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    let large = dir.path().join("large.yaml");
    std::fs::write(&large, "x: [".repeat(2_500_000)).unwrap();
    let deep = dir.path().join("deep.yaml");
    std::fs::write(&deep, "x: [".repeat(65_000)).unwrap();
    let nan = dir.path().join("nan.yaml");
    std::fs::write(&nan, "faults:\n  - type: error\n    probability: .nan\n").unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    for (plan, problem) in [
        ("/dev/zero".to_owned(), "is not a regular file"),
        (path(&fifo), "is not a regular file"),
        (path(dir.path()), "is a directory"),
        (path(&large), "over the 262144 byte limit"),
        (path(&deep), "nests deeper than 32 levels (line 1)"),
        (
            path(&nan),
            "faults[0]: line 3: error: probability must be a number, got .nan",
        ),
    ] {
        let started = std::time::Instant::now();
        let mut command = common::fault_command(&[
            "mcp-proxy",
            "--plan",
            &plan,
            "--",
            common::fault_bin(),
            "mcp-test-server",
        ]);
        let stderr = refused_within_5_s(&mut command, &plan).await;
        assert!(
            stderr.contains(&plan) && stderr.contains(problem),
            "{plan}: {stderr}"
        );
        eprintln!("{plan}: refused in {:?}", started.elapsed());
    }
}

/// The chaos scenario tool reads a YAML plan as `--plan` does: a `.nan` is named with its fault, key and line.
#[tokio::test]
async fn the_chaos_tool_names_a_plans_nan_too() {
    let client = common::spawn().await;
    let result = common::call(
        &client,
        "fault_run_mcp_chaos_scenario",
        json!({
            "server": {"command": common::fault_bin(), "args": ["mcp-test-server"]},
            "calls": [{"tool": "echo"}],
            "plan": "faults:\n  - type: error\n    probability: .nan\n",
        }),
    )
    .await
    .unwrap();
    assert!(common::is_error(&result));
    assert_eq!(
        common::text(&result),
        "plan: faults[0]: line 3: error: probability must be a number, got .nan"
    );
    client.cancel().await.unwrap();
}

/// Every `fault mcp-proxy` flag that takes a path or a number, given what it cannot use: a missing directory, a
/// directory, /dev/zero, a FIFO, a file too large for a CA, a negative, NaN or huge number. Each is refused at
/// once, before the server runs (none is left behind), naming the flag and the problem, nothing on stdout.
#[tokio::test]
async fn every_path_and_number_flag_refuses_what_it_cannot_use_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("out.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    let huge = dir.path().join("huge.pem");
    std::fs::write(&huge, vec![b'x'; 20 << 20]).unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let missing = path(&dir.path().join("missing/out.md"));
    let marker = "4242.404";
    let https = "https://127.0.0.1:1/mcp";
    let mut cases: Vec<(Vec<String>, &str)> = Vec::new();
    for flag in ["--events", "--report"] {
        for (value, problem) in [
            (missing.clone(), "no such directory"),
            (path(dir.path()), "is a directory"),
            ("/dev/zero".to_owned(), "is not a regular file"),
            (path(&fifo), "is not a regular file"),
        ] {
            cases.push((vec![flag.into(), value], problem));
        }
    }
    for (value, problem) in [
        (missing.clone(), "not found"),
        (path(dir.path()), "is a directory"),
        ("/dev/zero".to_owned(), "is not a regular file"),
        (path(&fifo), "is not a regular file"),
        (path(&huge), "byte limit"),
    ] {
        cases.push((
            vec![
                "--upstream".into(),
                https.into(),
                "--upstream-ca".into(),
                value,
            ],
            problem,
        ));
    }
    for value in ["-1", "NaN", "1e30", "99999999999999999999999"] {
        cases.push((vec![format!("--seed={value}")], "--seed"));
    }
    for (args, problem) in cases {
        let mut all: Vec<&str> = vec!["mcp-proxy"];
        all.extend(args.iter().map(String::as_str));
        if !args.contains(&"--upstream".to_owned()) {
            all.extend(["--", "sleep", marker]);
        }
        let mut command = common::fault_command(&all);
        let stderr = refused_within_5_s(&mut command, &format!("{args:?}")).await;
        assert!(stderr.contains(problem), "{args:?}: {stderr}");
        let flag = args[args.len().saturating_sub(2)..]
            .iter()
            .find(|a| a.starts_with("--"))
            .map(|a| a.split('=').next().unwrap_or(a))
            .unwrap_or("--seed");
        assert!(
            stderr.contains(flag),
            "{args:?}: the flag {flag} is named: {stderr}"
        );
    }
    let left: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).contains(marker))
        })
        .collect();
    assert!(left.is_empty(), "servers left behind: {left:?}");
}

/// What the event records as the client's outcome is what the client received: a response without
/// `"jsonrpc": "2.0"` is a malformed message, a response to another id is nothing for this call (so the
/// `--report` figures count neither as answered), and an `error` fault's answer carries `data.category`.
#[tokio::test]
async fn the_event_records_what_the_client_received() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:\n  - type: malformed\n    tools: [echo]\n    variant: bad_envelope\n  \
         - type: malformed\n    tools: [get_item]\n    variant: bad_envelope\n    wrong_id: true\n  \
         - type: error\n    tools: [list_items]\n",
    )
    .unwrap();
    let events = dir.path().join("events.jsonl");
    let mut raw = Raw::test_server(&[
        "--plan",
        plan.to_str().unwrap(),
        "--events",
        events.to_str().unwrap(),
    ])
    .await;
    let echo: Value =
        serde_json::from_slice(&raw.call(1, "echo", json!({"text": "hi"})).await).unwrap();
    assert!(echo.get("jsonrpc").is_none(), "{echo}");
    let item: Value =
        serde_json::from_slice(&raw.call(2, "get_item", json!({"id": 1})).await).unwrap();
    assert_ne!(item["id"], 2, "{item}");
    let error: Value =
        serde_json::from_slice(&raw.call(3, "list_items", json!({"count": 1})).await).unwrap();
    assert_eq!(error["error"]["code"], -32603, "{error}");
    assert_eq!(error["error"]["data"]["category"], "protocol", "{error}");
    raw.end().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let recorded = loop {
        let text = std::fs::read_to_string(&events).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if lines.len() >= 3 || std::time::Instant::now() > deadline {
            break lines;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let client = |tool: &str| {
        recorded
            .iter()
            .find(|e| e["tool"] == tool)
            .unwrap_or_else(|| panic!("no event for {tool}: {recorded:?}"))["client"]["kind"]
            .clone()
    };
    assert_eq!(client("echo"), "malformed");
    assert_eq!(client("get_item"), "none");
    assert_eq!(client("list_items"), "error");
}
