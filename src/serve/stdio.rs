//! Serving on stdin/stdout, for a client that starts the server as its child process.

use rmcp::{ServerHandler, ServiceExt};

use super::ServeError;

/// A large file's function listing is a few hundred KiB on one line: through the default 64 KiB pipe the
/// server writes it in turns with the client's reads. With 1 MiB (Linux's default maximum without privileges) it goes out
/// in one write. Stdout that is not a pipe, or a refusal, leaves things as they are.
fn widen_stdout_pipe() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::pipe::fcntl_setpipe_size(std::io::stdout(), 1 << 20) {
        tracing::debug!(error = %e, "stdout keeps its pipe size");
    }
}

/// Serves `server` over MCP on stdin/stdout until the client closes stdin.
pub async fn serve_stdio<S: ServerHandler>(server: S) -> Result<(), ServeError> {
    widen_stdout_pipe();
    let service = match server.serve(rmcp::transport::stdio()).await {
        Ok(service) => service,
        // The client went away before the handshake (e.g. a config check): a clean end, not a failure.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(when)) => {
            tracing::info!(%when, "stdin closed before the MCP handshake");
            return Ok(());
        }
        Err(e) => return Err(ServeError::Start(e.to_string())),
    };
    let reason = service
        .waiting()
        .await
        .map_err(|e| ServeError::Run(e.to_string()))?;
    tracing::info!(?reason, "MCP session closed");
    Ok(())
}
