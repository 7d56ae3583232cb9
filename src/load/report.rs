//! What a run tells while it goes (live counters) and once it is over (its report).

use std::{
    sync::{Mutex, atomic::AtomicU64},
    time::Duration,
};

use super::{Samples, recorder::lock};

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
