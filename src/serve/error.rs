//! What can stop our servers from serving: a bad flag, a port already taken, a session that failed.

use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("MCP session failed to start: {0}")]
    Start(String),
    #[error("MCP session ended with an error: {0}")]
    Run(String),
    #[error("{0} needs --transport http")]
    HttpFlagWithStdio(&'static str),
    #[error(transparent)]
    Http(#[from] HttpServeError),
}

/// Why Streamable HTTP serving could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpServeError {
    #[error("{flag}: {reason}")]
    Flag { flag: &'static str, reason: String },
    #[error("cannot listen on {listen}: {source}")]
    Bind {
        listen: SocketAddr,
        source: std::io::Error,
    },
}
