//! Runs the examples of one page, in order, as a reader would: shell commands in one temporary HOME with the
//! built `fault` first on PATH (variables a command exports reach the page's later commands); a command that
//! serves is started, checked to serve, and kept until the page ends (so a later example may call it), then
//! stopped with SIGINT and expected to exit 0. Tool calls go to one `fault agent tool` per page (the
//! embeddings stand-in behind it). Fixed ports in a page become free ones, the same throughout the page, and
//! `/tmp/` and `/home/me/` become the page's own directories, so pages run side by side with other tests.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    path::{Path, PathBuf},
    process::{ExitStatus, Stdio},
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    ServiceExt,
    model::CallToolResult,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::extract::{self, Command, Example, Part, Turn, What};
use super::shape;
use crate::common;
use crate::index_support::{self, EmbedConfig, EmbedServer};

/// Longest a command that ends, a script or a tool call may take.
const RUN_LIMIT: Duration = Duration::from_secs(120);
/// Longest a server may take to be ready, and to stop.
const READY_LIMIT: Duration = Duration::from_secs(30);
const STOP_LIMIT: Duration = Duration::from_secs(10);

/// What running a page's examples found.
#[derive(Default)]
pub struct Outcome {
    pub failures: Vec<String>,
    /// Examples not run here: where each is and why.
    pub not_run: Vec<String>,
    /// Optional components that were missing (each a skip, out loud).
    pub missing: Vec<String>,
    /// How many examples of each kind ran.
    pub counts: BTreeMap<&'static str, usize>,
}

impl Outcome {
    fn count(&mut self, kind: &'static str) {
        *self.counts.entry(kind).or_default() += 1;
    }
}

/// Runs every example of `text`, the page called `page`.
pub async fn run_page(page: &str, text: &str) -> Outcome {
    let examples = match extract::examples(page, text) {
        Ok(examples) => examples,
        Err(errors) => {
            return Outcome {
                failures: errors,
                ..Outcome::default()
            };
        }
    };
    let mut runner = Runner::new(page, &examples);
    for example in &examples {
        runner.example(example).await;
    }
    runner.finish().await
}

/// A server an example started, kept until the page ends.
struct Served {
    /// The page's line that started it, and the command.
    line: usize,
    at: String,
    serves: Serves,
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    stdout: Lines,
    stderr: Lines,
}

/// The lines a process wrote so far on one of its streams.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

