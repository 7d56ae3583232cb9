//! A command of a page that serves: which ones do (read from their words), how each is checked to serve (an
//! MCP handshake on stdio or over HTTP, `fault run`'s readiness line, a port that accepts), the lines it
//! writes, and how its user stops it.

use std::{
    collections::HashMap,
    process::{ExitStatus, Stdio},
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    ServiceExt,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::shape;

/// Longest a server may take to be ready, to answer, and to stop.
pub const READY_LIMIT: Duration = Duration::from_secs(30);
const STOP_LIMIT: Duration = Duration::from_secs(10);

/// What a command that serves is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Serves {
    /// An MCP server on stdin/stdout.
    Stdio,
    /// An MCP server over Streamable HTTP, at the URL it logs.
    Http,
    /// `fault run` without `--duration`.
    TcpProxy,
    /// Another program, marked `serves PORT` in the page: it accepts connections on that port.
    Port(u16),
}

/// What a command serves, if it serves: `fault agent … tool`, `fault mcp-test-server`, `fault mcp-proxy`
/// (but `--print-plan`) and `fault run` without `--duration`.
pub fn serves(words: &[String]) -> Option<Serves> {
    let mut rest = words.iter().map(String::as_str);
    if rest.next() != Some("fault") {
        return None;
    }
    let rest: Vec<&str> = rest.collect();
    let has = |flag: &str| {
        rest.iter()
            .any(|w| *w == flag || w.starts_with(&format!("{flag}=")))
    };
    let http = rest.windows(2).any(|w| w == ["--transport", "http"]) || has("--transport=http");
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
    let mcp = if http { Serves::Http } else { Serves::Stdio };
    match sub? {
        "agent" if rest.contains(&"tool") => Some(mcp),
        "mcp-test-server" => Some(mcp),
        "run" if !has("--duration") => Some(Serves::TcpProxy),
        "mcp-proxy" if has("--print-plan") => None,
        "mcp-proxy" if has("--listen") => Some(Serves::Http),
        "mcp-proxy" => Some(Serves::Stdio),
        _ => None,
    }
}

/// The lines a process wrote so far on one of its streams, and whether the stream has ended.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>, Arc<std::sync::atomic::AtomicBool>);

impl Lines {
    fn follow(stream: impl tokio::io::AsyncRead + Unpin + Send + 'static) -> Lines {
        let lines = Lines::default();
        let sink = lines.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                sink.0.lock().expect("lines").push(line);
            }
            sink.1.store(true, std::sync::atomic::Ordering::Release);
        });
        lines
    }

    fn ended(&self) -> bool {
        self.1.load(std::sync::atomic::Ordering::Acquire)
    }

    fn snapshot(&self) -> Vec<String> {
        self.0.lock().expect("lines").clone()
    }

    fn find<T>(&self, pick: &impl Fn(&str) -> Option<T>) -> Option<T> {
        self.snapshot().iter().find_map(|line| pick(line))
    }
}

/// A process an example started, with what it wrote.
pub struct Served {
    /// The page's line that started it, and the command's first line.
    pub line: usize,
    pub at: String,
    serves: Serves,
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    stdout: Lines,
    stderr: Lines,
}

