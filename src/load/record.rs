//! Samples of a load run: latency histograms (and latency split into queueing delay and service time),
//! outcome counts and a per-second series.

use std::{collections::BTreeMap, time::Duration};

use hdrhistogram::Histogram;

use super::Timing;

/// Highest latency a histogram tracks (1 hour, in microseconds); longer values are recorded as this.
const MAX_LATENCY_US: u64 = 3_600_000_000;
/// How many distinct transport error messages are kept as examples.
const MAX_ERROR_EXAMPLES: usize = 5;

/// How one request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestOutcome {
    /// A status below 400, with the whole body read.
    Success,
    /// A status of 400 or more that its request's `expect` does not accept, with the whole body read.
    HttpError(u16),
    /// A status below 400 its request's `expect` does not accept, or a body without the text it expects.
    Unexpected(u16),
    /// The connection failed, was refused, or broke before the body ended.
    Transport(String),
    /// Nothing complete arrived before `timeout`.
    Timeout,
    /// The request was not sent: its client already had its cap of requests in flight.
    NotStarted,
}

/// A latency histogram in µs, 1 µs to an hour (the load generator's and the MCP chaos report's), filled with
/// [`record_us`]. Its counts grow with the largest value recorded, so a run of millisecond latencies holds a
/// few tens of KB per histogram rather than the ~190 KB (at 3 significant figures) that an hour's range
/// takes; the buckets, and so every percentile, are the same either way.
pub(crate) fn histogram(sigfig: u8) -> Histogram<u64> {
    // An auto-resizing histogram from 1 µs; any sigfig up to 5 is valid, so creation cannot fail.
    Histogram::new(sigfig.min(5)).unwrap_or_else(|_| unreachable!("valid sigfig"))
}

/// Records `us` into a histogram of [`histogram`], within 1 µs to an hour.
pub(crate) fn record_us(histogram: &mut Histogram<u64>, us: u64) {
    // Growing to an hour's range cannot overflow its counts' length.
    let _ = histogram.record(us.clamp(1, MAX_LATENCY_US));
}

/// Figures of one second of the schedule (requests grouped by their scheduled start).
#[derive(Debug, Clone)]
pub struct SecondSamples {
    /// Latencies (µs) of every request scheduled in this second, whatever its outcome.
    pub latency_us: Histogram<u64>,
    pub requests: u64,
    pub errors: u64,
    /// Of the errors, timeouts.
    pub timeouts: u64,
    /// Answers (a status and its whole body, whatever the status) that ended in this second, whenever their
    /// requests were due: the rate achieved.
    pub answered: u64,
}

impl SecondSamples {
    pub(crate) fn new() -> Self {
        Self {
            latency_us: histogram(2),
            requests: 0,
            errors: 0,
            timeouts: 0,
            answered: 0,
        }
    }

    pub(super) fn add(&mut self, latency: Duration, outcome: &RequestOutcome) {
        record_us(&mut self.latency_us, micros(latency));
        self.requests += 1;
        self.errors += u64::from(*outcome != RequestOutcome::Success);
        self.timeouts += u64::from(*outcome == RequestOutcome::Timeout);
    }
}

/// Figures of one phase of the run (requests grouped by their scheduled start, from `from` until `until`
/// after the run's start): what a phase of the impact report is judged on.
#[derive(Debug, Clone)]
pub struct PhaseSamples {
    pub from: Duration,
    pub until: Duration,
    /// Latencies (µs) of every request due in the phase, whatever its outcome.
    pub all_us: Histogram<u64>,
    /// Latencies (µs) of its successful requests.
    pub success_us: Histogram<u64>,
    pub success: u64,
    pub errors: u64,
    /// Of the errors, timeouts.
    pub timeouts: u64,
}

impl PhaseSamples {
    pub fn new(from: Duration, until: Duration) -> Self {
        Self {
            from,
            until,
            all_us: histogram(3),
            success_us: histogram(3),
            success: 0,
            errors: 0,
            timeouts: 0,
        }
    }

