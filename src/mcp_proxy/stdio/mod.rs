//! The stdio relay: a client on one side (this process's stdin/stdout, or any byte stream), the real server
//! on the other (a child process, or a Streamable HTTP endpoint through [`super::bridge`]), and between them
//! one core task that applies the plan's faults call by call.
//!
//! - [`pump`]: the client's side; [`server`]: the server's side (child process in its own process group, or
//!   the bridge), generations across restarts;
//! - [`core`]: the actor that routes lines and carries out each call's faults; [`in_flight`]: its bounded
//!   table of pending calls;
//! - [`pass_through`]: with nothing to do between this process's stdio and a child server, a thread per
//!   direction and no core.

mod core;
mod in_flight;
mod pass_through;
mod pump;
mod server;

use std::time::Instant;

use tokio::sync::mpsc;

pub use pump::ClientSide;
pub use server::{ServerCommand, ServerStderr, ServerTarget, StderrTail};

use self::core::{Core, CoreMsg, Exit};
use super::decide::{Decider, DeciderError};
use super::engine::{Observer, Recorder};
use super::events::EventLog;
use super::plan::Plan;
use crate::mcp_wire::lines::LineError;

/// How often calls are checked against their time to live when no new call arrives.
const EXPIRY_SWEEP: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error(
        "no server: give its command after `--` (e.g. `fault mcp-proxy -- python server.py`) or its URL with --upstream"
    )]
    NoCommand,
    #[error("cannot start the server `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("--events: {0}")]
    Events(#[from] crate::files::FileError),
    #[error("{0}")]
    Plan(String),
    #[error(transparent)]
    Decider(#[from] DeciderError),
    #[error("the server sent {0}; the session was ended")]
    ServerMessage(LineError),
    #[error("the client sent {0}; the session was ended")]
    ClientMessage(LineError),
}

pub struct RelayOptions {
    pub plan: Plan,
    pub server: ServerTarget,
    pub client: ClientSide,
    /// Where a child server's stderr goes.
    pub server_stderr: ServerStderr,
    pub events: Option<std::path::PathBuf>,
    /// Sees every line sent to the client and every finished call (e.g. the `--report` observer).
    pub observer: Option<Observer>,
}

/// Runs the relay until either side closes. Returns once the server has been ended.
pub async fn run(options: RelayOptions) -> Result<(), RelayError> {
    check_stdio_plan(&options.plan)?;
    let decider = Decider::new(&options.plan)?;
    let events = match &options.events {
        Some(path) => Some(EventLog::create(path)?),
        None => None,
    };
    let recorder = Recorder::new(events, options.observer.clone());
    if let (true, ClientSide::ProcessStdio, ServerTarget::Command(command)) = (
        nothing_to_do(&decider, &recorder),
        &options.client,
        &options.server,
    ) {
        return pass_through::run(command, &options.server_stderr).await;
    }
    let (core_tx, mut core_rx) = mpsc::channel::<CoreMsg>(1024);
    let (to_client, client_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let mut core = Core::new(&options, decider, recorder, to_client, core_tx.clone());
    core.start_server()?;
    let client_writer = pump::start(options.client, core_tx, client_rx);

    let mut sweep = tokio::time::interval(EXPIRY_SWEEP);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let grace = core.client_closed_at.map(|at| at + core::EXIT_GRACE);
        let msg = tokio::select! {
            msg = core_rx.recv() => msg,
            () = sleep_until(grace) => None,
            _ = sweep.tick() => {
                core.expire_stale(Instant::now());
                continue;
            }
        };
        let Some(msg) = msg else { break };
        if let Exit::Stop = core.handle(msg).await {
            break;
        }
    }
    core.shutdown().await;
    let failure = core.failure.take();
    drop(core);
    // The writer flushes what is queued; then the client's side is closed.
    client_writer.finish().await;
    failure.map_or(Ok(()), Err)
}

/// No fault planned and nothing recorded: every line is forwarded as it came, unparsed.
fn nothing_to_do(decider: &Decider, recorder: &Recorder) -> bool {
    decider.is_empty() && !recorder.is_active()
}

/// Refuses the faults that act on HTTP exchanges only.
pub fn check_stdio_plan(plan: &Plan) -> Result<(), RelayError> {
    match plan.faults.iter().position(|f| f.spec.inner().http_only()) {
        Some(i) => Err(RelayError::Plan(format!(
            "faults[{i}]: `{}` acts on Streamable HTTP only: run `fault mcp-proxy --upstream URL --listen ADDR`",
            plan.faults[i].spec.type_name()
        ))),
        None => Ok(()),
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
