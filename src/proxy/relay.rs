//! Per-connection relay: two flows, each a read → stages → write loop, bytes never reordered.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::time::Instant;

use super::exchanges::{ConnectionExchanges, ExchangeRecorder};
use super::faults::{Chunk, ConnectionEnd, Verdict};
use super::mapping::Upstream;
use super::placement::Flow;
use super::splice;

mod fault_stages;

pub(crate) use fault_stages::ProxyFault;
use fault_stages::{ActiveStage, applies, connection_stages, drawn};

/// Read buffer per flow: large, allocated once per connection.
const BUFFER: usize = 64 * 1024;

/// Proxy-wide counters.
#[derive(Default)]
pub(crate) struct Counters {
    pub connections_total: AtomicU64,
    pub connections_active: AtomicU64,
    pub upstream_failures: AtomicU64,
    /// Bytes written, indexed by `Flow::index` (request = to upstream, response = to client).
    pub bytes: [AtomicU64; 2],
    /// HTTP/1 requests written to upstreams (counted when the runtime counts requests).
    pub requests_to_upstream: AtomicU64,
    /// Request flows that stopped being HTTP/1, whose requests could not be counted past that point.
    pub opaque_request_flows: AtomicU64,
}

/// Counts the HTTP/1 requests a request flow writes upstream, framed by the one HTTP/1 reader.
struct UpstreamRequests<'a> {
    flow: crate::http1::RequestFlow,
    counters: &'a Counters,
}

impl<'a> UpstreamRequests<'a> {
    /// A counter for `flow` when `rt` counts requests and it is a request flow.
    fn of(flow: Flow, rt: &'a Runtime) -> Option<Self> {
        (rt.count_requests && flow == Flow::Request).then(|| Self {
            flow: crate::http1::RequestFlow::default(),
            counters: &rt.counters,
        })
    }

    /// Follows `bytes`, just written upstream.
    fn written(&mut self, bytes: &[u8]) {
        let counters = self.counters;
        let was_opaque = self.flow.is_opaque();
        self.flow.observe(bytes, |_| {
            counters
                .requests_to_upstream
                .fetch_add(1, Ordering::Relaxed);
        });
        if !was_opaque && self.flow.is_opaque() {
            counters
                .opaque_request_flows
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What every connection of a proxy shares.
pub(crate) struct Runtime {
    pub faults: Vec<ProxyFault>,
    /// The configured seed, or a random one: every decision is keyed from it (see
    /// [`message_rng`](super::faults::message_rng)).
    pub seed: u64,
    pub started: Instant,
    /// Where the faults' windows count from, when it is not `started`: the start of the load the proxy
    /// stands in, set once it is known ([`super::ProxyHandle::schedule_from`]).
    pub schedule_origin: std::sync::OnceLock<Instant>,
    /// Times every HTTP/1 exchange, when the proxy measures what passes (no zero-copy path then).
    pub exchanges: Option<ExchangeRecorder>,
    pub counters: Counters,
    pub tls: Option<tokio_rustls::TlsConnector>,
    pub connect_timeout: Duration,
    pub next_connection: AtomicU64,
    /// Whether request flows are followed to count the requests sent upstream (no zero-copy path then).
    pub count_requests: bool,
}

impl Runtime {
    /// How far into the faults' schedule `now` is.
    pub fn since_schedule_start(&self, now: Instant) -> Duration {
        let origin = self.schedule_origin.get().unwrap_or(&self.started);
        now.saturating_duration_since(*origin)
    }
}

impl Runtime {
    /// Counts a client connection closed because its upstream could not be reached, and says why.
    fn upstream_failed(&self, why: std::fmt::Arguments<'_>) {
        self.counters
            .upstream_failures
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!("{why}");
    }
}

/// Decrements the live-connection gauge however the task ends (including abort at stop).
struct LiveGuard<'a>(&'a AtomicU64);

impl Drop for LiveGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves one accepted client connection until both flows end, an error, or abort.
pub(crate) async fn serve(
    client: TcpStream,
    peer: SocketAddr,
    upstream: Arc<Upstream>,
    rt: Arc<Runtime>,
) {
    rt.counters
        .connections_total
        .fetch_add(1, Ordering::Relaxed);
    rt.counters
        .connections_active
        .fetch_add(1, Ordering::Relaxed);
    let _live = LiveGuard(&rt.counters.connections_active);
    let id = rt.next_connection.fetch_add(1, Ordering::Relaxed);
    let _ = client.set_nodelay(true);

    let connect = TcpStream::connect((upstream.host.as_str(), upstream.port));
    let server = match tokio::time::timeout(rt.connect_timeout, connect).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return rt.upstream_failed(format_args!(
                "connection from {peer}: upstream {upstream} unreachable: {e}; closing it"
            ));
        }
        Err(_) => {
            return rt.upstream_failed(format_args!(
                "connection from {peer}: upstream {upstream} did not accept within {:?}; closing it",
                rt.connect_timeout
            ));
        }
    };
    let _ = server.set_nodelay(true);

