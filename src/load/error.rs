//! Why a load run was refused or stopped before it measured anything.

use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(
        "url: '{url}' is not a valid absolute URL ({reason}); expected e.g. http://127.0.0.1:9090/path"
    )]
    Url { url: String, reason: String },
    #[error("url: scheme '{0}' is not supported; use http or https")]
    Scheme(String),
    #[error("method: '{0}' is not an HTTP method; use e.g. GET, POST, PUT, DELETE, PATCH, HEAD")]
    Method(String),
    #[error("headers: '{name}' is not a valid header ({reason})")]
    Header { name: String, reason: String },
    #[error("url: cannot resolve host '{host}': {reason}")]
    Resolve { host: String, reason: String },
    #[error("url: cannot connect to {addr} ({url}): {reason}")]
    Unreachable {
        url: String,
        addr: SocketAddr,
        reason: String,
    },
    #[error("TLS setup failed: {0}")]
    Tls(String),
    #[error("the load run was cancelled")]
    Cancelled,
}
