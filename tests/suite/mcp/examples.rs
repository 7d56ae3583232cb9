//! The examples/ FastMCP scripts, run against the built binary (found through FAULT_BIN, as a user would
//! set it or put `fault` on PATH).
//!
//! Needs a Python with `fastmcp` (`pip install fastmcp`; see [`common::python_with`]): without one each test
//! is skipped out loud (a failure under `FAULT_REQUIRE_ALL=1`).

use crate::support::common;
use crate::support::optional;

use std::{path::PathBuf, process::Command};

use serde_json::Value;

fn python(test: &str) -> Option<String> {
    common::python_with(&["fastmcp"])
        .map_err(|why| optional::skip(test, &why))
        .ok()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run_example(python: &str, script: &str, args: &[&str]) -> std::process::Output {
    let sandbox = common::Sandbox::new(script);
    common::python_command(python, &sandbox)
        .arg(root().join("examples").join(script))
        .args(args)
        .env("FAULT_BIN", common::fault_bin())
        .output()
        .expect("run the example")
}

#[test]
fn list_functions_example_prints_the_names() {
    let Some(python) = python("mcp::examples::list_functions_example_prints_the_names") else {
        return;
    };
    let output = run_example(
        &python,
        "list_functions.py",
        &[&common::code_fixture("sample.go")],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut lines = stdout.lines();
    let names: Vec<String> = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(
        names,
        ["Add", "String", "Move", "Push", "Len", "cpuid", "main"]
    );
    let structured: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(structured["functions"][1]["qualified_name"], "Point.String");
}

#[test]
fn extract_function_example_prints_full_and_body() {
    let Some(python) = python("mcp::examples::extract_function_example_prints_full_and_body")
    else {
        return;
    };
    let output = run_example(
        &python,
        "extract_function.py",
        &[&common::code_fixture("sample.py"), "Service.label"],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let block: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        block["full"],
        "@property\n    def label(self):\n        return self.name.upper()"
    );
    assert_eq!(block["body"], "return self.name.upper()");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("# Service.label (method), lines 28-30")
    );

    // A tool error reaches the script as FastMCP's ToolError with our message.
    let output = run_example(
        &python,
        "extract_function.py",
        &[&common::code_fixture("sample.py"), "lable"],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("closest names: label"));
}

/// The command line of each client configuration in examples/mcp-config starts a server that answers
/// `initialize` (with our binary in place of `fault` and a temporary log file).
#[test]
fn client_configurations_start_the_server() {
    use std::io::Write;

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fault.log").to_string_lossy().into_owned();
    let configs = [
        "examples/mcp-config/cursor/.cursor/mcp.json",
        "examples/mcp-config/claude_desktop_config.json",
    ];
    let mut command_lines: Vec<Vec<String>> = Vec::new();
    for config in configs {
        let parsed: Value =
            serde_json::from_str(&std::fs::read_to_string(root().join(config)).unwrap()).unwrap();
        let server = &parsed["mcpServers"]["fault"];
        assert!(
            server["command"].as_str().unwrap().ends_with("fault"),
            "{config}"
        );
        let args = server["args"].as_array().unwrap();
        command_lines.push(
            args.iter()
                .map(|a| a.as_str().unwrap().to_owned())
                .collect(),
        );
    }
    let claude_code =
        std::fs::read_to_string(root().join("examples/mcp-config/claude-code.txt")).unwrap();
    for line in claude_code
        .lines()
        .filter(|l| l.starts_with("claude mcp add"))
    {
        let (_, server) = line.split_once(" -- ").unwrap();
        let mut words: Vec<String> = server.split_whitespace().map(str::to_owned).collect();
        // Continuation lines of the Ollama example.
        if words.last().map(String::as_str) == Some("\\") {
            words.pop();
        }
        assert_eq!(words[0], "fault");
        command_lines.push(words[1..].to_vec());
    }
    assert_eq!(command_lines.len(), 4);

    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"config-check","version":"1"}}}"#;
    for mut args in command_lines {
        if let Some(at) = args.iter().position(|a| a == "--log-file") {
            args[at + 1] = log.clone();
        }
        let sandbox = common::Sandbox::new(&format!("fault {}", args.join(" ")));
        let mut command = Command::new(common::fault_bin());
        sandbox.isolate(&mut command);
        let mut child = command
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(sandbox.stderr_sink())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{initialize}").unwrap();
        drop(stdin);
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}");
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&output.stdout))
        });
        assert_eq!(answer["result"]["serverInfo"]["name"], "fault", "{args:?}");
    }
}

