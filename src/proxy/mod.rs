//! The fault-injecting TCP proxy.
//!
//! [`start`] binds every listener of a [`ProxyConfig`], then relays each accepted connection to its
//! upstream through the configured faults (see [`faults`]). The returned [`ProxyHandle`] reports
//! [`ProxyStats`] and, on [`ProxyHandle::stop`], closes the listeners and every connection before
//! returning, so the ports are free again. `fault run` ([`cli`]) and the scenario tools use the same
//! types.

pub mod cli;
pub mod config;
pub mod exchanges;
pub mod faults;
pub mod mapping;
pub mod measure;
pub mod placement;
mod relay;
mod server;
mod splice;
pub mod values;

pub use config::ProxyConfig;
pub use faults::TcpFault;
pub use faults::bandwidth::{BandwidthScope, BandwidthSpec, BandwidthUnit};
pub use faults::blackhole::BlackholeSpec;
pub use faults::http_error::HttpErrorSpec;
pub use faults::jitter::JitterSpec;
pub use faults::latency::{LatencyDistribution, LatencySpec};
pub use faults::packet_loss::PacketLossSpec;
pub use mapping::{Mapping, Upstream};
pub use placement::{
    Direction, FaultCommon, Flow, SchedTime, Schedule, ScheduleError, ScheduledWindow, Side, Window,
};
pub use values::ParseError;

pub use server::{
    DEFAULT_CONNECT_TIMEOUT, ExchangeSetup, ProxyError, ProxyHandle, ProxyStats, ProxyView, start,
    start_with,
};
