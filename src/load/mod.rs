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
mod error;
pub mod feed;
pub mod locust;
pub mod mix;
mod plan;
mod rate;
mod record;
mod recorder;
mod report;
mod run;
pub mod schedule;
mod target;
pub mod timing;
mod virtual_client;

pub use error::LoadError;
pub use mix::{Expect, Mix, MixError, MixRequest};
pub use plan::{DEFAULT_MAX_IN_FLIGHT, LoadPlan, Pace};
pub use rate::Rate;
pub use record::{PhaseSamples, RequestOutcome, Samples, SecondSamples, phase_of, phases};
pub(crate) use record::{histogram, record_us};
pub use report::{LoadProgress, LoadReport, RequestSamples};
pub use run::{GRACE, run, run_in_phases};
pub use target::Target;
pub use timing::Timing;
