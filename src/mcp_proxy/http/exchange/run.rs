//! Carrying out a call's faults over HTTP: the request held, answered in the server's place, hung, refused with
//! a status, or forwarded, and the server's answer passed on, cut short or rewritten.

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use tokio::sync::mpsc;

use super::sse_rewrite::SseRewrite;
use super::{AnswerCut, Exchange};
use crate::mcp_proxy::engine::{Composed, connection_closed, reply_outcome, request_timed_out};
use crate::mcp_proxy::faults::{Action, HttpAction, OnCap};
use crate::mcp_proxy::http::get_stream::ChannelBody;
use crate::mcp_proxy::http::headers::{bad_gateway, end_to_end, http_outcome, status_response};
use crate::mcp_proxy::http::{
    BoxError, Dropped, MAX_BODY, MAX_EXPIRED_SESSIONS, ProxyBody, SESSION_HEADER,
};
use crate::mcp_wire::jsonrpc::Outcome;

impl Exchange {
    pub(in crate::mcp_proxy::http) async fn run(
        mut self,
        request: Request<Full<Bytes>>,
        composed: Composed,
        has_session: bool,
    ) -> Result<Response<ProxyBody>, Dropped> {
        if !self.wait(composed.request_delay).await {
            return Ok(self.cancelled());
        }
        let cut = match composed.terminal.clone() {
            None => AnswerCut::default(),
            Some(Action::Reply {
                after,
                reply,
                call_upstream,
            }) => {
                if call_upstream && let Ok(response) = self.send(request).await {
                    let status = response.status();
                    let body = response.into_body().collect().await;
                    self.progress.answered(match body {
                        Ok(_) if status.is_success() => Outcome::Result,
                        _ => http_outcome(status),
                    });
                }
                if !self.wait(after + composed.response_delay).await {
                    return Ok(self.cancelled());
                }
                return Ok(self.reply(&reply));
            }
            Some(Action::Hang {
                forward,
                max_hold,
                on_cap,
            }) => {
                if forward {
                    // The server runs the call; its answer is never delivered.
                    let proxy = self.proxy.clone();
                    self.progress.forwarded();
                    tokio::spawn(async move {
                        if let Ok(response) = proxy.send(request).await {
                            let _ = response.into_body().collect().await;
                        }
                    });
                }
                if !self.wait(max_hold).await {
                    return Ok(self.cancelled());
                }
                return match on_cap {
                    OnCap::Drop => {
                        // Held until the client cancels the call or closes its request.
                        self.waiting = true;
                        self.cancel.token.cancelled().await;
                        Ok(self.cancelled())
                    }
                    OnCap::Error => Ok(self.reply(&request_timed_out())),
                    OnCap::Close => {
                        self.finish(Outcome::None);
                        Err(Dropped)
                    }
                };
            }
            Some(Action::CloseClient) => {
                self.finish(Outcome::None);
                return Err(Dropped);
            }
            Some(Action::CrashServer { after, .. }) => AnswerCut {
                after_events: None,
                after: Some(after),
            },
            Some(Action::Http(HttpAction::Status {
                status,
                headers,
                body,
                expires_session,
            })) if has_session || !expires_session => {
                if expires_session {
                    self.expire_session(&request);
                }
                let status =
                    StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
                if let Some(wait) = headers
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case("retry-after"))
                    .and_then(|(_, value)| retry_after_ms(value))
                {
                    self.proxy.engine().recorder.retry_after(&self.id(), wait);
                }
                self.finish(http_outcome(status));
                return Ok(status_response(status, &headers, body));
            }
            Some(Action::Http(HttpAction::CutStream { after_events })) => AnswerCut {
                after_events: Some(after_events),
                after: None,
            },
            // A session expiry on a request without a session, and the actions `compose` never ends on.
            Some(_) => AnswerCut::default(),
        };
        let response = match self.send(request).await {
            Ok(response) => response,
            Err(e) => {
                let reply = connection_closed();
                tracing::warn!("mcp-proxy: upstream request failed: {e}");
                self.finish(reply_outcome(&reply));
                return Ok(bad_gateway(&e));
            }
        };
        let (mut parts, body) = response.into_parts();
        parts.headers = end_to_end(&parts.headers);
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if parts.status != StatusCode::OK {
            // The server's own 429 or 503 may ask for a wait too.
            if let Some(wait) = parts
                .headers
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(retry_after_ms)
            {
                self.proxy.engine().recorder.retry_after(&self.id(), wait);
            }
            self.progress.answered(http_outcome(parts.status));
            self.finish(http_outcome(parts.status));
            return Ok(Response::from_parts(
                parts,
                body.map_err(BoxError::from).boxed(),
            ));
        }
        parts.headers.remove(header::CONTENT_LENGTH);
        if content_type.starts_with("text/event-stream") {
            let (tx, rx) = mpsc::channel(64);
            let stream = SseRewrite {
                exchange: self,
                composed,
                cut,
                events: 0,
                out: tx,
            };
            tokio::spawn(stream.run(body));
            return Ok(Response::from_parts(parts, ChannelBody { rx }.boxed()));
        }
        let bytes = match Limited::new(body, MAX_BODY).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                self.finish(Outcome::Pending);
                tracing::warn!("mcp-proxy: cannot read the upstream answer: {e}");
                return Err(Dropped);
            }
        };
        if let Some(after) = cut.after {
            tokio::time::sleep(after).await;
        }
        if cut.is_set() {
            self.progress.answered(Outcome::of_line(&bytes));
            self.finish(Outcome::None);
            let (tx, rx) = mpsc::channel(1);
            let _ = tx.try_send(Err(BoxError::from(Dropped)));
            return Ok(Response::from_parts(parts, ChannelBody { rx }.boxed()));
        }
        let Some(out) = self.answer(bytes.to_vec(), &composed).await else {
            return Ok(self.cancelled());
        };
        Ok(self.answer_response(parts, out))
    }

    pub(super) fn expire_session(&self, request: &Request<Full<Bytes>>) {
        let Some(session) = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        else {
            return;
        };
        let mut engine = self.proxy.engine();
        if engine.expired.insert(session.to_owned()) {
            engine.expired_order.push_back(session.to_owned());
            if engine.expired_order.len() > MAX_EXPIRED_SESSIONS
                && let Some(old) = engine.expired_order.pop_front()
            {
                engine.expired.remove(&old);
            }
        }
    }
}

/// A `Retry-After` header's wait in ms (seconds or an HTTP date).
fn retry_after_ms(value: &str) -> Option<f64> {
    crate::http1::retry_after(value, std::time::SystemTime::now())
        .map(|wait| wait.as_secs_f64() * 1000.0)
}
