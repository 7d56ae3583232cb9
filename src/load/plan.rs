//! What a load run is asked to do: its mix, pace, length and per-client in-flight cap.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use super::{Mix, Rate, Target};

/// Requests one client keeps in flight at most, unless the plan says otherwise.
pub const DEFAULT_MAX_IN_FLIGHT: u32 = 256;

/// Open files one in-flight request may hold in this process: its socket, and the two of a proxy in front.
const FILES_PER_REQUEST: u64 = 3;
/// Open files left for everything else (logs, listeners, the MCP transport).
const FILES_KEPT: u64 = 256;

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

    pub(super) fn seconds(&self) -> usize {
        seconds_of(self.duration)
    }
}

/// Seconds of the per-second series.
pub(super) fn seconds_of(duration: Duration) -> usize {
    duration.as_secs_f64().ceil().max(1.0) as usize
}
