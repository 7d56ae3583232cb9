//! The examples/ FastMCP scripts, run against the built binary (found through FAULT_BIN, as a user would
//! set it or put `fault` on PATH).
//!
//! Needs a Python with `fastmcp` (`pip install fastmcp`): `$FAULT_EXAMPLES_PYTHON`, else `python3`. Without
//! it the test is skipped with a message, unless `FAULT_REQUIRE_EXAMPLES=1`, which turns the skip into a
//! failure (for CI).

use crate::common;

use std::{path::PathBuf, process::Command};

use serde_json::Value;

fn python() -> Option<String> {
    let python = std::env::var("FAULT_EXAMPLES_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let has_fastmcp = Command::new(&python)
        .args(["-c", "import fastmcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_fastmcp {
        return Some(python);
    }
    let why = format!(
        "`{python}` cannot import fastmcp (pip install fastmcp, or set FAULT_EXAMPLES_PYTHON)"
    );
    assert!(
        std::env::var("FAULT_REQUIRE_EXAMPLES").as_deref() != Ok("1"),
        "FAULT_REQUIRE_EXAMPLES=1 but {why}"
    );
    println!("SKIPPED examples/: {why}");
    None
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run_example(python: &str, script: &str, args: &[&str]) -> std::process::Output {
    Command::new(python)
        .arg(root().join("examples").join(script))
        .args(args)
        .env("FAULT_BIN", common::fault_bin())
        .output()
        .expect("run the example")
}

#[test]
fn list_functions_example_prints_the_names() {
    let Some(python) = python() else { return };
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
    let Some(python) = python() else { return };
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
        let mut child = Command::new(common::fault_bin())
            .args(&args)
            .env_remove("FAULT_AGENT_CLIENT")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
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