    let [request_stages, response_stages] = connection_stages(&rt, id);
    let connection_exchanges = rt.exchanges.as_ref().map(ConnectionExchanges::new);
    let exchanges = connection_exchanges.as_ref();
    let (mut client_read, mut client_write) = client.into_split();
    let outcome = if upstream.tls {
        let Some(connector) = rt.tls.as_ref() else {
            tracing::error!("no TLS connector for {upstream}");
            return;
        };
        let name = match rustls::pki_types::ServerName::try_from(upstream.host.clone()) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!("upstream {upstream}: invalid TLS server name: {e}");
                return;
            }
        };
        let handshake = connector.connect(name, server);
        let tls = match tokio::time::timeout(rt.connect_timeout, handshake).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(e)) => {
                return rt.upstream_failed(format_args!(
                    "upstream {upstream}: TLS handshake failed: {e}; closing the client connection"
                ));
            }
            Err(_) => {
                return rt.upstream_failed(format_args!(
                    "upstream {upstream}: no TLS handshake within {:?}; closing the client connection",
                    rt.connect_timeout
                ));
            }
        };
        let (mut upstream_read, mut upstream_write) = tokio::io::split(tls);
        let turns = [AtomicU64::new(0), AtomicU64::new(0)];
        let outcome = both_flows(
            pump(
                &mut client_read,
                &mut upstream_write,
                Flow::Request,
                request_stages,
                &rt,
                &turns,
                exchanges,
            ),
            pump(
                &mut upstream_read,
                &mut client_write,
                Flow::Response,
                response_stages,
                &rt,
                &turns,
                exchanges,
            ),
        )
        .await;
        if is_reset(&outcome) {
            let tls = upstream_read.unsplit(upstream_write);
            let _ = tls.get_ref().0.set_zero_linger();
        }
        outcome
    } else {
        // Owned halves of a TcpStream need no lock between the two flows.
        let (mut upstream_read, mut upstream_write) = server.into_split();
        let turns = [AtomicU64::new(0), AtomicU64::new(0)];
        let outcome = both_flows(
            plain_flow(
                &mut client_read,
                &mut upstream_write,
                Flow::Request,
                request_stages,
                &rt,
                &turns,
                exchanges,
            ),
            plain_flow(
                &mut upstream_read,
                &mut client_write,
                Flow::Response,
                response_stages,
                &rt,
                &turns,
                exchanges,
            ),
        )
        .await;
        if is_reset(&outcome) {
            reset(upstream_read, upstream_write);
        }
        outcome
    };
    if is_reset(&outcome) {
        reset(client_read, client_write);
    }
    if let Some(exchanges) = connection_exchanges {
        exchanges.closed(outcome.as_ref().err());
    }
    match outcome {
        Ok(()) => tracing::debug!("connection {id} from {peer} to {upstream} ended"),
        Err(e) => tracing::debug!("connection {id} from {peer} to {upstream} ended: {e}"),
    }
}

