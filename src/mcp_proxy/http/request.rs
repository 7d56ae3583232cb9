//! One request from a client: read whole, a cancellation noted, and either forwarded untouched or, when it
//! is a call the faults or the report follow, decided and carried out as an [`Exchange`].

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use super::exchange::Exchange;
use super::headers::status_response;
use super::proxy::Proxy;
use super::{Dropped, MAX_BODY, ProxyBody, SESSION_HEADER};
use crate::mcp_proxy::engine::{Call, LIST_CHANGED};
use crate::mcp_wire::jsonrpc::Envelope;

impl Proxy {
    pub(super) async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
    ) -> Result<Response<ProxyBody>, Dropped> {
        let session = req
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(session) = &session
            && self.engine().expired.contains(session)
        {
            return Ok(status_response(StatusCode::NOT_FOUND, &[], None));
        }
        let (parts, body) = req.into_parts();
        let body = match Limited::new(body, MAX_BODY).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                let text = format!("fault mcp-proxy: cannot read the request body: {e}");
                return Ok(status_response(
                    StatusCode::BAD_REQUEST,
                    &[],
                    Some((text.into_bytes(), "text/plain")),
                ));
            }
        };
        let envelope = if self.transparent || parts.method != Method::POST {
            None
        } else {
            Envelope::parse(&body)
        };
        if let Some(e) = &envelope
            && !e.is_request()
            && e.method.as_deref() == Some("notifications/cancelled")
        {
            // The server gets the notification too: it ends its own work, the proxy its injected waits.
            self.cancel_call(session.as_deref(), e);
        }
        // A report learns the tools' output schemas and annotations from the listing's answer.
        let tracked = envelope.filter(|e| {
            e.is_request()
                && e.method.as_deref().is_some_and(|m| {
                    let engine = self.engine();
                    m == "tools/call"
                        || (m == "tools/list" && engine.recorder.observes())
                        // The report counts tasks by the tool whose call made them.
                        || (m.starts_with("tasks/") && engine.recorder.observes())
                        || engine.decider.watches_method(m)
                })
        });
        let upstream_request = self.upstream_request(&parts, body);
        let Some(envelope) = tracked else {
            if let Some(session) = session
                && self.notifies
                && parts.method == Method::GET
            {
                return Ok(self.forward_stream(upstream_request, session).await);
            }
            return Ok(self.forward_untouched(upstream_request).await);
        };
        let accepts_sse = parts
            .headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("text/event-stream"));
        let (call, composed) = {
            let mut engine = self.engine();
            let call = Call::decide(&mut engine.decider, &envelope);
            let composed = call.compose(&engine.decider);
            (call, composed)
        };
        let mut exchange = Exchange::new(self.clone(), call, session.as_deref());
        if exchange
            .call
            .as_ref()
            .is_some_and(|c| c.decision.notify_list_changed)
        {
            let sent = self.notify_streams(session.as_deref(), LIST_CHANGED);
            exchange.list_changed = !sent && accepts_sse;
            if !sent && !accepts_sse {
                tracing::warn!(
                    "mcp-proxy: no stream to send notifications/tools/list_changed on (no GET stream open, and the client does not accept SSE)"
                );
            }
        }
        exchange
            .run(upstream_request, composed, session.is_some())
            .await
    }
}
