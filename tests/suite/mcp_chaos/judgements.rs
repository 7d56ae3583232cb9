//! The chaos report's judgements of real clients: each scripted behaviour of `support/mcp_python/behaviours.py`
//! (the official MCP Python SDK and FastMCP's client, over stdio and Streamable HTTP) and the MCP Inspector's
//! CLI, through `fault mcp-proxy --report` in front of `fault mcp-test-server`, gets the verdicts the book's
//! table of behaviour → verdict gives (docs/src/chaos-scenarios.md), and the test server's own count of
//! orders agrees with the duplicate writes the report names. A broken gate makes the proxy exit non-zero.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::{Child, Command},
};

use crate::{
    mcp::http::inspector,
    mcp_chaos::scenario::tool,
    support::{common, optional},
};

/// Each behaviour and the plan it meets.
const BEHAVIOURS: [(&str, &str); 5] = [
    (
        "immediate_retry_loop",
        "faults:\n  - type: rate_limit\n    tools: [get_item]\n    first_n: 4\n    retry_after_seconds: 1\n",
    ),
    (
        "backoff_retry_after",
        "faults:\n  - type: rate_limit\n    tools: [get_item]\n    first_n: 2\n    retry_after_seconds: 1\n",
    ),
    (
        "give_up_after_one_failure",
        "faults:\n  - type: error\n    tools: [get_item]\n",
    ),
    (
        "blind_retry_after_hang",
        "faults:\n  - type: hang\n    tools: [create_order]\n    first_n: 1\n    max_hold_ms: 10000\n  - type: hang\n    tools: [get_item]\n    first_n: 1\n    max_hold_ms: 10000\n",
    ),
    (
        "check_then_retry",
        "faults:\n  - type: hang\n    tools: [create_order]\n    first_n: 1\n    max_hold_ms: 10000\n",
    ),
];

/// The Inspector's row of the table, and its plan: one call of `get_item`, which fails.
const INSPECTOR: (&str, &str) = (
    "inspector_cli",
    "faults:\n  - type: error\n    tools: [get_item]\n",
);

/// The book's table: behaviour → (judgement, verdicts per tool).
fn book_table() -> Vec<(String, String, String)> {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/chaos-scenarios.md");
    let text = std::fs::read_to_string(&page).unwrap();
    let start = text
        .find("<!-- verdicts -->")
        .expect("the verdict table's marker in chaos-scenarios.md");
    text[start..]
        .lines()
        .skip(1)
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            let behaviour = cells[0].split('`').nth(1).unwrap_or_default().to_owned();
            (behaviour, cells[2].to_owned(), cells[3].to_owned())
        })
        .collect()
}

fn expected(behaviour: &str) -> (String, String) {
    let table = book_table();
    let (_, judgement, verdicts) = table
        .iter()
        .find(|(name, _, _)| name == behaviour)
        .unwrap_or_else(|| panic!("no row for `{behaviour}` in the book's table: {table:?}"));
    (judgement.clone(), verdicts.clone())
}

/// The report's judgement in the table's words: "handled well" or "mishandled", and each tool that had a
/// failure with its verdicts.
fn judged(report: &Value) -> (String, String) {
    let judgement = &report["run"]["judgement"];
    let session = if judgement["handled_well"] == true {
        "handled well"
    } else {
        "mishandled"
    };
    let tools: Vec<String> = judgement["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["failures"].as_u64() > Some(0))
        .map(|t| {
            let kinds: Vec<&str> = t["verdicts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| match v["kind"].as_str().unwrap() {
                    "duplicate_write" => "duplicate write",
                    "runaway" => "runaway",
                    "ignored_retry_after" => "ignored Retry-After",
                    "gave_up" => "gave up",
                    "retried_read_only" => "retried a read-only tool",
                    "recovered" => "recovered",
                    other => panic!("unexpected verdict {other}"),
                })
                .collect();
            format!("`{}`: {}", t["tool"].as_str().unwrap(), kinds.join(", "))
        })
        .collect();
    (session.to_owned(), tools.join("; "))
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/suite/support/mcp_python")
        .join(name)
}

/// Runs `behaviours.py` with `script_json`; what it did, and the orders the server counted.
async fn run_client(python: &str, script_json: Value) -> Value {
    common::run_python_script(python, &script("behaviours.py"), &[], Some(&script_json)).await
}

