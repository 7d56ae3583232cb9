//! Shared test support: the built `fault` binary driven by rmcp's MCP client over stdio.
//!
//! Every spawned server is hermetic: it gets its own [`Sandbox`] (a temporary data directory, HOME and XDG
//! directories, no inherited provider keys or `FAULT_*` settings), so nothing the user has done with
//! `fault` (an index under `~/.local/share/fault`, say) changes what a test sees. Its stderr goes to a file
//! in the sandbox, and the tail of that file is printed when the test fails.
#![allow(dead_code)]

use std::{
    collections::HashMap,
    ops::{Deref, DerefMut},
    path::{Path, PathBuf},
    process::Stdio,
};

use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{CallToolRequestParams, CallToolResult, JsonObject},
    service::{QuitReason, RunningService},
    transport::TokioChildProcess,
};
use serde_json::Value;

/// A `fault agent tool` server with the default client handler.
pub type Client = Server<()>;

/// Path of the `fault` binary built for these tests.
pub fn fault_bin() -> &'static str {
    env!("CARGO_BIN_EXE_fault")
}

/// A port of 127.0.0.1 that was free a moment ago, for a server started with its port given. It is below the
/// kernel's ephemeral range (32768 and up on Linux): a port handed out by binding port 0 can be taken by another
/// test's outgoing connection before the server binds it; these cannot. No port is handed out twice in a run.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let port = rand::random_range(20_000..32_000);
        if !given.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            given.push(port);
            return port;
        }
    }
}

/// Runs the Python script `script` with `args` under `python`, `input` (as JSON) on its stdin when given, for at
/// most 120 s; the one JSON value it printed. A script that fails fails the test with what it said on stderr.
pub async fn run_python_script(
    python: &str,
    script: &std::path::Path,
    args: &[&str],
    input: Option<&serde_json::Value>,
) -> serde_json::Value {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(python)
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    if let Some(input) = input {
        stdin.write_all(input.to_string().as_bytes()).await.unwrap();
    }
    drop(stdin);
    let name = script.file_name().unwrap_or_default().to_string_lossy();
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        child.wait_with_output(),
    )
    .await
    .unwrap_or_else(|_| panic!("{name} did not finish within 120 s"))
    .unwrap();
    assert!(
        output.status.success(),
        "{name} failed ({}): {}",
        input.map(|i| i.to_string()).unwrap_or_default(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Waits until something accepts on 127.0.0.1:`port`, for at most 30 s; `what` names it in the failure.
pub async fn wait_until_listening(port: u16, what: &str) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} did not listen on port {port} within 30 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Lines of a failed test's server stderr worth printing.
const STDERR_TAIL_LINES: usize = 80;

/// A private home for one spawned process: `data/` (its `FAULT_DATA_DIR`), `home/` (its HOME and XDG
/// directories) and `stderr.log`. Removed when dropped; when dropped because the test panicked, the tail of
/// `stderr.log` is printed first, so the harness shows the server's log beside the failure.
pub struct Sandbox {
    dir: tempfile::TempDir,
    label: String,
}

impl Sandbox {
    /// A new sandbox; `label` names the process in the printed log (e.g. "fault agent tool").
    pub fn new(label: &str) -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("fault-test-")
            .tempdir()
            .expect("create a sandbox directory");
        for sub in ["data", "home"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("create a sandbox subdirectory");
        }
        Sandbox {
            dir,
            label: label.to_owned(),
        }
    }

    /// The server's data directory (`FAULT_DATA_DIR`).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The server's HOME.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    pub fn stderr_path(&self) -> PathBuf {
        self.dir.path().join("stderr.log")
    }

    /// The environment a hermetic process gets on top of a cleaned one (see [`Sandbox::isolate`]).
    pub fn env(&self) -> Vec<(&'static str, PathBuf)> {
        let home = self.home();
        vec![
            ("FAULT_DATA_DIR", self.data_dir()),
            ("HOME", home.clone()),
            ("XDG_DATA_HOME", home.join(".local/share")),
            ("XDG_CONFIG_HOME", home.join(".config")),
            ("XDG_CACHE_HOME", home.join(".cache")),
            ("XDG_STATE_HOME", home.join(".local/state")),
        ]
    }

    /// Removes every inherited setting that changes what `fault` does (FAULT_*, provider keys and hosts,
    /// Qdrant), then points its data directory, HOME and XDG directories into the sandbox. Settings added to
    /// `command` afterwards win.
    pub fn isolate(&self, command: &mut std::process::Command) {
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            if is_inherited_setting(&key) {
                command.env_remove(key.as_ref());
            }
        }
        command.envs(self.env());
    }

    /// A handle appending to `stderr.log`, to pass as the child's stderr.
    pub fn stderr_sink(&self) -> Stdio {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.stderr_path())
            .expect("open the sandbox's stderr log")
            .into()
    }

    /// Everything the process wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr_path()).unwrap_or_default()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let log = self.stderr();
        let lines: Vec<&str> = log.lines().collect();
        let tail = &lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..];
        eprintln!(
            "---- stderr of {} (last {} of {} lines) ----\n{}\n---- end of stderr of {} ----",
            self.label,
            tail.len(),
            lines.len(),
            tail.join("\n"),
            self.label
        );
    }
}