    /// Records one request due in the phase.
    pub fn add(&mut self, latency: Duration, outcome: &RequestOutcome) {
        let us = micros(latency);
        record_us(&mut self.all_us, us);
        if *outcome == RequestOutcome::Success {
            self.success += 1;
            record_us(&mut self.success_us, us);
        } else {
            self.errors += 1;
        }
        self.timeouts += u64::from(*outcome == RequestOutcome::Timeout);
    }

    pub fn requests(&self) -> u64 {
        self.all_us.len()
    }

    /// Adds `other`'s requests (the same phase of another part of the run) to these.
    pub fn merge(&mut self, other: &PhaseSamples) {
        let _ = self.all_us.add(&other.all_us);
        let _ = self.success_us.add(&other.success_us);
        self.success += other.success;
        self.errors += other.errors;
        self.timeouts += other.timeouts;
    }
}

/// The phases of a run of `duration` cut at `cuts` (times from its start, in order, inside the run): from 0
/// to the first cut, between cuts, from the last cut to the end. No cut: no phases.
pub fn phases(cuts: &[Duration], duration: Duration) -> Vec<PhaseSamples> {
    if cuts.is_empty() {
        return Vec::new();
    }
    let mut bounds = Vec::with_capacity(cuts.len() + 2);
    bounds.push(Duration::ZERO);
    bounds.extend(
        cuts.iter()
            .copied()
            .filter(|c| !c.is_zero() && *c < duration),
    );
    bounds.push(duration);
    bounds.dedup();
    bounds
        .windows(2)
        .map(|pair| PhaseSamples::new(pair[0], pair[1]))
        .collect()
}

/// The phase of `phases` work due `at` after the run's start belongs to (the last one for work due at or
/// after its end).
pub fn phase_of(phases: &[PhaseSamples], at: Duration) -> Option<usize> {
    let after = phases.partition_point(|phase| phase.from <= at);
    after.checked_sub(1)
}

fn micros(latency: Duration) -> u64 {
    (latency.as_micros() as u64).max(1)
}

/// Everything measured during a run (merged over clients).
#[derive(Debug, Clone)]
pub struct Samples {
    /// Latency (µs) of every request: successes, HTTP errors, transport errors, and timeouts at their end.
    pub all_us: Histogram<u64>,
    /// Latency (µs) of successful requests only.
    pub success_us: Histogram<u64>,
    /// Queueing delay (µs, due → sent) of every request; a request that could not start waited its timeout.
    pub queueing_us: Histogram<u64>,
    /// Service time (µs, sent → ended) of every request that was sent.
    pub service_us: Histogram<u64>,
    /// Exact sum of `all_us` values, for a true mean.
    pub sum_us: u128,
    pub success: u64,
    pub http_errors: BTreeMap<u16, u64>,
    /// Answers their request's `expect` did not accept (a status below 400 it does not list, or a body
    /// without its text), by status.
    pub unexpected: BTreeMap<u16, u64>,
    pub transport_errors: u64,
    pub timeouts: u64,
    /// Requests that could not start (in-flight cap reached).
    pub not_started: u64,
    pub transport_error_examples: Vec<String>,
    pub body_bytes: u64,
    pub per_second: Vec<SecondSamples>,
    /// The run's phases, when it was cut into some (see [`phases`]); empty otherwise.
    pub phases: Vec<PhaseSamples>,
}

impl Samples {
    /// Empty samples for a run of `seconds` seconds.
    pub fn new(seconds: usize) -> Self {
        Self {
            all_us: histogram(3),
            success_us: histogram(3),
            queueing_us: histogram(3),
            service_us: histogram(3),
            sum_us: 0,
            success: 0,
            http_errors: BTreeMap::new(),
            unexpected: BTreeMap::new(),
            transport_errors: 0,
            timeouts: 0,
            not_started: 0,
            transport_error_examples: Vec::new(),
            body_bytes: 0,
            per_second: (0..seconds).map(|_| SecondSamples::new()).collect(),
            phases: Vec::new(),
        }
    }

    pub fn requests(&self) -> u64 {
        self.all_us.len()
    }

    pub fn http_error_count(&self) -> u64 {
        self.http_errors.values().sum()
    }

    pub fn unexpected_count(&self) -> u64 {
        self.unexpected.values().sum()
    }

