//! The one load scheduler, for every load we generate (HTTP requests in [`super`], MCP tool calls in
//! [`crate::mcp_load`]). In the open model, work starts when it is due whether or not earlier work has
//! finished, so a slow target shows up as latency rather than as less work; a start due while the client is
//! at its in-flight cap is not made and is reported as such. In the closed loop, the next start comes as
//! soon as a slot is free. Either way the work is told when it was due, and its latency is counted from
//! there (the definition both reports use: [`crate::report`]; the record: [`super::timing`]).
//!
//! How many starts an open-model schedule plans is decided by its [`Rate`], once, for both drivers: every
//! start due before the end of the run. Start j of the run (over all clients) is due when the rate's integral
//! reaches j, and client `index` of `clients` makes the starts j ≡ index (mod clients), so together they start
//! at the rate rather than in bursts of `clients`. At a constant 3/s for 1.5 s: 5 starts, at 0, ⅓, ⅔, 1 and
//! 1⅓ s.

use std::{future::Future, sync::Arc, time::Duration};

use futures::{StreamExt, stream::FuturesUnordered};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use super::rate::Rate;

/// When a client's starts are due.
#[derive(Debug, Clone)]
pub enum Arrivals {
    /// Open model: `planned` starts of client `client` of `clients`, its k-th being start k·clients + client
    /// of `rate`, counted from `start`.
    Open {
        start: Instant,
        rate: Arc<Rate>,
        client: u32,
        clients: u32,
        planned: u64,
    },
    /// Closed loop: each start as soon as a slot is free, `planned` in all (unbounded when `None`), none
    /// after `until`.
    Closed {
        planned: Option<u64>,
        until: Option<Instant>,
    },
}

impl Arrivals {
    /// The open-model starts of client `index` of `clients`, each starting `rate` per second from `start`
    /// for `duration`.
    pub fn open(start: Instant, rate: f64, duration: Duration, index: u32, clients: u32) -> Self {
        let total = Rate::constant(rate * f64::from(clients.max(1)), duration);
        Self::shaped(start, Arc::new(total), index, clients)
    }

    /// Client `index` of `clients`'s share of the starts of `rate` (over all clients), from `start`.
    pub fn shaped(start: Instant, rate: Arc<Rate>, index: u32, clients: u32) -> Self {
        let clients = clients.max(1);
        let planned = share(rate.planned(), index, clients);
        Arrivals::Open {
            start,
            rate,
            client: index,
            clients,
            planned,
        }
    }
}

/// Of `planned` starts dealt round to `clients`, how many client `index` makes.
fn share(planned: u64, index: u32, clients: u32) -> u64 {
    planned
        .saturating_sub(u64::from(index))
        .div_ceil(u64::from(clients.max(1)))
}

/// Starts client `index` of `clients` plans at `rate` per second for `duration`: those due before the end.
pub fn planned_for(rate: f64, duration: Duration, index: u32, clients: u32) -> u64 {
    share(planned(rate, duration, clients), index, clients)
}

/// Starts all `clients` together plan at `rate` per second each for `duration`.
pub fn planned(rate: f64, duration: Duration, clients: u32) -> u64 {
    if !(rate.is_finite() && rate > 0.0) {
        return 0;
    }
    Rate::constant(rate * f64::from(clients.max(1)), duration).planned()
}

/// What a client starts on schedule. Its futures borrow nothing from it, so several run at once while it
/// starts more.
pub trait Work {
    type Done;
    /// Starts work number `index` (0-based), due at `due`.
    fn start(
        &mut self,
        index: u64,
        due: Instant,
    ) -> impl Future<Output = Self::Done> + Send + use<Self>;
    /// A started work's result.
    fn done(&mut self, done: Self::Done);
    /// Work number `index`, due at `due`, came while the client was at its in-flight cap: it was not started.
    fn not_started(&mut self, index: u64, due: Instant);
}

