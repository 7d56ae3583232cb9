//! Runs the examples of one page, in order, as a reader would: shell commands in one temporary HOME with the
//! built `fault` first on PATH (variables a command exports reach the page's later commands); a command that
//! serves is started, checked to serve, and kept until the page ends (so a later example may call it), then
//! stopped as its user would and expected to exit 0. Tool calls go to one `fault agent tool` per page (the
//! embeddings stand-in behind it). Fixed ports in a page become free ones, the same throughout the page, and
//! `/tmp/` and `/home/me/` become the page's own directories, so pages run side by side with other tests.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use rmcp::model::CallToolResult;
use serde_json::Value;

use super::extract::{self, Command, Example, Turn, What};
use super::served::{self, Served, Serves, describe, tail};
use super::shape;
use crate::support::common;
use crate::support::indexing::EmbedServer;

mod blocks;

/// Longest a command that ends, a script or a tool call may take.
const RUN_LIMIT: Duration = Duration::from_secs(120);

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
        let what = self.as_on_the_page(&what);
        self.outcome.failures.push(format!("{at}: {what}"));
    }

    fn not_run(&mut self, line: usize, what: &str, why: &str) {
        let at = self.at(line);
        let what = self.as_on_the_page(what);
        self.outcome.not_run.push(format!("{at}: {what}: {why}"));
    }

    /// `text` with the page's own ports and paths again, as its reader knows them (see [`Runner::localize`]).
    fn as_on_the_page(&self, text: &str) -> String {
        let text = text
            .replace(&format!("{}/", self.tmp.display()), "/tmp/")
            .replace(&format!("{}/", self.sandbox.home().display()), "/home/me/");
        let back: HashMap<String, String> = self
            .ports
            .iter()
            .map(|(fixed, free)| (free.clone(), fixed.clone()))
            .collect();
        replace_numbers(&text, &back)
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
                if let Some(serves) = served::serves(&words[at + 1..]) {
                    self.serve(line, &server, serves, command, false).await;
                }
            }
            return;
        }
        // A command expected to fail ends, whatever it would serve.
        let serves = match example.status {
            0 => example
                .serves
                .map(Serves::Port)
                .or_else(|| served::serves(&words)),
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

    /// Starts a command that serves, checks that it serves (its output as the page shows it, then as its kind
    /// is checked) and runs its transcript; kept until the page ends when `keep`.
    async fn serve(
        &mut self,
        line: usize,
        text: &str,
        serves: Serves,
        command: &Command,
        keep: bool,
    ) {
        let at = format!("`{}`", first_line(text));
        let mut served = match Served::start(self.bash(&format!("exec {text}")), line, at, serves) {
            Ok(served) => served,
            Err(e) => return self.fail(line, format!("`{text}` did not start: {e}")),
        };
        if let Err(why) = self.check_serving(&mut served, text, serves, command).await {
            served.kill().await;
            let output = served.output_tail();
            return self.fail(
                line,
                format!("{} did not serve: {why}\n{output}", served.at),
            );
        }
        self.outcome.count("servers started and checked");
        if keep {
            self.served.push(served);
        } else {
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
            served.printed(shown).await?;
        }
        let words = words(text);
        let token = match words.iter().position(|w| w == "--auth-token-env") {
            Some(at) => self.env_value(&words[at + 1]).await,
            None => None,
        };
        let port = match serves {
            Serves::Port(port) => self.localize(&port.to_string()).parse().ok(),
            _ => None,
        };
        served.ready(token, port).await?;
        // The page's transcript: `→` lines sent, each `←` line the answer with that id, each `(stderr)` line
        // one it logs.
        for turn in &command.transcript {
            match turn {
                Turn::Send(line) => {
                    let message: Value = serde_json::from_str(&self.localize(line))
                        .map_err(|e| format!("`→ {line}` is not JSON: {e}"))?;
                    served.send(&message).await?;
                }
                Turn::Expect(line) => {
                    let shown: Value = serde_json::from_str(&self.localize(line))
                        .map_err(|e| format!("`← {line}` is not JSON: {e}"))?;
                    let id = &shown["id"];
                    let answer = served.answer(id).await?;
                    let differences = shape::value_differences(&shown, &answer);
                    if !differences.is_empty() {
                        return Err(format!(
                            "the answer with id {id} is not what the page shows: {}\n  got {answer}",
                            differences.join("; ")
                        ));
                    }
                }
                Turn::Stderr(shown) => served.logged(shown).await?,
            }
        }
        Ok(())
    }

    async fn stop(&mut self, served: Served) {
        let line = served.line;
        if let Err(why) = served.stop().await {
            self.fail(line, why);
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
