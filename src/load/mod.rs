//! Open-model HTTP load generator.
//!
//! Requests start on a fixed schedule (`num_clients × rps` per second for `duration`) whether or not earlier
//! ones have finished, so a slow service shows up as latency rather than as fewer requests (no coordinated
//! omission). Each virtual client keeps its own pool of kept-alive connections. Each request's [`Timing`]
//! keeps when it was due, sent and ended: latency runs from the scheduled start to the end of the body, and
//! a request ends at its deadline, `timeout` after it was due, however late it was sent. How many requests
//! the schedule plans is [`schedule::planned`]'s rule. Requests only go to the URL's host, or
//! to the address given in [`LoadPlan::connect_to`] (a proxy in front of it) with the URL's host kept for TLS
//! and `Host`.
//!
//! Each client has at most [`LoadPlan::max_in_flight`] requests in flight (default
//! [`DEFAULT_MAX_IN_FLIGHT`], lowered so that all clients together stay within the process's open-file limit):
//! a request whose start time comes while its client is at the cap is not sent and counts as its own outcome
//! ([`RequestOutcome::NotStarted`]), with its timeout as latency (all of it queueing). Name resolution and TLS
//! handshakes run under the request timeout, so a run never outlives `duration + timeout + GRACE`.

mod client;
pub mod feed;
pub mod locust;
pub mod mix;
mod rate;
mod record;
pub mod schedule;
mod target;
pub mod timing;

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use http::Method;
use tokio::{task::JoinSet, time::Instant};
use tokio_util::sync::CancellationToken;

pub use mix::{Expect, Mix, MixError, MixRequest};
pub use rate::Rate;
pub use record::{PhaseSamples, RequestOutcome, Samples, SecondSamples, phase_of, phases};
pub(crate) use record::{histogram, record_us};
pub use target::Target;
pub use timing::Timing;

use client::{Connection, Connector};

/// After `duration + timeout`, in-flight work gets this long to wind down before it is cut.
pub const GRACE: Duration = Duration::from_secs(2);

/// Requests one client keeps in flight at most, unless the plan says otherwise.
pub const DEFAULT_MAX_IN_FLIGHT: u32 = 256;

/// Open files one in-flight request may hold in this process: its socket, and the two of a proxy in front.
const FILES_PER_REQUEST: u64 = 3;
/// Open files left for everything else (logs, listeners, the MCP transport).
const FILES_KEPT: u64 = 256;

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

/// How requests are paced.
#[derive(Debug, Clone, PartialEq)]
pub enum Pace {
    /// Open model: each client starts `rps` requests per second on schedule.
    Open { rps: u32 },
    /// Open model at a rate over all clients that may change through the run (stages); the run lasts the
    /// rate's duration.
    Shaped(Arc<Rate>),
    /// Closed loop: each client sends its next request as soon as the previous one ended (maximum rate,
    /// as `wrk -c num_clients` does). Used to measure the generator's own ceiling.
    Saturate,
}

#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// The requests to send (one, or a mix picked by weight); all go to the first one's host.
    pub mix: Mix,
    /// Dial this address instead of the URL's host (a proxy in front of it); TLS name and `Host` stay the URL's.
    pub connect_to: Option<SocketAddr>,
    /// The proxy at `connect_to` takes plain HTTP and speaks TLS to an `https://` URL's host itself, so the
    /// load goes to it in clear text (with the URL's `Host`).
    pub proxy_originates_tls: bool,
    pub num_clients: u32,
    pub pace: Pace,
    pub duration: Duration,
    pub timeout: Duration,
    /// Requests one client keeps in flight at most; `None` = [`DEFAULT_MAX_IN_FLIGHT`]. Lowered further when
    /// all clients together would exceed the process's open-file limit.
    pub max_in_flight: Option<u32>,
}

impl LoadPlan {
    /// The in-flight cap per client actually used: the plan's, within the open-file budget.
    pub fn in_flight_cap(&self) -> u32 {
        let asked = self.max_in_flight.unwrap_or(DEFAULT_MAX_IN_FLIGHT).max(1);
        let files = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(u64::MAX);
        // Each client also holds its schedule's timer (a file on Linux: `crate::timer`).
        let clients = u64::from(self.num_clients.max(1));
        let budget = files.saturating_sub(FILES_KEPT + clients) / FILES_PER_REQUEST;
        let per_client = budget / clients;
        asked
            .min(u32::try_from(per_client).unwrap_or(u32::MAX))
            .max(1)
    }