    pub fn errors(&self) -> u64 {
        self.http_error_count()
            + self.unexpected_count()
            + self.transport_errors
            + self.timeouts
            + self.not_started
    }

    /// Records one request scheduled in `second`, with its times and `outcome`.
    pub fn record(
        &mut self,
        second: usize,
        timing: &Timing,
        outcome: RequestOutcome,
        body_bytes: u64,
    ) {
        let latency = timing.latency();
        let us = micros(latency);
        record_us(&mut self.all_us, us);
        record_us(&mut self.queueing_us, micros(timing.queueing()));
        if let Some(service) = timing.service() {
            record_us(&mut self.service_us, micros(service));
        }
        self.sum_us += u128::from(us);
        self.body_bytes += body_bytes;
        if let Some(slot) = self.per_second.get_mut(second) {
            slot.add(latency, &outcome);
        }
        match outcome {
            RequestOutcome::Success => {
                self.success += 1;
                record_us(&mut self.success_us, us);
            }
            RequestOutcome::HttpError(status) => *self.http_errors.entry(status).or_default() += 1,
            RequestOutcome::Unexpected(status) => *self.unexpected.entry(status).or_default() += 1,
            RequestOutcome::Transport(message) => {
                self.transport_errors += 1;
                if self.transport_error_examples.len() < MAX_ERROR_EXAMPLES
                    && !self.transport_error_examples.contains(&message)
                {
                    self.transport_error_examples.push(message);
                }
            }
            RequestOutcome::Timeout => self.timeouts += 1,
            RequestOutcome::NotStarted => self.not_started += 1,
        }
    }

    /// Adds `other`'s requests to these: totals, outcomes, each second (by its index) and each phase (by its
    /// index; a phase these samples lack is taken as `other` has it).
    pub fn merge(&mut self, other: &Samples) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.all_us.add(&other.all_us);
        let _ = self.success_us.add(&other.success_us);
        let _ = self.queueing_us.add(&other.queueing_us);
        let _ = self.service_us.add(&other.service_us);
        self.sum_us += other.sum_us;
        self.success += other.success;
        for (status, count) in &other.http_errors {
            *self.http_errors.entry(*status).or_default() += count;
        }
        for (status, count) in &other.unexpected {
            *self.unexpected.entry(*status).or_default() += count;
        }
        self.transport_errors += other.transport_errors;
        self.timeouts += other.timeouts;
        self.not_started += other.not_started;
        for example in &other.transport_error_examples {
            if self.transport_error_examples.len() < MAX_ERROR_EXAMPLES
                && !self.transport_error_examples.contains(example)
            {
                self.transport_error_examples.push(example.clone());
            }
        }
        self.body_bytes += other.body_bytes;
        if self.per_second.len() < other.per_second.len() {
            self.per_second
                .resize_with(other.per_second.len(), SecondSamples::new);
        }
        for (mine, theirs) in self.per_second.iter_mut().zip(&other.per_second) {
            let _ = mine.latency_us.add(&theirs.latency_us);
            mine.requests += theirs.requests;
            mine.errors += theirs.errors;
            mine.timeouts += theirs.timeouts;
            mine.answered += theirs.answered;
        }
        for (index, theirs) in other.phases.iter().enumerate() {
            match self.phases.get_mut(index) {
                Some(mine) => mine.merge(theirs),
                None => self.phases.push(theirs.clone()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_grows_with_its_values_and_keeps_the_percentiles_of_an_hours_range() {
        let mut grown = histogram(3);
        let mut full = Histogram::<u64>::new_with_bounds(1, MAX_LATENCY_US, 3).unwrap();
        for us in (1..5_000).step_by(7) {
            record_us(&mut grown, us);
            full.saturating_record(us);
        }
        // Millisecond latencies: a fraction of the counts an hour's range takes.
        assert!(grown.distinct_values() * 4 < full.distinct_values());
        // Longer ones, up to past the hour (kept as the hour).
        for us in [250_000, 90_000_000, 7_200_000_000] {
            record_us(&mut grown, us);
            full.saturating_record(us);
        }
        for q in [0.0, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(grown.value_at_quantile(q), full.value_at_quantile(q), "{q}");
        }
        assert_eq!((grown.min(), grown.max()), (full.min(), full.max()));
    }
}
