//! Locust as the load engine: fault starts Locust headless as a master (and its workers on this machine, or
//! waits for workers started elsewhere), and turns Locust's own per-request results into the same
//! [`LoadReport`](super::LoadReport) its generator makes, so that the report's windows, phases, recovery and
//! SLOs sit on top unchanged.
//!
//! The results come from a plugin loaded with the locustfile ([`locustfile::PLUGIN`]): each worker keeps every
//! request Locust reports (name, start time, response time, status, error) and sends them with the stats of the
//! same report, so the records count exactly what Locust's own totals count. Latencies are Locust's, and
//! Locust's model is closed (users wait for their answers), not an arrival rate.
//!
//! A run: [`prepare`] checks everything before anything starts (Locust installed and recent enough, the
//! locustfile imports, the master's port free); [`Launched::start`] starts the master and local workers;
//! [`Launched::ready`] waits for the workers (within a bound); the caller readies its proxies and calls
//! [`Launched::go`] with the host to load, which starts the test and the clock the records count from;
//! [`Launched::finish`] waits for the end and reads the records. Every Locust process is killed when
//! [`Launched`] is dropped, so none outlives an error or a cancellation.

mod error;
mod install;
mod launch;
pub mod locustfile;
mod plan;
mod prepare;
mod records;

pub use error::LocustError;
pub use install::{INSTALL, MIN_VERSION, PROGRAM_VAR, program};
pub use launch::Launched;
pub use plan::{LocustPlan, Workers};
pub use prepare::{Prepared, check_locustfile, prepare};
pub use records::{EngineFigures, WorkerShare};
