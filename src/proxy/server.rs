//! A running proxy: its listeners bound at once, each accepted connection relayed through the faults, and the
//! handle that reads its counters and stops it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{
    Flow, Mapping, ParseError, ProxyConfig, TcpFault, Upstream, exchanges, relay,
    relay::{Counters, ProxyFault, Runtime},
};
use crate::tls;

/// Default time to wait for an upstream to accept a connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("invalid proxy configuration: {0}")]
    Config(#[from] ParseError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("TLS setup for https upstreams failed: {0}")]
    Tls(#[from] tls::TlsSetupError),
    #[error("no mapping given; expected at least one LISTEN=UPSTREAM such as 34000=127.0.0.1:8080")]
    NoMapping,
}

/// Counters of a running proxy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProxyStats {
    /// Connections accepted since start.
    pub connections_total: u64,
    /// Connections open now.
    pub connections_active: u64,
    /// Connections closed because their upstream could not be reached.
    pub upstream_failures: u64,
    /// Bytes written to upstreams (request flow).
    pub bytes_to_upstream: u64,
    /// Bytes written to clients (response flow).
    pub bytes_to_client: u64,
    /// Chunks each fault kind acted on (delayed, dropped, replaced, or closed on).
    pub faults_applied: BTreeMap<String, u64>,
    /// Times each configured fault acted, in configuration order (two faults of one kind apart).
    pub applied_by_fault: Vec<u64>,
    /// HTTP/1 requests written to upstreams, when the proxy counts them ([`ProxyConfig::count_requests`]).
    pub requests_to_upstream: u64,
    /// Request flows that were not (or stopped being) HTTP/1, so their requests were not all counted.
    pub opaque_request_flows: u64,
}

/// A running proxy. Dropping it stops accepting and closes connections in the background;
/// [`ProxyHandle::stop`] does the same and waits until everything is closed.
pub struct ProxyHandle {
    local_addrs: Vec<SocketAddr>,
    mappings: Vec<Mapping>,
    runtime: Arc<Runtime>,
    cancel: CancellationToken,
    listeners: Vec<JoinHandle<()>>,
}

impl ProxyHandle {
    /// The bound listen address of each mapping, in configuration order (port 0 resolved).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// The mappings with their bound listen addresses.
    pub fn mappings(&self) -> &[Mapping] {
        &self.mappings
    }

    /// The exchanges timed so far, when the proxy was started to measure them ([`start_with`]).
    pub fn exchanges(&self) -> Option<&exchanges::ExchangeRecorder> {
        self.runtime.exchanges.as_ref()
    }

    /// A view of the running proxy's counters that outlives a borrow (for a metrics page).
    /// Counts the faults' windows (`sched`) from `origin` rather than from the proxy's start: the instant the
    /// load it stands in started, which reaches the proxy only once that load has begun (Locust's test
    /// starts after the proxy is up). Only the first call counts.
    pub fn schedule_from(&self, origin: Instant) {
        let _ = self.runtime.schedule_origin.set(origin);
    }

    pub fn view(&self) -> ProxyView {
        ProxyView {
            runtime: self.runtime.clone(),
        }
    }

    pub fn stats(&self) -> ProxyStats {
        self.view().stats()
    }
}

/// The counters of a running proxy, readable from another task ([`ProxyHandle::view`]).
#[derive(Clone)]
pub struct ProxyView {
    runtime: Arc<Runtime>,
}

impl ProxyView {
    /// The exchanges timed so far, when the proxy measures them.
    pub fn exchanges(&self) -> Option<&exchanges::ExchangeRecorder> {
        self.runtime.exchanges.as_ref()
    }

    /// Each configured fault, in configuration order, and whether it is inside one of its windows now.
    pub fn faults_active(&self) -> Vec<(&TcpFault, bool)> {
        let since_start = self.runtime.since_schedule_start(Instant::now());
        self.runtime
            .faults
            .iter()
            .map(|fault| (&fault.spec, fault.active_at(since_start)))
            .collect()
    }

    pub fn stats(&self) -> ProxyStats {
        let c = &self.runtime.counters;
        let mut faults_applied = BTreeMap::new();
        let mut applied_by_fault = Vec::with_capacity(self.runtime.faults.len());
        for fault in &self.runtime.faults {
            let applied = fault.applied.load(Ordering::Relaxed);
            *faults_applied
                .entry(fault.spec.kind().to_string())
                .or_insert(0) += applied;
            applied_by_fault.push(applied);
        }
        ProxyStats {
            connections_total: c.connections_total.load(Ordering::Relaxed),
            connections_active: c.connections_active.load(Ordering::Relaxed),
            upstream_failures: c.upstream_failures.load(Ordering::Relaxed),
            bytes_to_upstream: c.bytes[Flow::Request.index()].load(Ordering::Relaxed),
            bytes_to_client: c.bytes[Flow::Response.index()].load(Ordering::Relaxed),
            faults_applied,
            applied_by_fault,
            requests_to_upstream: c.requests_to_upstream.load(Ordering::Relaxed),
            opaque_request_flows: c.opaque_request_flows.load(Ordering::Relaxed),
        }
    }
}

