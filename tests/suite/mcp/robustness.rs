//! `fault agent tool` against bad input, derived from each tool's own `inputSchema` in `tools/list`: no
//! arguments, `arguments` that is not an object, each required field missing, and for each field the wrong
//! JSON type, empty, 1 MB, negative, huge, NaN-like and non-ASCII/NUL values; file-taking fields also get
//! `/dev/zero`, a FIFO, a directory, a 20 MB file, a missing path and non-ASCII paths.
//!
//! Raw JSON-RPC lines over the child's stdin/stdout, so non-object `arguments` can be sent and every stdout
//! line checked. Per call: an answer within [`ANSWER_BOUND`] (else a hang), the process alive and answering
//! `tools/list` (else a crash), stdout only JSON-RPC. Errors that do not name the field are listed, not
//! failed. LLM tools point at a closed 127.0.0.1 port; scenario tools run at most 200 ms against one. A value
//! answered exactly as the tool's valid input is (the run failing on that port) counts as accepted.

use crate::support::common;

use std::{
    collections::BTreeMap,
    path::Path,
    process::Stdio,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::{Map, Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::{Child, ChildStdin},
    sync::mpsc,
};

/// How long one call may take before it counts as a hang.
const ANSWER_BOUND: Duration = Duration::from_secs(5);
const HUGE_STRING_BYTES: usize = 1 << 20;
/// The label of each tool's first case: its valid input.
const VALID_INPUT: &str = "valid input";
const BIG_FILE_BYTES: usize = 20 << 20;
/// Time given to each tool's field cases (the whole-call and missing-field cases always run), so the
/// sweep stays under a minute; cases left over are counted as skipped.
const TOOL_BUDGET: Duration = Duration::from_secs(4);

/// `fault agent tool` spoken to in raw JSON-RPC lines.
struct RawServer {
    command: common::FaultCommand,
    child: Child,
    stdin: ChildStdin,
    messages: mpsc::UnboundedReceiver<Value>,
    /// Stdout lines that are not JSON-RPC messages.
    violations: Arc<Mutex<Vec<String>>>,
    next_id: u64,
}

/// What the server answered to one request.
enum Answer {
    /// A result without `isError`.
    Accepted,
    /// A tool result with `isError`, or a JSON-RPC error: its text.
    Refused(String),
    /// No answer within the bound, or stdout closed.
    Silent,
}

impl RawServer {
    async fn start(llm_base_url: &str) -> RawServer {
        let mut command = common::fault_command(&[
            "agent",
            "tool",
            "--llm-base-url",
            llm_base_url,
            "--vector-store",
            "embedded",
        ]);
        command
            .env("OPENAI_API_KEY", "sk-robustness")
            .env("FAULT_LLM_API_KEY", "sk-robustness")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn fault agent tool");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let violations = Arc::new(Mutex::new(Vec::new()));
        let (sender, messages) = mpsc::unbounded_channel();
        let seen = Arc::clone(&violations);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                match serde_json::from_str::<Value>(&line) {
                    Ok(message) if is_json_rpc(&message) => {
                        let _ = sender.send(message);
                    }
                    _ => seen.lock().unwrap().push(shorten(&line, 200)),
                }
            }
        });
        let mut server = RawServer {
            command,
            child,
            stdin,
            messages,
            violations,
            next_id: 1,
        };
        let init = server
            .request(
                "initialize",
                Some(json!({"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "robustness", "version": "1"}})),
            )
            .await;
        assert!(
            init.as_ref().is_some_and(|m| m.get("result").is_some()),
            "initialize answered: {init:?}\nstderr:\n{}",
            server.command.sandbox().stderr()
        );
        server
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        server
    }

    async fn send(&mut self, message: &Value) -> bool {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        let write = async {
            self.stdin.write_all(&line).await?;
            self.stdin.flush().await
        };
        matches!(tokio::time::timeout(ANSWER_BOUND, write).await, Ok(Ok(())))
    }

    /// Sends a request and waits for the message answering it (earlier answers to timed-out requests and
    /// notifications are skipped).
    async fn request(&mut self, method: &str, params: Option<Value>) -> Option<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        let deadline = Instant::now() + ANSWER_BOUND;
        if !self.send(&message).await {
            return None;
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.messages.recv()).await {
                Ok(Some(answer)) if answer.get("id") == Some(&json!(id)) => return Some(answer),
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => return None,
            }
        }
    }

    async fn call(&mut self, tool: &str, arguments: Option<&Value>) -> Answer {
        let mut params = json!({"name": tool});
        if let Some(arguments) = arguments {
            params["arguments"] = arguments.clone();
        }
        match self.request("tools/call", Some(params)).await {
            None => Answer::Silent,
            Some(message) => classify(&message),
        }
    }

    /// Whether the process still runs and answers `tools/list`.
    async fn serving(&mut self) -> bool {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return false;
        }
        self.request("tools/list", None)
            .await
            .is_some_and(|m| m["result"]["tools"].is_array())
    }

    fn violations(&self) -> Vec<String> {
        self.violations.lock().unwrap().clone()
    }
}