/// The error a flow ends with when a fault resets the connection.
#[derive(Debug, thiserror::Error)]
#[error("reset by the {0} fault")]
struct ResetByFault(&'static str);

fn is_reset(outcome: &io::Result<()>) -> bool {
    outcome
        .as_ref()
        .err()
        .and_then(|e| e.get_ref())
        .is_some_and(|inner| inner.is::<ResetByFault>())
}

/// Closes a socket with `SO_LINGER` 0, so the peer gets RST, not FIN (the halves would send a FIN when dropped).
fn reset(read: OwnedReadHalf, write: OwnedWriteHalf) {
    if let Ok(stream) = read.reunite(write) {
        let _ = stream.set_zero_linger();
    }
}

/// A flow between two plain TCP sockets. Without faults, it is copied while its reads are small
/// (request/response traffic: one read, one write, the least latency), and spliced in the kernel once a
/// read fills the buffer (bulk traffic: no copy through user space).
async fn plain_flow(
    reader: &mut OwnedReadHalf,
    writer: &mut OwnedWriteHalf,
    flow: Flow,
    stages: Vec<ActiveStage>,
    rt: &Runtime,
    turns: &[AtomicU64; 2],
    exchanges: Option<&ConnectionExchanges<'_>>,
) -> io::Result<()> {
    if !stages.is_empty() || UpstreamRequests::of(flow, rt).is_some() || exchanges.is_some() {
        return pump(reader, writer, flow, stages, rt, turns, exchanges).await;
    }
    let me = flow.index();
    let (written, turn) = (&rt.counters.bytes[me], &turns[me]);
    let mut buf = BytesMut::with_capacity(BUFFER);
    if copy(reader, writer, &mut buf, written, turn, Until::Bulk).await? == Copied::All {
        return Ok(());
    }
    match splice::Pipe::new() {
        Ok(pipe) => {
            drop(buf);
            splice::pump(reader, writer, pipe, written, turn).await
        }
        Err(e) => {
            tracing::debug!("no pipe for a zero-copy flow ({e}); copying it instead");
            copy(reader, writer, &mut buf, written, turn, Until::End).await?;
            Ok(())
        }
    }
}

#[derive(PartialEq)]
enum Until {
    End,
    /// Stop after a read that fills the whole buffer.
    Bulk,
}

#[derive(PartialEq)]
enum Copied {
    /// The reader ended and the writer was half-closed.
    All,
    /// Stopped after a full buffer, everything read so far written.
    Bulk,
}

/// Pass-through: copies a flow with nothing between read and write. The buffer is read into without
/// being zeroed first, which keeps a new connection cheap.
async fn copy<R, W>(
    reader: &mut R,
    writer: &mut W,
    buf: &mut BytesMut,
    written: &AtomicU64,
    turn: &AtomicU64,
    until: Until,
) -> io::Result<Copied>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    loop {
        buf.clear();
        let n = reader.read_buf(buf).await?;
        if n == 0 {
            let _ = writer.shutdown().await;
            return Ok(Copied::All);
        }
        turn.fetch_add(1, Ordering::Relaxed);
        writer.write_all(buf).await?;
        writer.flush().await?;
        written.fetch_add(n as u64, Ordering::Relaxed);
        if until == Until::Bulk && n == BUFFER {
            return Ok(Copied::Bulk);
        }
    }
}

/// Runs both flows of a connection until each has ended; the first error ends the connection.
async fn both_flows(
    request: impl Future<Output = io::Result<()>>,
    response: impl Future<Output = io::Result<()>>,
) -> io::Result<()> {
    tokio::pin!(request, response);
    let (mut request_done, mut response_done) = (false, false);
    while !(request_done && response_done) {
        tokio::select! {
            r = &mut request, if !request_done => { r?; request_done = true; }
            r = &mut response, if !response_done => { r?; response_done = true; }
        }
    }
    Ok(())
}