#[test]
fn mcp_chaos_example_prints_the_report() {
    let Some(python) = python("mcp::examples::mcp_chaos_example_prints_the_report") else {
        return;
    };
    let output = run_example(
        &python,
        "mcp_chaos_scenario.py",
        &["--repeat", "5", "--retries", "1", "--json"],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["run"]["tasks"]["tasks"], 5);
    // The first two `slow` calls hang until the client's 500 ms timeout cancels them.
    let slow = report["run"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "slow")
        .unwrap();
    assert_eq!(slow["client"]["cancels"], 2);
    assert_eq!(slow["faults_by_type"]["hang"], 2);
}

/// Waits until something accepts on `port`, for at most 30 s.
fn wait_for_port(port: u16, what: &str) {
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{what} did not listen on {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A child process killed when the test ends, however it ends.
struct Background(std::process::Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_guides_impact_scripts_print_their_reports_beside_the_image_block() {
    let test =
        "mcp::examples::the_guides_impact_scripts_print_their_reports_beside_the_image_block";
    // The demo app of the guide: FastAPI on uvicorn, calling its upstream with httpx.
    let Some(python) = common::python_with(&["fastmcp", "fastapi", "uvicorn", "httpx"])
        .map_err(|why| optional::skip(test, &why))
        .ok()
    else {
        return;
    };
    let app_dir = root().join("examples/app");
    let (upstream_port, app_port) = (common::free_port(), common::free_port());
    let sandbox = common::Sandbox::new("the demo app");
    let _upstream = Background(
        common::python_command(&python, &sandbox)
            .arg(app_dir.join("upstream.py"))
            .args(["--port", &upstream_port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the upstream"),
    );
    // The scripts put their fault proxy on 127.0.0.1:34000, in front of the upstream.
    let _app = Background(
        common::python_command(&python, &sandbox)
            .args(["-m", "uvicorn", "app:app", "--host", "127.0.0.1"])
            .args(["--port", &app_port.to_string()])
            .current_dir(&app_dir)
            .env("UPSTREAM_URL", "http://127.0.0.1:34000")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the app"),
    );
    wait_for_port(upstream_port, "the upstream");
    wait_for_port(app_port, "the app");
    // The scripts find `fault` on PATH, as the guide has it.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(common::fault_bin(), bin.path().join("fault")).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (app, upstream) = (
        format!("http://127.0.0.1:{app_port}"),
        format!("http://127.0.0.1:{upstream_port}"),
    );
    // One after another: each holds port 34000 while it runs.
    for script in [
        "inject_latency.py",
        "inject_jitter.py",
        "inject_bandwidth.py",
        "inject_packet_loss.py",
        "inject_http_error.py",
        "inject_blackhole.py",
    ] {
        let run = common::Sandbox::new(script);
        let output = common::python_command(&python, &run)
            .arg(root().join("examples").join(script))
            // Two seconds of load rather than the scripts' ten: the report is the same document.
            .args(["--duration", "2s", app.as_str(), upstream.as_str()])
            .env("PATH", &path)
            .output()
            .expect("run the script");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        // The report's markdown, whole: the image block after it changes nothing the script prints.
        assert!(
            stdout.contains("## Scenario: Evaluating runtime performance of")
                && stdout.contains(&format!("`GET` {app}")),
            "{script}:\n{stdout}"
        );
    }
}