/// Whether an inherited environment variable could change what a spawned `fault` does.
fn is_inherited_setting(key: &str) -> bool {
    key.starts_with("FAULT_")
        || key.starts_with("QDRANT_")
        || key.ends_with("_API_KEY")
        || key == "OLLAMA_HOST"
        || key.starts_with("XDG_")
}

/// A `fault agent tool` server spawned with `args` before `agent` (e.g. logging flags), `agent_args` after
/// `tool`, and `env` added to a hermetic environment (see [`Sandbox::isolate`]; `env` wins, so a test may
/// set its own `FAULT_DATA_DIR` or HOME).
#[derive(Default)]
pub struct ServerSpec<'a> {
    pub global_args: &'a [&'a str],
    pub agent_args: &'a [&'a str],
    pub env: HashMap<String, String>,
}

/// A running server under an MCP client with handler `H`, and the sandbox it runs in. Derefs to rmcp's
/// running service (`peer()`, `list_all_tools()`, `service()`, ...).
pub struct Server<H: ClientHandler = ()> {
    service: RunningService<RoleClient, H>,
    sandbox: Sandbox,
}

impl<H: ClientHandler> Deref for Server<H> {
    type Target = RunningService<RoleClient, H>;

    fn deref(&self) -> &Self::Target {
        &self.service
    }
}

impl<H: ClientHandler> Server<H> {
    /// Closes the session and waits for the server to exit.
    pub async fn cancel(self) -> Result<QuitReason, tokio::task::JoinError> {
        let Server { service, sandbox } = self;
        let quit = service.cancel().await;
        drop(sandbox);
        quit
    }

    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.sandbox.stderr()
    }
}

/// Spawns the server with default settings and completes the MCP handshake.
pub async fn spawn() -> Client {
    spawn_with(ServerSpec::default()).await
}

pub async fn spawn_with(spec: ServerSpec<'_>) -> Client {
    spawn_handler(spec, ()).await
}

/// [`spawn_with`] under a client with its own handler (progress recorders, ...).
pub async fn spawn_handler<H: ClientHandler>(spec: ServerSpec<'_>, handler: H) -> Server<H> {
    let (transport, sandbox) = spawn_process(spec);
    handshake(transport, sandbox, handler).await
}

/// The server process before the MCP handshake, for tests that need its pid; finish with [`handshake`].
pub fn spawn_process(spec: ServerSpec<'_>) -> (TokioChildProcess, Sandbox) {
    let sandbox = Sandbox::new("fault agent tool");
    let mut command = std::process::Command::new(fault_bin());
    command
        .args(spec.global_args)
        .arg("agent")
        .arg("tool")
        .args(spec.agent_args);
    sandbox.isolate(&mut command);
    command.envs(&spec.env);
    let (transport, _stderr) = TokioChildProcess::builder(tokio::process::Command::from(command))
        .stderr(sandbox.stderr_sink())
        .spawn()
        .expect("spawn the fault binary");
    (transport, sandbox)
}

/// Completes the MCP handshake with a process from [`spawn_process`].
pub async fn handshake<H: ClientHandler>(
    transport: TokioChildProcess,
    sandbox: Sandbox,
    handler: H,
) -> Server<H> {
    let service = match handler.serve(transport).await {
        Ok(service) => service,
        Err(e) => {
            let log = sandbox.stderr();
            panic!("MCP handshake with fault: {e}\nserver stderr:\n{log}");
        }
    };
    Server { service, sandbox }
}

/// Held by tests that load the machine's two cores for many seconds (the MCP scan's saturation phases,
/// Locust's master and workers, Chromium) and by those that measure milliseconds of scheduling delay or a rate
/// (a book example marked `measures`), so that neither runs beside the other. Taken after
/// [`super::scenario::TIMING`] by a test that holds both.
pub static CPU_HEAVY: super::locks::TestLock = super::locks::TestLock::new("cpu_heavy");

/// The `fault` CLI (any subcommand) as a hermetic tokio command that owns its sandbox: set stdio and spawn
/// it through `Deref`; the sandbox lives as long as this value.
pub struct FaultCommand {
    command: tokio::process::Command,
    sandbox: Sandbox,
}