/// The report the proxy wrote at its exit.
async fn read_report(path: &Path) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(report) = serde_json::from_str(&text)
        {
            return report;
        }
        assert!(Instant::now() < deadline, "no report at {}", path.display());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One behaviour through a stdio proxy: what the client did and the report.
async fn over_stdio(python: &str, client: &str, behaviour: &str, plan: &str) -> (Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("plan.yaml");
    std::fs::write(&plan_path, plan).unwrap();
    let report = dir.path().join("report.json");
    let bin = common::fault_bin();
    let seen = run_client(
        python,
        json!({
            "behaviour": behaviour,
            "client": client,
            "server": {"command": bin, "args": [
                "--log-level", "warn", "mcp-proxy", "--plan", plan_path, "--report", report,
                "--", bin, "--log-level", "warn", "mcp-test-server",
            ]},
        }),
    )
    .await;
    (seen, read_report(&report).await)
}

/// `fault mcp-test-server --transport http` and `fault mcp-proxy --upstream … --listen …` in front of it.
struct HttpProxy {
    _server: Child,
    proxy: Child,
    url: String,
    report: PathBuf,
    _dir: tempfile::TempDir,
}

impl HttpProxy {
    async fn start(plan: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let plan_path = dir.path().join("plan.yaml");
        std::fs::write(&plan_path, plan).unwrap();
        let report = dir.path().join("report.json");
        let port = common::free_port();
        let listen = format!("127.0.0.1:{port}");
        let server = Command::new(common::fault_bin())
            .args([
                "--log-level",
                "warn",
                "mcp-test-server",
                "--transport",
                "http",
            ])
            .args(["--listen", &listen])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        common::wait_until_listening(port, "the test server").await;
        let upstream = format!("http://{listen}/mcp");
        let mut proxy = Command::new(common::fault_bin())
            .args([
                "mcp-proxy",
                "--upstream",
                &upstream,
                "--listen",
                "127.0.0.1:0",
            ])
            .arg("--plan")
            .arg(&plan_path)
            .arg("--report")
            .arg(&report)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(proxy.stderr.take().unwrap()).lines();
        let url = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(rest) = line.split("listening on ").nth(1) {
                    return rest.split(" -> ").next().unwrap().to_owned();
                }
            }
            panic!("the proxy exited before listening");
        })
        .await
        .expect("the proxy says where it listens");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            _server: server,
            proxy,
            url,
            report,
            _dir: dir,
        }
    }

    /// Stops the proxy as an operator would (SIGTERM), and its report.
    async fn stop(mut self) -> Value {
        let pid = self.proxy.id().unwrap().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        tokio::time::timeout(Duration::from_secs(20), self.proxy.wait())
            .await
            .expect("the proxy exits on SIGTERM")
            .unwrap();
        read_report(&self.report).await
    }
}

async fn over_http(python: &str, client: &str, behaviour: &str, plan: &str) -> (Value, Value) {
    let proxy = HttpProxy::start(plan).await;
    let seen = run_client(
        python,
        json!({"behaviour": behaviour, "client": client, "url": proxy.url}),
    )
    .await;
    (seen, proxy.stop().await)
}

/// What every run must show: the book's verdicts, and duplicate writes that are the server's extra orders.
fn check(label: &str, behaviour: &str, seen: &Value, report: &Value) {
    assert_eq!(
        judged(report),
        expected(behaviour),
        "{label}: client did {seen}\n{}",
        report["run"]["judgement"]
    );
    let tools = report["run"]["judgement"]["tools"].as_array().unwrap();
    assert!(!tools.is_empty(), "{label}: no tool judged");
    for t in tools {
        if t["hints"]["read_only"] == true {
            assert_eq!(t["duplicate_writes"], 0, "{label}: {t}");
        }
    }
    let orders = seen["orders"].as_u64().unwrap();
    let duplicates = report["run"]["judgement"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "create_order")
        .map_or(0, |t| t["duplicate_writes"].as_u64().unwrap());
    let asked = if orders > 0 {
        tool(report, "create_order")["logical_calls"]
            .as_u64()
            .unwrap()
    } else {
        0
    };
    assert_eq!(
        orders - asked,
        duplicates,
        "{label}: the server created {orders} orders for {asked} asked"
    );
}

