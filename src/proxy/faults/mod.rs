//! Faults as stages on a flow.
//!
//! A [`Stage`] sees each chunk of one flow (request or response) of one connection, in order, and
//! answers with a [`Verdict`]: pass it, delay it, drop it (blackhole), replace its bytes, or end the
//! connection. Stages of a flow compose in configuration order; the relay applies the summed delay
//! before writing, so bytes are never reordered. Probability and schedule are applied by the relay
//! around every stage, so a stage only models its own effect.

use std::time::Duration;

use bytes::Bytes;
use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::time::Instant;

use super::config::{FaultSpec, Flow};

pub mod bandwidth;
pub mod blackhole;
pub mod http_error;
pub mod jitter;
pub mod latency;
pub mod packet_loss;

/// What to do with one chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Forward unchanged.
    Pass,
    /// Forward after this delay (later chunks wait behind it).
    Delay(Duration),
    /// Swallow the chunk: it is never forwarded.
    Drop,
    /// Forward these bytes instead of the chunk (later stages see them).
    Replace(Bytes),
    /// Close the connection (both flows).
    Close,
}

impl Verdict {
    /// `Delay(delay)`, or `Pass` when there is nothing to wait for.
    pub fn after(delay: Duration) -> Self {
        if delay.is_zero() {
            Verdict::Pass
        } else {
            Verdict::Delay(delay)
        }
    }
}

/// One chunk as a stage sees it.
#[derive(Debug)]
pub struct Chunk<'a> {
    pub bytes: &'a [u8],
    pub flow: Flow,
    /// First chunk of the connection on this flow, or first since the other flow carried bytes:
    /// the start of a message (an HTTP request or response).
    pub new_message: bool,
    /// When the chunk is being decided (tokio clock, so paused-time tests work).
    pub now: Instant,
}

/// A fault's behaviour on one flow of one connection. Built per connection, so it may keep state.
pub trait Stage: Send {
    /// Largest chunk this stage wants to decide on (e.g. one TCP segment); the relay splits reads.
    fn max_chunk(&self) -> Option<usize> {
        None
    }
    /// Decides what happens to `chunk`. `rng` is seeded from the proxy seed when one is set.
    fn on_chunk(&mut self, chunk: &Chunk<'_>, rng: &mut StdRng) -> Verdict;
}

/// State a fault shares across all connections of a proxy (e.g. the bandwidth link).
pub(crate) enum Shared {
    None,
    Link(std::sync::Arc<bandwidth::Link>),
}

impl Shared {
    pub(crate) fn for_spec(spec: &FaultSpec) -> Shared {
        match spec {
            FaultSpec::Bandwidth(b) => Shared::Link(std::sync::Arc::new(bandwidth::Link::new(
                b.bytes_per_second(),
            ))),
            _ => Shared::None,
        }
    }
}

/// State the two flows of one connection share.
#[derive(Default)]
pub(crate) struct ConnectionState {
    /// Which requests were HEAD, in order, so a response parser knows which answers carry no body.
    pub requests: std::sync::Arc<http_error::RequestLog>,
}

/// Builds the stage of `spec` for one flow of a new connection, if the fault acts on `flow`.
/// A fault that acts on the other flow may still need to watch this one (HTTP error watches requests).
pub(crate) fn new_stage(
    spec: &FaultSpec,
    shared: &Shared,
    acts_on_flow: bool,
    connection: &ConnectionState,
) -> Option<Box<dyn Stage>> {
    if !acts_on_flow {
        return match spec {
            FaultSpec::HttpError(_) => Some(Box::new(http_error::RequestTracker::new(
                connection.requests.clone(),
            ))),
            _ => None,
        };
    }
    Some(match (spec, shared) {
        (FaultSpec::Latency(s), _) => Box::new(latency::Latency::new(s)),
        (FaultSpec::Jitter(s), _) => Box::new(jitter::Jitter::new(s)),
        (FaultSpec::Bandwidth(_), Shared::Link(link)) => {
            Box::new(bandwidth::Bandwidth::new(link.clone()))
        }
        (FaultSpec::Bandwidth(b), Shared::None) => Box::new(bandwidth::Bandwidth::new(
            std::sync::Arc::new(bandwidth::Link::new(b.bytes_per_second())),
        )),
        (FaultSpec::PacketLoss(s), _) => Box::new(packet_loss::PacketLoss::new(s)),
        (FaultSpec::Blackhole(_), _) => Box::new(blackhole::Blackhole),
        (FaultSpec::HttpError(s), _) => {
            Box::new(http_error::HttpError::new(s, connection.requests.clone()))
        }
    })
}

/// The random generator the relay gives a stage: reproducible from `seed` and the stage's
/// coordinates (connection number, fault index, flow); fresh entropy without a seed.
pub fn stage_rng(seed: Option<u64>, connection: u64, fault: usize, flow: Flow) -> StdRng {
    match seed {
        Some(seed) => {
            // SplitMix-style mixing so neighbouring connections get unrelated streams.
            let mut x = seed
                ^ connection.wrapping_mul(0x9E37_79B9_7F4A_7C15)
                ^ (fault as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9)
                ^ (flow.index() as u64).wrapping_mul(0x94D0_49BB_1331_11EB);
            x ^= x >> 31;
            StdRng::seed_from_u64(x)
        }
        None => StdRng::seed_from_u64(rand::random()),
    }
}
