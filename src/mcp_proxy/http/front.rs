//! The front itself: bound to its address, its shared state made from the plan, served in a task of its own
//! until it is stopped.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::proxy::{Engine, Proxy, Streams};
use crate::mcp_proxy::decide::{Decider, DeciderError};
use crate::mcp_proxy::engine::{Observer, Recorder};
use crate::mcp_proxy::events::EventLog;
use crate::mcp_proxy::plan::Plan;
use crate::mcp_wire::endpoint::Endpoint;

#[derive(Debug, thiserror::Error)]
pub enum HttpProxyError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("--events: {0}")]
    Events(#[from] crate::files::FileError),
    #[error(transparent)]
    Plan(#[from] DeciderError),
}

pub struct HttpProxyOptions {
    pub plan: Plan,
    pub upstream: Endpoint,
    pub listen: SocketAddr,
    pub events: Option<std::path::PathBuf>,
    pub observer: Option<Observer>,
}

/// How long open exchanges get to finish once the front is told to stop (a hung call is cut after it).
const STOP_GRACE: Duration = Duration::from_secs(1);

/// A running HTTP front.
pub struct HttpFront {
    /// Where clients send their requests: the upstream's path on the front's address.
    pub url: String,
    pub local_addr: SocketAddr,
    /// The server it forwards to.
    pub upstream: String,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl HttpFront {
    /// Stops accepting, gives open exchanges a moment to finish, then cuts them.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// Runs the front until the task is dropped.
pub async fn run(options: HttpProxyOptions) -> Result<(), HttpProxyError> {
    let front = start(options).await?;
    // Tests and scripts read the bound address (with `--listen 127.0.0.1:0`) from this line.
    eprintln!(
        "fault mcp-proxy: listening on {} -> {}",
        front.url, front.upstream
    );
    let _ = front.task.await;
    Ok(())
}

/// Binds the front and serves it in a task of its own.
pub async fn start(options: HttpProxyOptions) -> Result<HttpFront, HttpProxyError> {
    let upstream = options.upstream;
    let mut decider = Decider::new(&options.plan)?;
    let events = match &options.events {
        Some(path) => Some(EventLog::create(path)?),
        None => None,
    };
    let recorder = Recorder::new(events, options.observer);
    recorder.prepare(&mut decider);
    let transparent = decider.is_empty() && !recorder.is_active();
    let notifies = decider.hides_tools();
    let learns = decider.learned().is_some();
    let listener =
        TcpListener::bind(options.listen)
            .await
            .map_err(|source| HttpProxyError::Listen {
                addr: options.listen,
                source,
            })?;
    let local = listener
        .local_addr()
        .map_err(|source| HttpProxyError::Listen {
            addr: options.listen,
            source,
        })?;
    if !local.ip().is_loopback() {
        tracing::warn!("mcp-proxy: listening on {local}, beyond this machine");
    }
    let url = format!("http://{local}{}", upstream.uri.path());
    let upstream_text = upstream.uri.to_string();
    let proxy = Arc::new(Proxy {
        upstream,
        mode: options.plan.mode,
        transparent,
        engine: Mutex::new(Engine {
            decider,
            recorder,
            expired: HashSet::new(),
            expired_order: VecDeque::new(),
        }),
        cancels: Mutex::new(HashMap::new()),
        notifies,
        learns,
        streams: Streams::default(),
    });
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let stop = stop.clone();
        async move {
            crate::serve::accept::serve_connections(
                "mcp-proxy",
                listener,
                move |request| {
                    let proxy = proxy.clone();
                    async move { proxy.handle(request).await }
                },
                stop.cancelled_owned(),
                || {},
                STOP_GRACE,
            )
            .await;
        }
    });
    Ok(HttpFront {
        url,
        local_addr: local,
        upstream: upstream_text,
        stop,
        task,
    })
}