impl ProxyHandle {
    /// Closes every listener and every connection; on return the ports are free.
    pub async fn stop(mut self) {
        self.cancel.cancel();
        for task in self.listeners.drain(..) {
            let _ = task.await;
        }
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// How a proxy that measures its exchanges groups them and cuts them into phases.
#[derive(Debug, Clone, Default)]
pub struct ExchangeSetup {
    /// `--group` patterns, tried in order.
    pub groups: Vec<exchanges::GroupPattern>,
    /// Where the report's phases start (the faults' windows' edges), from the proxy's start.
    pub cuts: Vec<Duration>,
}

/// Binds every listener (a port in use fails at once, naming the address), then serves.
pub async fn start(config: ProxyConfig) -> Result<ProxyHandle, ProxyError> {
    start_with(config, None).await
}

/// [`start`], also timing every HTTP/1 exchange ([`ProxyHandle::exchanges`]) when `measure` is given.
pub async fn start_with(
    config: ProxyConfig,
    measure: Option<ExchangeSetup>,
) -> Result<ProxyHandle, ProxyError> {
    if config.mappings.is_empty() {
        return Err(ProxyError::NoMapping);
    }
    let mut faults = Vec::with_capacity(config.faults.len());
    for spec in &config.faults {
        spec.validate()?;
        let windows = spec
            .windows(config.run_duration)
            .map_err(|e| ParseError::new(format!("{} sched: {e}", spec.kind())))?;
        let common = spec.common();
        let mut flows = [false; 2];
        for flow in common.side.flows(common.direction) {
            flows[flow.index()] = true;
        }
        faults.push(ProxyFault {
            injector: spec.injector(),
            spec: spec.clone(),
            flows,
            windows,
            reads_http: spec.reads_http(),
            applied: AtomicU64::new(0),
        });
    }

    let mut listeners = Vec::with_capacity(config.mappings.len());
    for mapping in &config.mappings {
        let listener =
            TcpListener::bind(mapping.listen)
                .await
                .map_err(|source| ProxyError::Bind {
                    addr: mapping.listen,
                    source,
                })?;
        listeners.push(listener);
    }

    let tls = if config.mappings.iter().any(|m| m.upstream.tls) {
        Some(tls::connector(config.extra_ca.as_deref())?)
    } else {
        None
    };

    let started = Instant::now();
    let runtime = Arc::new(Runtime {
        faults,
        seed: config.seed.unwrap_or_else(rand::random),
        started,
        schedule_origin: std::sync::OnceLock::new(),
        exchanges: measure
            .map(|setup| exchanges::ExchangeRecorder::new(started, setup.groups, setup.cuts)),
        counters: Counters::default(),
        tls,
        connect_timeout: config.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT),
        next_connection: AtomicU64::new(0),
        count_requests: config.count_requests,
    });
    let cancel = CancellationToken::new();
    let mut local_addrs = Vec::with_capacity(listeners.len());
    let mut mappings = Vec::with_capacity(listeners.len());
    let mut tasks = Vec::with_capacity(listeners.len());
    for (listener, mapping) in listeners.into_iter().zip(&config.mappings) {
        let addr = listener.local_addr().unwrap_or(mapping.listen);
        local_addrs.push(addr);
        mappings.push(Mapping {
            listen: addr,
            upstream: mapping.upstream.clone(),
        });
        // Not "listening on": scripts read that from `fault mcp-proxy`, which may run this proxy in-process.
        tracing::info!(
            "proxy accepting on {addr}, relaying to {}",
            mapping.upstream
        );
        tasks.push(tokio::spawn(accept_loop(
            listener,
            Arc::new(mapping.upstream.clone()),
            runtime.clone(),
            cancel.clone(),
        )));
    }
    Ok(ProxyHandle {
        local_addrs,
        mappings,
        runtime,
        cancel,
        listeners: tasks,
    })
}

async fn accept_loop(
    listener: TcpListener,
    upstream: Arc<Upstream>,
    runtime: Arc<Runtime>,
    cancel: CancellationToken,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    connections.spawn(relay::serve(stream, peer, upstream.clone(), runtime.clone()));
                }
                Err(e) => {
                    // E.g. too many open files: back off instead of spinning.
                    tracing::warn!("accept on {:?} failed: {e}", listener.local_addr().ok());
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
    drop(listener);
    connections.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::faults::latency::LatencySpec;
    use crate::proxy::mapping::Upstream;
    use crate::proxy::placement::FaultCommon;

    /// A window 10–15 s into the schedule is shut at the proxy's start, and open once the load that started
    /// 11 s ago gives that instant as the origin; a second origin changes nothing.
    #[tokio::test]
    async fn the_faults_windows_count_from_the_origin_the_load_gives() {
        let latency = TcpFault::Latency(LatencySpec {
            common: FaultCommon {
                schedule: "start:10s,duration:5s".parse().ok(),
                ..FaultCommon::default()
            },
            mean: Duration::from_millis(1),
            ..LatencySpec::default()
        });
        let handle = start(ProxyConfig {
            mappings: vec![Mapping {
                listen: SocketAddr::from(([127, 0, 0, 1], 0)),
                upstream: Upstream {
                    host: "127.0.0.1".into(),
                    port: 9,
                    tls: false,
                },
            }],
            faults: vec![latency],
            ..ProxyConfig::default()
        })
        .await
        .expect("proxy");
        let active = || handle.view().faults_active()[0].1;
        assert!(!active());
        let origin = Instant::now()
            .checked_sub(Duration::from_secs(11))
            .expect("an instant 11 s ago");
        handle.schedule_from(origin);
        assert!(active());
        handle.schedule_from(Instant::now());
        assert!(active());
        handle.stop().await;
    }
}
