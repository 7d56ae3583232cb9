//! The relay's server side: a child process started in a process group of its own (so ending it ends
//! whatever it started, e.g. `npx` and the node it runs), or the bridge to a Streamable HTTP endpoint. Its
//! lines go to the core tagged with the server's generation (a restarted server is a new generation, and the
//! old one's late lines are ignored).

use std::{
    collections::VecDeque,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::{Child, Command},
    sync::mpsc,
};

use super::RelayError;
use crate::mcp_wire::{endpoint::Endpoint, http_session::HttpSession, lines};

/// Lines of a server's stderr kept by [`ServerStderr::Keep`].
const STDERR_LINES: usize = 40;

/// The real server.
#[derive(Clone)]
pub enum ServerTarget {
    /// A command, started over stdio.
    Command(ServerCommand),
    /// A Streamable HTTP endpoint, reached through the bridge.
    Http(Box<Endpoint>),
}

/// A server's command line and where it runs.
#[derive(Debug, Clone, Default)]
pub struct ServerCommand {
    pub program: String,
    pub args: Vec<String>,
    /// Variables added to the environment it inherits.
    pub env: Vec<(String, String)>,
    pub cwd: Option<std::path::PathBuf>,
}

impl ServerCommand {
    /// `program args…` of a command line; `None` when it is empty.
    pub fn from_line(line: &[String]) -> Option<Self> {
        let (program, args) = line.split_first()?;
        Some(Self {
            program: program.clone(),
            args: args.to_vec(),
            ..Self::default()
        })
    }

    /// The command as a line, for messages and reports.
    pub fn line(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Where a child server's stderr goes.
#[derive(Clone, Default)]
pub enum ServerStderr {
    /// Ours (`fault mcp-proxy`: the user sees the server's logs as if it ran alone).
    #[default]
    Inherit,
    /// Kept, its last lines only, for error messages (and logged at debug level).
    Keep(StderrTail),
}

/// The last lines a server wrote to its stderr.
#[derive(Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if lines.len() >= STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    pub fn text(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

/// What the server side tells whoever listens (the core): a line of the server of `generation`, or the end
/// of its side (`error` when its side broke, e.g. a message over the bound).
pub(super) enum ServerEvent {
    Line {
        generation: u64,
        line: Vec<u8>,
    },
    Eof {
        generation: u64,
        error: Option<lines::LineError>,
    },
}

/// A running server and the sender of the lines it reads.
pub(super) struct Server {
    pub(super) side: ServerSide,
    pub(super) to_server: mpsc::UnboundedSender<Vec<u8>>,
}

pub(super) enum ServerSide {
    Child(ServerProcess),
    Bridge {
        task: tokio::task::JoinHandle<()>,
        reader: tokio::task::JoinHandle<()>,
    },
}

/// A child server in its own process group; the group is killed when this is dropped, whatever ends the
/// relay (a closed client, a cancelled scenario, an error).
pub(super) struct ServerProcess {
    pub(super) child: Child,
    group: Option<rustix::process::Pid>,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill_group();
    }
}

impl ServerProcess {
    fn kill_group(&mut self) {
        if let Some(group) = self.group.take() {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
        let _ = self.child.start_kill();
    }
}

/// Starts the server of `target` as generation `generation`, its lines going to `core_tx`.
pub(super) fn start<T: From<ServerEvent> + Send + 'static>(
    target: &ServerTarget,
    generation: u64,
    core_tx: &mpsc::Sender<T>,
    stderr: &ServerStderr,
) -> Result<Server, RelayError> {
    match target {
        ServerTarget::Command(command) => start_child(command, generation, core_tx, stderr),
        ServerTarget::Http(endpoint) => Ok(start_bridge(endpoint, generation, core_tx)),
    }
}

/// Starts `server` in a process group of its own, its stdin and stdout piped, its stderr where `stderr` says.
pub(super) fn spawn_child(
    server: &ServerCommand,
    stderr: &ServerStderr,
) -> Result<ServerProcess, RelayError> {
    let mut command = Command::new(&server.program);
    command
        .args(&server.args)
        .envs(server.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(match stderr {
            ServerStderr::Inherit => Stdio::inherit(),
            ServerStderr::Keep(_) => Stdio::piped(),
        })
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &server.cwd {
        command.current_dir(cwd);
    }
    let mut child = command.spawn().map_err(|source| RelayError::Spawn {
        command: server.line(),
        source,
    })?;
    let group = child
        .id()
        .and_then(|pid| rustix::process::Pid::from_raw(pid as i32));
    if let (Some(err), ServerStderr::Keep(tail)) = (child.stderr.take(), stderr) {
        let tail = tail.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(err).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                tracing::debug!(target: "mcp_proxy::server", "{line}");
                tail.push(line);
            }
        });
    }
    Ok(ServerProcess { child, group })
}

