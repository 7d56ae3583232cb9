//! The answer the client gets: the proxy's own reply in the server's place, or the server's answer with the
//! faults' rewrites and delay applied, as a JSON body or an SSE stream with the tool list's change first.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};

use super::Exchange;
use crate::mcp_proxy::engine::{Composed, LIST_CHANGED, reply_outcome};
use crate::mcp_proxy::http::ProxyBody;
use crate::mcp_wire::jsonrpc::{Envelope, Outcome, Reply, id_key};
use crate::mcp_wire::sse;

/// The JSON-RPC errors MCP 2026-07-28 answers with HTTP 400 over Streamable HTTP: HEADER_MISMATCH,
/// MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION.
const ANSWERED_400: [i64; 3] = [-32020, -32021, -32022];

impl Exchange {
    /// Answers `reply` in the server's place.
    pub(super) fn reply(&mut self, reply: &Reply) -> Response<ProxyBody> {
        let mut line = reply.line(&self.id());
        // The report reads what the client was told (e.g. a Retry-After) before the call's event.
        self.proxy.engine().recorder.client_line(&line);
        self.finish(reply_outcome(reply));
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let (mut parts, ()) = Response::new(()).into_parts();
        parts.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Reply::Error { code, .. } = reply
            && ANSWERED_400.contains(code)
        {
            parts.status = StatusCode::BAD_REQUEST;
        }
        self.answer_response(parts, line)
    }

    /// The call's answer `message` as the client gets it: a JSON body, or an SSE stream with the tool list's
    /// change first.
    pub(super) fn answer_response(
        &mut self,
        mut parts: http::response::Parts,
        message: Vec<u8>,
    ) -> Response<ProxyBody> {
        let body = if std::mem::take(&mut self.list_changed) {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            let mut body = sse::message_event(LIST_CHANGED);
            body.extend(sse::message_event(&message));
            body
        } else {
            message
        };
        Response::from_parts(
            parts,
            Full::new(Bytes::from(body))
                .map_err(|e: Infallible| match e {})
                .boxed(),
        )
    }

    /// The server's answer message with the faults' rewrites and delay applied; the call's event is written.
    /// `None` when the client cancelled the call while its answer was held.
    pub(super) async fn answer(
        &mut self,
        message: Vec<u8>,
        composed: &Composed,
    ) -> Option<Vec<u8>> {
        self.progress.answered(Outcome::of_line(&message));
        if let Some(call) = self.call.as_ref().filter(|_| self.proxy.learns) {
            call.learn_line(&mut self.proxy.engine().decider, &message);
        }
        let out = match &self.call {
            Some(call)
                if !composed.passes_response() || self.proxy.engine().decider.hides_tools() =>
            {
                let engine = self.proxy.engine();
                let mut out = call.rewrite_response(
                    &engine.decider,
                    self.proxy.mode,
                    message,
                    &composed.rewrites,
                );
                if out.last() == Some(&b'\n') {
                    out.pop();
                }
                out
            }
            _ => message,
        };
        if !self.wait(composed.response_delay).await {
            return None;
        }
        self.proxy.engine().recorder.client_line(&out);
        let client = Outcome::of_answer(&out, &self.id());
        self.finish(client);
        Some(out)
    }

    /// Whether `message` is the answer to this call.
    pub(super) fn answers(&self, message: &[u8]) -> bool {
        let Some(call) = &self.call else {
            return false;
        };
        Envelope::parse(message)
            .filter(Envelope::is_response)
            .and_then(|e| e.id)
            .is_some_and(|id| id_key(&id) == id_key(&call.id))
    }
}
