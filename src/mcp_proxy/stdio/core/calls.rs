//! How the relay's core carries out one call's faults: the decision when the request arrives, the held
//! request, the synthesised or rewritten answer, the hang released by a cancel, and the server's answer
//! delivered, altered or swallowed.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::{Core, CoreMsg, Exit, REINIT_ID, UpstreamState};
use crate::mcp_proxy::engine::{
    Call, CallProgress, Composed, LIST_CHANGED, connection_closed, reply_outcome, request_timed_out,
};
use crate::mcp_proxy::faults::{Action, OnCap};
use crate::mcp_wire::jsonrpc::{Envelope, Outcome, Reply, id_key};

#[derive(Debug, Clone, Copy)]
pub(super) enum WaitKind {
    /// A held request: forward it.
    Request,
    /// A held response: deliver it.
    Response,
    /// A synthesised reply due: send it.
    Reply,
    /// A hang's cap.
    Hang(OnCap),
}

pub(super) struct Wait {
    pub(super) id: u64,
    pub(super) kind: WaitKind,
    pub(super) token: CancellationToken,
}

#[derive(Debug, Clone)]
pub(super) enum ResponsePlan {
    Pass,
    /// Rewrite the response with these faults, in order, then hold it for `delay`.
    Alter {
        rewrites: Vec<usize>,
        delay: Duration,
    },
    Swallow,
    /// Answer `reply` instead of the server's response, `delay` after it.
    Replace {
        reply: Reply,
        delay: Duration,
    },
    FilterList,
}

pub(super) struct PendingCall {
    pub(super) call: Call,
    pub(super) plan: ResponsePlan,
    pub(super) wait: Option<Wait>,
    pub(super) held: Option<Vec<u8>>,
    /// What the faults do once a held request is released.
    pub(super) then: Option<Composed>,
    pub(super) progress: CallProgress,
}

impl Core {
    pub(super) fn on_request(&mut self, line: Vec<u8>, envelope: Envelope) -> Exit {
        let method = envelope.method.clone().unwrap_or_default();
        if method == "initialize" {
            self.initialize = Some(line.clone());
        }
        let counted_task = self.recorder.observes() && method.starts_with("tasks/");
        if method != "tools/call" && !counted_task && !self.decider.watches_method(&method) {
            self.send_server(line);
            return Exit::Continue;
        }
        if self.decider.is_empty() && matches!(self.upstream, UpstreamState::Up) {
            // No fault planned: the request goes on as it came, before its call's bookkeeping.
            self.send_server(line);
            let mut pending = PendingCall {
                plan: ResponsePlan::Pass,
                call: Call::decide(&mut self.decider, &envelope),
                wait: None,
                held: None,
                then: None,
                progress: CallProgress::default(),
            };
            pending.progress.forwarded();
            self.remember(id_key(&pending.call.id), pending);
            return Exit::Continue;
        }
        let call = Call::decide(&mut self.decider, &envelope);
        if call.decision.notify_list_changed {
            let mut line = LIST_CHANGED.to_vec();
            line.push(b'\n');
            self.send_client(line);
        }
        let key = id_key(&call.id);
        let mut pending = PendingCall {
            plan: if call.filters_list(&self.decider) {
                ResponsePlan::FilterList
            } else {
                ResponsePlan::Pass
            },
            call,
            wait: None,
            held: None,
            then: None,
            progress: CallProgress::default(),
        };
        if matches!(self.upstream, UpstreamState::Down) {
            let reply = connection_closed();
            self.send_client(reply.line(&pending.call.id));
            self.log_event(&pending, reply_outcome(&reply));
            return Exit::Continue;
        }
        if pending.call.decision.applied.is_empty() {
            pending.progress.forwarded();
            self.send_server(line);
            self.remember(key, pending);
            return Exit::Continue;
        }
        let composed = pending.call.compose(&self.decider);
        if composed.request_delay.is_zero() {
            return self.proceed(key, pending, line, composed);
        }
        pending.held = Some(line);
        pending.wait = Some(self.start_wait(&key, WaitKind::Request, composed.request_delay));
        pending.then = Some(composed);
        self.remember(key, pending);
        Exit::Continue
    }

