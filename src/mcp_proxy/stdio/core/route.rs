//! Where each message goes: lines from the client and the server, the ends of either side and the core's own
//! timers, routed to the call they belong to; and the two ways out, to the client and to the server.

use std::time::Instant;

use super::{Core, CoreMsg, Exit, UpstreamState};
use crate::mcp_proxy::stdio::RelayError;
use crate::mcp_proxy::stdio::server::ServerEvent;
use crate::mcp_wire::jsonrpc::{Envelope, Outcome, id_key};

impl Core {
    pub(in crate::mcp_proxy::stdio) async fn handle(&mut self, msg: CoreMsg) -> Exit {
        match msg {
            CoreMsg::Client(line) => return self.on_client(line),
            CoreMsg::ClientEof { error } => {
                if let Some(error) = error {
                    self.failure = Some(RelayError::ClientMessage(error));
                }
                // Close the server's stdin; it gets a grace period to exit, then is killed.
                self.to_server = None;
                self.client_closed_at = Some(Instant::now());
            }
            CoreMsg::Server(ServerEvent::Line { generation, line })
                if generation == self.generation =>
            {
                self.on_server(line)
            }
            CoreMsg::Server(ServerEvent::Eof { generation, error })
                if generation == self.generation =>
            {
                if let Some(error) = error {
                    tracing::error!("mcp-proxy: the server's messages cannot be relayed: {error}");
                    self.failure = Some(RelayError::ServerMessage(error));
                }
                if !matches!(self.upstream, UpstreamState::Down) {
                    return Exit::Stop;
                }
            }
            // A line or the end of a server that was restarted since.
            CoreMsg::Server(_) => {}
            CoreMsg::WaitEnded { key, wait } => return self.on_wait_ended(&key, wait),
            CoreMsg::Crash { restart_after } => return self.crash(restart_after).await,
            CoreMsg::Restart => self.restart(),
        }
        Exit::Continue
    }

    pub(super) fn on_client(&mut self, line: Vec<u8>) -> Exit {
        if self.transparent {
            self.send_server(line);
            return Exit::Continue;
        }
        let Some(envelope) = Envelope::parse(&line) else {
            self.send_server(line);
            return Exit::Continue;
        };
        if envelope.is_request() {
            return self.on_request(line, envelope);
        }
        match envelope.method.as_deref() {
            Some("notifications/cancelled") => self.on_cancel(&envelope),
            Some("notifications/initialized") => self.initialized = Some(line.clone()),
            _ => {}
        }
        self.send_server(line);
        Exit::Continue
    }

    pub(super) fn on_cancel(&mut self, envelope: &Envelope) {
        let Some(request_id) = envelope.params.as_ref().and_then(|p| p.get("requestId")) else {
            return;
        };
        let key = id_key(request_id);
        let Some(mut p) = self.pending.remove(&key) else {
            return;
        };
        let wait = p.wait.take();
        p.progress.cancelled(Instant::now(), wait.is_some());
        if let Some(wait) = wait {
            wait.token.cancel();
        }
        self.finish(key, p, Outcome::None);
    }

    pub(super) fn send_client(&self, line: Vec<u8>) {
        if self.recorder.observes() {
            // The line is on its way before the observer reads it: its parse is not the client's wait.
            let seen = line.clone();
            let _ = self.to_client.send(line);
            self.recorder.client_line(&seen);
        } else {
            let _ = self.to_client.send(line);
        }
    }

    pub(super) fn send_server(&mut self, line: Vec<u8>) {
        match &mut self.upstream {
            UpstreamState::Up => {
                if let Some(tx) = &self.to_server {
                    let _ = tx.send(line);
                }
            }
            UpstreamState::Reinitializing(queue) => queue.push(line),
            UpstreamState::Down => {}
        }
    }
}