fn is_json_rpc(message: &Value) -> bool {
    message["jsonrpc"] == "2.0"
        && (message.get("result").is_some()
            || message.get("error").is_some()
            || message.get("method").is_some())
}

fn classify(message: &Value) -> Answer {
    if let Some(error) = message.get("error") {
        let mut text = error["message"].as_str().unwrap_or_default().to_owned();
        if let Some(data) = error.get("data").filter(|d| !d.is_null()) {
            text.push(' ');
            text.push_str(&data.to_string());
        }
        return Answer::Refused(text);
    }
    let result = &message["result"];
    if result["isError"] != true {
        return Answer::Accepted;
    }
    let text = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    Answer::Refused(text)
}

fn shorten(text: &str, max: usize) -> String {
    let mut cut = text.len().min(max);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut short = text[..cut].replace('\n', " ");
    if cut < text.len() {
        short.push('…');
    }
    short
}

/// One bad call: its label, the `arguments` (none: the key is left out) and the names its error should
/// mention.
struct Case {
    label: String,
    /// A bad value in one field (as opposed to bad or missing `arguments` as a whole).
    field_value: bool,
    /// A path the field cannot use (a device, a FIFO, a 20 MB file, …): it must be refused within 1 s.
    bad_file: bool,
    arguments: Option<Value>,
    names: Vec<String>,
}

/// Files and paths for file-taking fields, in a temporary directory.
struct Paths {
    _dir: tempfile::TempDir,
    values: Vec<(&'static str, String)>,
    source_file: String,
    source_dir: String,
}

fn paths() -> Paths {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let fifo = root.join("pipe.py");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", fifo.display());
    let big = root.join("big.py");
    std::fs::write(&big, "x = 1\n".repeat(BIG_FILE_BYTES / 6)).unwrap();
    let non_ascii = root.join("ünïcødé-файл-名前.py");
    std::fs::write(&non_ascii, "def handle():\n    return 1\n").unwrap();
    let show = |p: &Path| p.to_string_lossy().into_owned();
    // A small tree to index: the sweep is about bad input, not indexing throughput (with `lang` blank, i.e.
    // every language, the fixtures' reference sources take longer than the answer bound to chunk).
    let tree = root.join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("app.py"), "def handle():\n    return 1\n").unwrap();
    Paths {
        values: vec![
            ("/dev/zero", "/dev/zero".to_owned()),
            ("FIFO", show(&fifo)),
            ("directory", show(root)),
            ("20 MB file", show(&big)),
            ("missing path", show(&root.join("missing/nothing.py"))),
            ("non-ASCII path", show(&non_ascii)),
            (
                "non-ASCII file:// URI",
                format!("file://{}", show(&non_ascii)),
            ),
            ("relative path", "relative/../x.py".to_owned()),
        ],
        source_file: common::code_fixture("sample.py"),
        source_dir: show(&tree),
        _dir: dir,
    }
}

fn takes_directory(field: &str) -> bool {
    ["dir", "root", "directory", "folder"]
        .iter()
        .any(|word| field.contains(word))
}

fn takes_path(field: &str) -> bool {
    takes_directory(field) || ["path", "file"].iter().any(|word| field.contains(word))
}