/// `fault <args>` in a fresh sandbox, stderr to the sandbox's log unless the caller sets it.
pub fn fault_command(args: &[&str]) -> FaultCommand {
    let sandbox = Sandbox::new(&format!("fault {}", args.join(" ")));
    let mut command = std::process::Command::new(fault_bin());
    command.args(args).stderr(sandbox.stderr_sink());
    sandbox.isolate(&mut command);
    FaultCommand {
        command: command.into(),
        sandbox,
    }
}

impl FaultCommand {
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }
}

impl Deref for FaultCommand {
    type Target = tokio::process::Command;

    fn deref(&self) -> &Self::Target {
        &self.command
    }
}

impl DerefMut for FaultCommand {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.command
    }
}

/// A Python that can import `modules`: `$FAULT_EXAMPLES_PYTHON`, else `$FAULT_TEST_PYTHON`, else `python3`.
/// `Err` says what is missing and how to get it, for [`crate::support::optional::skip`].
pub fn python_with(modules: &[&str]) -> Result<String, String> {
    let python = std::env::var("FAULT_EXAMPLES_PYTHON")
        .or_else(|_| std::env::var("FAULT_TEST_PYTHON"))
        .unwrap_or_else(|_| "python3".to_owned());
    let imports = format!("import {}", modules.join(", "));
    let found = std::process::Command::new(&python)
        .args(["-c", &imports])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        Ok(python)
    } else {
        Err(format!(
            "`{python}` cannot `{imports}` (pip install {}, or set FAULT_TEST_PYTHON to a Python that can)",
            modules.join(" ")
        ))
    }
}

/// `python` in `sandbox`'s hermetic environment (so the `fault` it starts is hermetic too), keeping the
/// user's site-packages base so a `pip install --user` still imports.
pub fn python_command(python: &str, sandbox: &Sandbox) -> std::process::Command {
    let user_base = std::process::Command::new(python)
        .args(["-c", "import site; print(site.getuserbase())"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let mut command = std::process::Command::new(python);
    sandbox.isolate(&mut command);
    if let Some(base) = user_base.filter(|b| !b.is_empty()) {
        command.env("PYTHONUSERBASE", base);
    }
    command
}

/// The built `fault` binary started with exactly `args` (e.g. `["mcp-test-server"]`) as a hermetic MCP
/// server over stdio, with the handshake done; its stderr goes to the sandbox's log.
pub async fn spawn_command(args: &[&str]) -> Client {
    spawn_command_with(args, (), false).await.0
}

/// Like [`spawn_command`] with a client `handler` (e.g. one that records notifications), and the child's
/// stderr piped back when `capture_stderr` (to follow what the server logs as it happens), else kept in the
/// sandbox's log.
pub async fn spawn_command_with<H: ClientHandler>(
    args: &[&str],
    handler: H,
    capture_stderr: bool,
) -> (Server<H>, Option<tokio::process::ChildStderr>) {
    let sandbox = Sandbox::new(&format!("fault {}", args.join(" ")));
    let mut command = std::process::Command::new(fault_bin());
    command.args(args);
    sandbox.isolate(&mut command);
    let stderr = if capture_stderr {
        Stdio::piped()
    } else {
        sandbox.stderr_sink()
    };
    let (transport, child_stderr) =
        TokioChildProcess::builder(tokio::process::Command::from(command))
            .stderr(stderr)
            .spawn()
            .expect("spawn the fault binary");
    (handshake(transport, sandbox, handler).await, child_stderr)
}

/// Calls `tool` with a JSON object of arguments; protocol errors come back as `Err`.
pub async fn call<H: ClientHandler>(
    client: &Server<H>,
    tool: &str,
    args: Value,
) -> Result<CallToolResult, rmcp::ServiceError> {
    let arguments: JsonObject = match args {
        Value::Object(map) => map,
        other => panic!("tool arguments must be a JSON object, got {other}"),
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
}

/// The path of a file under `tests/fixtures/code`, as a tool argument.
pub fn code_fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/code")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Calls `tool` and fails the test, with the tool's message, unless it answers without error.
pub async fn call_ok<H: ClientHandler>(
    client: &Server<H>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let result = call(client, tool, args)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    assert!(!is_error(&result), "{}", text(&result));
    result
}

/// The first text content of a result.
pub fn text(result: &CallToolResult) -> &str {
    result
        .content
        .iter()
        .find_map(|block| block.as_text().map(|t| t.text.as_str()))
        .expect("a text content block")
}

pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error.unwrap_or(false)
}
