//! Faults as stages on a flow.
//!
//! Each fault is one file here: its spec (fields, defaults, validation), its description, its `fault run`
//! flags, what it shares across connections and its [`Stage`]. The [`registry!`] list below is the one
//! place that names them all; configuration, relay, CLI and scenarios dispatch through it.
//!
//! A [`Stage`] sees each chunk of one flow (request or response) of one connection, in order, and
//! answers with a [`Verdict`]: pass it, delay it, drop it (blackhole), replace its bytes, or end the
//! connection. Stages of a flow compose in configuration order; the relay applies the summed delay
//! before writing, so bytes are never reordered. Probability and schedule are applied by the relay
//! around every stage, so a stage only models its own effect.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rand::rngs::StdRng;
use tokio::time::Instant;

use super::placement::{FaultCommon, Flow, Window};
use super::values::ParseError;

/// The faults the proxy knows: `Variant => module::{Spec, Flags}`. Adding a fault is its file plus one line.
macro_rules! registry {
    ($($variant:ident => $module:ident :: { $spec:ident, $flags:ident }),* $(,)?) => {
        $(pub mod $module;)*

        /// One fault of a proxy.
        #[derive(Debug, Clone, PartialEq)]
        pub enum TcpFault {
            $($variant($module::$spec),)*
        }

        impl TcpFault {
            /// The fault behind the variant.
            pub fn fault(&self) -> &dyn TcpFaultSpec {
                match self {
                    $(TcpFault::$variant(spec) => spec,)*
                }
            }
        }

        $(impl From<$module::$spec> for TcpFault {
            fn from(spec: $module::$spec) -> Self {
                TcpFault::$variant(spec)
            }
        })*

        /// The `fault run` flags of every fault.
        #[derive(Debug, Clone, clap::Args)]
        pub struct FaultFlags {
            $(#[command(flatten)]
            pub $module: $module::$flags,)*
        }

        impl FaultFlags {
            /// The faults enabled on the command line, in registration order.
            pub fn specs(&self) -> Vec<TcpFault> {
                let mut specs = Vec::new();
                $(if let Some(spec) = self.$module.spec() {
                    specs.push(TcpFault::$variant(spec));
                })*
                specs
            }
        }
    };
}

registry! {
    Latency => latency::{LatencySpec, LatencyFlags},
    Jitter => jitter::{JitterSpec, JitterFlags},
    PacketLoss => packet_loss::{PacketLossSpec, PacketLossFlags},
    Bandwidth => bandwidth::{BandwidthSpec, BandwidthFlags},
    Blackhole => blackhole::{BlackholeSpec, BlackholeFlags},
    HttpError => http_error::{HttpErrorSpec, HttpErrorFlags},
    Reset => reset::{ResetSpec, ResetFlags},
    LimitData => limit_data::{LimitDataSpec, LimitDataFlags},
}

/// What a fault is, whatever its kind: implemented by each fault's spec.
pub trait TcpFaultSpec: fmt::Debug + Send + Sync {
    /// Short name of the fault kind, as used in stats, logs and reports.
    fn kind(&self) -> &'static str;
    fn common(&self) -> &FaultCommon;
    /// Checks the fault's own values; messages name the field.
    fn validate(&self) -> Result<(), ParseError> {
        Ok(())
    }
    /// One line for `fault run` output and scenario reports, e.g. "Latency: mean 300ms, …".
    fn describe(&self) -> String;
    /// Readies the fault for one proxy; state all its connections share is created here.
    fn injector(&self) -> Arc<dyn Injector>;
    /// Whether the fault reads HTTP/1 messages, so it needs them in clear text (the proxy, not the client,
    /// then speaks TLS to an `https://` upstream).
    fn reads_http(&self) -> bool {
        false
    }
}

/// A fault ready on one proxy: builds the stages of each new connection.
pub trait Injector: Send + Sync {
    /// The stages of one new connection, indexed by [`Flow::index`]; `acts_on` says which flows the fault's
    /// side and direction select. A fault may also watch a flow it does not act on (HTTP error watches
    /// requests), sharing per-connection state between its two stages.
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2];
}

/// The stages of a fault that acts on each selected flow alone, each built by `build`.
pub fn on_selected_flows(
    acts_on: [bool; 2],
    mut build: impl FnMut() -> Box<dyn Stage>,
) -> [Option<Box<dyn Stage>>; 2] {
    acts_on.map(|on| on.then(&mut build))
}

impl TcpFault {
    /// Short name of the fault kind, as used in stats and logs.
    pub fn kind(&self) -> &'static str {
        self.fault().kind()
    }

    pub fn common(&self) -> &FaultCommon {
        self.fault().common()
    }

    pub fn describe(&self) -> String {
        self.fault().describe()
    }

    /// Checks the values a parser could not (ranges, the fault's own rules).
    pub fn validate(&self) -> Result<(), ParseError> {
        let probability = self.common().probability;
        if !(0.0..=1.0).contains(&probability) {
            return Err(ParseError::new(format!(
                "{} probability must be between 0.0 and 1.0; got {probability}",
                self.kind()
            )));
        }
        self.fault().validate()
    }

    /// When the fault is active, from the proxy's start, in a run of `run_duration`: `None` = always; an error
    /// when its schedule is in percent and the run has no length.
    pub fn window(&self, run_duration: Option<Duration>) -> Result<Option<Window>, ParseError> {
        let Some(schedule) = &self.common().schedule else {
            return Ok(None);
        };
        schedule.window(run_duration).map(Some).ok_or_else(|| {
            ParseError::new(format!(
                "{} schedule uses percentages, which need a run duration (--duration)",
                self.kind()
            ))
        })
    }
}

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
}

/// A fault's behaviour on one flow of one connection. Built per connection, so it may keep state.
pub trait Stage: Send {
    /// Largest chunk this stage wants to decide on (e.g. one TCP segment); the relay splits reads.
    fn max_chunk(&self) -> Option<usize> {
        None
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