/// The JSON types a property's schema allows (empty when it does not say, e.g. a `$ref`).
fn allowed_types(schema: &Value) -> Vec<&str> {
    match &schema["type"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A valid value for a field, so that each case changes one thing only.
fn good_value(field: &str, schema: &Value, paths: &Paths, closed_url: &str) -> Value {
    if takes_directory(field) {
        return json!(paths.source_dir);
    }
    if takes_path(field) {
        return json!(paths.source_file);
    }
    match field {
        "url" => return json!(closed_url),
        "server" => return json!({"url": closed_url}),
        "calls" => return json!([{"tool": "echo", "arguments": {"text": "hi"}}]),
        "func" => return json!("plain"),
        "snippet" => return json!("def handle(x):\n    return x + 1\n"),
        "duration" => return json!("200ms"),
        "score" => return json!(0.4),
        "target_score" => return json!(0.9),
        _ => {}
    }
    // A declared field names a value it takes (the faults' fields: generated from their declarations).
    if let Some(example) = schema["examples"].get(0) {
        return example.clone();
    }
    let types = allowed_types(schema);
    if types.contains(&"string") {
        json!("x")
    } else if types.contains(&"number") || types.contains(&"integer") {
        json!(1)
    } else if types.contains(&"boolean") {
        json!(false)
    } else if types.contains(&"array") {
        json!([])
    } else {
        json!({})
    }
}

/// The bad values tried on every field.
fn bad_values(schema: &Value) -> Vec<(&'static str, Value)> {
    let types = allowed_types(schema);
    let mut values = Vec::new();
    if types.contains(&"object") {
        values.push(("wrong type (string)", json!("not an object")));
    } else {
        values.push(("wrong type (object)", json!({"unexpected": "object"})));
    }
    if !types.contains(&"boolean") {
        values.push(("wrong type (boolean)", json!(true)));
    }
    if !types.contains(&"array") {
        values.push(("wrong type (array)", json!([1, "two"])));
    }
    values.extend([
        ("empty string", json!("")),
        ("1 MB string", json!("a".repeat(HUGE_STRING_BYTES))),
        ("negative number", json!(-1)),
        ("huge number", json!(1e308)),
        ("u64::MAX", json!(u64::MAX)),
        ("\"NaN\"", json!("NaN")),
        ("\"-Infinity\"", json!("-Infinity")),
        ("non-ASCII and NUL", json!("héllo\u{0}世界\u{202e}")),
    ]);
    values
}

fn cases(tool: &Value, paths: &Paths, closed_url: &str) -> Vec<Case> {
    let schema = &tool["inputSchema"];
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<String> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(str::to_owned))
        .collect();
    let mut base = Map::new();
    for (field, field_schema) in &properties {
        if required.contains(field) || field == "duration" {
            base.insert(
                field.clone(),
                good_value(field, field_schema, paths, closed_url),
            );
        }
    }
    let arguments = ["arguments".to_owned()].to_vec();
    let mut cases = vec![
        // First: what the valid input gets (against the closed port), to tell a bad value that passed
        // validation (the same answer) from one refused without naming its field.
        Case {
            label: VALID_INPUT.into(),
            field_value: false,
            bad_file: false,
            arguments: Some(Value::Object(base.clone())),
            names: Vec::new(),
        },
        Case {
            label: "no arguments".into(),
            field_value: false,
            bad_file: false,
            arguments: None,
            names: required.clone(),
        },
        Case {
            label: "empty object".into(),
            field_value: false,
            bad_file: false,
            arguments: Some(json!({})),
            names: required.clone(),
        },
    ];
    for (label, value) in [
        ("arguments: string", json!("file=/etc/passwd")),
        ("arguments: array", json!([1, 2])),
        ("arguments: number", json!(42)),
        ("arguments: boolean", json!(true)),
    ] {
        cases.push(Case {
            label: label.into(),
            field_value: false,
            bad_file: false,
            arguments: Some(value),
            names: arguments.clone(),
        });
    }
    for field in &required {
        let mut missing = base.clone();
        missing.remove(field);
        cases.push(Case {
            label: format!("{field}: missing"),
            field_value: false,
            bad_file: false,
            arguments: Some(Value::Object(missing)),
            names: vec![field.clone()],
        });
    }
    for (field, field_schema) in &properties {
        // The paths first, so the per-tool budget never skips them.
        let mut values: Vec<(&str, Value, bool)> = Vec::new();
        if takes_path(field) {
            values.extend(paths.values.iter().map(|(label, path)| {
                let usable = label.starts_with("non-ASCII")
                    || (*label == "directory" && takes_directory(field));
                (*label, json!(path), !usable)
            }));
        }
        values.extend(
            bad_values(field_schema)
                .into_iter()
                .map(|(label, value)| (label, value, false)),
        );
        for (label, value, bad_file) in values {
            if base.get(field) == Some(&value) {
                continue;
            }
            let mut arguments = base.clone();
            arguments.insert(field.clone(), value);
            cases.push(Case {
                label: format!("{field}: {label}"),
                field_value: true,
                bad_file,
                arguments: Some(Value::Object(arguments)),
                names: vec![field.clone()],
            });
        }
    }
    cases
}

#[derive(Default)]
struct Tally {
    tried: usize,
    accepted: usize,
    crashes: Vec<String>,
    hangs: Vec<String>,
    stdout_violations: usize,
    not_naming: Vec<String>,
    slowest: Duration,
    skipped: usize,
}

/// A 127.0.0.1 URL nothing listens on.
fn closed_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/")
}