fn python(test: &str) -> Option<String> {
    match common::python_with(&["mcp", "fastmcp"]) {
        Ok(python) => Some(python),
        Err(why) => {
            optional::skip(test, &why);
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_behaviour_over_stdio_gets_the_books_verdict() {
    let Some(python) =
        python("mcp_chaos::judgements::each_client_behaviour_over_stdio_gets_the_books_verdict")
    else {
        return;
    };
    for client in ["sdk", "fastmcp"] {
        for (behaviour, plan) in BEHAVIOURS {
            let (seen, report) = over_stdio(&python, client, behaviour, plan).await;
            check(
                &format!("{client} over stdio, {behaviour}"),
                behaviour,
                &seen,
                &report,
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_behaviour_over_streamable_http_gets_the_books_verdict() {
    let Some(python) = python(
        "mcp_chaos::judgements::each_client_behaviour_over_streamable_http_gets_the_books_verdict",
    ) else {
        return;
    };
    for client in ["sdk", "fastmcp"] {
        for (behaviour, plan) in BEHAVIOURS {
            let (seen, report) = over_http(&python, client, behaviour, plan).await;
            check(
                &format!("{client} over HTTP, {behaviour}"),
                behaviour,
                &seen,
                &report,
            );
        }
    }
}

/// The blind retry's duplicate write in every output: the markdown names the tool, how many and the
/// annotations; the orders the server counted are one more than asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_write_is_named_with_its_annotations_in_the_markdown() {
    let Some(python) = python(
        "mcp_chaos::judgements::a_duplicate_write_is_named_with_its_annotations_in_the_markdown",
    ) else {
        return;
    };
    let (behaviour, plan) = BEHAVIOURS[3];
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("plan.yaml");
    std::fs::write(&plan_path, plan).unwrap();
    let report = dir.path().join("report.md");
    let bin = common::fault_bin();
    let seen = run_client(
        &python,
        json!({
            "behaviour": behaviour,
            "server": {"command": bin, "args": [
                "mcp-proxy", "--plan", plan_path, "--report", report, "--", bin, "mcp-test-server",
            ]},
        }),
    )
    .await;
    assert_eq!(seen["orders"], 2);
    let deadline = Instant::now() + Duration::from_secs(20);
    let text = loop {
        let text = std::fs::read_to_string(&report).unwrap_or_default();
        if text.contains("**Judgement**") {
            break text;
        }
        assert!(Instant::now() < deadline, "no report");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        text.contains("**Judgement**: mishandled: 1 duplicate write (create_order)"),
        "{text}"
    );
    assert!(
        text.contains(
            "duplicate write: `create_order` was sent again 1 time after an attempt the server had received \
             without the client knowing its outcome, and it is neither read-only nor idempotent \
             (readOnlyHint false, destructiveHint true, idempotentHint false)"
        ),
        "{text}"
    );
    assert!(
        text.contains("`get_item`: retried a read-only tool 1 time after the server had received the call (harmless)"),
        "{text}"
    );
    assert!(
        text.contains("| create_order | hang | timeout | retried |"),
        "{text}"
    );
}

/// The MCP Inspector's CLI calls once and stops: it gives up, and that is judged as such.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_inspector_cli_gives_up_after_one_failure() {
    let test = "mcp_chaos::judgements::the_mcp_inspector_cli_gives_up_after_one_failure";
    let inspector = match inspector() {
        Ok(path) => path,
        Err(why) => return optional::skip(test, &why),
    };
    let (behaviour, plan) = INSPECTOR;
    let proxy = HttpProxy::start(plan).await;
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        Command::new(&inspector)
            .args(["--cli", proxy.url.as_str(), "--transport", "http"])
            .args(["--method", "tools/call", "--tool-name", "get_item"])
            .args(["--tool-arg", "id=1"])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the Inspector finishes within 120 s")
    .unwrap();
    // The Inspector reports the failed call and exits non-zero.
    let said = String::from_utf8_lossy(&output.stderr).into_owned()
        + &String::from_utf8_lossy(&output.stdout);
    assert!(said.contains("injected fault"), "{said}");
    let report = proxy.stop().await;
    check(
        "the MCP Inspector CLI",
        behaviour,
        &json!({"orders": 0}),
        &report,
    );
}

/// The same over stdio: the Inspector's CLI starts `fault mcp-proxy` (in front of `fault mcp-test-server`) as its
/// server, calls once and stops it; the proxy writes its report as it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_inspector_cli_over_stdio_gives_up_after_one_failure() {
    let test = "mcp_chaos::judgements::the_mcp_inspector_cli_over_stdio_gives_up_after_one_failure";
    let inspector = match inspector() {
        Ok(path) => path,
        Err(why) => return optional::skip(test, &why),
    };
    let (behaviour, plan) = INSPECTOR;
    let dir = tempfile::tempdir().unwrap();
    let plan_path = dir.path().join("plan.yaml");
    std::fs::write(&plan_path, plan).unwrap();
    let report = dir.path().join("report.json");
    // The Inspector reads every `--flag` of its command line as its own: the server command is a script.
    let server = dir.path().join("server.sh");
    let fault = common::fault_bin();
    std::fs::write(
        &server,
        format!(
            "#!/bin/sh\nexec '{fault}' --log-level warn mcp-proxy --plan '{}' --report '{}' -- '{fault}' --log-level warn mcp-test-server\n",
            plan_path.display(),
            report.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&server, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        Command::new(&inspector)
            .arg("--cli")
            .arg(&server)
            .args(["--method", "tools/call", "--tool-name", "get_item"])
            .args(["--tool-arg", "id=1"])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the Inspector finishes within 120 s")
    .unwrap();
    let said = String::from_utf8_lossy(&output.stderr).into_owned()
        + &String::from_utf8_lossy(&output.stdout);
    assert!(said.contains("injected fault"), "{said}");
    // The proxy writes its report once the Inspector has closed its input (or signalled it).
    let deadline = Instant::now() + Duration::from_secs(20);
    let written = loop {
        if let Ok(text) = std::fs::read_to_string(&report)
            && let Ok(value) = serde_json::from_str::<Value>(&text)
        {
            break value;
        }
        assert!(
            Instant::now() < deadline,
            "no report from the proxy the Inspector ran; it said: {said}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    check(
        "the MCP Inspector CLI over stdio",
        behaviour,
        &json!({"orders": 0}),
        &written,
    );
}

/// A broken gate: `fault mcp-proxy` over stdio exits non-zero naming it, and its report says FAILED; the same
/// session within its gates exits 0 and says PASSED.
#[tokio::test]
async fn a_broken_gate_makes_the_stdio_proxy_exit_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.yaml");
    std::fs::write(
        &plan,
        "faults:\n  - type: error\n    tools: [get_item]\n    first_n: 3\ngates:\n  duplicate_writes: 0\n",
    )
    .unwrap();
    let session = |flags: &'static [&'static str], report: PathBuf| {
        let plan = plan.clone();
        async move {
            let mut proxy = Command::new(common::fault_bin())
                .args(["--log-level", "warn", "mcp-proxy", "--plan"])
                .arg(&plan)
                .arg("--report")
                .arg(&report)
                .args(flags)
                .args([
                    "--",
                    common::fault_bin(),
                    "--log-level",
                    "warn",
                    "mcp-test-server",
                ])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            let mut stdin = proxy.stdin.take().unwrap();
            let mut lines = BufReader::new(proxy.stdout.take().unwrap()).lines();
            let handshake = [
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#.to_owned(),
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
            ];
            // The same call four times in a row, each after the answer to the one before: three failures,
            // then a result.
            let calls = (1..=4).map(|id| {
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_item","arguments":{{"id":1}}}}}}"#
                )
            });
            for line in handshake.into_iter().chain(calls) {
                stdin
                    .write_all(format!("{line}\n").as_bytes())
                    .await
                    .unwrap();
                if !line.contains("notifications/") {
                    lines.next_line().await.unwrap().unwrap();
                }
            }
            drop(stdin);
            let output = tokio::time::timeout(Duration::from_secs(30), proxy.wait_with_output())
                .await
                .expect("the proxy exits when its client closes")
                .unwrap();
            let report: Value =
                serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
            (output, report)
        }
    };
    let (output, report) = session(&["--max-runaways", "0"], dir.path().join("failed.json")).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("gates FAILED: max_runaways 1 (get_item) (allowed 0)"),
        "{stderr}"
    );
    let gates = &report["gates"];
    assert_eq!(gates["passed"], false, "{gates}");
    let results: Vec<(&str, bool)> = gates["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["gate"].as_str().unwrap(), g["passed"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        results,
        [("max_runaways", false), ("duplicate_writes", true)]
    );

    let (output, report) = session(&["--max-runaways", "1"], dir.path().join("passed.json")).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(report["gates"]["passed"], true, "{}", report["gates"]);
}

/// The same over Streamable HTTP, with an mcptest suite's `recovery:` budget read as mcptest means it: the
/// immediate retry loop never recovers within 1 ms, and the proxy stopped by SIGTERM exits non-zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcptest_recovery_budget_gates_the_http_proxy() {
    let Some(python) =
        python("mcp_chaos::judgements::an_mcptest_recovery_budget_gates_the_http_proxy")
    else {
        return;
    };
    let (behaviour, plan) = BEHAVIOURS[0];
    let suite = format!(
        "{plan}agents:\n  - name: retries get_item\n    model: any\n    prompt: get item 1\n    recovery:\n      max_detection_ms: 3000\n      max_recovery_ms: 1\n      require_clean_timeout: true\n"
    );
    let mut proxy = HttpProxy::start(&suite).await;
    run_client(&python, json!({"behaviour": behaviour, "url": proxy.url})).await;
    let pid = proxy.proxy.id().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), proxy.proxy.wait())
        .await
        .expect("the proxy exits on SIGTERM")
        .unwrap();
    assert!(!status.success());
    let report = read_report(&proxy.report).await;
    let gates = &report["gates"]["gates"];
    assert_eq!(gates[0]["gate"], "max_detection_ms");
    assert_eq!(gates[1]["gate"], "require_clean_timeout");
    assert_eq!(
        (gates[2]["gate"].as_str(), gates[2]["passed"].as_bool()),
        (Some("max_recovery_ms"), Some(false))
    );
    assert_eq!(report["gates"]["passed"], false);
}

