//! Faults as stages on a flow.
//!
//! Each fault is one file here: its spec, its fields (each declared once, as a [`Field`]: name, range,
//! default, unit and help), how it reads them ([`TcpFaultSpec::read`]), its [`TcpFaultSpec`] facts (name,
//! heading, descriptions, whether the user places it), what it shares across connections and its [`Stage`].
//! The [`registry!`] list below is the one place that names them all; every face is generated from it and
//! from the fields: [`TcpFault`], the `fault run` flags ([`flags`]), one impact-scenario tool per fault, the
//! tool lists ([`for_each`]) and the reference tables. The fields every placeable fault shares (side,
//! direction, probability, sched) are declared once, in [`crate::proxy::placement`].
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

pub mod flags;

use super::placement::{self, Direction, FaultCommon, Flow, ScheduleError, Window};
use super::values::ParseError;
use crate::fields::{Field, FieldError, FieldInput};
use flags::FaultArgs;

/// The faults the proxy knows: `Variant => module::Spec`. Adding a fault is its file plus one line; every
/// spec has a `pub common: FaultCommon` (where, how often and when it acts), which the faces set.
macro_rules! registry {
    ($($variant:ident => $module:ident :: $spec:ident),* $(,)?) => {
        $(pub mod $module;)*

        /// A configured fault of a proxy.
        #[derive(Debug, Clone, PartialEq)]
        pub enum TcpFault {
            $($variant($module::$spec),)*
        }

        impl TcpFault {
            /// Short name of the fault kind, as used in stats, logs, reports, flags and tool names.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => <$module::$spec as TcpFaultSpec>::KIND,)*
                }
            }

            /// Where, how often and when the fault acts.
            pub fn common(&self) -> &FaultCommon {
                match self {
                    $(Self::$variant(spec) => &spec.common,)*
                }
            }

            pub fn common_mut(&mut self) -> &mut FaultCommon {
                match self {
                    $(Self::$variant(spec) => &mut spec.common,)*
                }
            }

            /// One line for `fault run` output and scenario reports, e.g. "Latency: mean 300ms, …".
            pub fn describe(&self) -> String {
                match self {
                    $(Self::$variant(spec) => spec.describe(),)*
                }
            }

            /// Readies the fault for one proxy.
            pub fn injector(&self) -> Arc<dyn Injector> {
                match self {
                    $(Self::$variant(spec) => spec.injector(),)*
                }
            }

            /// Whether the fault reads HTTP/1 messages (see [`TcpFaultSpec::READS_HTTP`]).
            pub fn reads_http(&self) -> bool {
                match self {
                    $(Self::$variant(_) => <$module::$spec as TcpFaultSpec>::READS_HTTP,)*
                }
            }

            fn validate_own(&self) -> Result<(), ParseError> {
                match self {
                    $(Self::$variant(spec) => spec.validate(),)*
                }
            }
        }

        $(impl From<$module::$spec> for TcpFault {
            fn from(spec: $module::$spec) -> Self {
                TcpFault::$variant(spec)
            }
        })*

        /// The `fault run` flags of every fault, in registration order.
        #[derive(Debug, Clone, clap::Args)]
        pub struct FaultFlags {
            $(#[command(flatten)]
            pub $module: FaultArgs<$module::$spec>,)*
        }

        impl FaultFlags {
            /// The faults enabled on the command line, in registration order.
            pub fn specs(&self) -> Vec<TcpFault> {
                [$(self.$module.fault.clone()),*].into_iter().flatten().collect()
            }
        }

        /// Calls `each` with every registered fault's spec type, in registration order: how the faces that list
        /// every fault (the impact-scenario tools, the tool lists, the reference) are built.
        pub fn for_each(each: &mut impl EachFault) {
            $(each.fault::<$module::$spec>();)*
        }
    };
}

registry! {
    Latency => latency::LatencySpec,
    Jitter => jitter::JitterSpec,
    PacketLoss => packet_loss::PacketLossSpec,
    Bandwidth => bandwidth::BandwidthSpec,
    Blackhole => blackhole::BlackholeSpec,
    HttpError => http_error::HttpErrorSpec,
    Reset => reset::ResetSpec,
    LimitData => limit_data::LimitDataSpec,
    Corrupt => corrupt::CorruptSpec,
}

