//! Forwarding to the upstream server: the request rewritten for it (its own URI and Host), answers passed back
//! untouched, and GET streams that carry the proxy's own notifications between the server's events.

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use tokio::sync::mpsc;

use super::get_stream::{ChannelBody, GetStream};
use super::headers::{bad_gateway, end_to_end};
use super::proxy::Proxy;
use super::{BoxError, ProxyBody};
use crate::mcp_wire::sse;

impl Proxy {
    /// Forwards a GET stream of `session`, ready to carry the proxy's own notifications between its events.
    pub(super) async fn forward_stream(
        &self,
        request: Request<Full<Bytes>>,
        session: String,
    ) -> Response<ProxyBody> {
        let response = match self.send(request).await {
            Ok(response) => response,
            Err(e) => return bad_gateway(&e),
        };
        let (mut parts, body) = response.into_parts();
        parts.headers = end_to_end(&parts.headers);
        let is_stream = parts.status == StatusCode::OK
            && parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
        if !is_stream {
            return Response::from_parts(parts, body.map_err(BoxError::from).boxed());
        }
        let (inject, injected) = mpsc::unbounded_channel();
        self.streams().insert(session.clone(), inject.clone());
        let (out, rx) = mpsc::channel(64);
        let stream = GetStream {
            session,
            inject,
            injected,
            out,
        };
        tokio::spawn(stream.run(self.streams.clone(), body));
        Response::from_parts(parts, ChannelBody { rx }.boxed())
    }

    /// Puts `message` on every open GET stream (the faults' state is the proxy's, so every session's tool list
    /// changed); whether `session` had one open.
    pub(super) fn notify_streams(&self, session: Option<&str>, message: &[u8]) -> bool {
        let event = Bytes::from(sse::message_event(message));
        let mut reached = false;
        for (id, stream) in self.streams().iter() {
            let sent = stream.send(event.clone()).is_ok();
            reached |= sent && Some(id.as_str()) == session;
        }
        reached
    }

    pub(super) fn upstream_request(
        &self,
        parts: &http::request::Parts,
        body: Bytes,
    ) -> Request<Full<Bytes>> {
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", http::uri::PathAndQuery::as_str);
        let mut uri = http::uri::Builder::new().path_and_query(path);
        if let Some(scheme) = self.upstream.uri.scheme() {
            uri = uri.scheme(scheme.clone());
        }
        if let Some(authority) = self.upstream.uri.authority() {
            uri = uri.authority(authority.clone());
        }
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = parts.method.clone();
        *request.uri_mut() = uri.build().unwrap_or_else(|_| self.upstream.uri.clone());
        *request.headers_mut() = end_to_end(&parts.headers);
        // The client's Host named the proxy; the upstream gets its own.
        request.headers_mut().remove(header::HOST);
        request.headers_mut().remove(header::CONTENT_LENGTH);
        request
    }

    pub(super) async fn forward_untouched(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Response<ProxyBody> {
        match self.send(request).await {
            Ok(response) => {
                let (mut parts, body) = response.into_parts();
                parts.headers = end_to_end(&parts.headers);
                Response::from_parts(parts, body.map_err(BoxError::from).boxed())
            }
            Err(e) => bad_gateway(&e),
        }
    }
}