    /// The rate of the open model over all clients; `None` when saturating.
    pub fn rate(&self) -> Option<Arc<Rate>> {
        match &self.pace {
            Pace::Open { rps } => Some(Arc::new(Rate::constant(
                f64::from(*rps) * f64::from(self.num_clients.max(1)),
                self.duration,
            ))),
            Pace::Shaped(rate) => Some(rate.clone()),
            Pace::Saturate => None,
        }
    }

    /// How many requests the schedule starts (open model: [`Rate::planned`]); `None` when saturating.
    pub fn planned_requests(&self) -> Option<u64> {
        self.rate().map(|rate| rate.planned())
    }

    /// Requests the schedule has due in each second of the run (zeros when saturating).
    pub fn offered_per_second(&self) -> Vec<u64> {
        match self.rate() {
            Some(rate) => rate.due_per_second(),
            None => vec![0; self.seconds()],
        }
    }

    /// The request every exchange's host, TLS name and `Host` come from.
    pub fn target(&self) -> &Target {
        &self.mix.first().target
    }

    fn seconds(&self) -> usize {
        seconds_of(self.duration)
    }
}

/// Seconds of the per-second series.
fn seconds_of(duration: Duration) -> usize {
    duration.as_secs_f64().ceil().max(1.0) as usize
}

/// Live counters, readable while the run goes on (for progress notifications).
#[derive(Debug, Default)]
pub struct LoadProgress {
    pub started: AtomicU64,
    pub completed: AtomicU64,
    pub errors: AtomicU64,
    /// What the run waits for, when it waits (e.g. Locust workers to start elsewhere); empty otherwise.
    note: Mutex<String>,
}

impl LoadProgress {
    pub fn set_note(&self, note: String) {
        *lock(&self.note) = note;
    }

    pub fn note(&self) -> String {
        lock(&self.note).clone()
    }
}

/// One request of the traffic mix, and what its calls measured.
#[derive(Debug, Clone)]
pub struct RequestSamples {
    /// Its name in the mix (`requests[].name`; the single-`url` form's is "METHOD /path").
    pub name: String,
    pub samples: Samples,
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
    /// Requests the schedule had due in each second of the run (the offered rate), as `samples.per_second`.
    pub offered_per_second: Vec<u64>,
    /// Every request of the run, whichever of the mix it was.
    pub samples: Samples,
    /// The same requests, one entry per request of the mix, in the mix's order (its totals add up to
    /// `samples`'s).
    pub per_request: Vec<RequestSamples>,
}

/// What every virtual client of a run reads.
struct RunState {
    mix: Mix,
    connector: Connector,
    num_clients: u32,
    /// The open model's rate over all clients; `None` when saturating.
    rate: Option<Arc<Rate>>,
    duration: Duration,
    timeout: Duration,
    /// Requests one client keeps in flight at most.
    max_in_flight: usize,
    start: Instant,
    progress: Arc<LoadProgress>,
    /// One recorder per request of the mix, in its order.
    recorders: Vec<SampleRecorder>,
}

impl RunState {
    /// How long after the run's start work due at `due` was due.
    fn since_start(&self, due: Instant) -> Duration {
        due.saturating_duration_since(self.start)
    }
}

/// Where clients record. Memory stays bounded by the run's length, not by clients × seconds: totals go
/// to a few shards (a histogram at 3 significant digits is a few hundred KB), and each second of the
/// series has one slot shared by all clients. Each record takes two short, mostly uncontended locks.
struct SampleRecorder {
    shards: Vec<Mutex<Samples>>,
    seconds: Vec<Mutex<SecondSamples>>,
    /// The run's phases, each with its own slot as the seconds have.
    phases: Vec<Mutex<PhaseSamples>>,
    /// Where each phase starts, to find a request's.
    phase_starts: Vec<Duration>,
}

/// Enough shards that clients on different runtime threads rarely meet on one lock.
const RECORDER_SHARDS: u32 = 8;

