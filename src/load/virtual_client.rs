//! A run's virtual clients: each starts requests on its schedule, keeps its idle connections and records
//! how each request ended.

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use http::Method;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{
    LoadProgress, Mix, Rate, RequestOutcome, Timing,
    client::{self, Connection, Connector},
    mix,
    recorder::SampleRecorder,
    schedule, timing,
};

/// What every virtual client of a run reads.
pub(super) struct RunState {
    pub(super) mix: Mix,
    pub(super) connector: Connector,
    pub(super) num_clients: u32,
    /// The open model's rate over all clients; `None` when saturating.
    pub(super) rate: Option<Arc<Rate>>,
    pub(super) duration: Duration,
    pub(super) timeout: Duration,
    /// Requests one client keeps in flight at most.
    pub(super) max_in_flight: usize,
    pub(super) start: Instant,
    pub(super) progress: Arc<LoadProgress>,
    /// One recorder per request of the mix, in its order.
    pub(super) recorders: Vec<SampleRecorder>,
}

impl RunState {
    /// How long after the run's start work due at `due` was due.
    fn since_start(&self, due: Instant) -> Duration {
        due.saturating_duration_since(self.start)
    }
}

/// One virtual client, in one task: it starts requests on its schedule and keeps its idle connections.
pub(super) async fn virtual_client(index: u32, shared: Arc<RunState>, stop: CancellationToken) {
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
