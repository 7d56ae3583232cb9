//! An exchange's own record of its call: registered for a cancel when it starts, its injected waits, what the
//! server did, and its event written once, at its end or when the client closes the request.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use serde_json::Value;

use super::Exchange;
use crate::mcp_proxy::engine::{Call, CallProgress};
use crate::mcp_proxy::http::ProxyBody;
use crate::mcp_proxy::http::cancel::{CancelSignal, cancel_key};
use crate::mcp_proxy::http::headers::status_response;
use crate::mcp_proxy::http::proxy::Proxy;
use crate::mcp_wire::jsonrpc::Outcome;

impl Exchange {
    pub(in crate::mcp_proxy::http) fn new(
        proxy: Arc<Proxy>,
        call: Call,
        session: Option<&str>,
    ) -> Self {
        let cancel = Arc::new(CancelSignal::default());
        let cancel_key = cancel_key(session, &call.id);
        proxy.cancels().insert(cancel_key.clone(), cancel.clone());
        Self {
            proxy,
            call: Some(call),
            progress: CallProgress::default(),
            waiting: false,
            cancel,
            cancel_key,
            list_changed: false,
        }
    }

    pub(super) fn id(&self) -> Value {
        self.call.as_ref().map_or(Value::Null, |c| c.id.clone())
    }

    /// Holds the call for `delay`; false when the client cancelled it meanwhile (the wait then ends at once).
    pub(super) async fn wait(&mut self, delay: Duration) -> bool {
        if delay.is_zero() {
            return !self.cancel.token.is_cancelled();
        }
        self.waiting = true;
        tokio::select! {
            () = tokio::time::sleep(delay) => {
                self.waiting = false;
                true
            }
            () = self.cancel.token.cancelled() => false,
        }
    }

    /// The client cancelled the call during an injected wait: the call ends without an answer, and the
    /// client's request gets an SSE stream that ends at once (as a server closes a cancelled request's stream).
    pub(super) fn cancelled(&mut self) -> Response<ProxyBody> {
        self.finish(Outcome::None);
        let mut response = status_response(StatusCode::OK, &[], None);
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        response
    }

    /// The call's event is written, the client having received `client`.
    /// The server's side broke off before its answer.
    pub(super) fn upstream_broke(&mut self) {
        self.progress.upstream = Some(Outcome::Pending);
    }

    pub(super) fn finish(&mut self, client: Outcome) {
        let Some(call) = self.call.take() else {
            return;
        };
        if let Some(&at) = self.cancel.at.get() {
            self.progress.cancelled(at, self.waiting);
        }
        self.proxy.record(&call, self.progress.end(&call, client));
    }

    pub(super) async fn send(
        &mut self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, String> {
        self.progress.forwarded();
        let sent = self.proxy.send(request).await;
        if let Err(e) = &sent {
            self.progress.upstream = Some(Outcome::Error {
                code: 502,
                message: e.clone(),
            });
        }
        sent
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        {
            let mut cancels = self.proxy.cancels();
            // A later call may have reused the id in the session.
            if cancels
                .get(&self.cancel_key)
                .is_some_and(|signal| Arc::ptr_eq(signal, &self.cancel))
            {
                cancels.remove(&self.cancel_key);
            }
        }
        let Some(call) = self.call.take() else {
            return;
        };
        // Closing the request is the cancellation, unless the client sent one first.
        let at = self.cancel.at.get().copied().unwrap_or_else(Instant::now);
        self.progress.cancelled(at, self.waiting);
        self.proxy
            .record(&call, self.progress.end(&call, Outcome::None));
    }
}
