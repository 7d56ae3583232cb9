//! Headers and status answers of the HTTP front: what passes end to end, and the answers it makes itself.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};

use super::ProxyBody;
use crate::mcp_wire::jsonrpc::Outcome;

/// The headers without the hop-by-hop ones (and those `Connection` names).
pub(super) fn end_to_end(headers: &HeaderMap) -> HeaderMap {
    const HOP_BY_HOP: &[&str] = &[
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ];
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .collect();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let name_str = name.as_str();
        if HOP_BY_HOP.contains(&name_str) || named.iter().any(|n| n == name_str) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

pub(super) fn http_outcome(status: StatusCode) -> Outcome {
    Outcome::Error {
        code: i64::from(status.as_u16()),
        message: format!("HTTP {status}"),
    }
}

pub(super) fn status_response(
    status: StatusCode,
    headers: &[(String, String)],
    body: Option<(Vec<u8>, &'static str)>,
) -> Response<ProxyBody> {
    let (bytes, content_type) = body.unwrap_or_default();
    let mut response = Response::new(
        Full::new(Bytes::from(bytes))
            .map_err(|e: Infallible| match e {})
            .boxed(),
    );
    *response.status_mut() = status;
    if !content_type.is_empty() {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

pub(super) fn bad_gateway(error: &str) -> Response<ProxyBody> {
    let text = format!("fault mcp-proxy: the upstream did not answer: {error}");
    status_response(
        StatusCode::BAD_GATEWAY,
        &[],
        Some((text.into_bytes(), "text/plain")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_are_dropped_and_mcp_headers_kept() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("connection", "keep-alive, x-hop"),
            ("keep-alive", "timeout=5"),
            ("x-hop", "1"),
            ("transfer-encoding", "chunked"),
            ("mcp-session-id", "abc"),
            ("mcp-protocol-version", crate::mcp_wire::PROTOCOL_VERSION),
            ("authorization", "Bearer t"),
            ("last-event-id", "7"),
        ] {
            headers.insert(
                http::HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        let kept = end_to_end(&headers);
        let names: Vec<&str> = kept.keys().map(http::HeaderName::as_str).collect();
        assert_eq!(
            names,
            [
                "mcp-session-id",
                "mcp-protocol-version",
                "authorization",
                "last-event-id"
            ]
        );
    }
}
