//! An SSE answer read event by event: the call's answer goes through the faults, the other events
//! (progress, logs, server requests) pass as they are, ids included; a cut ends the stream early.

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::sync::mpsc;

use super::super::{BoxError, Dropped};
use super::{AnswerCut, Exchange};
use crate::mcp_proxy::engine::{Composed, LIST_CHANGED};
use crate::mcp_wire::jsonrpc::Outcome;
use crate::mcp_wire::sse;

/// An SSE answer, read event by event: the call's answer goes through the faults, other events (progress,
/// logs, server requests) pass as they are, ids included.
pub(super) struct SseRewrite {
    pub(super) exchange: Exchange,
    pub(super) composed: Composed,
    pub(super) cut: AnswerCut,
    pub(super) events: u64,
    pub(super) out: mpsc::Sender<Result<Bytes, BoxError>>,
}

impl SseRewrite {
    pub(super) async fn run(mut self, mut body: Incoming) {
        if std::mem::take(&mut self.exchange.list_changed) {
            let event = Bytes::from(sse::message_event(LIST_CHANGED));
            if self.out.send(Ok(event)).await.is_err() {
                return;
            }
        }
        let deadline = self
            .cut
            .after
            .map(|after| tokio::time::Instant::now() + after);
        let mut splitter = sse::EventSplitter::default();
        loop {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                () = sleep_until(deadline) => {
                    self.cut_now().await;
                    return;
                }
                () = self.out.closed() => return,
            };
            match frame {
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    for event in splitter.push(&data) {
                        if !self.event(event).await {
                            return;
                        }
                    }
                }
                Some(Err(e)) => {
                    let _ = self.out.send(Err(BoxError::from(e))).await;
                    self.exchange.upstream_broke();
                    self.exchange.finish(Outcome::None);
                    return;
                }
                None => break,
            }
        }
        let rest = splitter.rest();
        if !rest.is_empty() {
            let _ = self.out.send(Ok(Bytes::from(rest))).await;
        }
        // The stream ended without the call's answer.
        self.exchange.finish(Outcome::None);
    }

    /// Passes (or rewrites) one event; false once the stream is over for the client.
    async fn event(&mut self, event: Vec<u8>) -> bool {
        if self
            .cut
            .after_events
            .is_some_and(|limit| self.events >= limit)
        {
            self.cut_now().await;
            return false;
        }
        self.events += 1;
        let event = match sse::data(&event) {
            Some(data) if self.exchange.answers(&data) => {
                // A client that closes its request while the answer is held releases it at once: the
                // exchange, dropped with this task, records the cancellation.
                let answered = tokio::select! {
                    answered = self.exchange.answer(data, &self.composed) => answered,
                    () = self.out.closed() => return false,
                };
                let Some(message) = answered else {
                    // Cancelled while held: the stream ends without the answer.
                    self.exchange.finish(Outcome::None);
                    return false;
                };
                sse::with_data(&event, &message)
            }
            _ => event,
        };
        self.out.send(Ok(Bytes::from(event))).await.is_ok()
    }

    async fn cut_now(&mut self) {
        let _ = self.out.send(Err(BoxError::from(Dropped))).await;
        self.exchange.finish(Outcome::None);
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