impl SampleRecorder {
    fn new(num_clients: u32, seconds: usize, phases: Vec<PhaseSamples>) -> Self {
        Self {
            shards: (0..num_clients.clamp(1, RECORDER_SHARDS))
                .map(|_| Mutex::new(Samples::new(0)))
                .collect(),
            seconds: (0..seconds)
                .map(|_| Mutex::new(SecondSamples::new()))
                .collect(),
            phase_starts: phases.iter().map(|phase| phase.from).collect(),
            phases: phases.into_iter().map(Mutex::new).collect(),
        }
    }

    /// Records one request of `client`, due `at` after the run's start and ended `ended` after it.
    fn record(
        &self,
        client: u32,
        (at, ended): (Duration, Duration),
        timing: &Timing,
        outcome: RequestOutcome,
        body_bytes: u64,
    ) {
        let second = at.as_secs() as usize;
        if let Some(slot) = self.seconds.get(second) {
            lock(slot).add(timing.latency(), &outcome);
        }
        if matches!(
            outcome,
            RequestOutcome::Success | RequestOutcome::HttpError(_)
        ) && let Some(slot) = self.seconds.get(ended.as_secs() as usize)
        {
            lock(slot).answered += 1;
        }
        let phase = self.phase_starts.partition_point(|from| *from <= at);
        if let Some(slot) = phase.checked_sub(1).and_then(|i| self.phases.get(i)) {
            lock(slot).add(timing.latency(), &outcome);
        }
        let shard = &self.shards[client as usize % self.shards.len()];
        lock(shard).record(second, timing, outcome, body_bytes);
    }

    /// Everything recorded so far, merged.
    fn samples(&self) -> Samples {
        let mut samples = Samples::new(0);
        for shard in &self.shards {
            samples.merge(&lock(shard));
        }
        samples.per_second = self.seconds.iter().map(|s| lock(s).clone()).collect();
        samples.phases = self.phases.iter().map(|p| lock(p).clone()).collect();
        samples
    }
}

/// A poisoned lock only means a client panicked mid-record; its figures are still worth reporting.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs the plan to its end, or until `cancel` fires (then `Err(Cancelled)`).
pub async fn run(
    plan: &LoadPlan,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<LoadReport, LoadError> {
    let (started, _) = tokio::sync::oneshot::channel();
    run_in_phases(plan, &[], started, cancel, progress).await
}

/// [`run`], with the requests also grouped into phases by when they were due: cut at `cuts` (times from the
/// run's start, in order), see [`phases`]. `started` gets the instant the schedule starts from, which every
/// request's due time counts from.
pub async fn run_in_phases(
    plan: &LoadPlan,
    cuts: &[Duration],
    started: tokio::sync::oneshot::Sender<Instant>,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<LoadReport, LoadError> {
    let target = plan.target();
    let dial = match plan.connect_to {
        Some(addr) => addr,
        None => target.resolve(plan.timeout).await?,
    };
    let tls = if target.is_tls() && !(plan.proxy_originates_tls && plan.connect_to.is_some()) {
        // The proxy's TLS setup: system roots plus the CA in $FAULT_PROXY_EXTRA_CA, if any.
        let connector = crate::tls::connector(None).map_err(|e| LoadError::Tls(e.to_string()))?;
        let name = rustls::pki_types::ServerName::try_from(target.host().to_owned())
            .map_err(|e| LoadError::Tls(format!("server name '{}': {e}", target.host())))?;
        Some((connector, name))
    } else {
        None
    };

    let stop = cancel.child_token();
    // If this future is dropped mid-run, the clients and their requests stop with it.
    let _stop_on_drop = stop.clone().drop_guard();
    let started_at = chrono::Utc::now();
    let start = Instant::now();
    // Whoever watches the run from outside counts from here; gone, it no longer watches.
    let _ = started.send(start);
    let shared = Arc::new(RunState {
        mix: plan.mix.clone(),
        connector: Connector {
            dial,
            tls,
            opened: AtomicU64::new(0),
        },
        num_clients: plan.num_clients,
        rate: plan.rate(),
        duration: plan.duration,
        timeout: plan.timeout,
        max_in_flight: plan.in_flight_cap() as usize,
        start,
        progress,
        recorders: plan
            .mix
            .requests()
            .iter()
            .map(|_| {
                SampleRecorder::new(
                    plan.num_clients,
                    plan.seconds(),
                    phases(cuts, plan.duration),
                )
            })
            .collect(),
    });
    let mut clients = JoinSet::new();
    for index in 0..plan.num_clients {
        clients.spawn(virtual_client(index, shared.clone(), stop.clone()));
    }

    let hard_deadline = start + plan.duration + plan.timeout + GRACE;
    let mut cut_short = false;
    loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                stop.cancel();
                return Err(LoadError::Cancelled);
            }
            joined = clients.join_next() => match joined {
                Some(Ok(())) => {}
                Some(Err(e)) => tracing::error!("a load client ended abnormally: {e}"),
                None => break,
            },
            _ = tokio::time::sleep_until(hard_deadline), if !cut_short => {
                // Clients return what they measured as soon as they see the stop.
                tracing::warn!("load run cut at duration + timeout + grace");
                stop.cancel();
                cut_short = true;
            }
        }
    }
    let elapsed = start.elapsed();
    let per_request: Vec<RequestSamples> = plan
        .mix
        .requests()
        .iter()
        .zip(&shared.recorders)
        .map(|(request, recorder)| RequestSamples {
            name: request.name.clone(),
            samples: recorder.samples(),
        })
        .collect();
    let mut samples = Samples::new(plan.seconds());
    samples.phases = phases(cuts, plan.duration);
    for request in &per_request {
        samples.merge(&request.samples);
    }
    Ok(LoadReport {
        started_at,
        ended_at: chrono::Utc::now(),
        elapsed,
        planned: plan.planned_requests(),
        connections_opened: shared.connector.opened.load(Ordering::Relaxed),
        cut_short,
        offered_per_second: plan.offered_per_second(),
        per_request,
        samples,
    })
}

