//! MCP over Streamable HTTP for any of our rmcp servers: rmcp's `StreamableHttpService` speaks the protocol
//! (sessions, SSE and JSON responses, `Host` and `Origin` checks); this puts it on hyper behind the endpoint
//! path and the optional bearer token, logs the URL, and shuts down cleanly on SIGINT/SIGTERM.

use std::{convert::Infallible, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use rmcp::{
    ServerHandler,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use super::{HttpServeError, TransportArgs, accept};

/// How long open requests and streams get to finish after SIGINT/SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// Serves the servers `make_server` builds (one per session) over Streamable HTTP until SIGINT or SIGTERM.
/// `name` prefixes the log lines, e.g. "fault agent tool".
pub async fn serve<S>(
    name: &str,
    args: &TransportArgs,
    make_server: impl Fn() -> S + Send + Sync + 'static,
) -> Result<(), HttpServeError>
where
    S: ServerHandler + Send + 'static,
{
    let settings = args.http_settings()?;
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .map_err(|source| HttpServeError::Bind {
            listen: settings.listen,
            source,
        })?;
    let local = listener
        .local_addr()
        .map_err(|source| HttpServeError::Bind {
            listen: settings.listen,
            source,
        })?;
    let url = format!("http://{local}{}", settings.path);
    tracing::info!(
        %url,
        sessions = !settings.stateless,
        bearer_token = settings.token.is_some(),
        "{name}: serving MCP over Streamable HTTP at {url}"
    );

    if !local.ip().is_loopback() && settings.token.is_none() {
        tracing::warn!(
            "{name}: listening on {local} without --auth-token-env: anyone who reaches it can call the tools"
        );
    }

    let stop_sessions = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(settings.allowed_hosts)
        .with_legacy_session_mode(!settings.stateless)
        .with_json_response(settings.stateless)
        .with_cancellation_token(stop_sessions.child_token());
    // An empty list still checks: a browser page of another origin is refused, as the transport spec asks.
    config = config
        .with_allowed_origins(settings.allowed_origins)
        .enforce_origin_validation();
    let endpoint = Arc::new(ServedEndpoint {
        path: settings.path,
        token: settings.token,
        mcp: StreamableHttpService::new(
            move || Ok(make_server()),
            LocalSessionManager::default().into(),
            config,
        ),
    });

    let served_name = name.to_owned();
    accept::serve_connections(
        name,
        listener,
        move |request| {
            let endpoint = endpoint.clone();
            async move { Ok::<_, Infallible>(endpoint.handle(request).await) }
        },
        async {
            terminated().await;
            tracing::info!("{served_name}: shutting down");
        },
        // Ends every session and its SSE streams, so the connections can close.
        || stop_sessions.cancel(),
        SHUTDOWN_GRACE,
    )
    .await;
    Ok(())
}

/// The MCP endpoint: its path, its token, and rmcp's service behind them.
struct ServedEndpoint<S: ServerHandler + Send + 'static> {
    path: String,
    token: Option<String>,
    mcp: StreamableHttpService<S, LocalSessionManager>,
}

impl<S: ServerHandler + Send + 'static> ServedEndpoint<S> {
    async fn handle(&self, request: Request<hyper::body::Incoming>) -> HttpResponse {
        if request.uri().path() != self.path {
            return plain(
                StatusCode::NOT_FOUND,
                format!("Not Found: the MCP endpoint is {}", self.path),
            );
        }
        if let Some(token) = &self.token
            && let Err(refusal) = check_bearer(request.headers(), token)
        {
            tracing::warn!(method = %request.method(), "refused an MCP request: {refusal}");
            let mut response = plain(StatusCode::UNAUTHORIZED, format!("Unauthorized: {refusal}"));
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static(r#"Bearer realm="fault""#),
            );
            return response;
        }
        let ends_session = request.method() == http::Method::DELETE;
        let mut response = self.mcp.handle(request).await;
        // rmcp answers a session's end with 202; clients (the official Python SDK) expect 200 or 204.
        if ends_session && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        response
    }
}

/// Why a request's bearer token was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
enum BearerRefusal {
    #[error("an Authorization: Bearer header is required")]
    Missing,
    #[error("the bearer token is wrong")]
    Wrong,
}

/// Checks `Authorization: Bearer <token>`; the token is compared in constant time.
fn check_bearer(headers: &http::HeaderMap, token: &str) -> Result<(), BearerRefusal> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(BearerRefusal::Missing)?
        .as_bytes();
    let scheme = b"bearer ";
    if value.len() < scheme.len() || !value[..scheme.len()].eq_ignore_ascii_case(scheme) {
        return Err(BearerRefusal::Missing);
    }
    let given = value[scheme.len()..].trim_ascii();
    if bool::from(given.ct_eq(token.as_bytes())) {
        Ok(())
    } else {
        Err(BearerRefusal::Wrong)
    }
}

fn plain(status: StatusCode, text: String) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Resolves on SIGTERM or SIGINT (never, when neither can be listened for).
pub async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("cannot listen for SIGTERM/SIGINT: the server stops only when killed");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_authorization(value: &str) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value.parse().unwrap());
        headers
    }

    #[test]
    fn the_bearer_token_must_match_exactly() {
        let token = "s3cret-token";
        assert_eq!(
            check_bearer(&with_authorization("Bearer s3cret-token"), token),
            Ok(())
        );
        assert_eq!(
            check_bearer(&with_authorization("bearer s3cret-token"), token),
            Ok(())
        );
        assert_eq!(
            check_bearer(&with_authorization("Bearer s3cret-toke"), token),
            Err(BearerRefusal::Wrong)
        );
        assert_eq!(
            check_bearer(&with_authorization("Bearer s3cret-token2"), token),
            Err(BearerRefusal::Wrong)
        );
        assert_eq!(
            check_bearer(&with_authorization("Basic czNjcmV0"), token),
            Err(BearerRefusal::Missing)
        );
        assert_eq!(
            check_bearer(&http::HeaderMap::new(), token),
            Err(BearerRefusal::Missing)
        );
    }
}
