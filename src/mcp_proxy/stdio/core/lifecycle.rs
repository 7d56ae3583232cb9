//! The relay's life: the core made, the server started, killed by a `connection_drop` and restarted (the
//! client's `initialize` replayed), and the session ended with every call still pending logged as such.

use std::{collections::VecDeque, time::Duration};

use serde_json::Value;
use tokio::sync::mpsc;

use super::{Core, CoreMsg, EXIT_GRACE, Exit, MAX_PENDING, PENDING_TTL, REINIT_ID, UpstreamState};
use crate::mcp_proxy::decide::Decider;
use crate::mcp_proxy::engine::{Recorder, connection_closed, reply_outcome};
use crate::mcp_proxy::stdio::in_flight::InFlight;
use crate::mcp_proxy::stdio::server;
use crate::mcp_proxy::stdio::{RelayError, RelayOptions, nothing_to_do};
use crate::mcp_wire::jsonrpc::Outcome;

impl Core {
    pub(in crate::mcp_proxy::stdio) fn new(
        options: &RelayOptions,
        mut decider: Decider,
        recorder: Recorder,
        to_client: mpsc::UnboundedSender<Vec<u8>>,
        core_tx: mpsc::Sender<CoreMsg>,
    ) -> Self {
        let transparent = nothing_to_do(&decider, &recorder);
        recorder.prepare(&mut decider);
        Core {
            target: options.server.clone(),
            server_stderr: options.server_stderr.clone(),
            mode: options.plan.mode,
            decider,
            recorder,
            pending: InFlight::new(MAX_PENDING, PENDING_TTL),
            swallow: VecDeque::new(),
            server: None,
            generation: 0,
            upstream: UpstreamState::Down,
            to_server: None,
            to_client,
            core_tx,
            initialize: None,
            initialized: None,
            next_wait: 0,
            transparent,
            client_closed_at: None,
            failure: None,
        }
    }

    /// Starts (or restarts) the server as a new generation.
    pub(in crate::mcp_proxy::stdio) fn start_server(&mut self) -> Result<(), RelayError> {
        self.generation += 1;
        let started = server::start(
            &self.target,
            self.generation,
            &self.core_tx,
            &self.server_stderr,
        )?;
        self.to_server = Some(started.to_server);
        self.server = Some(started.side);
        self.upstream = UpstreamState::Up;
        Ok(())
    }

    pub(super) async fn kill_server(&mut self) {
        self.to_server = None;
        if let Some(server) = self.server.take() {
            server.kill().await;
        }
    }

    /// Ends the session: the server gets [`EXIT_GRACE`] to exit after its input closed, then is ended; the
    /// calls still pending are logged as such.
    pub(in crate::mcp_proxy::stdio) async fn shutdown(&mut self) {
        self.to_server = None;
        if let Some(server) = self.server.take() {
            server.stop(EXIT_GRACE).await;
        }
        for (_, mut p) in self.pending.drain() {
            if let Some(wait) = p.wait.take() {
                wait.token.cancel();
            }
            self.log_event(&p, Outcome::Pending);
        }
    }

    pub(super) async fn crash(&mut self, restart_after: Option<Duration>) -> Exit {
        tracing::info!("mcp-proxy: connection_drop: killing the server");
        self.upstream = UpstreamState::Down;
        self.kill_server().await;
        let Some(restart_after) = restart_after else {
            return Exit::Stop;
        };
        // Calls in flight on the killed server fail as a client SDK reports a closed connection.
        let keys: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, p)| p.progress.is_forwarded() && p.progress.upstream.is_none())
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            if let Some(mut p) = self.pending.remove(&key) {
                if let Some(wait) = p.wait.take() {
                    wait.token.cancel();
                }
                p.progress.upstream = Some(Outcome::Pending);
                let reply = connection_closed();
                self.send_client(reply.line(&p.call.id));
                self.finish(key, p, reply_outcome(&reply));
            }
        }
        let core_tx = self.core_tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(restart_after).await;
            let _ = core_tx.send(CoreMsg::Restart).await;
        });
        Exit::Continue
    }

    pub(super) fn restart(&mut self) {
        if let Err(e) = self.start_server() {
            tracing::error!("mcp-proxy: cannot restart the server: {e}");
            return;
        }
        tracing::info!("mcp-proxy: server restarted");
        let replay = self.initialize.as_ref().and_then(|line| {
            let mut value: Value = serde_json::from_slice(line).ok()?;
            value["id"] = Value::String(format!("{REINIT_ID}-{}", self.generation));
            let mut out = value.to_string().into_bytes();
            out.push(b'\n');
            Some(out)
        });
        if let Some(line) = replay {
            self.send_server(line);
            self.upstream = UpstreamState::Reinitializing(Vec::new());
        }
    }
}
