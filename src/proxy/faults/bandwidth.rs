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
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::{Chunk, Injector, Stage, TcpFaultSpec, Verdict};
use crate::fields::{Field, FieldError, FieldInput, Unit, parses_as};
use crate::lenient::Number;
use crate::proxy::placement::{Direction, FaultCommon, Placeable};
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

#[derive(Debug, Clone, PartialEq, Default)]
pub struct BandwidthSpec {
    pub common: FaultCommon,
    /// The cap, in `unit`.
    pub rate: u64,
    pub unit: BandwidthUnit,
    pub scope: BandwidthScope,
}

const RATE: Field = Field::number(
    "rate",
    "Bandwidth cap, in `unit`",
    Number::from_to(1.0, 1e12).whole(),
    Unit::None,
)
.default("1000");
const UNIT: Field = Field::parsed(
    "unit",
    "Unit of `rate`: bytes per second, or thousand, million, billion bytes per second (any case)",
    "bps, kbps, mbps or gbps",
    parses_as::<BandwidthUnit>,
)
.default("bps");
const SCOPE: Field = Field::parsed(
    "scope",
    "Which connections share the cap: each connection its own `rate` per direction, as on a real path \
     (connection), or all connections through the proxy one `rate` per direction, queueing on it (proxy)",
    "connection or proxy",
    parses_as::<BandwidthScope>,
)
.default("connection");

impl BandwidthSpec {
    pub fn bytes_per_second(&self) -> u64 {
        self.rate.saturating_mul(self.unit.bytes_per_unit())
    }
}

impl TcpFaultSpec for BandwidthSpec {
    const KIND: &'static str = "bandwidth";
    const TITLE: &'static str = "Bandwidth";
    const ENABLE: &'static str =
        "Limit bandwidth (per connection, or shared: see --bandwidth-scope)";
    const MODEL: &'static str = "a link (virtual clock) per connection and flow (`connection`, the default, as \
`fault` and toxiproxy do), or one per flow shared by all connections of the proxy (`proxy`); decimal units, any \
case";
    const ACTED: &'static str = "chunks delayed (about 10 ms of traffic each)";
    const TOOL_DESCRIPTION: &'static str = "Evaluate an endpoint's reliability when a TCP path's bandwidth \
is capped to `rate` `unit` (bytes per second; each connection has its own cap by default, `scope` \"proxy\" \
makes all connections share one). Same topology, load and report as the latency scenario; the default \
direction, ingress, is the response flow, where bodies travel.";
    const PLACEABLE: Option<Placeable> = Some(Placeable::messages(Direction::Ingress));
    const FIELDS: &'static [Field] = &[RATE, UNIT, SCOPE];

    fn read(input: &FieldInput) -> Result<Self, FieldError> {
        Ok(Self {
            common: FaultCommon::default(),
            rate: input.whole(&RATE)?,
            unit: input.parsed(&UNIT)?,
            scope: input.parsed(&SCOPE)?,
        })
    }

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
