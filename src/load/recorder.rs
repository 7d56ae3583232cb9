//! Where a run's clients record their requests, sharded so that they rarely wait on each other.

use std::{sync::Mutex, time::Duration};

use super::{PhaseSamples, RequestOutcome, Samples, SecondSamples, Timing};

/// Where clients record. Memory stays bounded by the run's length, not by clients × seconds: totals go
/// to a few shards (a histogram at 3 significant digits is a few hundred KB), and each second of the
/// series has one slot shared by all clients. Each record takes two short, mostly uncontended locks.
pub(super) struct SampleRecorder {
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
    pub(super) fn new(num_clients: u32, seconds: usize, phases: Vec<PhaseSamples>) -> Self {
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
    pub(super) fn record(
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
    pub(super) fn samples(&self) -> Samples {
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
pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
