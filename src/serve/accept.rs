//! The HTTP/1 accept loop every server here runs (our MCP servers, `fault mcp-proxy`'s HTTP front): each
//! connection served with Nagle off until the stop comes, then the open ones get a grace period to finish
//! before they are cut.

use std::{future::Future, time::Duration};

use http::{Request, Response};
use hyper::body::{Body, Incoming};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Serves the connections `listener` accepts with `handle` until `stop` resolves; `on_stop` then runs (to end
/// long-lived streams), and open connections get `grace` to finish. `name` prefixes the log lines.
pub async fn serve_connections<H, F, B, E>(
    name: &str,
    listener: TcpListener,
    handle: H,
    stop: impl Future<Output = ()>,
    on_stop: impl FnOnce(),
    grace: Duration,
) where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<Response<B>, E>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
    E: Into<BoxError>,
{
    let connections = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: wait a little rather than spin.
                        tracing::warn!("{name}: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // An SSE answer leaves in several writes: without this, Nagle holds the last one until the
                // client's delayed ACK (~40 ms per call).
                let _ = stream.set_nodelay(true);
                let handle = handle.clone();
                let service = hyper::service::service_fn(handle);
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service);
                let connection = connections.watch(connection);
                tokio::spawn(async move {
                    if let Err(e) = connection.await {
                        tracing::debug!(%peer, "HTTP connection ended: {e}");
                    }
                });
            }
        }
    }
    drop(listener);
    on_stop();
    if tokio::time::timeout(grace, connections.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("{name}: connections still open after {grace:?}; closing them");
    }
}