fn start_child<T: From<ServerEvent> + Send + 'static>(
    server: &ServerCommand,
    generation: u64,
    core_tx: &mpsc::Sender<T>,
    stderr: &ServerStderr,
) -> Result<Server, RelayError> {
    let mut process = spawn_child(server, stderr)?;
    let child = &mut process.child;
    if let Some(stdout) = child.stdout.take() {
        let core_tx = core_tx.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::with_capacity(64 * 1024, stdout);
            let error = loop {
                let mut line = Vec::new();
                match lines::read_line(&mut reader, &mut line).await {
                    Ok(false) => break None,
                    Ok(true) => {
                        let sent = core_tx
                            .send(ServerEvent::Line { generation, line }.into())
                            .await;
                        if sent.is_err() {
                            return;
                        }
                    }
                    Err(lines::LineError::Io(_)) => break None,
                    Err(e) => break Some(e),
                }
            };
            let _ = core_tx
                .send(ServerEvent::Eof { generation, error }.into())
                .await;
        });
    }
    let (to_server, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    if let Some(mut stdin) = child.stdin.take() {
        tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                if stdin.write_all(&line).await.is_err() {
                    break;
                }
            }
        });
    }
    Ok(Server {
        side: ServerSide::Child(process),
        to_server,
    })
}

fn start_bridge<T: From<ServerEvent> + Send + 'static>(
    endpoint: &Endpoint,
    generation: u64,
    core_tx: &mpsc::Sender<T>,
) -> Server {
    let session = HttpSession::new(endpoint.clone(), Default::default());
    let (to_server, mut lines, task) = super::super::bridge::spawn(session);
    let core_tx = core_tx.clone();
    let reader = tokio::spawn(async move {
        while let Some(line) = lines.recv().await {
            if core_tx
                .send(ServerEvent::Line { generation, line }.into())
                .await
                .is_err()
            {
                return;
            }
        }
        let _ = core_tx
            .send(
                ServerEvent::Eof {
                    generation,
                    error: None,
                }
                .into(),
            )
            .await;
    });
    Server {
        side: ServerSide::Bridge { task, reader },
        to_server,
    }
}

impl ServerSide {
    /// Ends the server at once: the child's process group is killed (by its id, never by name).
    pub(super) async fn kill(self) {
        match self {
            ServerSide::Child(mut process) => {
                process.kill_group();
                let _ = process.child.wait().await;
            }
            ServerSide::Bridge { task, reader } => {
                task.abort();
                reader.abort();
            }
        }
    }

    /// Gives the server `grace` to finish on its own (its input is closed), then ends it.
    pub(super) async fn stop(mut self, grace: Duration) {
        let exited = match &mut self {
            ServerSide::Child(process) => tokio::time::timeout(grace, process.child.wait())
                .await
                .is_ok(),
            // The bridge ends the session (DELETE) once its input is closed.
            ServerSide::Bridge { task, .. } => tokio::time::timeout(grace, task).await.is_ok(),
        };
        if !exited {
            return self.kill().await;
        }
        match self {
            // What the server started may outlive it: its group goes with it.
            ServerSide::Child(process) => drop(process),
            ServerSide::Bridge { reader, .. } => reader.abort(),
        }
    }
}