/// Runs `arrivals` with at most `max_in_flight` works at once, until every started work is done or `stop`
/// fires (work in flight is then dropped).
pub async fn run<W: Work>(
    arrivals: Arrivals,
    max_in_flight: usize,
    work: &mut W,
    stop: &CancellationToken,
) {
    let max_in_flight = max_in_flight.max(1);
    let mut in_flight = FuturesUnordered::new();
    let mut next = 0u64;
    match arrivals {
        Arrivals::Open {
            start,
            rate,
            client,
            clients,
            planned,
        } => {
            let due = |k: u64| start + rate.due(k * u64::from(clients) + u64::from(client));
            // The precise timer: tokio's would start each work up to its 1 ms tick late.
            let tick = crate::timer::sleep_until(due(0));
            tokio::pin!(tick);
            while next < planned || !in_flight.is_empty() {
                tokio::select! {
                    biased;
                    () = stop.cancelled() => return,
                    Some(done) = in_flight.next() => work.done(done),
                    () = &mut tick, if next < planned => {
                        // Start every work whose time has come (several, if this task was late).
                        let now = Instant::now();
                        while next < planned && due(next) <= now {
                            if in_flight.len() < max_in_flight {
                                in_flight.push(work.start(next, due(next)));
                            } else {
                                work.not_started(next, due(next));
                            }
                            next += 1;
                        }
                        if next < planned {
                            tick.as_mut().reset(due(next));
                        }
                    }
                }
            }
        }
        Arrivals::Closed { planned, until } => {
            let more = |next: u64| {
                planned.is_none_or(|planned| next < planned)
                    && until.is_none_or(|until| Instant::now() < until)
            };
            loop {
                while in_flight.len() < max_in_flight && more(next) {
                    in_flight.push(work.start(next, Instant::now()));
                    next += 1;
                }
                if in_flight.is_empty() {
                    return;
                }
                tokio::select! {
                    biased;
                    () = stop.cancelled() => return,
                    Some(done) = in_flight.next() => work.done(done),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records when each work was due and started; each takes `busy` to finish.
    struct Probe {
        busy: Duration,
        started: Vec<(u64, Instant, Instant)>,
        done: u64,
        not_started: Vec<u64>,
    }

    impl Work for Probe {
        type Done = ();
        fn start(&mut self, index: u64, due: Instant) -> impl Future<Output = ()> + Send + use<> {
            self.started.push((index, due, Instant::now()));
            tokio::time::sleep(self.busy)
        }
        fn done(&mut self, (): ()) {
            self.done += 1;
        }
        fn not_started(&mut self, index: u64, _due: Instant) {
            self.not_started.push(index);
        }
    }

    fn probe(busy_ms: u64) -> Probe {
        Probe {
            busy: Duration::from_millis(busy_ms),
            started: Vec::new(),
            done: 0,
            not_started: Vec::new(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn open_starts_on_time_and_counts_what_the_cap_refused() {
        let start = Instant::now();
        let mut work = probe(250);
        let arrivals = Arrivals::open(start, 10.0, Duration::from_millis(1000), 1, 2);
        run(arrivals, 2, &mut work, &CancellationToken::new()).await;
        // Each start at its due time, the first half an interval in (client 1 of 2).
        for (index, due, started) in &work.started {
            assert_eq!(*due, start + Duration::from_millis(50 + 100 * index));
            assert_eq!(started, due);
        }
        // Two in flight at most, each busy 250 ms: every third due start finds both slots taken.
        assert_eq!(work.not_started, [2, 5, 8]);
        assert_eq!(work.done as usize, work.started.len());
        assert_eq!(work.started.len() + work.not_started.len(), 10);
    }

    #[test]
    fn an_open_schedule_plans_every_start_due_before_its_end() {
        let secs = Duration::from_secs_f64;
        assert_eq!(planned_for(3.0, secs(1.5), 0, 1), 5);
        assert_eq!(planned_for(3.0, secs(1.0), 0, 1), 3);
        // Two clients half an interval apart: 0, ⅓, ⅔, 1, 1⅓ s and ⅙, ½, ⅚, 1⅙ s.
        assert_eq!(planned_for(3.0, secs(1.5), 1, 2), 4);
        assert_eq!(planned(3.0, secs(1.5), 2), 9);
        assert_eq!(planned(50.0, secs(2.0), 4), 400);
        assert_eq!(planned(0.5, secs(3.0), 1), 2);
        assert_eq!(planned(0.0, secs(3.0), 1), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_planned_starts_are_those_due_before_the_end() {
        let start = Instant::now();
        let mut work = probe(10);
        let arrivals = Arrivals::open(start, 3.0, Duration::from_millis(1500), 0, 1);
        run(arrivals, 8, &mut work, &CancellationToken::new()).await;
        let due: Vec<Duration> = work
            .started
            .iter()
            .map(|(_, due, _)| *due - start)
            .collect();
        let ms = |ms: f64| Duration::from_secs_f64(ms / 1000.0);
        assert_eq!(due.len(), 5);
        for (got, want) in due.iter().zip([0.0, 333.3, 666.7, 1000.0, 1333.3]) {
            assert!(got.abs_diff(ms(want)) < ms(0.1), "{got:?} vs {want} ms");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn closed_keeps_every_slot_busy_and_stops_at_the_plan() {
        let mut work = probe(10);
        let arrivals = Arrivals::Closed {
            planned: Some(7),
            until: None,
        };
        let start = Instant::now();
        run(arrivals, 3, &mut work, &CancellationToken::new()).await;
        assert_eq!(work.done, 7);
        assert!(work.not_started.is_empty());
        assert_eq!(start.elapsed(), Duration::from_millis(30));
    }
}