/// What one tool's sweep found.
struct Sweep {
    tool: String,
    tally: Tally,
    /// Stdout lines that are not JSON-RPC, from each server the sweep used.
    stdout_violations: Vec<String>,
    bad_files: usize,
    bad_file_failures: Vec<String>,
}

/// Every case of `tool`, on a server of its own (a fresh one after a hang or a crash), so one tool's leftovers
/// (a scenario still stopping) cannot slow another's.
async fn sweep(tool: &Value, paths: &Paths, closed: &str, started: Instant) -> Sweep {
    let name = tool["name"].as_str().unwrap().to_owned();
    eprintln!("{name} at {:.1} s", started.elapsed().as_secs_f64());
    let mut server = RawServer::start(closed).await;
    let mut found = Sweep {
        tool: name.clone(),
        tally: Tally::default(),
        stdout_violations: Vec::new(),
        bad_files: 0,
        bad_file_failures: Vec::new(),
    };
    let tally = &mut found.tally;
    let tool_started = Instant::now();
    let mut valid_answer = None;
    for case in cases(tool, paths, closed) {
        if case.field_value && !case.bad_file && tool_started.elapsed() > TOOL_BUDGET {
            tally.skipped += 1;
            continue;
        }
        let what = format!("{name} / {}", case.label);
        let before = server.violations().len();
        let call_started = Instant::now();
        let answer = server.call(&name, case.arguments.as_ref()).await;
        let took = call_started.elapsed();
        tally.slowest = tally.slowest.max(took);
        if took > Duration::from_secs(1) {
            eprintln!("slow: {what} took {} ms", took.as_millis());
        }
        tally.tried += 1;
        if case.bad_file {
            found.bad_files += 1;
            let refused = matches!(answer, Answer::Refused(_));
            if !refused || took > Duration::from_secs(1) {
                found.bad_file_failures.push(format!(
                    "{what}: {} in {} ms",
                    if refused { "refused" } else { "not refused" },
                    took.as_millis()
                ));
            }
        }
        match answer {
            Answer::Silent => {
                eprintln!("hang: {what}");
                tally.hangs.push(what.clone());
                // Counted; the rest of the tool's cases get a server that is not busy with it.
                found.stdout_violations.extend(server.violations());
                server = RawServer::start(closed).await;
                continue;
            }
            Answer::Accepted => tally.accepted += 1,
            Answer::Refused(text) if case.label == VALID_INPUT => valid_answer = Some(text),
            // Passed validation, then failed on the closed port as the valid input does.
            Answer::Refused(text) if valid_answer.as_ref() == Some(&text) => tally.accepted += 1,
            Answer::Refused(text) => {
                let lower = text.to_lowercase();
                let named = case
                    .names
                    .iter()
                    .all(|field| lower.contains(&field.to_lowercase()));
                if !named {
                    tally
                        .not_naming
                        .push(format!("{what}: {}", shorten(&text, 160)));
                }
            }
        }
        if !server.serving().await {
            tally.crashes.push(what.clone());
            eprintln!(
                "server stopped serving after {what}; stderr:\n{}",
                server.command.sandbox().stderr()
            );
            found.stdout_violations.extend(server.violations());
            server = RawServer::start(closed).await;
            continue;
        }
        tally.stdout_violations += server.violations().len() - before;
    }
    found.stdout_violations.extend(server.violations());
    found
}

