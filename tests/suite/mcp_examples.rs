//! The examples/ FastMCP scripts, run against the built binary (found through FAULT_BIN, as a user would
//! set it or put `fault` on PATH).
//!
//! Needs a Python with `fastmcp` (`pip install fastmcp`; see [`common::python_with`]): without one each test
//! is skipped out loud (a failure under `FAULT_REQUIRE_ALL=1`).

use crate::common;
use crate::optional;

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
    let Some(python) = python("mcp_examples::list_functions_example_prints_the_names") else {
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
    let Some(python) = python("mcp_examples::extract_function_example_prints_full_and_body") else {
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
    let Some(python) = python("mcp_examples::mcp_chaos_example_prints_the_report") else {
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
