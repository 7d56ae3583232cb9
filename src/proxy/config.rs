//! Configuration of a proxy run: mappings, faults, seed. Shared by `fault run` and the scenario tools.

use std::path::PathBuf;
use std::time::Duration;

use super::faults::TcpFault;
use super::mapping::Mapping;

/// Everything one proxy needs. `Default` gives no mappings, no faults, random seed.
#[derive(Debug, Clone, Default)]
pub struct ProxyConfig {
    pub mappings: Vec<Mapping>,
    pub faults: Vec<TcpFault>,
    /// With a seed, every random decision (probability, latency samples, loss) is reproducible.
    pub seed: Option<u64>,
    /// Length of the run; needed by schedules written in percent.
    pub run_duration: Option<Duration>,
    /// An extra PEM CA bundle trusted for `https://` upstreams (besides the system roots).
    /// When `None`, the `FAULT_PROXY_EXTRA_CA` environment variable is read.
    pub extra_ca: Option<PathBuf>,
    /// How long to wait for an upstream to accept a connection (default 10 s).
    pub connect_timeout: Option<Duration>,
    /// Count the HTTP/1 requests every connection sends upstream ([`super::ProxyStats::requests_to_upstream`]),
    /// framed as the HTTP error fault frames them. Off by default: a counted flow is read through user space,
    /// never spliced.
    pub count_requests: bool,
}
