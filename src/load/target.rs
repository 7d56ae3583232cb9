//! The request every virtual client sends: the user's description checked and serialized once, and where it
//! goes (resolved, reachable).

use std::{net::SocketAddr, time::Duration};

use bytes::Bytes;
use http::{
    Method,
    header::{HeaderName, HeaderValue},
};
use url::Url;

use super::LoadError;

/// The request every virtual client sends.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: Url,
    pub method: Method,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    host: String,
    port: u16,
    /// The request as sent on the wire, serialized once.
    pub(super) wire: Bytes,
}

impl Target {
    /// Validates the user's request description.
    pub fn parse(
        url: &str,
        method: &str,
        headers: &[(String, String)],
        body: &str,
    ) -> Result<Self, LoadError> {
        let parsed = Url::parse(url).map_err(|e| LoadError::Url {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        if parsed.scheme() != "http" && parsed.scheme() != "https" {
            return Err(LoadError::Scheme(parsed.scheme().to_owned()));
        }
        let host = parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| LoadError::Url {
                url: url.to_owned(),
                reason: "no host".into(),
            })?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = parsed.port_or_known_default().unwrap_or(80);
        let method_text = if method.trim().is_empty() {
            "GET".to_owned()
        } else {
            method.trim().to_ascii_uppercase()
        };
        let method = Method::from_bytes(method_text.as_bytes())
            .map_err(|_| LoadError::Method(method.to_owned()))?;
        let headers = headers
            .iter()
            .map(|(name, value)| {
                let header = |reason: String| LoadError::Header {
                    name: name.clone(),
                    reason,
                };
                Ok((
                    HeaderName::from_bytes(name.as_bytes()).map_err(|e| header(e.to_string()))?,
                    HeaderValue::from_str(value).map_err(|e| header(e.to_string()))?,
                ))
            })
            .collect::<Result<Vec<_>, LoadError>>()?;
        let mut path_and_query = parsed.path().to_owned();
        if let Some(query) = parsed.query() {
            path_and_query.push('?');
            path_and_query.push_str(query);
        }
        let authority = match parsed.port() {
            Some(p) => format!("{}:{p}", parsed.host_str().unwrap_or_default()),
            None => parsed.host_str().unwrap_or_default().to_owned(),
        };
        let host_header = HeaderValue::from_str(&authority).map_err(|e| LoadError::Url {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        let body = Bytes::from(body.to_owned());
        let wire = serialize_request(&method, &path_and_query, &host_header, &headers, &body);
        Ok(Self {
            url: parsed,
            method,
            headers,
            body,
            host,
            port,
            wire,
        })
    }

    /// How a report names it when it has no name of its own: "GET /orders".
    pub fn label(&self) -> String {
        format!("{} {}", self.method, self.url.path())
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn is_tls(&self) -> bool {
        self.url.scheme() == "https"
    }

    /// The first address of the URL's host, if the resolver answers within `within`.
    pub async fn resolve(&self, within: Duration) -> Result<SocketAddr, LoadError> {
        let resolve_error = |reason: String| LoadError::Resolve {
            host: self.host.clone(),
            reason,
        };
        tokio::time::timeout(
            within,
            tokio::net::lookup_host((self.host.as_str(), self.port)),
        )
        .await
        .map_err(|_| resolve_error(format!("no answer within {within:?}")))?
        .map_err(|e| resolve_error(e.to_string()))?
        .next()
        .ok_or_else(|| resolve_error("no address".into()))
    }

    /// A quick TCP connect to `addr`, so an unreachable service is reported before the run starts.
    pub async fn check_reachable(&self, addr: SocketAddr) -> Result<(), LoadError> {
        let unreachable = |reason: String| LoadError::Unreachable {
            url: crate::redact::redacted(&self.url),
            addr,
            reason,
        };
        match tokio::time::timeout(Duration::from_secs(3), tokio::net::TcpStream::connect(addr))
            .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(unreachable(e.to_string())),
            Err(_) => Err(unreachable("no answer within 3s".into())),
        }
    }
}

/// The HTTP/1.1 request bytes: request line, `Host` (unless the user gave one), the user's headers, and a
/// `content-length` of our own, since we frame the body.
fn serialize_request(
    method: &Method,
    path_and_query: &str,
    host: &HeaderValue,
    headers: &[(HeaderName, HeaderValue)],
    body: &[u8],
) -> Bytes {
    fn header(wire: &mut Vec<u8>, name: &str, value: &[u8]) {
        wire.extend_from_slice(name.as_bytes());
        wire.extend_from_slice(b": ");
        wire.extend_from_slice(value);
        wire.extend_from_slice(b"\r\n");
    }
    let mut wire = Vec::with_capacity(256 + body.len());
    wire.extend_from_slice(format!("{method} {path_and_query} HTTP/1.1\r\n").as_bytes());
    if !headers.iter().any(|(n, _)| n == http::header::HOST) {
        header(&mut wire, "host", host.as_bytes());
    }
    for (name, value) in headers {
        if name != http::header::CONTENT_LENGTH && name != http::header::TRANSFER_ENCODING {
            header(&mut wire, name.as_str(), value.as_bytes());
        }
    }
    if !body.is_empty() || matches!(method.as_str(), "POST" | "PUT" | "PATCH") {
        header(
            &mut wire,
            "content-length",
            body.len().to_string().as_bytes(),
        );
    }
    wire.extend_from_slice(b"\r\n");
    wire.extend_from_slice(body);
    Bytes::from(wire)
}
