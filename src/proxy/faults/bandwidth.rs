//! Bandwidth: links of `rate` bytes per second, one per connection and flow (the default, as a connection's
//! own path would be) or one per flow shared by every connection of the proxy (`scope` proxy: the
//! connections queue on it).
//!
//! A link is a virtual clock (GCRA): each chunk is sent when the link is free and takes
//! `len / rate` to cross it, so a body of N bytes takes N / rate, whatever the chunking.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use tokio::time::Instant;

use super::flags::OwnFlags;
use super::{Chunk, Injector, Placeable, Stage, TcpFaultSpec, Verdict};
use crate::lenient::{self, Lenient, Number, Scalar};
use crate::proxy::placement::{Direction, FaultCommon};
use crate::proxy::values::ParseError;

/// Units of a bandwidth rate: bytes per second, decimal multiples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum BandwidthUnit {
    #[default]
    Bps,
    KBps,
    MBps,
    GBps,
}

impl BandwidthUnit {
    pub fn bytes_per_unit(self) -> u64 {
        match self {
            Self::Bps => 1,
            Self::KBps => 1_000,
            Self::MBps => 1_000_000,
            Self::GBps => 1_000_000_000,
        }
    }
}

impl FromStr for BandwidthUnit {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bps" => Ok(Self::Bps),
            "kbps" => Ok(Self::KBps),
            "mbps" => Ok(Self::MBps),
            "gbps" => Ok(Self::GBps),
            _ => Err(ParseError::new(format!(
                "bandwidth unit must be one of Bps, KBps, MBps, GBps (bytes per second; lower-case accepted); got '{s}'"
            ))),
        }
    }
}

impl fmt::Display for BandwidthUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Bps => "Bps",
            Self::KBps => "KBps",
            Self::MBps => "MBps",
            Self::GBps => "GBps",
        })
    }
}

/// Which connections share one link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BandwidthScope {
    /// Each connection has its own link per flow.
    #[default]
    Connection,
    /// All connections of the proxy share one link per flow.
    Proxy,
}

impl FromStr for BandwidthScope {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "connection" => Ok(Self::Connection),
            "proxy" => Ok(Self::Proxy),
            _ => Err(ParseError::new(format!(
                "bandwidth scope must be connection or proxy; got '{s}'"
            ))),
        }
    }
}

impl fmt::Display for BandwidthScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Connection => "connection",
            Self::Proxy => "proxy",
        })
    }
}

impl Scalar for BandwidthUnit {
    const JSON_TYPES: &'static [&'static str] = &[];
    const EXPECTED: &'static str = "one of bps, kbps, mbps, gbps";
}

impl Scalar for BandwidthScope {
    const JSON_TYPES: &'static [&'static str] = &[];
    const EXPECTED: &'static str = "one of connection, proxy";
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
pub struct BandwidthSpec {
    #[serde(skip)]
    pub common: FaultCommon,
    /// Bandwidth cap in `unit`, a whole number ≥ 1.
    #[serde(deserialize_with = "rate")]
    #[schemars(with = "Lenient<f64>")]
    pub rate: u64,
    /// Unit of `rate`: "bps" (bytes per second), "kbps", "mbps" or "gbps" (thousand, million, billion bytes
    /// per second). Default "bps".
    #[serde(default, deserialize_with = "lenient::scalar")]
    #[schemars(with = "Lenient<BandwidthUnit>")]
    pub unit: BandwidthUnit,
    /// Which connections share the cap: "connection" (each connection has its own `rate` per direction, as
    /// on a real path) or "proxy" (all connections through the proxy share one `rate` per direction and queue
    /// on it). Default "connection".
    #[serde(default, deserialize_with = "lenient::scalar")]
    #[schemars(with = "Lenient<BandwidthScope>")]
    pub scope: BandwidthScope,
}

fn rate<'de, D: Deserializer<'de>>(input: D) -> Result<u64, D::Error> {
    let rate = Number::any()
        .required("a bandwidth such as 1024 (with unit \"bps\")")
        .read(input)?;
    if rate < 1.0 || rate.fract() != 0.0 || rate > 1e12 {
        return Err(serde::de::Error::custom(format!(
            "{rate} is not accepted; use a whole number from 1 to 1000000000000 (in `unit`)"
        )));
    }
    Ok(rate as u64)
}

impl BandwidthSpec {
    pub fn bytes_per_second(&self) -> u64 {
        self.rate.saturating_mul(self.unit.bytes_per_unit())
    }
}

impl TcpFaultSpec for BandwidthSpec {
    const KIND: &'static str = "bandwidth";
    const TITLE: &'static str = "Bandwidth";
    const TOOL_DESCRIPTION: &'static str = "Evaluate an endpoint's reliability when a TCP path's bandwidth \
is capped to `rate` `unit` (bytes per second; each connection has its own cap by default, `scope` \"proxy\" \
makes all connections share one). Same topology, load and report as the latency scenario. Defaults: side \
server, direction ingress (the response flow, where bodies travel), unit bps.";
    const PLACEABLE: Option<Placeable> = Some(Placeable::messages(Direction::Ingress));
    type Flags = BandwidthFlags;

