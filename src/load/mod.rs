//! Open-model HTTP load generator.
//!
//! Requests start on a fixed schedule (`num_clients × rps` per second for `duration`) whether or not earlier
//! ones have finished, so a slow service shows up as latency rather than as fewer requests (no coordinated
//! omission). Each virtual client keeps its own pool of kept-alive connections. Latency runs from the
//! scheduled start to the end of the body; `timeout` ends a request. Requests only go to the URL's host, or
//! to the address given in [`LoadPlan::connect_to`] (a proxy in front of it) with the URL's host kept for TLS
//! and `Host`.

mod client;
mod record;

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use hyper::{
    Method,
    header::{HeaderName, HeaderValue},
};
use tokio::{sync::mpsc, time::Instant};
use tokio_util::sync::CancellationToken;
use url::Url;

pub use record::{Outcome, Samples, SecondSamples};

use client::{Connector, Pool};

/// After `duration + timeout`, in-flight work gets this long to wind down before it is cut.
pub const GRACE: Duration = Duration::from_secs(2);

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

/// The request every virtual client sends.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: Url,
    pub method: Method,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    host: String,
    port: u16,
    path_and_query: String,
    host_header: HeaderValue,
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
        Ok(Self {
            url: parsed,
            method,
            headers,
            body: Bytes::from(body.to_owned()),
            host,
            port,
            path_and_query,
            host_header,
        })
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

    /// The first address of the URL's host.
    pub async fn resolve(&self) -> Result<SocketAddr, LoadError> {
        let resolve_error = |reason: String| LoadError::Resolve {
            host: self.host.clone(),
            reason,
        };
        tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|e| resolve_error(e.to_string()))?
            .next()
            .ok_or_else(|| resolve_error("no address".into()))
    }

    /// A quick TCP connect to `addr`, so an unreachable service is reported before the run starts.
    pub async fn check_reachable(&self, addr: SocketAddr) -> Result<(), LoadError> {
        let unreachable = |reason: String| LoadError::Unreachable {
            url: self.url.to_string(),
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

/// How requests are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Open model: each client starts `rps` requests per second on schedule.
    Open { rps: u32 },
    /// Closed loop: each client sends its next request as soon as the previous one ended (maximum rate,
    /// as `wrk -c num_clients` does). Used to measure the generator's own ceiling.
    Saturate,
}

#[derive(Debug, Clone)]
pub struct LoadPlan {
    pub target: Target,
    /// Dial this address instead of the URL's host (a proxy in front of it); TLS name and `Host` stay the URL's.
    pub connect_to: Option<SocketAddr>,
    pub num_clients: u32,
    pub pace: Pace,
    pub duration: Duration,
    pub timeout: Duration,
}

impl LoadPlan {
    /// How many requests the schedule starts (open model); `None` when saturating.
    pub fn planned_requests(&self) -> Option<u64> {
        match self.pace {
            Pace::Open { rps } => Some(u64::from(self.num_clients) * self.per_client(rps)),
            Pace::Saturate => None,
        }
    }

    fn per_client(&self, rps: u32) -> u64 {
        (f64::from(rps) * self.duration.as_secs_f64() + 1e-9).floor() as u64
    }

    fn seconds(&self) -> usize {
        self.duration.as_secs_f64().ceil().max(1.0) as usize
    }
}

/// Live counters, readable while the run goes on (for progress notifications).
#[derive(Debug, Default)]
pub struct Progress {
    pub started: AtomicU64,
    pub completed: AtomicU64,
    pub errors: AtomicU64,
}

/// What a finished run measured.
#[derive(Debug, Clone)]
pub struct LoadReport {
    pub started_at: chrono::DateTime<chrono::Utc>,
    pub ended_at: chrono::DateTime<chrono::Utc>,
    pub elapsed: Duration,
    pub planned: Option<u64>,
    pub connections_opened: u64,
    /// True when in-flight requests were cut at `duration + timeout + GRACE`.
    pub cut_short: bool,
    pub samples: Samples,
}

struct Shared {
    target: Target,
    timeout: Duration,
    start: Instant,
    stop: CancellationToken,
    progress: Arc<Progress>,
}

/// Runs the plan to its end, or until `cancel` fires (then `Err(Cancelled)`).
pub async fn run(
    plan: &LoadPlan,
    cancel: &CancellationToken,
    progress: Arc<Progress>,
) -> Result<LoadReport, LoadError> {
    let dial = match plan.connect_to {
        Some(addr) => addr,
        None => plan.target.resolve().await?,
    };
    let tls = if plan.target.is_tls() {
        // The proxy's TLS setup: system roots plus the CA in $FAULT_PROXY_EXTRA_CA, if any.
        let connector =
            crate::proxy::tls::connector(None).map_err(|e| LoadError::Tls(e.to_string()))?;
        let name = rustls::pki_types::ServerName::try_from(plan.target.host().to_owned())
            .map_err(|e| LoadError::Tls(format!("server name '{}': {e}", plan.target.host())))?;
        Some((connector, name))
    } else {
        None
    };
    let connector = Arc::new(Connector {
        dial,
        tls,
        opened: AtomicU64::new(0),
    });

    let stop = cancel.child_token();
    // If this future is dropped mid-run, the schedulers and in-flight requests stop with it.
    let _stop_on_drop = stop.clone().drop_guard();
    let started_at = chrono::Utc::now();
    let start = Instant::now();
    let shared = Arc::new(Shared {
        target: plan.target.clone(),
        timeout: plan.timeout,
        start,
        stop: stop.clone(),
        progress,
    });
    let seconds = plan.seconds();
    // Every request task holds a sender; the channel closes when the last one ends.
    let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
    let mut recorders = Vec::with_capacity(plan.num_clients as usize);
    for client_index in 0..plan.num_clients {
        let recorder = Arc::new(Mutex::new(Samples::new(seconds)));
        recorders.push(recorder.clone());
        let pool = Arc::new(Pool::new(connector.clone()));
        let shared = shared.clone();
        let done = done_tx.clone();
        let plan = plan.clone();
        tokio::spawn(async move {
            match plan.pace {
                Pace::Open { rps } => {
                    let interval = Duration::from_secs_f64(1.0 / f64::from(rps));
                    // Clients are spread evenly within one interval rather than firing together.
                    let offset =
                        interval.mul_f64(f64::from(client_index) / f64::from(plan.num_clients));
                    for k in 0..plan.per_client(rps) {
                        let scheduled = start + offset + interval.mul_f64(k as f64);
                        tokio::select! {
                            biased;
                            _ = shared.stop.cancelled() => break,
                            _ = tokio::time::sleep_until(scheduled) => {}
                        }
                        tokio::spawn(execute(
                            shared.clone(),
                            pool.clone(),
                            recorder.clone(),
                            scheduled,
                            done.clone(),
                        ));
                    }
                }
                Pace::Saturate => {
                    let end = start + plan.duration;
                    while Instant::now() < end && !shared.stop.is_cancelled() {
                        execute(
                            shared.clone(),
                            pool.clone(),
                            recorder.clone(),
                            Instant::now(),
                            done.clone(),
                        )
                        .await;
                    }
                }
            }
        });
    }
    drop(done_tx);

    let hard_deadline = start + plan.duration + plan.timeout + GRACE;
    let mut cut_short = false;
    tokio::select! {
        _ = cancel.cancelled() => {
            stop.cancel();
            return Err(LoadError::Cancelled);
        }
        _ = done_rx.recv() => {}
        _ = tokio::time::sleep_until(hard_deadline) => {
            tracing::warn!("load run cut at duration + timeout + grace");
            stop.cancel();
            cut_short = true;
        }
    }
    stop.cancel();
    let elapsed = start.elapsed();
    let mut samples = Samples::new(seconds);
    for recorder in &recorders {
        samples.merge(&recorder.lock().unwrap_or_else(|p| p.into_inner()));
    }
    Ok(LoadReport {
        started_at,
        ended_at: chrono::Utc::now(),
        elapsed,
        planned: plan.planned_requests(),
        connections_opened: connector.opened.load(Ordering::Relaxed),
        cut_short,
        samples,
    })
}

async fn execute(
    shared: Arc<Shared>,
    pool: Arc<Pool>,
    recorder: Arc<Mutex<Samples>>,
    scheduled: Instant,
    _done: mpsc::Sender<()>,
) {
    shared.progress.started.fetch_add(1, Ordering::Relaxed);
    let deadline = scheduled + shared.timeout;
    let result = tokio::select! {
        biased;
        _ = shared.stop.cancelled() => return,
        result = tokio::time::timeout_at(deadline, pool.exchange(&shared.target)) => result,
    };
    let latency = Instant::now().saturating_duration_since(scheduled);
    let (outcome, body_bytes) = match result {
        Err(_) => (Outcome::Timeout, 0),
        Ok(Err(e)) => (Outcome::Transport(e.to_string()), 0),
        Ok(Ok(answer)) if answer.status >= 400 => {
            (Outcome::HttpError(answer.status), answer.body_bytes)
        }
        Ok(Ok(answer)) => (Outcome::Success, answer.body_bytes),
    };
    if outcome != Outcome::Success {
        shared.progress.errors.fetch_add(1, Ordering::Relaxed);
    }
    let second = scheduled.saturating_duration_since(shared.start).as_secs() as usize;
    recorder
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .record(second, latency, outcome, body_bytes);
    shared.progress.completed.fetch_add(1, Ordering::Relaxed);
}