/// One virtual client, in one task: it starts requests on its schedule and keeps its idle connections.
async fn virtual_client(index: u32, shared: Arc<RunState>, stop: CancellationToken) {
    let (arrivals, max_in_flight) = match &shared.rate {
        Some(rate) => (
            schedule::Arrivals::shaped(shared.start, rate.clone(), index, shared.num_clients),
            shared.max_in_flight,
        ),
        None => (
            schedule::Arrivals::Closed {
                planned: None,
                until: Some(shared.start + shared.duration),
            },
            1,
        ),
    };
    let mut client = VirtualClient {
        index,
        shared,
        idle: Vec::new(),
    };
    schedule::run(arrivals, max_in_flight, &mut client, &stop).await;
}

/// A virtual client's state between requests: its idle kept-alive connections.
struct VirtualClient {
    index: u32,
    shared: Arc<RunState>,
    idle: Vec<Connection>,
}

impl VirtualClient {
    /// The number in the run's schedule of this client's start number `k`: k·clients + index (the order the
    /// starts are due in, over all clients), which picks its request and its feed row.
    fn call(&self, k: u64) -> u64 {
        k * u64::from(self.shared.num_clients) + u64::from(self.index)
    }
}

/// One request's end: which request of the mix it was, when it was due, sent and ended (taken at once, so
/// other requests completing at the same moment do not add to it), how it ended with its body's size, and its
/// connection if it can be reused.
struct RequestEnd {
    request: usize,
    timing: Timing,
    outcome: RequestOutcome,
    body_bytes: u64,
    kept: Option<Connection>,
}

impl schedule::Work for VirtualClient {
    type Done = RequestEnd;