    fn validate(&self) -> Result<(), ParseError> {
        if self.bytes_per_second() == 0 {
            return Err(ParseError::new(
                "bandwidth rate must be above 0 (e.g. --bandwidth-rate 1000 --bandwidth-unit KBps)",
            ));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let scope = match self.scope {
            BandwidthScope::Connection => "each connection",
            BandwidthScope::Proxy => "shared by all connections",
        };
        format!(
            "Bandwidth: {} {} ({} bytes per second, {scope})",
            self.rate,
            self.unit,
            self.bytes_per_second()
        )
    }

    fn injector(&self) -> Arc<dyn Injector> {
        let rate = self.bytes_per_second();
        Arc::new(Links {
            rate,
            shared: (self.scope == BandwidthScope::Proxy)
                .then(|| [(); 2].map(|_| Arc::new(Link::new(rate)))),
        })
    }
}

/// The links of one proxy: shared ones per flow (proxy scope), or new ones for each connection.
struct Links {
    rate: u64,
    shared: Option<[Arc<Link>; 2]>,
}

impl Injector for Links {
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2] {
        std::array::from_fn(|flow| {
            acts_on[flow].then(|| {
                let link = match &self.shared {
                    Some(links) => links[flow].clone(),
                    None => Arc::new(Link::new(self.rate)),
                };
                Box::new(Bandwidth::new(link)) as Box<dyn Stage>
            })
        })
    }
}

/// `fault run` flags of the bandwidth fault.
#[derive(Debug, Clone, clap::Args)]
pub struct BandwidthFlags {
    /// Limit bandwidth (per connection, or shared: see --bandwidth-scope).
    #[arg(long, env = "FAULT_WITH_BANDWIDTH")]
    pub with_bandwidth: bool,
    /// Rate, in --bandwidth-unit.
    #[arg(long, env = "FAULT_BANDWIDTH_RATE", default_value = "1000")]
    pub bandwidth_rate: u64,
    /// Unit: Bps, KBps, MBps, GBps (bytes per second, decimal).
    #[arg(long, env = "FAULT_BANDWIDTH_UNIT", default_value = "Bps")]
    pub bandwidth_unit: BandwidthUnit,
    /// Which connections share a link: connection (each its own, per flow) or proxy (one per flow for all).
    #[arg(long, env = "FAULT_BANDWIDTH_SCOPE", default_value = "connection")]
    pub bandwidth_scope: BandwidthScope,
}

impl OwnFlags<BandwidthSpec> for BandwidthFlags {
    fn spec(&self) -> Option<BandwidthSpec> {
        self.with_bandwidth.then_some(BandwidthSpec {
            common: FaultCommon::default(),
            rate: self.bandwidth_rate,
            unit: self.bandwidth_unit,
            scope: self.bandwidth_scope,
        })
    }
}

/// Idle time the link may bank, so timer wake-up lateness does not lower the rate.
const SLACK: Duration = Duration::from_millis(10);

pub struct Link {
    bytes_per_second: f64,
    /// When the link finishes sending what it has accepted so far.
    busy_until: Mutex<Option<Instant>>,
}

impl Link {
    pub fn new(bytes_per_second: u64) -> Self {
        Self {
            bytes_per_second: bytes_per_second.max(1) as f64,
            busy_until: Mutex::new(None),
        }
    }

    /// Reserves the link for `len` bytes; returns how long until they have crossed it.
    pub fn reserve(&self, len: usize, now: Instant) -> Duration {
        let cost = Duration::from_secs_f64(len as f64 / self.bytes_per_second);
        let mut guard = match self.busy_until.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let floor = now.checked_sub(SLACK).unwrap_or(now);
        let start = match *guard {
            Some(t) if t > floor => t,
            _ => floor,
        };
        let done = start + cost;
        *guard = Some(done);
        done.saturating_duration_since(now)
    }

    /// A chunk size that keeps delivery smooth: about 10 ms of traffic, between 256 B and 64 KiB.
    pub fn chunk_size(&self) -> usize {
        ((self.bytes_per_second / 100.0) as usize).clamp(256, 64 * 1024)
    }
}

pub struct Bandwidth {
    link: Arc<Link>,
}

impl Bandwidth {
    pub fn new(link: Arc<Link>) -> Self {
        Self { link }
    }
}

impl Stage for Bandwidth {
    fn max_chunk(&self) -> Option<usize> {
        Some(self.link.chunk_size())
    }

    /// The link's clock absorbs timer rounding (see `SLACK`).
    fn exact_delays(&self) -> bool {
        false
    }

    fn on_chunk(&mut self, chunk: &Chunk<'_>, _rng: &mut StdRng) -> Verdict {
        let delay = self.link.reserve(chunk.bytes.len(), chunk.now);
        Verdict::after(delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_takes_len_over_rate_even_with_late_wakeups() {
        let link = Link::new(10_000);
        let start = Instant::now();
        let mut now = start;
        let mut sent = 0;
        while sent < 20_000 {
            let d = link.reserve(link.chunk_size(), now);
            // Every wake-up is 1 ms late, as a coarse timer would be.
            now += d + Duration::from_millis(1);
            sent += link.chunk_size();
        }
        let took = (now - start).as_secs_f64();
        assert!((took - 2.0).abs() < 0.02, "{took}");
    }
}