/// Tools swept at once, each on its own server: most cases wait on a closed port or a 200 ms scenario.
const TOOLS_AT_ONCE: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_survives_bad_input_derived_from_its_schema() {
    use futures::StreamExt;

    let paths = paths();
    let closed = closed_url();
    let mut server = RawServer::start(&closed).await;
    let listed = server
        .request("tools/list", None)
        .await
        .expect("tools/list answered");
    let tools = listed["result"]["tools"].as_array().unwrap().clone();
    assert!(!tools.is_empty(), "no tools listed");
    let mut stdout_violations = server.violations();
    drop(server);

    let started = Instant::now();
    let sweeps: Vec<Sweep> = futures::stream::iter(&tools)
        .map(|tool| sweep(tool, &paths, &closed, started))
        .buffer_unordered(TOOLS_AT_ONCE)
        .collect()
        .await;
    let (mut bad_files, mut bad_file_failures) = (0usize, Vec::new());
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    for found in sweeps {
        stdout_violations.extend(found.stdout_violations);
        bad_files += found.bad_files;
        bad_file_failures.extend(found.bad_file_failures);
        tallies.insert(found.tool, found.tally);
    }

    println!(
        "\nrobustness of `fault agent tool` ({} tools, {:.1} s):",
        tools.len(),
        started.elapsed().as_secs_f64()
    );
    println!(
        "{:<45} {:>6} {:>7} {:>8} {:>7} {:>5} {:>6} {:>10} {:>8}",
        "tool",
        "inputs",
        "skipped",
        "accepted",
        "crashes",
        "hangs",
        "stdout",
        "not naming",
        "slowest"
    );
    let mut totals = [0usize; 6];
    for (name, tally) in &tallies {
        println!(
            "{:<45} {:>6} {:>7} {:>8} {:>7} {:>5} {:>6} {:>10} {:>6}ms",
            name,
            tally.tried,
            tally.skipped,
            tally.accepted,
            tally.crashes.len(),
            tally.hangs.len(),
            tally.stdout_violations,
            tally.not_naming.len(),
            tally.slowest.as_millis()
        );
        for (total, count) in totals.iter_mut().zip([
            tally.tried,
            tally.accepted,
            tally.crashes.len(),
            tally.hangs.len(),
            tally.stdout_violations,
            tally.not_naming.len(),
        ]) {
            *total += count;
        }
    }
    println!(
        "{:<45} {:>6} {:>7} {:>8} {:>7} {:>5} {:>6} {:>10}",
        "total",
        totals[0],
        tallies.values().map(|t| t.skipped).sum::<usize>(),
        totals[1],
        totals[2],
        totals[3],
        totals[4],
        totals[5]
    );
    println!("\nerrors that do not name the field:");
    for line in tallies.values().flat_map(|t| &t.not_naming) {
        println!("  {line}");
    }

    let crashes: Vec<_> = tallies.values().flat_map(|t| &t.crashes).collect();
    let hangs: Vec<_> = tallies.values().flat_map(|t| &t.hangs).collect();
    let violations = stdout_violations;
    println!(
        "\nunusable paths (/dev/zero, a FIFO, a 20 MB file, …): {bad_files} tried, {} not refused within 1 s",
        bad_file_failures.len()
    );
    assert!(
        bad_files > 0,
        "no file-taking field was found to try paths on"
    );
    assert!(
        bad_file_failures.is_empty(),
        "unusable paths not refused within 1 s: {bad_file_failures:#?}"
    );
    assert!(
        crashes.is_empty(),
        "the server stopped serving after: {crashes:#?}"
    );
    assert!(
        hangs.is_empty(),
        "no answer within {ANSWER_BOUND:?} to: {hangs:#?}"
    );
    assert_eq!(
        totals[4], 0,
        "stdout lines that are not JSON-RPC: {violations:#?}"
    );
}