/// `fault mcp-proxy --pass-k` over the JSON reports of k sessions of one plan: one client that honours
/// Retry-After and one that loops, so one of two sessions handled its failures well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pass_k_over_the_reports_of_proxy_sessions() {
    let Some(python) = python("mcp_chaos::judgements::pass_k_over_the_reports_of_proxy_sessions")
    else {
        return;
    };
    let plan = BEHAVIOURS[1].1;
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for behaviour in ["backoff_retry_after", "immediate_retry_loop"] {
        let (_, report) = over_stdio(&python, "sdk", behaviour, plan).await;
        let path = dir.path().join(format!("{behaviour}.json"));
        std::fs::write(&path, report.to_string()).unwrap();
        paths.push(path);
    }
    let output = Command::new(common::fault_bin())
        .args(["mcp-proxy", "--pass-k"])
        .args(&paths)
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text.contains("**Sessions**: 1 of 2 handled every failure well"),
        "{text}"
    );
    assert!(
        text.contains("| pass^1 | pass^2 |\n|---|---|\n| 0.5000 | 0.0000 |"),
        "{text}"
    );
    assert!(
        text.contains("| 2 | mishandled: 2 ignored Retry-After (get_item) |"),
        "{text}"
    );
    let refused = Command::new(common::fault_bin())
        .args(["mcp-proxy", "--pass-k"])
        .arg(dir.path().join("missing.json"))
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--pass-k"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

/// Over Streamable HTTP, a 429 with `Retry-After` asks for a wait as `retryAfterSeconds` does: a client that
/// retries at once ignored it, one that waits honoured it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_429_retry_after_is_judged() {
    let Some(python) = python("mcp_chaos::judgements::an_http_429_retry_after_is_judged") else {
        return;
    };
    let plan = "faults:\n  - type: http_status\n    tools: [get_item]\n    status: 429\n    retry_after_seconds: 1\n    first_n: 2\n";
    let proxy = HttpProxy::start(plan).await;
    let seen = run_client(
        &python,
        json!({"behaviour": "immediate_retry_loop", "url": proxy.url}),
    )
    .await;
    let report = proxy.stop().await;
    let get_item = report["run"]["judgement"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "get_item")
        .cloned()
        .unwrap_or_else(|| panic!("no get_item: client did {seen}"));
    assert_eq!(get_item["retry_after_asked"], 2, "{get_item}");
    assert_eq!(get_item["retry_after_honoured"], 0, "{get_item}");
    assert_eq!(
        get_item["verdicts"][0]["kind"], "ignored_retry_after",
        "{get_item}"
    );
}
