//! `fault mcp-proxy --upstream URL --listen 127.0.0.1:0` (this executable) in front of a Streamable HTTP
//! server, so a scenario against a URL gets the plan's faults: the clients talk to the proxy's address, the
//! proxy writes one event per call to the scratch directory.

use std::{
    collections::VecDeque,
    path::Path,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

/// How long the proxy gets to log its address.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(15);
/// The line `fault mcp-proxy` logs once it listens, followed by its URL.
const LISTENING: &str = "fault mcp-proxy: listening on ";
const STDERR_LINES: usize = 40;

pub struct HttpProxy {
    child: Child,
    /// Where the clients send their requests (the upstream's path on the proxy's address).
    pub url: reqwest::Url,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl HttpProxy {
    /// Starts the proxy with `args` (plan, seed, events) in front of `upstream`; `Err` says why it did not.
    pub async fn start(
        program: &Path,
        upstream: &reqwest::Url,
        args: &[String],
    ) -> Result<Self, String> {
        let mut child = Command::new(program)
            .args([
                "mcp-proxy",
                "--upstream",
                upstream.as_str(),
                "--listen",
                "127.0.0.1:0",
            ])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start fault mcp-proxy: {e}"))?;
        let stderr: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let Some(pipe) = child.stderr.take() else {
            return Err("fault mcp-proxy has no stderr".into());
        };
        let (found, url) = tokio::sync::oneshot::channel::<String>();
        let kept = stderr.clone();
        tokio::spawn(async move {
            let mut found = Some(found);
            let mut lines = BufReader::new(pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(rest) = line.strip_prefix(LISTENING)
                    && let Some(url) = rest.split_whitespace().next()
                    && let Some(found) = found.take()
                {
                    let _ = found.send(url.to_owned());
                }
                let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                if kept.len() >= STDERR_LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
        });
        let tail = |stderr: &Arc<Mutex<VecDeque<String>>>| {
            let lines = stderr.lock().unwrap_or_else(|p| p.into_inner());
            lines.iter().cloned().collect::<Vec<_>>().join("\n")
        };
        let url = match tokio::time::timeout(LISTEN_TIMEOUT, url).await {
            Ok(Ok(url)) => url,
            Ok(Err(_)) => return Err(format!("fault mcp-proxy exited: {}", tail(&stderr))),
            Err(_) => {
                return Err(format!(
                    "fault mcp-proxy did not listen within {}s: {}",
                    LISTEN_TIMEOUT.as_secs(),
                    tail(&stderr)
                ));
            }
        };
        let url = reqwest::Url::parse(&url)
            .map_err(|e| format!("fault mcp-proxy logged an unusable URL '{url}': {e}"))?;
        Ok(Self { child, url, stderr })
    }

    /// The proxy's last stderr lines.
    pub fn stderr_tail(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Stops the proxy (its events are flushed line by line as they happen).
    pub async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}
