//! A fault's behaviour on one flow: the chunks it sees, the verdict it gives each, and the random generator it
//! draws from for one message.

use std::time::Duration;

use rand::rngs::StdRng;
use tokio::time::Instant;

use bytes::Bytes;

use crate::proxy::placement::Flow;

/// Ethernet's MSS for IPv4: the largest chunk a stage that models one TCP segment decides on at once
/// ([`Stage::max_chunk`]).
pub const MSS: usize = 1460;

/// A duration in milliseconds for descriptions: "300ms", "0.5ms".
pub(crate) fn in_ms(d: Duration) -> String {
    format!("{}ms", d.as_secs_f64() * 1e3)
}

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
    /// Forward the first `keep` bytes of the chunk, then end the connection (both flows) as `how` says.
    End { keep: usize, how: ConnectionEnd },
    /// Forward these bytes instead of the chunk, then end the connection (both flows) as `how` says.
    ReplaceAndEnd { bytes: Bytes, how: ConnectionEnd },
}

/// How a fault ends a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionEnd {
    /// FIN to both peers: they read what was sent, then a clean end of stream.
    Close,
    /// RST to both peers (`SO_LINGER` 0, then close): "connection reset by peer".
    Reset,
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
    /// Whether the fault's schedule has it active now. Always true for a stage of a fault that does not read
    /// HTTP: the relay only calls it inside its windows. A fault that reads HTTP follows the whole stream to
    /// stay in step with its messages, so it is called outside its windows too, and acts only inside them.
    pub active: bool,
}

/// A fault's behaviour on one flow of one connection. Built per connection, so it may keep state.
pub trait Stage: Send {
    /// Largest chunk this stage wants to decide on (e.g. one TCP segment); the relay splits reads.
    fn max_chunk(&self) -> Option<usize> {
        None
    }
    /// How many times the fault acted in `verdict`, the verdict this stage just gave, counted in the unit it
    /// works on (a message delayed, a segment lost, a connection reset): the "fault acted N times" of stats and
    /// reports. One for each verdict that is not `Pass`, unless the stage's unit is not a chunk (HTTP error
    /// counts responses, whatever the writes they come in).
    fn acted(&mut self, verdict: &Verdict) -> u64 {
        u64::from(*verdict != Verdict::Pass)
    }
    /// Whether the relay must keep this stage's delays exact (below the timer's 1 ms tick). A stage
    /// whose clock absorbs timer rounding by itself (bandwidth) says no.
    fn exact_delays(&self) -> bool {
        true
    }
    /// When the stage wants to act although no chunk arrives (e.g. a reset after N ms): the relay then
    /// calls [`Stage::on_timer`].
    fn timer(&self) -> Option<Instant> {
        None
    }
    /// Decides what happens when [`Stage::timer`] is reached.
    fn on_timer(&mut self, _now: Instant, _rng: &mut StdRng) -> Verdict {
        Verdict::Pass
    }
    /// Decides what happens to `chunk`. `rng` is keyed by the message (see [`message_rng`]).
    fn on_chunk(&mut self, chunk: &Chunk<'_>, rng: &mut StdRng) -> Verdict;
}

/// Where one message sits in a proxy's traffic: the key of every random decision a fault takes about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageKey {
    /// Index of the fault in the proxy's configuration.
    pub fault: usize,
    /// Accept order of the connection on the proxy.
    pub connection: u64,
    pub flow: Flow,
    /// Order of the message on its flow of the connection.
    pub message: u64,
}

/// The random generator a stage draws from for one message: it depends only on the proxy seed and the
/// message's [`MessageKey`], never on timing or on other connections, so the same seed and the same request
/// sequence give the same decisions (probability, latency samples, jitter spikes, losses).
pub fn message_rng(seed: u64, key: MessageKey) -> StdRng {
    crate::seeded::keyed_rng(
        seed,
        &[
            b"tcp",
            &(key.fault as u64).to_le_bytes(),
            &key.connection.to_le_bytes(),
            &(key.flow.index() as u64).to_le_bytes(),
            &key.message.to_le_bytes(),
        ],
    )
}
