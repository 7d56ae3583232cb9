//! `fault mcp-proxy` and MCP 2026-07-28: no initialize, `_meta` on every request, `server/discover`, the Tasks
//! extension (`tasks/get`, `tasks/cancel`) and `input_required` answers with the retried request. Untouched, it
//! passes every byte both ways on stdio (what the client sent is what the server read, and back) and answers
//! sessionless Streamable HTTP with the required headers as the server itself does; the task faults act on
//! the tasks of the tool they pick. Real parts: a FastMCP server with the fastmcp-tasks plugin
//! (tests/suite/support/mcp_python/tasks_server.py) and `fault agent tool`'s own tasks, driven by raw JSON-RPC and by
//! FastMCP's client with the plugin (tests/suite/support/mcp_python/tasks_client.py).

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::{Child, ChildStdin, ChildStdout, Command},
};

use crate::{
    mcp_proxy::faults::wait_events,
    support::{common, optional},
};

const LATEST: &str = "2026-07-28";

fn tasks_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/support/mcp_python/tasks_server.py")
}

/// A Python with FastMCP and the fastmcp-tasks plugin, or the test is skipped out loud.
fn python(test: &str) -> Option<String> {
    match common::python_with(&["fastmcp", "fastmcp_tasks"]) {
        Ok(python) => Some(python),
        Err(why) => {
            crate::support::optional::skip(test, &why);
            None
        }
    }
}

/// The `_meta` of a 2026-07-28 request that declares the tasks extension and elicitation.
fn meta(version: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}},
            "elicitation": {"form": {}}
        }
    })
}

fn request(id: u64, method: &str, mut params: Value, version: &str) -> Value {
    params["_meta"] = meta(version);
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A client that writes raw lines to a child's stdin and reads its stdout, keeping every line both ways.
struct Raw {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
    sent: Vec<Vec<u8>>,
    received: Vec<Vec<u8>>,
    next_id: u64,
}

impl Raw {
    fn start(program: &str, args: &[&str]) -> Raw {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        Raw {
            stdin: child.stdin.take().unwrap(),
            out: BufReader::new(child.stdout.take().unwrap()),
            child,
            sent: Vec::new(),
            received: Vec::new(),
            next_id: 0,
        }
    }

    /// Sends `method` with `params` (and the 2026-07-28 `_meta`); its answer.
    async fn ask(&mut self, method: &str, params: Value) -> Value {
        self.ask_as(method, params, LATEST).await
    }

    async fn ask_as(&mut self, method: &str, params: Value, version: &str) -> Value {
        self.next_id += 1;
        let mut line = request(self.next_id, method, params, version)
            .to_string()
            .into_bytes();
        line.push(b'\n');
        self.stdin.write_all(&line).await.unwrap();
        self.sent.push(line);
        let mut answer = Vec::new();
        tokio::time::timeout(
            Duration::from_secs(30),
            self.out.read_until(b'\n', &mut answer),
        )
        .await
        .unwrap_or_else(|_| panic!("no answer to {method} within 30 s"))
        .unwrap();
        let value: Value = serde_json::from_slice(&answer)
            .unwrap_or_else(|e| panic!("{method}: {e}: {}", String::from_utf8_lossy(&answer)));
        assert_eq!(value["id"], self.next_id, "{value}");
        self.received.push(answer);
        value
    }

    /// Closes stdin and waits (10 s at most) for the child to exit.
    async fn end(mut self) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        (self.sent, self.received)
    }
}

