//! The HTTP connection to an MCP server's Streamable HTTP endpoint, for everything that reaches one (the
//! proxy's HTTP front, its stdio bridge, the chaos scenario's clients): `http://` or `https://` (rustls: the
//! system roots plus an optional extra CA), optionally through the in-process TCP fault proxy of `fault run`
//! (`--upstream-fault`). The fault proxy only carries the bytes: requests keep the endpoint's URL, so the
//! `Host` header and the TLS server name stay the endpoint's.

use std::{
    future::Future,
    net::SocketAddr,
    path::PathBuf,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use bytes::Bytes;
use http::Uri;
use http_body_util::Full;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::{TokioExecutor, TokioIo},
};

use crate::proxy::{
    ProxyConfig, ProxyHandle, TcpFault,
    mapping::{Mapping, Upstream as TcpUpstream},
};
use crate::tls::ClientStream;

/// What can keep an endpoint from being reached; the caller adds which of its inputs it came from.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("{url}: {reason}")]
    Url { url: String, reason: String },
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsSetupError),
    #[error("{0}")]
    Faults(String),
}

/// How to reach the endpoint besides its URL.
#[derive(Debug, Default, Clone)]
pub struct EndpointOptions {
    /// An extra PEM CA trusted for an `https://` endpoint (else `$FAULT_PROXY_EXTRA_CA`).
    pub extra_ca: Option<PathBuf>,
    /// TCP faults on the connection.
    pub faults: Vec<TcpFault>,
    /// The seed of the TCP faults' decisions.
    pub seed: u64,
}

/// The HTTP/1 client of an endpoint (connection pool included).
pub type HttpClient = Client<EndpointConnector, Full<Bytes>>;

/// An MCP server's endpoint and the client that reaches it.
#[derive(Clone)]
pub struct Endpoint {
    pub uri: Uri,
    pub client: HttpClient,
    /// The TCP fault proxy the connections go through; it stops when the last clone is dropped.
    _faults: Option<Arc<ProxyHandle>>,
}

impl Endpoint {
    /// Checks `url` and readies its client (starting the TCP fault proxy when there are faults).
    pub async fn new(url: &str, options: &EndpointOptions) -> Result<Self, EndpointError> {
        let uri = parse_endpoint(url)?;
        let tls = if uri.scheme_str() == Some("https") {
            Some(crate::tls::connector(options.extra_ca.as_deref())?)
        } else {
            None
        };
        let faults = if options.faults.is_empty() {
            None
        } else {
            Some(Arc::new(start_fault_proxy(&uri, options).await?))
        };
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.enforce_http(false);
        let connector = EndpointConnector {
            http,
            tls,
            via: faults
                .as_ref()
                .and_then(|handle| handle.local_addrs().first().copied()),
        };
        Ok(Self {
            uri,
            client: Client::builder(TokioExecutor::new()).build(connector),
            _faults: faults,
        })
    }
}

/// An `http://` or `https://` URL with a host.
pub fn parse_endpoint(url: &str) -> Result<Uri, EndpointError> {
    let error = |reason: String| EndpointError::Url {
        url: url.to_owned(),
        reason,
    };
    let upstream: Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| error(e.to_string()))?;
    if !matches!(upstream.scheme_str(), Some("http" | "https")) || upstream.host().is_none() {
        return Err(error(
            "must be an http:// or https:// URL with a host".into(),
        ));
    }
    Ok(upstream)
}

fn default_port(uri: &Uri) -> u16 {
    uri.port_u16().unwrap_or(match uri.scheme_str() {
        Some("https") => 443,
        _ => 80,
    })
}

/// The TCP fault proxy on 127.0.0.1 (a free port), relaying to the endpoint's host and port.
async fn start_fault_proxy(
    uri: &Uri,
    options: &EndpointOptions,
) -> Result<ProxyHandle, EndpointError> {
    let host = uri
        .host()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let config = ProxyConfig {
        mappings: vec![Mapping {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            // Plain TCP: a TLS session, if any, runs end to end through it.
            upstream: TcpUpstream {
                host,
                port: default_port(uri),
                tls: false,
            },
        }],
        faults: options.faults.clone(),
        seed: Some(options.seed),
        ..ProxyConfig::default()
    };
    let handle = crate::proxy::start(config)
        .await
        .map_err(|e| EndpointError::Faults(e.to_string()))?;
    for fault in &options.faults {
        tracing::info!("connection fault to {uri}: {}", fault.describe());
    }
    Ok(handle)
}

/// Connects to the URL's host (or, with TCP faults, to the fault proxy), then speaks TLS for `https://`
/// with the URL's host as the server name.
#[derive(Clone)]
pub struct EndpointConnector {
    http: HttpConnector,
    tls: Option<tokio_rustls::TlsConnector>,
    via: Option<SocketAddr>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower_service::Service<Uri> for EndpointConnector {
    type Response = TokioIo<ClientStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(BoxError::from)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let mut http = self.http.clone();
        let tls = self.tls.clone();
        let via = self.via;
        Box::pin(async move {
            let target = match via {
                Some(addr) => Uri::try_from(format!("http://{addr}"))?,
                None => Uri::try_from(format!(
                    "http://{}:{}",
                    uri.host().unwrap_or_default(),
                    default_port(&uri)
                ))?,
            };
            let tcp = http.call(target).await?.into_inner();
            if uri.scheme_str() != Some("https") {
                return Ok(TokioIo::new(ClientStream::Plain(tcp)));
            }
            let tls = tls.ok_or("no TLS configuration for an https:// endpoint")?;
            let host = uri
                .host()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            let name = rustls::pki_types::ServerName::try_from(host)?;
            let stream = tls.connect(name, tcp).await?;
            Ok(TokioIo::new(ClientStream::Tls(Box::new(stream))))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_are_http_or_https_with_a_host() {
        assert!(parse_endpoint("http://127.0.0.1:8000/mcp").is_ok());
        assert!(parse_endpoint("https://mcp.example.com/mcp").is_ok());
        for bad in ["ftp://x/mcp", "/mcp", "127.0.0.1:8000"] {
            let error = parse_endpoint(bad).unwrap_err().to_string();
            assert!(error.contains(bad), "{bad}: {error}");
        }
    }
}
