//! The store's connection to Qdrant: one node, or several of a cluster failed over between, and the
//! client's errors said in the user's terms.

use std::{
    sync::atomic::{AtomicUsize, Ordering},
    time::Duration,
};

use futures::future::BoxFuture;
use qdrant_client::{Qdrant, QdrantError};

use super::layout::ClusterLayout;
use crate::index::store::StoreError;

pub struct QdrantStore {
    /// The nodes given, in order: one, or several of a cluster to fail over between.
    pub(super) nodes: Vec<Node>,
    /// The node that answered last, asked first.
    pub(super) current: AtomicUsize,
    pub(super) collection: String,
    pub(super) layout: ClusterLayout,
    /// How long one request may take, said in the error of a request that took longer.
    pub(super) timeout: Duration,
}

/// How long a request to Qdrant may take by default (`--qdrant-timeout`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long connecting to one node may take before the next is asked.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

pub(super) struct Node {
    pub(super) client: Qdrant,
    /// Shown in logs, errors and results: without credentials or query.
    pub(super) url: String,
}

impl QdrantStore {
    /// A client for `urls` (gRPC, usually port 6334): one URL, or several nodes of a cluster separated by commas,
    /// each asked in turn while the one before cannot be reached. Each request may take `timeout`. Nothing is
    /// sent until the first call.
    pub fn connect(
        urls: &str,
        api_key: Option<String>,
        collection: &str,
        layout: ClusterLayout,
        timeout: Duration,
    ) -> Result<QdrantStore, StoreError> {
        let nodes = urls
            .split(',')
            .map(str::trim)
            .filter(|url| !url.is_empty())
            .map(|url| {
                let client =
                    client(url, api_key.clone(), timeout, CONNECT_TIMEOUT).map_err(|e| {
                        StoreError::Qdrant {
                            url: crate::redact::redacted_text(url),
                            message: crate::redact::redacted_text(&e.to_string()),
                        }
                    })?;
                Ok(Node {
                    client,
                    url: crate::redact::redacted_text(url),
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        if nodes.is_empty() {
            return Err(StoreError::Qdrant {
                url: urls.to_owned(),
                message: "no URL given".into(),
            });
        }
        Ok(QdrantStore {
            nodes,
            current: AtomicUsize::new(0),
            collection: collection.to_owned(),
            layout,
            timeout,
        })
    }

    /// Whether a Qdrant answers a health check at `url` within `within`.
    pub async fn answers(url: &str, api_key: Option<String>, within: Duration) -> bool {
        let Ok(client) = client(url, api_key, within, within) else {
            return false;
        };
        matches!(
            tokio::time::timeout(within, client.health_check()).await,
            Ok(Ok(_))
        )
    }

    /// Runs `op` on the node that answered last; while a node cannot be reached (refused, down), on the next
    /// one in turn, which is then asked first. Any other error is the answer. `what` prefixes its message.
    pub(super) async fn on_a_node<T>(
        &self,
        what: &str,
        op: impl for<'c> Fn(&'c Qdrant) -> BoxFuture<'c, Result<T, QdrantError>>,
    ) -> Result<T, StoreError> {
        // The client's errors quote the address it was given, credentials and all.
        let message = |e: &QdrantError| {
            crate::redact::redacted_text(&format!("{what}{}", explained(e, self.timeout)))
        };
        let count = self.nodes.len();
        let first = self.current.load(Ordering::Relaxed) % count;
        let mut unreachable = Vec::new();
        for step in 0..count {
            let index = (first + step) % count;
            let node = &self.nodes[index];
            match op(&node.client).await {
                Ok(value) => {
                    if step > 0 {
                        self.current.store(index, Ordering::Relaxed);
                        tracing::warn!(down = %unreachable.join("; "), now = %node.url,
                            "Qdrant node(s) unreachable: continuing on the next");
                    }
                    return Ok(value);
                }
                Err(e) if count > 1 && cannot_reach(&e) => {
                    unreachable.push(format!("{}: {}", node.url, message(&e)));
                }
                Err(e) => {
                    return Err(StoreError::Qdrant {
                        url: node.url.clone(),
                        message: message(&e),
                    });
                }
            }
        }
        Err(StoreError::Qdrant {
            url: self.location_text(),
            message: format!("no node could be reached: {}", unreachable.join("; ")),
        })
    }

    /// The nodes' URLs as given, comma-separated.
    pub(super) fn location_text(&self) -> String {
        self.nodes
            .iter()
            .map(|node| node.url.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A gRPC client for one node; nothing is sent until it is used.
fn client(
    url: &str,
    api_key: Option<String>,
    timeout: Duration,
    connect_timeout: Duration,
) -> Result<Qdrant, QdrantError> {
    Qdrant::from_url(url)
        .api_key(api_key)
        .timeout(timeout)
        .connect_timeout(connect_timeout)
        // The compatibility check prints to stdout, which carries JSON-RPC here.
        .skip_compatibility_check()
        .build()
}

/// The client's error with what it means for the user: a request that took longer than `timeout`, or a
/// connection that could not be made or was lost; any other error as Qdrant said it.
fn explained(error: &QdrantError, timeout: Duration) -> String {
    let QdrantError::ResponseError { status } = error else {
        return error.to_string();
    };
    let detail = status.message();
    let timed_out = matches!(
        status.code(),
        tonic::Code::Cancelled | tonic::Code::DeadlineExceeded
    ) && detail.to_ascii_lowercase().contains("timeout");
    if timed_out {
        format!(
            "did not answer within {} (--qdrant-timeout); it may be overloaded, or the network to it may be \
             dropping traffic",
            humantime::format_duration(timeout)
        )
    } else if cannot_reach(error) {
        format!(
            "lost the connection, or could not make one ({detail}); check that Qdrant is up and reachable, then \
             run again"
        )
    } else {
        error.to_string()
    }
}

/// Whether `error` says that what was to be created exists already.
pub(super) fn already_exists(error: &QdrantError) -> bool {
    matches!(error, QdrantError::ResponseError { status }
        if status.code() == tonic::Code::AlreadyExists || status.message().contains("already exists"))
}

/// Whether `error` says the node could not be reached at all (refused, down, unreachable), so that another
/// node of the cluster may answer; any other error is the cluster's answer.
fn cannot_reach(error: &QdrantError) -> bool {
    let QdrantError::ResponseError { status } = error else {
        return false;
    };
    match status.code() {
        tonic::Code::Unavailable => true,
        // How the client reports a refused connection, and a connection lost mid-request.
        tonic::Code::Internal => status.message().starts_with("Failed to connect"),
        tonic::Code::Unknown => status.message().contains("transport error"),
        // A connection reset under a request in flight: its stream is cancelled (a timeout, which is
        // cancelled too, is told apart by its message before this is asked).
        tonic::Code::Cancelled => !status.message().to_ascii_lowercase().contains("timeout"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: tonic::Code, message: &str) -> QdrantError {
        QdrantError::ResponseError {
            status: tonic::Status::new(code, message),
        }
    }

    #[test]
    fn a_stream_cancelled_by_a_reset_is_a_lost_connection_and_a_timeout_stays_a_timeout() {
        let timeout = Duration::from_secs(3);
        let reset = explained(
            &status(tonic::Code::Cancelled, "operation was canceled"),
            timeout,
        );
        assert!(reset.starts_with("lost the connection"), "{reset}");
        let late = explained(&status(tonic::Code::Cancelled, "Timeout expired"), timeout);
        assert!(late.starts_with("did not answer within 3s"), "{late}");
        let refused = explained(&status(tonic::Code::InvalidArgument, "bad vector"), timeout);
        assert!(!refused.contains("lost the connection"), "{refused}");
    }
}