/// Polls task `id` every 100 ms until it is terminal (20 s at most); the answers, last one terminal.
async fn poll_to_end(raw: &mut Raw, id: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut answers = Vec::new();
    loop {
        let answer = raw.ask("tasks/get", json!({"taskId": id})).await;
        let status = answer["result"]["status"].as_str().unwrap_or("").to_owned();
        answers.push(answer);
        if ["completed", "failed", "cancelled"].contains(&status.as_str()) || status.is_empty() {
            return answers;
        }
        assert!(Instant::now() < deadline, "task {id} still {status}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The session every fidelity test runs: discover, a plain call, a task polled to its end, a question answered
/// on the retried call, a task cancelled, an unknown task. What the client got, with the volatile values (task
/// ids, times, sealed request states) named by their key, so two runs compare.
async fn session(raw: &mut Raw) -> Vec<Value> {
    let mut seen = Vec::new();
    seen.push(raw.ask("server/discover", json!({})).await);
    seen.push(
        raw.ask(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "h\u{e9}llo \u{4e16}\u{754c}"}}),
        )
        .await,
    );
    let task = raw
        .ask(
            "tools/call",
            json!({"name": "slow_job", "arguments": {"seconds": 0.3}}),
        )
        .await;
    assert_eq!(task["result"]["resultType"], "task", "{task}");
    let id = task["result"]["taskId"].as_str().unwrap().to_owned();
    seen.push(task);
    seen.push(poll_to_end(raw, &id).await.pop().unwrap());
    let question = raw
        .ask(
            "tools/call",
            json!({"name": "confirm", "arguments": {"action": "delete"}}),
        )
        .await;
    assert_eq!(question["result"]["resultType"], "input_required");
    let state = question["result"]["requestState"].clone();
    seen.push(question);
    seen.push(
        raw.ask(
            "tools/call",
            json!({"name": "confirm", "arguments": {"action": "delete"},
                   "inputResponses": {"sure": {"action": "accept", "content": {"sure": true}}},
                   "requestState": state}),
        )
        .await,
    );
    let long = raw
        .ask(
            "tools/call",
            json!({"name": "slow_job", "arguments": {"seconds": 30}}),
        )
        .await;
    let long_id = long["result"]["taskId"].as_str().unwrap().to_owned();
    seen.push(raw.ask("tasks/cancel", json!({"taskId": long_id})).await);
    seen.push(poll_to_end(raw, &long_id).await.pop().unwrap());
    seen.push(
        raw.ask("tasks/get", json!({"taskId": "no-such-task"}))
            .await,
    );
    seen.iter().map(normalised).collect()
}

/// `value` with the values that differ from run to run replaced by their key (request ids too: a task takes
/// as many polls as the machine's pace makes it).
fn normalised(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let volatile = ["id", "taskId", "createdAt", "lastUpdatedAt", "requestState"]
                        .contains(&k.as_str());
                    let v = if volatile {
                        Value::String(k.clone())
                    } else {
                        normalised(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalised).collect()),
        Value::String(s) if s.starts_with("Task ") && s.ends_with(" not found") => {
            Value::String("Task … not found".into())
        }
        other => other.clone(),
    }
}

/// The lines of a file the server's wrapper wrote.
fn lines(path: &Path) -> Vec<Vec<u8>> {
    std::fs::read(path)
        .unwrap_or_default()
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_session_with_tasks_and_questions_passes_byte_for_byte_on_stdio() {
    let test = "a_2026_07_28_session_with_tasks_and_questions_passes_byte_for_byte_on_stdio";
    let Some(python) = python(test) else { return };
    let server = tasks_server();
    let mut direct = Raw::start(&python, &[server.to_str().unwrap()]);
    let expected = session(&mut direct).await;
    direct.end().await;

    let dir = tempfile::tempdir().unwrap();
    // A plan whose faults pick another tool: the proxy parses, tracks and learns, and still changes nothing.
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:\n  - type: task_fails_late\n    tools: [other]\n  - type: input_loop\n    tools: [other]\n  - type: task_lost\n    tools: [other]\n",
    )
    .unwrap();
    let events = dir.path().join("events.jsonl");
    for planned in [false, true] {
        // The server's wrapper keeps what it read and what it wrote.
        let (read, wrote) = (dir.path().join("read"), dir.path().join("wrote"));
        let wrapper = format!(
            "tee '{}' | '{python}' '{}' | tee '{}'",
            read.display(),
            server.display(),
            wrote.display()
        );
        let mut args = vec!["mcp-proxy"];
        if planned {
            args.extend([
                "--plan",
                plan.to_str().unwrap(),
                "--events",
                events.to_str().unwrap(),
            ]);
        }
        args.extend(["--", "sh", "-c", &wrapper]);
        let mut proxied = Raw::start(common::fault_bin(), &args);
        let got = session(&mut proxied).await;
        let (sent, received) = proxied.end().await;
        assert_eq!(got, expected, "planned: {planned}");
        assert_eq!(
            lines(&read),
            sent,
            "what the server read, planned: {planned}"
        );
        assert_eq!(
            lines(&wrote),
            received,
            "what the client got, planned: {planned}"
        );
    }
    // The tracked calls were recorded: every tools/call, as the client got it.
    let logged = wait_events(&events, 5).await;
    let calls = logged
        .iter()
        .filter(|e| e["method"] == "tools/call")
        .count();
    assert_eq!(calls, 5, "{logged:?}");
    assert!(logged.iter().all(|e| e["fault"].is_null()), "{logged:?}");
}

