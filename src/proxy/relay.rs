//! Per-connection relay: two flows, each a read → stages → write loop, bytes never reordered.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rand::RngExt;
use rand::rngs::StdRng;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::time::Instant;

use super::config::{FaultSpec, Flow};
use super::faults::{self, Chunk, Shared, Stage, Verdict};
use super::mapping::Upstream;
use super::splice;

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
}

/// A configured fault, ready to build stages for new connections.
pub(crate) struct Plan {
    pub spec: FaultSpec,
    pub shared: Shared,
    pub flows: [bool; 2],
    /// Active window from the proxy's start; `None` = always.
    pub window: Option<(Duration, Option<Duration>)>,
    pub applied: AtomicU64,
}

impl Plan {
    fn active_at(&self, since_start: Duration) -> bool {
        match self.window {
            None => true,
            Some((start, end)) => since_start >= start && end.is_none_or(|e| since_start < e),
        }
    }
}

/// What every connection of a proxy shares.
pub(crate) struct Runtime {
    pub plans: Vec<Plan>,
    pub seed: Option<u64>,
    pub started: Instant,
    pub counters: Counters,
    pub tls: Option<tokio_rustls::TlsConnector>,
    pub connect_timeout: Duration,
    pub next_connection: AtomicU64,
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
        match connector.connect(name, server).await {
            Ok(tls) => {
                let (client_read, client_write) = client.into_split();
                let (upstream_read, upstream_write) = tokio::io::split(tls);
                relay(
                    client_read,
                    client_write,
                    upstream_read,
                    upstream_write,
                    id,
                    &rt,
                )
                .await
            }
            Err(e) => {
                return rt.upstream_failed(format_args!(
                    "upstream {upstream}: TLS handshake failed: {e}; closing the client connection"
                ));
            }
        }
    } else {
        // Owned halves of a TcpStream need no lock between the two flows.
        let (client_read, client_write) = client.into_split();
        let (upstream_read, upstream_write) = server.into_split();
        let turns = [AtomicU64::new(0), AtomicU64::new(0)];
        let state = faults::ConnectionState::default();
        both_flows(
            plain_flow(
                client_read,
                upstream_write,
                Flow::Request,
                id,
                &rt,
                &turns,
                &state,
            ),
            plain_flow(
                upstream_read,
                client_write,
                Flow::Response,
                id,
                &rt,
                &turns,
                &state,
            ),
        )
        .await
    };
    match outcome {
        Ok(()) => tracing::debug!("connection {id} from {peer} to {upstream} ended"),
        Err(e) => tracing::debug!("connection {id} from {peer} to {upstream} ended: {e}"),
    }
}

/// A stage with the plan it comes from and its per-message decision.
struct ActiveStage {
    stage: Box<dyn Stage>,
    plan: usize,
    rng: StdRng,
    /// Whether the fault applies to the current message (probability is rolled per message).
    applies: Option<bool>,
}

fn stages_for(
    rt: &Runtime,
    flow: Flow,
    connection: u64,
    state: &faults::ConnectionState,
) -> Vec<ActiveStage> {
    rt.plans
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let stage = faults::new_stage(&p.spec, &p.shared, p.flows[flow.index()], state)?;
            Some(ActiveStage {
                stage,
                plan: i,
                rng: faults::stage_rng(rt.seed, connection, i, flow),
                applies: None,
            })
        })
        .collect()
}

async fn relay<CR, CW, UR, UW>(
    client_read: CR,
    client_write: CW,
    upstream_read: UR,
    upstream_write: UW,
    id: u64,
    rt: &Runtime,
) -> io::Result<()>
where
    CR: AsyncRead + Unpin,
    CW: AsyncWrite + Unpin,
    UR: AsyncRead + Unpin,
    UW: AsyncWrite + Unpin,
{
    let turns = [AtomicU64::new(0), AtomicU64::new(0)];
    let state = faults::ConnectionState::default();
    both_flows(
        pump(
            client_read,
            upstream_write,
            Flow::Request,
            stages_for(rt, Flow::Request, id, &state),
            rt,
            &turns,
        ),
        pump(
            upstream_read,
            client_write,
            Flow::Response,
            stages_for(rt, Flow::Response, id, &state),
            rt,
            &turns,
        ),
    )
    .await
}