/// Moves one flow's bytes until EOF (then half-closes the writer) or an error.
async fn pump<R, W>(
    mut reader: R,
    mut writer: W,
    flow: Flow,
    mut stages: Vec<ActiveStage>,
    rt: &Runtime,
    turns: &[AtomicU64; 2],
    exchanges: Option<&ConnectionExchanges<'_>>,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let me = flow.index();
    let other = 1 - me;
    let written = &rt.counters.bytes[me];
    let mut requests = UpstreamRequests::of(flow, rt);
    if stages.is_empty() && requests.is_none() && exchanges.is_none() {
        let mut buf = BytesMut::with_capacity(BUFFER);
        copy(
            &mut reader,
            &mut writer,
            &mut buf,
            written,
            &turns[me],
            Until::End,
        )
        .await?;
        return Ok(());
    }
    let mut buf = vec![0u8; BUFFER];

    let piece_size = stages
        .iter()
        .filter_map(|s| s.stage.max_chunk())
        .min()
        .unwrap_or(BUFFER)
        .max(1);
    let mut seen_other = 0u64;
    let mut first = true;
    // The flow's exact delays, one after another on one timer (armed again for each, never made anew).
    let mut exact_delay = crate::timer::sleep_until(Instant::now());
    // Set while a stage swallows the flow: its end (FIN) is swallowed too, as a real blackhole would.
    let mut swallowing = false;
    loop {
        let timer = stages.iter().filter_map(|s| s.stage.timer()).min();
        let n = tokio::select! {
            read = reader.read(&mut buf) => read?,
            _ = sleep_until_timer(timer) => {
                on_timers(&mut stages, rt, &mut writer).await?;
                continue;
            }
        };
        if n == 0 {
            if !swallowing {
                let _ = writer.shutdown().await;
            }
            return Ok(());
        }
        let read_at = Instant::now();
        let other_now = turns[other].load(Ordering::Relaxed);
        let starts_message = first || other_now != seen_other;
        seen_other = other_now;
        first = false;
        turns[me].fetch_add(1, Ordering::Relaxed);
        if starts_message {
            for active in stages.iter_mut() {
                active.next_message(rt.seed);
            }
        }

        for (i, piece) in buf[..n].chunks(piece_size).enumerate() {
            let new_message = starts_message && i == 0;
            let now = Instant::now();
            let since_start = rt.since_schedule_start(now);
            let mut delay = Duration::ZERO;
            let mut replaced: Option<Bytes> = None;
            let mut dropped = false;
            let mut ending = None;
            // Delays are kept exact unless every delaying stage's clock absorbs timer rounding by itself.
            let mut exact = false;
            for active in stages.iter_mut() {
                let fault = &rt.faults[active.fault];
                let open = fault.active_at(since_start);
                if !(open || fault.reads_http) || !drawn(active, fault) {
                    continue;
                }
                let chunk = Chunk {
                    bytes: replaced.as_deref().unwrap_or(piece),
                    flow,
                    new_message,
                    now,
                    active: open,
                };
                let verdict = active.stage.on_chunk(&chunk, &mut active.rng);
                let acted = active.stage.acted(&verdict);
                if acted > 0 {
                    fault.applied.fetch_add(acted, Ordering::Relaxed);
                }
                match verdict {
                    Verdict::Pass => {}
                    Verdict::Delay(d) => {
                        delay += d;
                        exact |= active.stage.exact_delays();
                    }
                    Verdict::Drop => {
                        dropped = true;
                        break;
                    }
                    Verdict::Replace(bytes) => replaced = Some(bytes),
                    Verdict::End { keep, how } => {
                        ending = Some((keep, how, fault.spec.kind()));
                        break;
                    }
                    Verdict::ReplaceAndEnd { bytes, how } => {
                        replaced = Some(bytes);
                        ending = Some((usize::MAX, how, fault.spec.kind()));
                        break;
                    }
                }
            }
            swallowing = dropped;
            if dropped {
                continue;
            }
            if !delay.is_zero() {
                if exact {
                    Pin::new(&mut exact_delay).reset(now + delay);
                    (&mut exact_delay).await;
                } else {
                    tokio::time::sleep_until(now + delay).await;
                }
            }
            let mut out = replaced.as_deref().unwrap_or(piece);
            if let Some((keep, ..)) = ending {
                out = &out[..keep.min(out.len())];
            }
            if !out.is_empty() {
                writer.write_all(out).await?;
                writer.flush().await?;
                written.fetch_add(out.len() as u64, Ordering::Relaxed);
                if let Some(requests) = &mut requests {
                    requests.written(out);
                }
                if let Some(exchanges) = exchanges {
                    match flow {
                        Flow::Request => exchanges.request_written(out, read_at, delay),
                        Flow::Response => exchanges.response_written(out, delay),
                    }
                }
            }
            if let Some((_, how, kind)) = ending {
                return Err(end_connection(&mut writer, how, kind).await);
            }
        }
    }
}

/// Sleeps until `timer`; forever without one.
async fn sleep_until_timer(timer: Option<Instant>) {
    match timer {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Lets every stage whose timer is due act; a stage that ends the connection ends the flow.
async fn on_timers<W>(stages: &mut [ActiveStage], rt: &Runtime, writer: &mut W) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let now = Instant::now();
    let since_start = rt.since_schedule_start(now);
    for active in stages.iter_mut() {
        if active.stage.timer().is_none_or(|at| at > now) {
            continue;
        }
        // The stage moves or clears its timer whatever happens, so it is asked even when it does not apply.
        let verdict = active.stage.on_timer(now, &mut active.rng);
        let fault = &rt.faults[active.fault];
        if !applies(active, fault, since_start) {
            continue;
        }
        if let Verdict::End { how, .. } = verdict {
            fault
                .applied
                .fetch_add(active.stage.acted(&verdict), Ordering::Relaxed);
            return Err(end_connection(writer, how, fault.spec.kind()).await);
        }
    }
    Ok(())
}

/// Ends the flow's connection as a fault asked; the returned error makes the relay close both flows.
async fn end_connection<W>(writer: &mut W, how: ConnectionEnd, kind: &'static str) -> io::Error
where
    W: AsyncWrite + Unpin,
{
    match how {
        ConnectionEnd::Close => {
            let _ = writer.shutdown().await;
            io::Error::new(
                io::ErrorKind::ConnectionAborted,
                format!("closed by the {kind} fault"),
            )
        }
        // No FIN first: the sockets are closed with SO_LINGER 0 by `serve`.
        ConnectionEnd::Reset => io::Error::other(ResetByFault(kind)),
    }
}
