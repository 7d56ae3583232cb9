//! The calls pending: remembered in the bounded table, forgotten when the server leaves them unanswered too
//! long, each injected wait started as a task of its own, and each call's end logged.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::calls::{PendingCall, ResponsePlan, Wait, WaitKind};
use super::{Core, CoreMsg, MAX_PENDING, MAX_SWALLOW, PENDING_TTL};
use crate::mcp_wire::jsonrpc::Outcome;

impl Core {
    pub(super) fn remember(&mut self, key: String, pending: PendingCall) {
        let now = Instant::now();
        self.expire_stale(now);
        if let Some((old, mut p)) = self.pending.insert(key, pending, now) {
            tracing::warn!("mcp-proxy: forgetting call {old} after {MAX_PENDING} pending");
            if let Some(wait) = p.wait.take() {
                wait.token.cancel();
            }
            self.log_event(&p, Outcome::Pending);
        }
    }

    /// Forgets the calls the server left unanswered for [`PENDING_TTL`]; a late answer then passes untouched.
    pub(in crate::mcp_proxy::stdio) fn expire_stale(&mut self, now: Instant) {
        for (key, p) in self.pending.expire(now, |p| p.wait.is_some()) {
            tracing::warn!(
                "mcp-proxy: forgetting call {key} ({} `{}`): no answer from the server in {} s",
                p.call.method,
                p.call.tool,
                PENDING_TTL.as_secs()
            );
            self.log_event(&p, Outcome::Pending);
        }
    }

    pub(super) fn start_wait(&mut self, key: &str, kind: WaitKind, delay: Duration) -> Wait {
        self.next_wait += 1;
        let id = self.next_wait;
        let token = CancellationToken::new();
        let cancelled = token.clone();
        let core_tx = self.core_tx.clone();
        let key = key.to_owned();
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(delay) => {
                    let _ = core_tx.send(CoreMsg::WaitEnded { key, wait: id }).await;
                }
                () = cancelled.cancelled() => {}
            }
        });
        Wait { id, kind, token }
    }

    /// The client got its answer (or none, for good): write the event, remember to swallow a late real one.
    pub(super) fn finish(&mut self, key: String, p: PendingCall, client: Outcome) {
        let swallow_late = p.progress.is_forwarded()
            && p.progress.upstream.is_none()
            && !matches!(p.plan, ResponsePlan::Pass | ResponsePlan::FilterList);
        if swallow_late {
            if self.swallow.len() >= MAX_SWALLOW {
                self.swallow.pop_front();
            }
            self.swallow.push_back(key);
        }
        self.log_event(&p, client);
    }

    pub(super) fn log_event(&mut self, p: &PendingCall, client: Outcome) {
        if !self.recorder.is_active() {
            return;
        }
        let event = p.call.event(&self.decider, p.progress.end(&p.call, client));
        self.recorder.record(&event);
    }
}