/// A flow between two plain TCP sockets. Without faults, it is copied while its reads are small
/// (request/response traffic: one read, one write, the least latency), and spliced in the kernel once a
/// read fills the buffer (bulk traffic: no copy through user space).
async fn plain_flow(
    mut reader: OwnedReadHalf,
    mut writer: OwnedWriteHalf,
    flow: Flow,
    id: u64,
    rt: &Runtime,
    turns: &[AtomicU64; 2],
    state: &faults::ConnectionState,
) -> io::Result<()> {
    let stages = stages_for(rt, flow, id, state);
    if !stages.is_empty() {
        return pump(reader, writer, flow, stages, rt, turns).await;
    }
    let me = flow.index();
    let (written, turn) = (&rt.counters.bytes[me], &turns[me]);
    let mut buf = BytesMut::with_capacity(BUFFER);
    if copy(
        &mut reader,
        &mut writer,
        &mut buf,
        written,
        turn,
        Until::Bulk,
    )
    .await?
        == Copied::All
    {
        return Ok(());
    }
    match splice::Pipe::new() {
        Ok(pipe) => {
            drop(buf);
            splice::pump(reader, writer, pipe, written, turn).await
        }
        Err(e) => {
            tracing::debug!("no pipe for a zero-copy flow ({e}); copying it instead");
            copy(
                &mut reader,
                &mut writer,
                &mut buf,
                written,
                turn,
                Until::End,
            )
            .await?;
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
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let me = flow.index();
    let other = 1 - me;
    let written = &rt.counters.bytes[me];
    if stages.is_empty() {
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
    // Set while a stage swallows the flow: its end (FIN) is swallowed too, as a real blackhole would.
    let mut swallowing = false;
    loop {
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            if !swallowing {
                let _ = writer.shutdown().await;
            }
            return Ok(());
        }
        let other_now = turns[other].load(Ordering::Relaxed);
        let starts_message = first || other_now != seen_other;
        seen_other = other_now;
        first = false;
        turns[me].fetch_add(1, Ordering::Relaxed);

        for (i, piece) in buf[..n].chunks(piece_size).enumerate() {
            let new_message = starts_message && i == 0;
            let now = Instant::now();
            let since_start = now.saturating_duration_since(rt.started);
            let mut delay = Duration::ZERO;
            let mut replaced: Option<Bytes> = None;
            let mut dropped = false;
            // The bandwidth clock absorbs timer rounding by itself; other delays are kept exact.
            let mut exact = false;
            for active in stages.iter_mut() {
                let plan = &rt.plans[active.plan];
                if !plan.active_at(since_start) {
                    continue;
                }
                if new_message || active.applies.is_none() {
                    let p = plan.spec.common().probability;
                    active.applies = Some(p >= 1.0 || active.rng.random::<f64>() < p);
                }
                if active.applies != Some(true) {
                    continue;
                }
                let chunk = Chunk {
                    bytes: replaced.as_deref().unwrap_or(piece),
                    flow,
                    new_message,
                    now,
                };
                let verdict = active.stage.on_chunk(&chunk, &mut active.rng);
                if verdict != Verdict::Pass {
                    plan.applied.fetch_add(1, Ordering::Relaxed);
                }
                match verdict {
                    Verdict::Pass => {}
                    Verdict::Delay(d) => {
                        delay += d;
                        exact |= !matches!(plan.spec, FaultSpec::Bandwidth(_));
                    }
                    Verdict::Drop => {
                        dropped = true;
                        break;
                    }
                    Verdict::Replace(bytes) => replaced = Some(bytes),
                    Verdict::Close => {
                        let _ = writer.shutdown().await;
                        return Err(io::Error::new(
                            io::ErrorKind::ConnectionAborted,
                            format!("closed by the {} fault", plan.spec.kind()),
                        ));
                    }
                }
            }
            swallowing = dropped;
            if dropped {
                continue;
            }
            if !delay.is_zero() {
                if exact {
                    sleep_until_precisely(now + delay).await;
                } else {
                    tokio::time::sleep_until(now + delay).await;
                }
            }
            let out = replaced.as_deref().unwrap_or(piece);
            if !out.is_empty() {
                writer.write_all(out).await?;
                writer.flush().await?;
                written.fetch_add(out.len() as u64, Ordering::Relaxed);
            }
        }
    }
}

/// The tokio timer fires on 1 ms ticks, rounding every delay up by up to a millisecond. For
/// delays that must be exact (latency, jitter, loss), sleep on it until just before `deadline`,
/// then yield until the deadline (on average half a millisecond of polling per delayed chunk).
async fn sleep_until_precisely(deadline: Instant) {
    const COARSE_MARGIN: Duration = Duration::from_millis(1);
    if let Some(coarse) = deadline.checked_sub(COARSE_MARGIN)
        && coarse > Instant::now()
    {
        tokio::time::sleep_until(coarse).await;
    }
    while Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
}
