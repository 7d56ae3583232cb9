//! How our MCP servers (`fault agent tool`, `fault mcp-test-server`) are served: on stdio ([`stdio`]), or over
//! Streamable HTTP ([`http`], behind the flags of [`options`]), the result shaping their tools share
//! ([`results`]), and their calls run as tasks ([`tasks`]). The HTTP accept loop ([`accept`]) is also
//! `fault mcp-proxy`'s.

pub mod accept;
mod error;
pub mod http;
mod options;
mod results;
mod stdio;
pub(crate) mod tasks;

use rmcp::ServerHandler;

pub use error::{HttpServeError, ServeError};
pub use http::terminated;
pub use options::{DEFAULT_LISTEN, DEFAULT_PATH, Transport, TransportArgs};
pub(crate) use results::{json_and_structured, output_schema, text_and_structured, tool_error};
pub use stdio::serve_stdio;

/// Serves `server` on the transport of `transport`. Over HTTP every session gets a clone of `server`, so
/// what its clones share (e.g. the one impact-scenario slot) is shared by all sessions.
pub async fn serve_on<S>(name: &str, transport: &TransportArgs, server: S) -> Result<(), ServeError>
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    match transport.transport {
        Transport::Stdio => match transport.http_only_flag_given() {
            Some(flag) => Err(ServeError::HttpFlagWithStdio(flag)),
            None => serve_stdio(server).await,
        },
        Transport::Http => Ok(http::serve(name, transport, move || server.clone()).await?),
    }
}