/// `python tasks_server.py --http PORT`, killed when dropped.
struct HttpTasksServer {
    _child: Child,
    url: String,
}

async fn http_tasks_server(python: &str) -> HttpTasksServer {
    let port = common::free_port();
    let child = Command::new(python)
        .arg(tasks_server())
        .args(["--http", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    common::wait_until_listening(port, "the tasks server").await;
    HttpTasksServer {
        _child: child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

/// One sessionless 2026-07-28 POST with the required headers; its status, `Mcp-Session-Id` and answer.
async fn post(
    client: &reqwest::Client,
    url: &str,
    message: &Value,
    name_header: Option<&str>,
) -> (u16, Option<String>, Value) {
    let method = message["method"].as_str().unwrap();
    let mut request = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", LATEST)
        .header("Mcp-Method", method)
        .body(message.to_string());
    let name = name_header.or_else(|| message["params"]["name"].as_str());
    if let Some(name) = name {
        request = request.header("Mcp-Name", name);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.unwrap();
    // An SSE answer: its last data line is the response.
    let body = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .next_back()
        .map_or(text.as_str(), str::trim);
    let value = serde_json::from_str(body).unwrap_or(Value::String(text.clone()));
    (status, session, value)
}

/// The session of [`session`] over sessionless Streamable HTTP, statuses kept.
async fn http_session(url: &str) -> Vec<Value> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let mut id = 0;
    let mut seen = Vec::new();
    let mut ask = async |method: &str, params: Value, seen: &mut Vec<Value>| -> Value {
        id += 1;
        let (status, session, answer) =
            post(&client, url, &request(id, method, params, LATEST), None).await;
        assert_eq!(session, None, "a 2026-07-28 answer carries no session");
        seen.push(json!({"status": status, "answer": normalised(&answer)}));
        answer
    };
    ask("server/discover", json!({}), &mut seen).await;
    ask(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
        &mut seen,
    )
    .await;
    let task = ask(
        "tools/call",
        json!({"name": "slow_job", "arguments": {"seconds": 0.3}}),
        &mut seen,
    )
    .await;
    let task_id = task["result"]["taskId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut polls = Vec::new();
    loop {
        let answer = ask("tasks/get", json!({"taskId": task_id}), &mut polls).await;
        if answer["result"]["status"] != "working" {
            seen.push(polls.pop().unwrap());
            break;
        }
        assert!(Instant::now() < deadline, "{answer}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let question = ask(
        "tools/call",
        json!({"name": "confirm", "arguments": {"action": "delete"}}),
        &mut seen,
    )
    .await;
    ask(
        "tools/call",
        json!({"name": "confirm", "arguments": {"action": "delete"},
               "inputResponses": {"sure": {"action": "accept", "content": {"sure": true}}},
               "requestState": question["result"]["requestState"]}),
        &mut seen,
    )
    .await;
    ask("tasks/cancel", json!({"taskId": task_id}), &mut seen).await;
    // A Mcp-Name that does not match the body: the server's own refusal comes through.
    let (status, _, answer) = post(
        &client,
        url,
        &request(
            99,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
            LATEST,
        ),
        Some("slow_job"),
    )
    .await;
    seen.push(json!({"status": status, "answer": answer}));
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessionless_streamable_http_with_the_2026_07_28_headers_is_answered_as_the_server_answers()
{
    let test =
        "sessionless_streamable_http_with_the_2026_07_28_headers_is_answered_as_the_server_answers";
    let Some(python) = python(test) else { return };
    let upstream = http_tasks_server(&python).await;
    let expected = http_session(&upstream.url).await;
    let mismatch = &expected.last().unwrap();
    assert_eq!(mismatch["status"], 400, "{mismatch}");
    assert_eq!(mismatch["answer"]["error"]["code"], -32020, "{mismatch}");
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:\n  - type: task_stuck\n    tools: [other]\n  - type: input_loop\n    tools: [other]\n",
    )
    .unwrap();
    // With a report the proxy also follows every tasks/* request, to count the tasks.
    let report = dir.path().join("report.json");
    let observed = [
        "--plan",
        plan.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ];
    for args in [
        &[][..],
        &["--plan", plan.to_str().unwrap()][..],
        &observed[..],
    ] {
        let proxy = crate::mcp_proxy::http::http_proxy(&upstream.url, args).await;
        assert_eq!(http_session(&proxy.url).await, expected, "{args:?}");
    }
    // version_refused over HTTP: 400 with the -32022 error, as the specification answers it there.
    std::fs::write(&plan, "faults:\n  - type: version_refused\n").unwrap();
    let proxy =
        crate::mcp_proxy::http::http_proxy(&upstream.url, &["--plan", plan.to_str().unwrap()])
            .await;
    let client = reqwest::Client::new();
    let (status, _, answer) = post(
        &client,
        &proxy.url,
        &request(1, "server/discover", json!({}), LATEST),
        None,
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    assert_eq!(answer["error"]["code"], -32022, "{answer}");
    assert_eq!(answer["error"]["data"]["requested"], LATEST, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_faults_act_on_the_tasks_of_the_tool_they_pick() {
    let test = "task_faults_act_on_the_tasks_of_the_tool_they_pick";
    let Some(python) = python(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:
  - type: task_fails_late
    tools: [slow_job]
    message: the disk filled up
  - type: task_stuck
    tools: [broken_job]
    polls: 3
",
    )
    .unwrap();
    let server = tasks_server();
    let report = dir.path().join("report.json");
    let mut raw = Raw::start(
        common::fault_bin(),
        &[
            "mcp-proxy",
            "--plan",
            plan.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
            "--",
            &python,
            server.to_str().unwrap(),
        ],
    );
    // slow_job's task completes on the server; the client is told it failed, with the extension's error.
    let task = raw
        .ask(
            "tools/call",
            json!({"name": "slow_job", "arguments": {"seconds": 0.2}}),
        )
        .await;
    let id = task["result"]["taskId"].as_str().unwrap().to_owned();
    let last = poll_to_end(&mut raw, &id).await.pop().unwrap();
    let result = &last["result"];
    assert_eq!(result["status"], "failed", "{last}");
    assert_eq!(
        result["error"],
        json!({"code": -32603, "message": "the disk filled up"})
    );
    assert!(result.get("result").is_none(), "{last}");
    assert_eq!(result["taskId"], id.as_str());
    // broken_job's task ends at once on the server; its first three polls after that still say working.
    let task = raw
        .ask("tools/call", json!({"name": "broken_job", "arguments": {}}))
        .await;
    let id = task["result"]["taskId"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let answers = poll_to_end(&mut raw, &id).await;
    let statuses: Vec<&str> = answers
        .iter()
        .map(|a| a["result"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["working", "working", "working", "completed"],
        "{answers:?}"
    );
    assert_eq!(answers[3]["result"]["result"]["isError"], true);
    assert!(answers[0]["result"].get("result").is_none());
    // A plain tool's answer and a task of an unpicked tool pass as they are.
    let echo = raw
        .ask(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
        .await;
    assert_eq!(echo["result"]["structuredContent"]["result"], "x");
    raw.end().await;
    // The report counts each task once, by what the client was told, under the tool whose call made it.
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(
        report["run"]["mcp_tasks"],
        json!([
            {"tool": "broken_job", "created": 1, "completed": 1, "failed": 0, "cancelled": 0, "lost": 0},
            {"tool": "slow_job", "created": 1, "completed": 0, "failed": 1, "cancelled": 0, "lost": 0},
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_task_is_not_found_after_its_polls_and_a_question_is_asked_again() {
    let test = "a_lost_task_is_not_found_after_its_polls_and_a_question_is_asked_again";
    let Some(python) = python(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:
  - type: task_lost
    tools: [slow_job]
    after_polls: 2
  - type: input_loop
    tools: [confirm]
    times: 2
",
    )
    .unwrap();
    let events = dir.path().join("events.jsonl");
    let report = dir.path().join("report.md");
    let server = tasks_server();
    let mut raw = Raw::start(
        common::fault_bin(),
        &[
            "mcp-proxy",
            "--plan",
            plan.to_str().unwrap(),
            "--events",
            events.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
            "--",
            &python,
            server.to_str().unwrap(),
        ],
    );
    let task = raw
        .ask(
            "tools/call",
            json!({"name": "slow_job", "arguments": {"seconds": 30}}),
        )
        .await;
    let id = task["result"]["taskId"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        let poll = raw.ask("tasks/get", json!({"taskId": id})).await;
        assert_eq!(poll["result"]["status"], "working", "{poll}");
    }
    let not_found = json!({"code": -32602, "message": "Failed to retrieve task: Task not found"});
    let lost = raw.ask("tasks/get", json!({"taskId": id})).await;
    assert_eq!(lost["error"], not_found, "{lost}");
    let cancel = raw.ask("tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(cancel["error"], not_found, "{cancel}");

    // The server asks; each answered retry gets the same question twice; the third retry gets the answer.
    let question = raw
        .ask(
            "tools/call",
            json!({"name": "confirm", "arguments": {"action": "drop"}}),
        )
        .await;
    assert_eq!(question["result"]["resultType"], "input_required");
    let retry = json!({"name": "confirm", "arguments": {"action": "drop"},
        "inputResponses": {"sure": {"action": "accept", "content": {"sure": true}}},
        "requestState": question["result"]["requestState"]});
    for _ in 0..2 {
        let again = raw.ask("tools/call", retry.clone()).await;
        assert_eq!(
            again["result"], question["result"],
            "asked again, as it was"
        );
    }
    let done = raw.ask("tools/call", retry).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("drop:")),
        "{done}"
    );
    raw.end().await;
    // The events name the tool whose call made the task on its tasks/get and tasks/cancel.
    let logged = wait_events(&events, 9).await;
    let lost: Vec<&Value> = logged
        .iter()
        .filter(|e| e["fault"]["type"] == "task_lost")
        .collect();
    assert_eq!(lost.len(), 2, "{logged:?}");
    assert!(lost.iter().all(|e| e["tool"] == "slow_job"), "{lost:?}");
    let looped = logged
        .iter()
        .filter(|e| e["fault"]["type"] == "input_loop")
        .count();
    assert_eq!(looped, 2);
    let report = std::fs::read_to_string(&report).unwrap();
    assert!(
        report
            .contains("| Tool | Created | Completed | Failed | Cancelled | Lost | Still running |")
            && report.contains("| slow_job | 1 | 0 | 0 | 0 | 1 | 0 |"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_refused_answers_the_clients_of_the_versions_it_names() {
    let test = "version_refused_answers_the_clients_of_the_versions_it_names";
    let Some(python) = python(test) else { return };
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(&plan, "faults:\n  - type: version_refused\n").unwrap();
    let server = tasks_server();
    let mut raw = Raw::start(
        common::fault_bin(),
        &[
            "mcp-proxy",
            "--plan",
            plan.to_str().unwrap(),
            "--",
            &python,
            server.to_str().unwrap(),
        ],
    );
    let refused = raw.ask("server/discover", json!({})).await;
    assert_eq!(
        refused["error"],
        json!({"code": -32022, "message": "Unsupported protocol version",
               "data": {"supported": ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
                        "requested": "2026-07-28"}})
    );
    let call = raw
        .ask(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
        .await;
    assert_eq!(call["error"]["code"], -32022);
    raw.end().await;

    // An older client's initialize is picked by its protocolVersion; the latest passes.
    std::fs::write(
        &plan,
        "faults:\n  - type: version_refused\n    versions: [\"2025-06-18\"]\n    supported: [\"2026-07-28\"]\n",
    )
    .unwrap();
    let mut raw = Raw::start(
        common::fault_bin(),
        &[
            "mcp-proxy",
            "--plan",
            plan.to_str().unwrap(),
            "--",
            &python,
            server.to_str().unwrap(),
        ],
    );
    let old = raw
        .ask_as(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "old", "version": "1"}}),
            "2025-06-18",
        )
        .await;
    assert_eq!(
        old["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-06-18"})
    );
    let discover = raw.ask("server/discover", json!({})).await;
    assert_eq!(discover["result"]["supportedVersions"][0], LATEST);
    raw.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_tools_tasks_pass_the_proxy_and_take_its_task_faults() {
    let _timing = crate::support::scenario::TIMING.lock().await;
    let upstream = crate::support::scenario::upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:\n  - type: task_lost\n    tools: [fault_run_latency_impact_scenario]\n    after_polls: 1\n",
    )
    .unwrap();
    let mut command = common::fault_command(&[
        "mcp-proxy",
        "--plan",
        plan.to_str().unwrap(),
        "--",
        common::fault_bin(),
        "agent",
        "tool",
    ]);
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut raw = Raw {
        stdin: child.stdin.take().unwrap(),
        out: BufReader::new(child.stdout.take().unwrap()),
        child,
        sent: Vec::new(),
        received: Vec::new(),
        next_id: 0,
    };
    let discover = raw.ask("server/discover", json!({})).await;
    assert!(
        discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"]
            .is_object(),
        "{discover}"
    );
    let arguments =
        json!({"url": upstream.url("/todos/1"), "duration": "3s", "rps": 2, "latency": 10});
    let task = raw
        .ask(
            "tools/call",
            json!({"name": "fault_run_latency_impact_scenario", "arguments": arguments}),
        )
        .await;
    assert_eq!(task["result"]["resultType"], "task", "{task}");
    let id = task["result"]["taskId"].as_str().unwrap().to_owned();
    let first = raw.ask("tasks/get", json!({"taskId": id})).await;
    assert_eq!(first["result"]["status"], "working", "{first}");
    tokio::time::sleep(Duration::from_millis(150)).await;
    let lost = raw.ask("tasks/get", json!({"taskId": id})).await;
    assert_eq!(
        lost["error"],
        json!({"code": -32602, "message": "Failed to retrieve task: Task not found"})
    );
    // The server's own answer to an id it does not know has the code the fault answers with.
    let unknown = raw
        .ask("tasks/get", json!({"taskId": "no-such-task"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    raw.end().await;
}

/// tests/suite/support/mcp_python/tasks_client.py (FastMCP's client with the fastmcp-tasks plugin) against the tasks
/// server started with `command`: what it printed.
async fn python_client(python: &str, command: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/suite/support/mcp_python/tasks_client.py");
    common::run_python_script(python, &script, command, None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fastmcp_tasks_client_meets_the_faults_as_its_user_would() {
    let test = "the_fastmcp_tasks_client_meets_the_faults_as_its_user_would";
    let Some(python) = python(test) else { return };
    let server = tasks_server();
    let server = server.to_str().unwrap();
    let direct = python_client(&python, &[&python, server]).await;
    assert_eq!(direct["task"], json!({"text": "done after 0.2 s"}));
    assert_eq!(direct["asked"], 1);
    let proxied = python_client(
        &python,
        &[common::fault_bin(), "mcp-proxy", "--", &python, server],
    )
    .await;
    assert_eq!(proxied, direct);

    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:
  - type: task_fails_late
    tools: [slow_job]
    message: the disk filled up
  - type: input_loop
    tools: [confirm]
    times: 2
",
    )
    .unwrap();
    let plan = plan.to_str().unwrap();
    let faulted = python_client(
        &python,
        &[
            common::fault_bin(),
            "mcp-proxy",
            "--plan",
            plan,
            "--",
            &python,
            server,
        ],
    )
    .await;
    // The plugin raises the failed task's error; the client answered the same question three times, then
    // got the server's answer.
    assert_eq!(faulted["task"], json!({"error": "the disk filled up"}));
    assert_eq!(faulted["asked"], 3);
    assert_eq!(faulted["confirm"], direct["confirm"]);

    // A question asked for good: FastMCP's client gives up after its 10 rounds.
    let endless = dir.path().join("endless.yaml");
    std::fs::write(
        &endless,
        "faults:\n  - type: input_loop\n    tools: [confirm]\n    times: 1000\n",
    )
    .unwrap();
    let looped = python_client(
        &python,
        &[
            common::fault_bin(),
            "mcp-proxy",
            "--plan",
            endless.to_str().unwrap(),
            "--",
            &python,
            server,
        ],
    )
    .await;
    assert_eq!(looped["asked"], 10);
    assert!(
        looped["confirm"]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("InputRequiredRoundsExceededError")),
        "{looped}"
    );

    // A task kept `working` for good: the client's wait runs out; a task lost after 2 polls: the client raises
    // the server's not-found error (its job outlasts the client's third poll however slow the machine); a refused
    // protocol version: the session does not open. A wait that must end in time is bounded far above the job.
    let waited = |wait: &'static str, job: &'static str, faults: &'static str| {
        let path = dir.path().join("waited.yaml");
        let python = python.clone();
        async move {
            std::fs::write(&path, faults).unwrap();
            python_client(
                &python,
                &[
                    "--wait",
                    wait,
                    "--job",
                    job,
                    common::fault_bin(),
                    "mcp-proxy",
                    "--plan",
                    path.to_str().unwrap(),
                    "--",
                    &python,
                    server,
                ],
            )
            .await
        }
    };
    let direct_wait = waited("30", "0.2", "faults: []\n").await;
    assert_eq!(direct_wait["task"], json!({"status": "completed"}));
    let stuck = waited(
        "3",
        "0.2",
        "faults:\n  - type: task_stuck\n    tools: [slow_job]\n",
    )
    .await;
    // The wait runs out one of two ways: at a check of its deadline, or in the last poll, which the client sends
    // with what is left of the wait as its own timeout (a few microseconds when its sleep woke just early).
    assert!(
        stuck["task"]["error"]
            .as_str()
            .is_some_and(|e| (e.starts_with("TimeoutError")
                && e.contains("did not reach a terminal state"))
                || e == "MCPError: Request 'tasks/get' timed out"),
        "{stuck}"
    );
    let lost = waited(
        "30",
        "30",
        "faults:\n  - type: task_lost\n    tools: [slow_job]\n    after_polls: 2\n",
    )
    .await;
    assert!(
        lost["task"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("Task not found")),
        "{lost}"
    );
    let refused = waited("3", "0.2", "faults:\n  - type: version_refused\n    versions: [\"2025-11-25\", \"2025-06-18\", \"2026-07-28\"]\n").await;
    assert!(
        refused["session"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("Unsupported protocol version")),
        "{refused}"
    );
}

/// tests/suite/support/mcp_python/modern_client.py (the official Python SDK's `Client`, default mode) against the stdio
/// server `command`: what it printed.
async fn modern_client(python: &str, command: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/suite/support/mcp_python/modern_client.py");
    common::run_python_script(python, &script, command, None).await
}

/// The official Python SDK discovers a 2026-07-28 server through the proxy as it does directly (no initialize);
/// told by `version_refused` that 2026-07-28 is not spoken, it falls back to the initialize handshake of
/// 2025-11-25, as the SDK's negotiation says, and its calls go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_discovers_through_the_proxy_and_falls_back_on_a_refused_version() {
    let test = "the_python_sdk_discovers_through_the_proxy_and_falls_back_on_a_refused_version";
    let python = match common::python_with(&["mcp"]) {
        Ok(python) => python,
        Err(why) => return optional::skip(test, &why),
    };
    let fault = common::fault_bin();
    let server = [fault, "--log-level", "warn", "mcp-test-server"];
    let direct = modern_client(&python, &server).await;
    assert_eq!(direct["protocol_version"], LATEST, "{direct}");
    assert_eq!(direct["echo"], json!({"text": "hello", "length": 5}));
    let mut proxied_command = vec![fault, "--log-level", "warn", "mcp-proxy", "--"];
    proxied_command.extend(server);
    assert_eq!(modern_client(&python, &proxied_command).await, direct);

    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(&plan, "faults:\n  - type: version_refused\n").unwrap();
    let mut refused_command = vec![
        fault,
        "--log-level",
        "warn",
        "mcp-proxy",
        "--plan",
        plan.to_str().unwrap(),
        "--",
    ];
    refused_command.extend(server);
    let fell_back = modern_client(&python, &refused_command).await;
    assert_eq!(fell_back["protocol_version"], "2025-11-25", "{fell_back}");
    assert_eq!(fell_back["tools"], direct["tools"]);
    assert_eq!(fell_back["echo"], direct["echo"]);
}
