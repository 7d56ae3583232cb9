//! What went upstream during a run: the proxy's counters read at each boundary of the run's seconds and
//! phases, set against the load's requests in the report (retry amplification).

use std::time::Duration;

use tokio::time::Instant;

use crate::{
    load::LoadReport,
    proxy::{ProxyHandle, ProxyStats},
    report::impact::{UpstreamCounts, UpstreamTally},
};

/// How long before a boundary the counters are read at most: the request due at the boundary (open-model
/// requests fall on whole seconds) must count after it however late the timer fires, and the one due before it
/// must have reached the upstream.
const MAX_READ_AHEAD: Duration = Duration::from_millis(20);

/// The proxy's counters read at each boundary of the run's seconds and phases, counted from the load's start.
pub(super) struct Tally {
    duration: Duration,
    /// Readings are taken this long before their boundary: half the time between two requests of the load, at
    /// most [`MAX_READ_AHEAD`].
    read_ahead: Duration,
    /// The boundaries inside the run, in order: each whole second and each phase cut.
    boundaries: Vec<Duration>,
    /// The counters at each boundary reached.
    readings: Vec<Option<UpstreamTally>>,
}

fn tally_of(stats: &ProxyStats) -> UpstreamTally {
    UpstreamTally {
        connections: stats.connections_total,
        requests: stats.requests_to_upstream,
    }
}

impl Tally {
    pub(super) fn new(duration: Duration, cuts: &[Duration], requests_per_second: f64) -> Self {
        let mut boundaries: Vec<Duration> = (1..duration.as_secs_f64().ceil() as u64)
            .map(Duration::from_secs)
            .chain(cuts.iter().copied())
            .filter(|at| !at.is_zero() && *at < duration)
            .collect();
        boundaries.sort();
        boundaries.dedup();
        Self {
            duration,
            read_ahead: Duration::from_secs_f64(0.5 / requests_per_second.max(1.0))
                .min(MAX_READ_AHEAD),
            readings: vec![None; boundaries.len()],
            boundaries,
        }
    }

    /// Reads `handle`'s counters at each boundary, counted from when the load's schedule starts (`start`);
    /// once they are all read (or without a start), waits forever.
    pub(super) async fn watch(
        &mut self,
        handle: &ProxyHandle,
        start: tokio::sync::oneshot::Receiver<Instant>,
    ) {
        let Ok(start) = start.await else {
            return std::future::pending().await;
        };
        // The faults' windows, like the load's seconds and phases, count from the load's start.
        handle.schedule_from(start);
        for (at, reading) in self.boundaries.iter().zip(self.readings.iter_mut()) {
            tokio::time::sleep_until(start + at.saturating_sub(self.read_ahead)).await;
            *reading = Some(tally_of(&handle.stats()));
        }
        std::future::pending::<()>().await;
    }

    /// The counters `at` from the start: its reading, or the final ones `last` at (and past) the end of the
    /// run, so that work still in flight then counts in the last second and phase.
    fn at(&self, at: Duration, last: UpstreamTally) -> UpstreamTally {
        if at.is_zero() {
            return UpstreamTally::default();
        }
        if at >= self.duration {
            return last;
        }
        self.boundaries
            .binary_search(&at)
            .ok()
            .and_then(|i| self.readings[i])
            .unwrap_or(last)
    }

    fn between(&self, from: Duration, until: Duration, last: UpstreamTally) -> UpstreamTally {
        let (a, b) = (self.at(from, last), self.at(until, last));
        UpstreamTally {
            connections: b.connections.saturating_sub(a.connections),
            requests: b.requests.saturating_sub(a.requests),
        }
    }

    /// The counts per second and per phase of `load`, `stats` being the proxy's final counters.
    pub(super) fn counts(&self, load: &LoadReport, stats: &ProxyStats) -> UpstreamCounts {
        let last = tally_of(stats);
        let seconds = load.samples.per_second.len() as u64;
        UpstreamCounts {
            per_second: (0..seconds)
                .map(|s| self.between(Duration::from_secs(s), Duration::from_secs(s + 1), last))
                .collect(),
            per_phase: load
                .samples
                .phases
                .iter()
                .map(|phase| self.between(phase.from, phase.until, last))
                .collect(),
            total: last,
            requests_counted: stats.opaque_request_flows == 0,
        }
    }
}