impl Lines {
    fn follow(stream: impl tokio::io::AsyncRead + Unpin + Send + 'static) -> Lines {
        let lines = Lines::default();
        let sink = lines.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                sink.0.lock().expect("lines").push(line);
            }
        });
        lines
    }

    fn snapshot(&self) -> Vec<String> {
        self.0.lock().expect("lines").clone()
    }

    /// The first line `pick` finds something in, waiting up to `limit` (or until `child` exits).
    async fn wait<T>(
        &self,
        child: &mut tokio::process::Child,
        limit: Duration,
        pick: impl Fn(&str) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(found) = self.snapshot().iter().find_map(|line| pick(line)) {
                return Ok(found);
            }
            if let Ok(Some(status)) = child.try_wait() {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if let Some(found) = self.snapshot().iter().find_map(|line| pick(line)) {
                    return Ok(found);
                }
                return Err(format!("it exited ({status})"));
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!("nothing came within {limit:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// What a command that serves is, read from its words.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Serves {
    /// An MCP server on stdin/stdout.
    Stdio,
    /// An MCP server over Streamable HTTP, at the URL it logs.
    Http,
    /// `fault run` without `--duration`.
    TcpProxy,
    /// Another program, marked `serves PORT`: it accepts connections on that port.
    Port(u16),
}

struct Runner {
    page: String,
    sandbox: common::Sandbox,
    root: PathBuf,
    work: PathBuf,
    tmp: PathBuf,
    bin: PathBuf,
    env_file: PathBuf,
    /// Fixed ports of the page and the free ports they stand for.
    ports: HashMap<String, String>,
    served: Vec<Served>,
    agent: Option<(common::Client, EmbedServer)>,
    answer: Option<CallToolResult>,
    outcome: Outcome,
}

impl Runner {
    fn new(page: &str, examples: &[Example]) -> Runner {
        let sandbox = common::Sandbox::new(&format!("the examples of {page}"));
        let root = sandbox.home().parent().expect("a sandbox root").to_owned();
        let work = root.join("work");
        let tmp = root.join("tmp");
        let bin = root.join("bin");
        for dir in [&work, &tmp, &bin] {
            std::fs::create_dir_all(dir).expect("a page directory");
        }
        // `fault` on PATH is this build; `examples/` is the repository's, as in a checkout.
        std::os::unix::fs::symlink(common::fault_bin(), bin.join("fault")).expect("fault on PATH");
        std::os::unix::fs::symlink(repo().join("examples"), work.join("examples"))
            .expect("examples/ in the working directory");
        let env_file = root.join("env.sh");
        std::fs::write(&env_file, "").expect("the page's environment");
        let mut fixed = BTreeSet::new();
        for example in examples {
            fixed.extend(ports_in(&example.text));
            fixed.extend(example.serves);
        }
        // Hold every listener until all are picked, so no two ports are the same.
        let listeners: Vec<std::net::TcpListener> = fixed
            .iter()
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"))
            .collect();
        let ports = fixed
            .iter()
            .zip(&listeners)
            .map(|(port, listener)| {
                let free = listener.local_addr().expect("its address").port();
                (port.to_string(), free.to_string())
            })
            .collect();
        Runner {
            page: page.to_owned(),
            sandbox,
            root,
            work,
            tmp,
            bin,
            env_file,
            ports,
            served: Vec::new(),
            agent: None,
            answer: None,
            outcome: Outcome::default(),
        }
    }

    fn at(&self, line: usize) -> String {
        format!("{}:{line}", self.page)
    }

    fn fail(&mut self, line: usize, what: String) {
        let at = self.at(line);
        self.outcome.failures.push(format!("{at}: {what}"));
    }

    fn not_run(&mut self, line: usize, what: &str, why: &str) {
        let at = self.at(line);
        self.outcome.not_run.push(format!("{at}: {what}: {why}"));
    }

    /// `text` as it runs here: the page's free ports for its fixed ones, its directories for `/tmp/` and
    /// `/home/me/`.
    fn localize(&self, text: &str) -> String {
        let text = replace_numbers(text, &self.ports);
        text.replace("/tmp/", &format!("{}/", self.tmp.display()))
            .replace("/home/me/", &format!("{}/", self.sandbox.home().display()))
    }

    /// A path of the page as it is here: localized, and a relative one under the working directory.
    fn path(&self, path: &str) -> PathBuf {
        self.work.join(self.localize(path))
    }

    /// A hermetic command: the sandbox's HOME and data directory, no inherited `FAULT_*` or keys, `fault`
    /// first on PATH, the page's working and temporary directories.
    fn command(&self, program: &str) -> std::process::Command {
        let mut command = std::process::Command::new(program);
        self.sandbox.isolate(&mut command);
        let path = std::env::var("PATH").unwrap_or_default();
        command
            .env("PATH", format!("{}:{path}", self.bin.display()))
            .env("TMPDIR", &self.tmp)
            .current_dir(&self.work);
        command
    }

    /// `script` in bash, after the variables earlier commands of the page exported.
    fn bash(&self, script: &str) -> tokio::process::Command {
        let mut command = self.command("bash");
        command.arg("-c").arg(format!(
            "source {env}\n{script}",
            env = shlex::try_quote(&self.env_file.to_string_lossy()).expect("a quotable path")
        ));
        command.into()
    }

    async fn example(&mut self, example: &Example) {
        for (path, from) in &example.given {
            let to = self.path(path);
            if let Err(e) = copy(&repo().join(from), &to) {
                return self.fail(example.line, format!("given {path} from {from}: {e}"));
            }
        }
        if let Some(path) = &example.file {
            let to = self.path(path);
            let written = to
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&to, self.localize(&example.text)));
            if let Err(e) = written {
                return self.fail(example.line, format!("write {}: {e}", to.display()));
            }
            self.outcome.count("files written");
        }
        match &example.what {
            What::Shell(commands) => {
                for command in commands {
                    self.shell(example, command).await;
                }
            }
            What::Call { tool, error } => self.call(example, tool, *error).await,
            What::Answer { part, exact } => self.answer(example, *part, *exact),
            What::Config => self.config(example).await,
            What::Plan => self.plan(example).await,
            What::Data => self.data(example),
            What::Python { run } => self.python(example, *run).await,
            What::Shown => self.outcome.count("blocks shown"),
            What::Skipped(why) => {
                let what = format!("a `{}` block", example.lang);
                self.not_run(example.line, &what, why);
            }
        }
    }

    async fn shell(&mut self, example: &Example, command: &Command) {
        let line = example.line + command.line;
        let mut text = self.localize(&command.text);
        // The set-up command installs the build these tests run; the test command is the one running them.
        if let Some(rest) = text.strip_prefix("cargo install --locked --path .") {
            self.not_run(
                line,
                "`cargo install --locked --path .`",
                "the `fault` on PATH here is that build",
            );
            text = rest.trim_start().trim_start_matches("&&").trim().to_owned();
            if text.is_empty() {
                return;
            }
        }
        if text.starts_with("cargo test") {
            return self.not_run(line, &format!("`{text}`"), "it runs these tests");
        }
        let words = words(&text);
        if let Some((program, why)) = &example.needs
            && words.first() == Some(program)
            && !on_path(program)
        {
            let why = why.clone();
            self.not_run(line, &format!("`{}`", first_line(&text)), &why);
            // The server command it registers is still checked.
            if let Some(at) = words.iter().position(|w| w == "--") {
                let server = shlex::try_join(words[at + 1..].iter().map(String::as_str))
                    .expect("quotable words");
                if let Some(serves) = serves(&words[at + 1..]) {
                    self.serve(line, &server, serves, command, false).await;
                }
            }
            return;
        }
        // A command expected to fail ends, whatever it would serve.
        let serves = match example.status {
            0 => example.serves.map(Serves::Port).or_else(|| serves(&words)),
            _ => None,
        };
        match serves {
            Some(serves) => self.serve(line, &text, serves, command, true).await,
            None => self.run_to_end(line, &text, command, example.status).await,
        }
    }

    async fn run_to_end(&mut self, line: usize, text: &str, command: &Command, expected: i32) {
        let env = shlex::try_quote(&self.env_file.to_string_lossy())
            .expect("a quotable path")
            .into_owned();
        let mut process = self.bash(&format!(
            "{text}\nstatus=$?\nexport -p > {env}\nexit $status"
        ));
        process
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let output = match tokio::time::timeout(RUN_LIMIT, process.output()).await {
            Ok(Ok(output)) => output,
            Ok(Err(e)) => return self.fail(line, format!("`{text}` did not start: {e}")),
            Err(_) => return self.fail(line, format!("`{text}` ran over {RUN_LIMIT:?}")),
        };
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if output.status.code() != Some(expected) {
            return self.fail(
                line,
                format!(
                    "`{}` exited with {} (the page expects {expected}):\n{}",
                    first_line(text),
                    describe(output.status),
                    tail(&format!("{stdout}{stderr}"))
                ),
            );
        }
        let printed: Vec<String> = stdout
            .lines()
            .chain(stderr.lines())
            .map(str::to_owned)
            .collect();
        if let Some(missing) = unmatched(&command.output, &printed) {
            return self.fail(
                line,
                format!(
                    "`{}` did not print what the page shows: no line like `{missing}` in:\n{}",
                    first_line(text),
                    tail(&printed.join("\n"))
                ),
            );
        }
        self.outcome.count("commands run");
    }

    /// Starts a command that serves, checks that it serves (its output as the page shows it, an MCP
    /// handshake, its readiness line) and runs its transcript; kept until the page ends when `keep`.
    async fn serve(
        &mut self,
        line: usize,
        text: &str,
        serves: Serves,
        command: &Command,
        keep: bool,
    ) {
        let mut process = self.bash(&format!("exec {text}"));
        process
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = match process.spawn() {
            Ok(child) => child,
            Err(e) => return self.fail(line, format!("`{text}` did not start: {e}")),
        };
        let stdout = Lines::follow(child.stdout.take().expect("stdout"));
        let stderr = Lines::follow(child.stderr.take().expect("stderr"));
        let mut served = Served {
            line,
            at: format!("`{}`", first_line(text)),
            serves,
            stdin: child.stdin.take(),
            child,
            stdout,
            stderr,
        };
        let checked = self.check_serving(&mut served, text, serves, command).await;
        if let Err(why) = checked {
            let _ = served.child.start_kill();
            let printed = [served.stdout.snapshot(), served.stderr.snapshot()].concat();
            return self.fail(
                line,
                format!(
                    "{} did not serve: {why}\n{}",
                    served.at,
                    tail(&printed.join("\n"))
                ),
            );
        }
        self.outcome.count("servers started and checked");
        self.served.push(served);
        if !keep {
            let served = self.served.pop().expect("just pushed");
            self.stop(served).await;
        }
    }

    async fn check_serving(
        &self,
        served: &mut Served,
        text: &str,
        serves: Serves,
        command: &Command,
    ) -> Result<(), String> {
        for shown in &command.output {
            let (out, err) = (served.stdout.clone(), served.stderr.clone());
            let pick = |l: &str| shape::line_matches(shown, l).then_some(());
            let found = tokio::select! {
                found = out.wait(&mut served.child, READY_LIMIT, pick) => found,
                found = err.wait_quiet(READY_LIMIT, pick) => found,
            };
            found.map_err(|why| format!("no line like `{shown}` ({why})"))?;
        }
        match serves {
            Serves::Stdio => self.stdio_session(served, &command.transcript).await,
            Serves::Http => {
                let url = served
                    .stderr
                    .clone()
                    .wait(&mut served.child, READY_LIMIT, served_url)
                    .await
                    .map_err(|why| format!("it logged no URL ({why})"))?;
                let words = words(text);
                let token = match words.iter().position(|w| w == "--auth-token-env") {
                    Some(at) => self.env_value(&words[at + 1]).await,
                    None => None,
                };
                http_handshake(&url, token, &[]).await
            }
            Serves::Port(port) => {
                let port = self.localize(&port.to_string());
                let deadline = tokio::time::Instant::now() + READY_LIMIT;
                while tokio::net::TcpStream::connect(format!("127.0.0.1:{port}"))
                    .await
                    .is_err()
                {
                    if let Ok(Some(status)) = served.child.try_wait() {
                        return Err(format!("it exited ({status})"));
                    }
                    if tokio::time::Instant::now() > deadline {
                        return Err(format!(
                            "nothing accepted on port {port} within {READY_LIMIT:?}"
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Ok(())
            }
            Serves::TcpProxy => served
                .stderr
                .clone()
                .wait(&mut served.child, READY_LIMIT, |l| {
                    l.starts_with("fault: proxying").then_some(())
                })
                .await
                .map_err(|why| format!("no `fault: proxying` line ({why})")),
        }
    }

    /// The MCP handshake on stdin/stdout, then the page's transcript: `→` lines sent, each `←` line the
    /// shape of the answer with its id, each `(stderr)` line logged.
    async fn stdio_session(&self, served: &mut Served, transcript: &[Turn]) -> Result<(), String> {
        let stdin = served.stdin.as_mut().ok_or("no stdin")?;
        let initialize = json!({"jsonrpc": "2.0", "id": "docs-initialize", "method": "initialize",
            "params": {"protocolVersion": fault::mcp_wire::PROTOCOL_VERSION, "capabilities": {},
                       "clientInfo": {"name": "docs-examples", "version": "1"}}});
        send(stdin, &initialize).await?;
        let out = served.stdout.clone();
        let answer = out
            .wait(&mut served.child, READY_LIMIT, |l| {
                answer_to(l, &json!("docs-initialize"))
            })
            .await
            .map_err(|why| format!("no answer to initialize ({why})"))?;
        if answer.get("result").is_none() {
            return Err(format!("initialize was refused: {answer}"));
        }
        let stdin = served.stdin.as_mut().ok_or("no stdin")?;
        send(
            stdin,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await?;
        for turn in transcript {
            match turn {
                Turn::Send(line) => {
                    let message: Value = serde_json::from_str(&self.localize(line))
                        .map_err(|e| format!("`→ {line}` is not JSON: {e}"))?;
                    let stdin = served.stdin.as_mut().ok_or("no stdin")?;
                    send(stdin, &message).await?;
                }
                Turn::Expect(line) => {
                    let shown: Value = serde_json::from_str(&self.localize(line))
                        .map_err(|e| format!("`← {line}` is not JSON: {e}"))?;
                    let id = shown["id"].clone();
                    let answer = out
                        .wait(&mut served.child, READY_LIMIT, |l| answer_to(l, &id))
                        .await
                        .map_err(|why| format!("no answer with id {id} ({why})"))?;
                    let differences = shape::value_differences(&shown, &answer);
                    if !differences.is_empty() {
                        return Err(format!(
                            "the answer with id {id} is not what the page shows: {}\n  got {answer}",
                            differences.join("; ")
                        ));
                    }
                }
                Turn::Stderr(shown) => {
                    served
                        .stderr
                        .clone()
                        .wait(&mut served.child, READY_LIMIT, |l| {
                            shape::line_matches(shown, l).then_some(())
                        })
                        .await
                        .map_err(|why| format!("it logged no line like `{shown}` ({why})"))?;
                }
            }
        }
        Ok(())
    }

    /// Stops a server as its user would, and expects it to exit 0: an MCP server on stdio when its client
    /// closes its stdin, any other with Ctrl-C (SIGINT).
    async fn stop(&mut self, mut served: Served) {
        let line = served.line;
        drop(served.stdin.take());
        if served.serves != Serves::Stdio
            && let Some(pid) = served
                .child
                .id()
                .and_then(|pid| rustix::process::Pid::from_raw(pid as i32))
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        }
        match tokio::time::timeout(STOP_LIMIT, served.child.wait()).await {
            Ok(Ok(status)) if status.success() => {}
            Ok(Ok(status)) => {
                let printed = [served.stdout.snapshot(), served.stderr.snapshot()].concat();
                self.fail(
                    line,
                    format!(
                        "{} exited with {} when stopped:\n{}",
                        served.at,
                        describe(status),
                        tail(&printed.join("\n"))
                    ),
                );
            }
            Ok(Err(e)) => self.fail(line, format!("{}: {e}", served.at)),
            Err(_) => {
                let _ = served.child.start_kill();
                self.fail(
                    line,
                    format!("{} did not stop within {STOP_LIMIT:?}", served.at),
                );
            }
        }
    }

    /// The value of `name` in the page's environment.
    async fn env_value(&self, name: &str) -> Option<String> {
        let output = self
            .bash(&format!("printf %s \"${{{name}}}\""))
            .output()
            .await
            .ok()?;
        Some(String::from_utf8_lossy(&output.stdout).into_owned()).filter(|v| !v.is_empty())
    }

    async fn agent(&mut self) -> &common::Client {
        if self.agent.is_none() {
            let embed = EmbedServer::start(EmbedConfig {
                local_only: true,
                ..Default::default()
            })
            .await;
            let args = index_support::agent_args(&embed.base_url, "embedded");
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut env = index_support::server_env(&self.sandbox.data_dir());
            // A server a call names by `fault` (the chaos scenario's `command`) is this build, as in a shell.
            let path = std::env::var("PATH").unwrap_or_default();
            env.insert("PATH".to_owned(), format!("{}:{path}", self.bin.display()));
            let client = common::spawn_with(common::ServerSpec {
                agent_args: &args,
                env,
                ..Default::default()
            })
            .await;
            self.agent = Some((client, embed));
        }
        &self.agent.as_ref().expect("just started").0
    }

    async fn call(&mut self, example: &Example, tool: &str, error: bool) {
        self.answer = None;
        let arguments: Value = match serde_json::from_str(&self.localize(&example.text)) {
            Ok(arguments) => arguments,
            Err(e) => return self.fail(example.line, format!("not JSON: {e}")),
        };
        if !arguments.is_object() {
            return self.fail(example.line, "a tool's arguments are an object".to_owned());
        }
        let agent = self.agent().await;
        let result =
            match tokio::time::timeout(RUN_LIMIT, common::call(agent, tool, arguments)).await {
                Ok(Ok(result)) => result,
                Ok(Err(e)) => return self.fail(example.line, format!("{tool}: {e}")),
                Err(_) => return self.fail(example.line, format!("{tool} ran over {RUN_LIMIT:?}")),
            };
        let text = result
            .content
            .iter()
            .find_map(|block| block.as_text().map(|t| t.text.clone()))
            .unwrap_or_default();
        if common::is_error(&result) != error {
            let expected = if error { "an error" } else { "no error" };
            return self.fail(
                example.line,
                format!("{tool} answered {text:?}; the page expects {expected}"),
            );
        }
        let declares_output = agent
            .list_all_tools()
            .await
            .ok()
            .and_then(|tools| tools.into_iter().find(|t| t.name == tool))
            .is_some_and(|t| t.output_schema.is_some());
        if !error && declares_output && result.structured_content.is_none() {
            return self.fail(
                example.line,
                format!("{tool} answered no structuredContent"),
            );
        }
        self.outcome.count("tool calls");
        self.answer = Some(result);
    }

    fn answer(&mut self, example: &Example, part: Part, exact: bool) {
        let Some(result) = &self.answer else {
            return self.fail(
                example.line,
                "an answer block follows no answered call".to_owned(),
            );
        };
        let actual = match part {
            Part::Structured => result.structured_content.clone().unwrap_or(Value::Null),
            Part::Text => {
                let text = result
                    .content
                    .iter()
                    .find_map(|block| block.as_text().map(|t| t.text.clone()))
                    .unwrap_or_default();
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            }
        };
        let shown: Value = match serde_json::from_str(&self.localize(&example.text)) {
            Ok(shown) => shown,
            Err(e) => return self.fail(example.line, format!("not JSON: {e}")),
        };
        let differences = if exact {
            shape::value_differences(&shown, &actual)
        } else {
            shape::differences(&shown, &actual)
        };
        if differences.is_empty() {
            self.outcome.count("answers checked");
        } else {
            self.fail(
                example.line,
                format!(
                    "the answer is not what the page shows: {}\n  got {actual}",
                    differences.join("; ")
                ),
            );
        }
    }

    /// Each server of an MCP client configuration answers `initialize`: a command (the `fault` in it is
    /// this build) started as the client would, or a URL reached with the configured headers.
    async fn config(&mut self, example: &Example) {
        let config: Value = match serde_json::from_str(&self.localize(&example.text)) {
            Ok(config) => config,
            Err(e) => return self.fail(example.line, format!("not JSON: {e}")),
        };
        let Some(servers) = config["mcpServers"].as_object() else {
            return self.fail(example.line, "no `mcpServers` object".to_owned());
        };
        for (name, server) in servers.clone() {
            let checked = if let Some(url) = server["url"].as_str() {
                let mut token = None;
                let mut headers = Vec::new();
                for (header, value) in server["headers"].as_object().into_iter().flatten() {
                    let value = self.expand(value.as_str().unwrap_or_default()).await;
                    match value.strip_prefix("Bearer ") {
                        Some(bearer) if header.eq_ignore_ascii_case("authorization") => {
                            token = Some(bearer.to_owned())
                        }
                        _ => headers.push((header.clone(), value)),
                    }
                }
                http_handshake(url, token, &headers).await
            } else {
                self.config_command(&server).await
            };
            match checked {
                Ok(()) => self.outcome.count("client configurations started"),
                Err(why) => self.fail(example.line, format!("server `{name}`: {why}")),
            }
        }
    }

    async fn config_command(&self, server: &Value) -> Result<(), String> {
        let program = server["command"].as_str().ok_or("no `command`")?;
        let program = if Path::new(program).file_name().is_some_and(|n| n == "fault") {
            common::fault_bin().to_owned()
        } else {
            program.to_owned()
        };
        let mut command = self.command(&program);
        for arg in server["args"].as_array().into_iter().flatten() {
            command.arg(arg.as_str().ok_or("an argument that is not a string")?);
        }
        for (key, value) in server["env"].as_object().into_iter().flatten() {
            command.env(key, self.expand(value.as_str().unwrap_or_default()).await);
        }
        let mut command = tokio::process::Command::from(command);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| format!("`{program}` did not start: {e}"))?;
        let mut served = Served {
            line: 0,
            at: format!("`{program}`"),
            serves: Serves::Stdio,
            stdin: child.stdin.take(),
            stdout: Lines::follow(child.stdout.take().expect("stdout")),
            stderr: Lines::follow(child.stderr.take().expect("stderr")),
            child,
        };
        let checked = self.stdio_session(&mut served, &[]).await;
        drop(served.stdin.take());
        let ended = tokio::time::timeout(STOP_LIMIT, served.child.wait()).await;
        checked.map_err(|why| format!("{why}\n{}", tail(&served.stderr.snapshot().join("\n"))))?;
        match ended {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(status)) => Err(format!(
                "exited with {} when its stdin closed",
                describe(status)
            )),
            _ => Err("did not exit when its stdin closed".to_owned()),
        }
    }

    /// `${env:NAME}` (Cursor's way of naming a variable) replaced by the page's value of NAME.
    async fn expand(&self, value: &str) -> String {
        let mut out = value.to_owned();
        while let Some(start) = out.find("${env:") {
            let Some(len) = out[start..].find('}') else {
                break;
            };
            let name = out[start + "${env:".len()..start + len].to_owned();
            let found = self.env_value(&name).await.unwrap_or_default();
            out.replace_range(start..=start + len, &found);
        }
        out
    }

    async fn plan(&mut self, example: &Example) {
        let path = self
            .root
            .join(format!("plan-{}.{}", example.line, example.lang));
        if let Err(e) = std::fs::write(&path, self.localize(&example.text)) {
            return self.fail(example.line, format!("write the plan: {e}"));
        }
        let mut command = tokio::process::Command::from(self.command(common::fault_bin()));
        command
            .args(["mcp-proxy", "--print-plan", "--plan"])
            .arg(&path);
        match command.output().await {
            Ok(output) if output.status.success() => self.outcome.count("plans loaded"),
            Ok(output) => self.fail(
                example.line,
                format!(
                    "`fault mcp-proxy --print-plan` refused the plan:\n{}",
                    tail(&String::from_utf8_lossy(&output.stderr))
                ),
            ),
            Err(e) => self.fail(example.line, format!("fault mcp-proxy: {e}")),
        }
    }

    fn data(&mut self, example: &Example) {
        let text = &example.text;
        let parsed = match example.lang.as_str() {
            "yaml" => serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
                .map(drop)
                .map_err(|e| e.to_string()),
            _ => serde_json::from_str::<Value>(text)
                .map(drop)
                .or_else(|whole| {
                    // JSON lines: each line a value.
                    text.lines()
                        .filter(|l| !l.trim().is_empty())
                        .try_for_each(|l| serde_json::from_str::<Value>(l).map(drop))
                        .map_err(|_| whole.to_string())
                }),
        };
        match parsed {
            Ok(()) => self.outcome.count("data blocks parsed"),
            Err(e) => self.fail(example.line, format!("does not parse: {e}")),
        }
    }

    async fn python(&mut self, example: &Example, run: bool) {
        // Any Python compiles a snippet (`ast` is in every one); a script needs FastMCP.
        let modules: &[&str] = if run { &["fastmcp"] } else { &["ast"] };
        let python = match common::python_with(modules) {
            Ok(python) => python,
            Err(why) => {
                let at = self.at(example.line);
                self.outcome.missing.push(format!("{at}: {why}"));
                return;
            }
        };
        let script = match &example.file {
            Some(path) => self.path(path),
            None => {
                let path = self.work.join(format!("example-{}.py", example.line));
                if let Err(e) = std::fs::write(&path, self.localize(&example.text)) {
                    return self.fail(example.line, format!("write the script: {e}"));
                }
                path
            }
        };
        let script = script.display().to_string();
        if !run {
            // Snippets are written as in an async REPL (a top-level `async with`), so they are compiled so.
            let check = "import ast, sys; path = sys.argv[1]; \
                         compile(open(path).read(), path, 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)";
            let mut command = tokio::process::Command::from(self.command(&python));
            command.args(["-c", check, &script]);
            return match command.output().await {
                Ok(output) if output.status.success() => self.outcome.count("python compiled"),
                Ok(output) => self.fail(
                    example.line,
                    format!(
                        "does not compile:\n{}",
                        tail(&String::from_utf8_lossy(&output.stderr))
                    ),
                ),
                Err(e) => self.fail(example.line, format!("{python}: {e}")),
            };
        }
        let quoted = shlex::try_join([python.as_str(), script.as_str()]).expect("quotable");
        let mut process = self.bash(&format!("exec {quoted}"));
        process.stdin(Stdio::null()).kill_on_drop(true);
        match tokio::time::timeout(RUN_LIMIT, process.output()).await {
            Ok(Ok(output)) if output.status.success() => self.outcome.count("python scripts run"),
            Ok(Ok(output)) => self.fail(
                example.line,
                format!(
                    "the script exited with {}:\n{}",
                    describe(output.status),
                    tail(&String::from_utf8_lossy(&output.stderr))
                ),
            ),
            Ok(Err(e)) => self.fail(example.line, format!("{python}: {e}")),
            Err(_) => self.fail(example.line, format!("the script ran over {RUN_LIMIT:?}")),
        }
    }

    /// Stops what the page started, and says what it found.
    async fn finish(mut self) -> Outcome {
        while let Some(served) = self.served.pop() {
            self.stop(served).await;
        }
        if let Some((client, _embed)) = self.agent.take() {
            let _ = client.cancel().await;
        }
        let _ = std::fs::remove_dir_all(&self.root);
        self.outcome
    }
}

impl Lines {
    /// [`Lines::wait`] for a stream whose process another wait watches.
    async fn wait_quiet<T>(
        &self,
        limit: Duration,
        pick: impl Fn(&str) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(found) = self.snapshot().iter().find_map(|line| pick(line)) {
                return Ok(found);
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!("nothing came within {limit:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// An MCP handshake over Streamable HTTP with rmcp's client, then `tools/list`.
async fn http_handshake(
    url: &str,
    token: Option<String>,
    headers: &[(String, String)],
) -> Result<(), String> {
    // reqwest is built without a default TLS provider; it wants one even for plain http.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let name = http::HeaderName::try_from(name.as_str()).map_err(|e| format!("{name}: {e}"))?;
        let value =
            http::HeaderValue::try_from(value.as_str()).map_err(|e| format!("{value}: {e}"))?;
        custom.insert(name, value);
    }
    let transport = StreamableHttpClientTransport::from_config(config.custom_headers(custom));
    let client = tokio::time::timeout(READY_LIMIT, ().serve(transport))
        .await
        .map_err(|_| format!("no MCP handshake at {url} within {READY_LIMIT:?}"))?
        .map_err(|e| format!("MCP handshake at {url}: {e}"))?;
    let listed = client.list_all_tools().await;
    let _ = client.cancel().await;
    match listed {
        Ok(tools) if !tools.is_empty() => Ok(()),
        Ok(_) => Err(format!("{url} lists no tools")),
        Err(e) => Err(format!("tools/list at {url}: {e}")),
    }
}

async fn send(stdin: &mut tokio::process::ChildStdin, message: &Value) -> Result<(), String> {
    let line = format!("{message}\n");
    stdin
        .write_all(line.as_bytes())
        .await
        .map_err(|e| format!("write to its stdin: {e}"))
}

/// The JSON-RPC answer to `id` on `line`, if it is one.
fn answer_to(line: &str, id: &Value) -> Option<Value> {
    let message: Value = serde_json::from_str(line).ok()?;
    (message.get("id") == Some(id) && message.get("method").is_none()).then_some(message)
}

/// The URL a server logs when it serves over HTTP.
fn served_url(line: &str) -> Option<String> {
    let after = ["serving MCP over Streamable HTTP at ", "listening on "]
        .iter()
        .find_map(|marker| line.split_once(marker).map(|(_, after)| after))?;
    after
        .split_whitespace()
        .next()
        .filter(|url| url.starts_with("http"))
        .map(str::to_owned)
}

/// What a command serves, if it serves: `fault agent … tool`, `fault mcp-test-server`, `fault mcp-proxy`
/// (but `--print-plan`) and `fault run` without `--duration`.
fn serves(words: &[String]) -> Option<Serves> {
    let mut rest = words.iter().map(String::as_str);
    if rest.next() != Some("fault") {
        return None;
    }
    let rest: Vec<&str> = rest.collect();
    let has = |flag: &str| {
        rest.iter()
            .any(|w| *w == flag || w.starts_with(&format!("{flag}=")))
    };
    let http =
        rest.windows(2).any(|w| w == ["--transport", "http"]) || rest.contains(&"--transport=http");
    // The subcommand: the first word that is neither a global option nor its value.
    let mut words = rest.iter();
    let sub = loop {
        match words.next() {
            Some(&("--log-file" | "--log-level")) => {
                words.next();
            }
            Some(word) if word.starts_with("--") => {}
            other => break other.copied(),
        }
    };
    match sub? {
        "agent" if rest.contains(&"tool") => Some(if http { Serves::Http } else { Serves::Stdio }),
        "mcp-test-server" => Some(if http { Serves::Http } else { Serves::Stdio }),
        "run" if !has("--duration") => Some(Serves::TcpProxy),
        "mcp-proxy" if has("--print-plan") => None,
        "mcp-proxy" if has("--listen") => Some(Serves::Http),
        "mcp-proxy" => Some(Serves::Stdio),
        _ => None,
    }
}

/// A command's words as the shell splits them (its comment left out).
fn words(text: &str) -> Vec<String> {
    shlex::split(&text.replace("\\\n", " ")).unwrap_or_default()
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// The fixed ports of a text: after `127.0.0.1:`, `localhost:`, `0.0.0.0:` or `--listen `, and before
/// the `=` of a proxy mapping (`34000=…`).
fn ports_in(text: &str) -> BTreeSet<u16> {
    let mut ports = BTreeSet::new();
    let mut take = |digits: &str| {
        if let Ok(port) = digits.parse::<u16>()
            && port >= 1024
        {
            ports.insert(port);
        }
    };
    for marker in ["127.0.0.1:", "localhost:", "0.0.0.0:", "--listen "] {
        for (at, _) in text.match_indices(marker) {
            let after = &text[at + marker.len()..];
            let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
            take(&digits);
        }
    }
    for word in text.split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '[') {
        if let Some((digits, _)) = word.split_once('=')
            && !digits.is_empty()
            && digits.chars().all(|c| c.is_ascii_digit())
        {
            take(digits);
        }
    }
    ports
}

/// `text` with every whole number that is a key of `map` replaced by its value.
fn replace_numbers(text: &str, map: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        out.push_str(map.get(digits.as_str()).unwrap_or(digits));
        digits.clear();
    };
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, &mut out);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
}

/// The first shown line that no printed line matches.
fn unmatched<'a>(shown: &'a [String], printed: &[String]) -> Option<&'a str> {
    shown
        .iter()
        .find(|s| !printed.iter().any(|p| shape::line_matches(s, p)))
        .map(String::as_str)
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy(from: &Path, to: &Path) -> std::io::Result<()> {
    if from.is_dir() {
        std::fs::create_dir_all(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(from, to).map(drop)
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .next()
        .unwrap_or_default()
        .trim_end_matches('\\')
        .trim()
}

fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("status {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        _ => status.to_string(),
    }
}

/// The last lines of a process's output, indented.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..]
        .iter()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