/// What every TCP fault's spec is: its facts and fields, from which its faces are generated, and its
/// behaviour.
pub trait TcpFaultSpec: fmt::Debug + Clone + Send + Sync + Into<TcpFault> + 'static {
    /// Name of the fault kind: in stats, logs and reports; `--with-<kind>` and `FAULT_<KIND>_…` (`-` and
    /// upper case for `_`); its tool `fault_run_<kind>_impact_scenario`.
    const KIND: &'static str;
    /// Its heading in `fault run --help`, e.g. "HTTP error".
    const TITLE: &'static str;
    /// What `--with-<kind>` does, e.g. "Add latency".
    const ENABLE: &'static str;
    /// How it acts, for the reference.
    const MODEL: &'static str;
    /// What "fault acted N times" counts for it, e.g. "messages delayed".
    const ACTED: &'static str;
    /// The description of its impact-scenario tool; the defaults are added from the fields.
    const TOOL_DESCRIPTION: &'static str;
    /// How the user places it, or `None` for a fault that places itself (HTTP error acts on responses and
    /// draws its own probability).
    const PLACEABLE: Option<Placeable>;
    /// Whether it reads HTTP/1 messages, so it needs them in clear text (the proxy, not the client, then
    /// speaks TLS to an `https://` upstream), and follows them outside its schedule's windows too
    /// ([`Chunk::active`]).
    const READS_HTTP: bool = false;
    /// Its own fields, in the order the faces list them (the placement ones come after, from
    /// [`placement::fields`]).
    const FIELDS: &'static [Field];

    /// The spec from its fields' values, read through `input` (the one reader of every face), placed at the
    /// defaults; a rule between fields names the field it refuses.
    fn read(input: &FieldInput) -> Result<Self, FieldError>;
    /// Checks the fault's own values (for a spec built in code); messages name the field.
    fn validate(&self) -> Result<(), ParseError> {
        Ok(())
    }
    /// One line for `fault run` output and scenario reports, e.g. "Latency: mean 300ms, …".
    fn describe(&self) -> String;
    /// Readies the fault for one proxy; state all its connections share is created here.
    fn injector(&self) -> Arc<dyn Injector>;
}

/// Every field of fault `S`: its own, then where and when it acts (only when, its schedule, for a fault that
/// places itself).
pub fn fields<S: TcpFaultSpec>() -> Vec<Field> {
    let placement = match S::PLACEABLE {
        Some(placeable) => placement::fields(&placeable).to_vec(),
        None => vec![placement::SCHED],
    };
    S::FIELDS.iter().copied().chain(placement).collect()
}

/// Fault `S` from the values a face was given: its own fields, then where and when it acts, then checked.
pub fn read_fault<S: TcpFaultSpec>(input: &FieldInput) -> Result<TcpFault, FieldError> {
    let mut fault: TcpFault = S::read(input)?.into();
    match S::PLACEABLE {
        Some(placeable) => *fault.common_mut() = placement::read(input, &placeable)?,
        None => fault.common_mut().schedule = input.optional_parsed(&placement::SCHED)?,
    }
    fault.validate().map_err(|e| FieldError {
        field: S::KIND.to_owned(),
        message: e.to_string(),
    })?;
    Ok(fault)
}

/// The defaults of fault `S`'s fields in words, for its tool's description: "side server, direction
/// egress, loss_rate 0.05".
pub fn defaults_text<S: TcpFaultSpec>() -> String {
    fields::<S>()
        .iter()
        .filter_map(|field| match field.presence {
            crate::fields::Presence::Default(value) if !value.is_empty() && value != "false" => {
                Some(format!("{} {value}", field.name))
            }
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// How the user places a fault: side, direction, probability and schedule, on the command line and in its
/// tool alike.
#[derive(Debug, Clone, Copy)]
pub struct Placeable {
    /// The direction it takes when none is given (on every face).
    pub direction: Direction,
    /// What its probability draws, e.g. "Share of messages delayed".
    pub probability_help: &'static str,
}

impl Placeable {
    /// A fault whose probability draws messages, acting on `direction` by default.
    pub const fn messages(direction: Direction) -> Self {
        Self {
            direction,
            probability_help: "Share of messages affected",
        }
    }
}

/// Something done with every registered fault's spec type (see [`for_each`]).
pub trait EachFault {
    fn fault<S: TcpFaultSpec>(&mut self);
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
    /// Checks the values a parser could not (ranges, the fault's own rules).
    pub fn validate(&self) -> Result<(), ParseError> {
        let probability = self.common().probability;
        if !(0.0..=1.0).contains(&probability) {
            return Err(ParseError::new(format!(
                "{} probability must be between 0.0 and 1.0; got {probability}",
                self.kind()
            )));
        }
        self.validate_own()
    }

    /// When the fault is active, from the proxy's start, in a run of `run_duration` (`None`: no set length):
    /// its schedule's windows in time order, or `None` for always; an error when the schedule does not fit
    /// the run (percentages without a length, a window past its end).
    pub fn windows(
        &self,
        run_duration: Option<Duration>,
    ) -> Result<Option<Vec<Window>>, ScheduleError> {
        self.common()
            .schedule
            .as_ref()
            .map(|schedule| schedule.windows(run_duration))
            .transpose()
    }
}

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