impl Served {
    /// Starts `command` with its standard streams piped.
    pub fn start(
        mut command: tokio::process::Command,
        line: usize,
        at: String,
        serves: Serves,
    ) -> std::io::Result<Served> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Ctrl-C stops it as in a user's terminal, even when the tests were started with SIGINT ignored
        // (`nohup cargo test &`), which it would otherwise inherit and keep.
        // SAFETY: only `signal`, which is async-signal-safe, runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = command.spawn()?;
        Ok(Served {
            line,
            at,
            serves,
            stdin: child.stdin.take(),
            stdout: Lines::follow(child.stdout.take().expect("a piped stdout")),
            stderr: Lines::follow(child.stderr.take().expect("a piped stderr")),
            child,
        })
    }

    /// The first line, of stdout or stderr, that `pick` finds something in, waiting up to [`READY_LIMIT`].
    async fn wait<T>(
        &mut self,
        stderr_only: bool,
        pick: impl Fn(&str) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = tokio::time::Instant::now() + READY_LIMIT;
        loop {
            let found = self.stderr.find(&pick).or_else(|| {
                if stderr_only {
                    None
                } else {
                    self.stdout.find(&pick)
                }
            });
            if let Some(found) = found {
                return Ok(found);
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // What it wrote last may still be in the pipe.
                tokio::time::sleep(Duration::from_millis(100)).await;
                let found = self.stderr.find(&pick).or_else(|| self.stdout.find(&pick));
                return found.ok_or_else(|| format!("it exited with {}", describe(status)));
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!("nothing came within {READY_LIMIT:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A line it printed (on either stream) like `shown`.
    pub async fn printed(&mut self, shown: &str) -> Result<(), String> {
        self.wait(false, |l| shape::line_matches(shown, l).then_some(()))
            .await
            .map_err(|why| format!("no line like `{shown}` ({why})"))
    }

    /// A line it logged on stderr like `shown`.
    pub async fn logged(&mut self, shown: &str) -> Result<(), String> {
        self.wait(true, |l| shape::line_matches(shown, l).then_some(()))
            .await
            .map_err(|why| format!("it logged no line like `{shown}` ({why})"))
    }

    /// Checks that it serves, as its kind does: an MCP handshake (over HTTP with `token`, if any), `fault
    /// run`'s readiness line, or a connection accepted on `port`.
    pub async fn ready(&mut self, token: Option<String>, port: Option<u16>) -> Result<(), String> {
        match self.serves {
            Serves::Stdio => self.initialize().await,
            Serves::Http => {
                let url = self
                    .wait(true, served_url)
                    .await
                    .map_err(|why| format!("it logged no URL ({why})"))?;
                http_handshake(&url, token, &[]).await
            }
            Serves::TcpProxy => self
                .wait(true, |l| l.starts_with("fault: proxying").then_some(()))
                .await
                .map_err(|why| format!("no `fault: proxying` line ({why})")),
            Serves::Port(_) => {
                let port = port.ok_or("no port")?;
                let deadline = tokio::time::Instant::now() + READY_LIMIT;
                while tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .is_err()
                {
                    if let Ok(Some(status)) = self.child.try_wait() {
                        return Err(format!("it exited with {}", describe(status)));
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
        }
    }

    /// The MCP handshake on its stdin and stdout.
    pub async fn initialize(&mut self) -> Result<(), String> {
        let id = json!("docs-initialize");
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {"protocolVersion": fault::mcp_wire::PROTOCOL_VERSION, "capabilities": {},
                       "clientInfo": {"name": "docs-examples", "version": "1"}}}))
            .await?;
        let answer = self.answer(&id).await?;
        if answer.get("result").is_none() {
            return Err(format!("initialize was refused: {answer}"));
        }
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
    }

    /// Writes one JSON-RPC message on its stdin.
    pub async fn send(&mut self, message: &Value) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("its stdin is closed")?;
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .map_err(|e| format!("write to its stdin: {e}"))
    }

    /// The JSON-RPC answer it wrote on stdout to the request `id`.
    pub async fn answer(&mut self, id: &Value) -> Result<Value, String> {
        let stdout = self.stdout.clone();
        let deadline = tokio::time::Instant::now() + READY_LIMIT;
        loop {
            if let Some(answer) = stdout.find(&|l: &str| answer_to(l, id)) {
                return Ok(answer);
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "no answer with id {id}: it exited with {}",
                    describe(status)
                ));
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!("no answer with id {id} within {READY_LIMIT:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops it as its user would, and expects it to exit 0: an MCP server on stdio when its client closes
    /// its stdin, any other with Ctrl-C (SIGINT).
    pub async fn stop(mut self) -> Result<(), String> {
        drop(self.stdin.take());
        if self.serves != Serves::Stdio
            && let Some(pid) = self
                .child
                .id()
                .and_then(|pid| rustix::process::Pid::from_raw(pid as i32))
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        }
        match tokio::time::timeout(STOP_LIMIT, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(status)) => Err(format!(
                "{} exited with {} when stopped:\n{}",
                self.at,
                describe(status),
                self.output_tail()
            )),
            Ok(Err(e)) => Err(format!("{}: {e}", self.at)),
            Err(_) => {
                let _ = self.child.start_kill();
                Err(format!("{} did not stop within {STOP_LIMIT:?}", self.at))
            }
        }
    }

    /// Kills it at once (it failed a check), and waits up to a second for what it wrote to be read, so that
    /// [`Served::output_tail`] shows its last words (a refused flag's error, say).
    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        for _ in 0..100 {
            if self.stdout.ended() && self.stderr.ended() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The last lines it wrote, indented.
    pub fn output_tail(&self) -> String {
        tail(
            &[self.stdout.snapshot(), self.stderr.snapshot()]
                .concat()
                .join("\n"),
        )
    }
}

/// An MCP handshake over Streamable HTTP with rmcp's client, then `tools/list`.
pub async fn http_handshake(
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

pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("status {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        _ => status.to_string(),
    }
}

/// The last lines of a process's output, indented.
pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..]
        .iter()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