    /// Carries out a call's faults once its request delay (if any) has passed.
    fn proceed(
        &mut self,
        key: String,
        mut pending: PendingCall,
        line: Vec<u8>,
        composed: Composed,
    ) -> Exit {
        let Some(terminal) = composed.terminal else {
            pending.progress.forwarded();
            if !composed.rewrites.is_empty() || !composed.response_delay.is_zero() {
                pending.plan = ResponsePlan::Alter {
                    rewrites: composed.rewrites,
                    delay: composed.response_delay,
                };
            }
            self.send_server(line);
            self.remember(key, pending);
            return Exit::Continue;
        };
        match terminal {
            Action::Reply {
                after,
                reply,
                call_upstream,
            } => {
                let after = after + composed.response_delay;
                if call_upstream {
                    pending.progress.forwarded();
                    self.send_server(line);
                    pending.plan = ResponsePlan::Replace {
                        reply,
                        delay: composed.response_delay,
                    };
                } else if after.is_zero() {
                    self.send_client(reply.line(&pending.call.id));
                    self.log_event(&pending, reply_outcome(&reply));
                    return Exit::Continue;
                } else {
                    pending.plan = ResponsePlan::Replace {
                        reply,
                        delay: Duration::ZERO,
                    };
                    pending.wait = Some(self.start_wait(&key, WaitKind::Reply, after));
                }
            }
            Action::Hang {
                forward,
                max_hold,
                on_cap,
            } => {
                if forward {
                    pending.progress.forwarded();
                    self.send_server(line);
                }
                pending.plan = ResponsePlan::Swallow;
                pending.wait = Some(self.start_wait(&key, WaitKind::Hang(on_cap), max_hold));
            }
            Action::CrashServer {
                after,
                restart_after,
            } => {
                pending.progress.forwarded();
                self.send_server(line);
                let core_tx = self.core_tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let _ = core_tx.send(CoreMsg::Crash { restart_after }).await;
                });
            }
            Action::CloseClient => {
                self.log_event(&pending, Outcome::None);
                return Exit::Stop;
            }
            // Not settling actions ([`Call::compose`] never makes them terminal), and the HTTP front's
            // (a stdio plan never holds them: [`check_stdio_plan`]).
            Action::DelayRequest(_)
            | Action::DelayResponse(_)
            | Action::Rewrite
            | Action::Http(_) => {
                pending.progress.forwarded();
                self.send_server(line);
            }
        }
        self.remember(key, pending);
        Exit::Continue
    }

    pub(super) fn on_wait_ended(&mut self, key: &str, wait: u64) -> Exit {
        let Some(mut p) = self.pending.remove(key) else {
            return Exit::Continue;
        };
        let Some(w) = p.wait.take_if(|w| w.id == wait) else {
            self.pending.insert(key.to_owned(), p, Instant::now());
            return Exit::Continue;
        };
        match w.kind {
            WaitKind::Request => {
                let line = p.held.take().unwrap_or_default();
                let composed = p.then.take().unwrap_or_default();
                return self.proceed(key.to_owned(), p, line, composed);
            }
            WaitKind::Response => {
                let line = p.held.take().unwrap_or_default();
                let outcome = Outcome::of_answer(&line, &p.call.id);
                self.send_client(line);
                self.finish(key.to_owned(), p, outcome);
            }
            WaitKind::Reply => {
                if let ResponsePlan::Replace { reply, .. } = p.plan.clone() {
                    self.send_client(reply.line(&p.call.id));
                    self.finish(key.to_owned(), p, reply_outcome(&reply));
                }
            }
            WaitKind::Hang(on_cap) => match on_cap {
                OnCap::Drop => self.finish(key.to_owned(), p, Outcome::None),
                OnCap::Error => {
                    let reply = request_timed_out();
                    self.send_client(reply.line(&p.call.id));
                    self.finish(key.to_owned(), p, reply_outcome(&reply));
                }
                OnCap::Close => {
                    self.finish(key.to_owned(), p, Outcome::None);
                    return Exit::Stop;
                }
            },
        }
        Exit::Continue
    }

    pub(super) fn on_server(&mut self, line: Vec<u8>) {
        if let UpstreamState::Reinitializing(_) = self.upstream
            && Envelope::parse(&line)
                .and_then(|e| e.id)
                .is_some_and(|id| id.as_str().is_some_and(|s| s.starts_with(REINIT_ID)))
        {
            let UpstreamState::Reinitializing(queue) =
                std::mem::replace(&mut self.upstream, UpstreamState::Up)
            else {
                return;
            };
            if let Some(initialized) = self.initialized.clone() {
                self.send_server(initialized);
            }
            for queued in queue {
                self.send_server(queued);
            }
            return;
        }
        if self.transparent || (self.pending.is_empty() && self.swallow.is_empty()) {
            self.send_client(line);
            return;
        }
        if self.decider.is_empty() {
            // No fault planned: every answer passes as it came, so it leaves before its call's bookkeeping,
            // which parses it once for the call and the observer.
            let seen = line.clone();
            let _ = self.to_client.send(line);
            let Some(envelope) = Envelope::parse(&seen).filter(Envelope::is_response) else {
                return;
            };
            let key = envelope.id.as_ref().map(id_key).unwrap_or_default();
            let pending = self.pending.remove(&key);
            let upstream = envelope.outcome();
            if let (Some(p), Some(result)) = (&pending, &envelope.result) {
                p.call.learn(&mut self.decider, result);
            }
            // The observer reads what the client was told before the call's event.
            self.recorder.client_answer(envelope);
            if let Some(mut p) = pending {
                p.progress.answered(upstream.clone());
                self.finish(key, p, upstream);
            }
            return;
        }
        let Some(envelope) = Envelope::parse(&line).filter(Envelope::is_response) else {
            self.send_client(line);
            return;
        };
        let key = envelope.id.as_ref().map(id_key).unwrap_or_default();
        let Some(mut p) = self.pending.remove(&key) else {
            if let Some(at) = self.swallow.iter().position(|k| *k == key) {
                self.swallow.remove(at);
            } else {
                self.send_client(line);
            }
            return;
        };
        let upstream = envelope.outcome();
        p.progress.answered(upstream.clone());
        if let Some(result) = &envelope.result {
            p.call.learn(&mut self.decider, result);
        }
        match p.plan.clone() {
            ResponsePlan::Pass => {
                self.send_client(line);
                self.finish(key, p, upstream);
            }
            ResponsePlan::Alter { rewrites, delay } => {
                let out = p
                    .call
                    .rewrite_response(&self.decider, self.mode, line, &rewrites);
                if delay.is_zero() {
                    let outcome = Outcome::of_answer(&out, &p.call.id);
                    self.send_client(out);
                    self.finish(key, p, outcome);
                } else {
                    p.held = Some(out);
                    p.wait = Some(self.start_wait(&key, WaitKind::Response, delay));
                    self.pending.insert(key, p, Instant::now());
                }
            }
            ResponsePlan::FilterList => {
                let out = p.call.filter_list(&self.decider, self.mode, line);
                self.send_client(out);
                self.finish(key, p, upstream);
            }
            ResponsePlan::Swallow => {
                self.pending.insert(key, p, Instant::now());
            }
            ResponsePlan::Replace { reply, delay } => {
                if p.wait.is_some() {
                    self.pending.insert(key, p, Instant::now());
                } else if delay.is_zero() {
                    self.send_client(reply.line(&p.call.id));
                    self.finish(key, p, reply_outcome(&reply));
                } else {
                    p.wait = Some(self.start_wait(&key, WaitKind::Reply, delay));
                    self.pending.insert(key, p, Instant::now());
                }
            }
        }
    }
}