    fn start(
        &mut self,
        k: u64,
        due: Instant,
    ) -> impl std::future::Future<Output = RequestEnd> + Send + use<> {
        let shared = self.shared.clone();
        let idle = self.idle.pop();
        let call = self.call(k);
        let request = self.shared.mix.pick(call);
        async move {
            // Sent when its exchange begins (a connection taken or opened, the request written), which is
            // later than due when this client's task was busy.
            let sent = Instant::now();
            shared.progress.started.fetch_add(1, Ordering::Relaxed);
            let mix = &shared.mix.requests()[request];
            let bytes = match shared.mix.wire(request, call) {
                Ok(bytes) => bytes,
                Err(unfit) => {
                    return RequestEnd {
                        request,
                        timing: Timing {
                            due,
                            sent: Some(sent),
                            ended: Instant::now(),
                        },
                        outcome: RequestOutcome::Transport(unfit),
                        body_bytes: 0,
                        kept: idle,
                    };
                }
            };
            let wire = client::Wire {
                bytes: &bytes,
                is_head: mix.target.method == Method::HEAD,
                keep_body: if mix.expect.needs_body() {
                    mix::MAX_BODY_KEPT
                } else {
                    0
                },
            };
            let outcome = tokio::time::timeout_at(
                timing::deadline(due, shared.timeout),
                client::exchange(idle, &shared.connector, &wire),
            )
            .await;
            let timing = Timing {
                due,
                sent: Some(sent),
                ended: Instant::now(),
            };
            let (outcome, body_bytes, kept) = match outcome {
                Ok((Ok(answer), kept)) => (
                    mix.expect.judge(answer.status, &answer.body),
                    answer.body_bytes,
                    kept,
                ),
                Ok((Err(e), _)) => (RequestOutcome::Transport(e.to_string()), 0, None),
                // The connection is dropped with the cut request.
                Err(_) => (RequestOutcome::Timeout, 0, None),
            };
            RequestEnd {
                request,
                timing,
                outcome,
                body_bytes,
                kept,
            }
        }
    }

    fn done(&mut self, end: RequestEnd) {
        if let Some(connection) = end.kept {
            self.idle.push(connection);
        }
        record(
            self.index,
            &self.shared,
            end.request,
            &end.timing,
            end.outcome,
            end.body_bytes,
        );
    }

    fn not_started(&mut self, k: u64, due: Instant) {
        let timing = Timing::not_started(due, self.shared.timeout);
        let request = self.shared.mix.pick(self.call(k));
        record(
            self.index,
            &self.shared,
            request,
            &timing,
            RequestOutcome::NotStarted,
            0,
        );
    }
}

/// Records one request of `client`, request `request` of the mix.
fn record(
    client: u32,
    shared: &RunState,
    request: usize,
    timing: &Timing,
    outcome: RequestOutcome,
    body_bytes: u64,
) {
    if outcome != RequestOutcome::Success {
        shared.progress.errors.fetch_add(1, Ordering::Relaxed);
    }
    if let Some(recorder) = shared.recorders.get(request) {
        recorder.record(
            client,
            (
                shared.since_start(timing.due),
                shared.since_start(timing.ended),
            ),
            timing,
            outcome,
            body_bytes,
        );
    }
    shared.progress.completed.fetch_add(1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A target on 127.0.0.1 that takes every connection and never answers.
    async fn silent_target() -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((connection, _)) = listener.accept().await {
                held.push(connection);
            }
        });
        addr
    }

    fn ms(histogram: &hdrhistogram::Histogram<u64>, at: u64) -> f64 {
        histogram.median_equivalent(at) as f64 / 1000.0
    }

    /// On one runtime thread, kept busy from 300 to 800 ms into the run: the request due at 500 ms goes out
    /// at about 800 ms and still times out at its due + 1 s, so no latency is over the timeout.
    #[tokio::test]
    async fn a_request_sent_late_times_out_at_its_due_plus_the_timeout() {
        let addr = silent_target().await;
        let plan = LoadPlan {
            mix: Mix::single(Target::parse(&format!("http://{addr}/"), "GET", &[], "").unwrap()),
            connect_to: Some(addr),
            proxy_originates_tls: false,
            num_clients: 1,
            pace: Pace::Open { rps: 2 },
            duration: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            max_in_flight: None,
        };
        let busy = tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            std::thread::sleep(Duration::from_millis(500));
        });
        let report = run(&plan, &CancellationToken::new(), Arc::default())
            .await
            .unwrap();
        busy.await.unwrap();
        let samples = &report.samples;
        assert_eq!((samples.requests(), samples.timeouts), (2, 2));
        let latest = ms(&samples.all_us, samples.all_us.max());
        assert!((1000.0..1050.0).contains(&latest), "latency {latest} ms");
        let queued = ms(&samples.queueing_us, samples.queueing_us.max());
        assert!((250.0..350.0).contains(&queued), "queueing {queued} ms");
        let shortest = ms(&samples.service_us, samples.service_us.min());
        assert!((650.0..750.0).contains(&shortest), "service {shortest} ms");
    }
}
