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

use std::sync::Arc;
use std::time::Duration;

pub mod flags;
mod spec;
mod stage;

pub use spec::{
    EachFault, Injector, TcpFaultSpec, declared_defaults, defaults_text, fields, on_selected_flows,
    read_fault,
};
pub(crate) use stage::in_ms;
pub use stage::{Chunk, ConnectionEnd, MSS, MessageKey, Stage, Verdict, message_rng};

use super::placement::{FaultCommon, ScheduleError, Window};
use super::values::ParseError;
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

impl TcpFault {
    /// Checks the values a parser could not (ranges, the fault's own rules).
    pub fn validate(&self) -> Result<(), ParseError> {
        crate::proxy::placement::check(self.common())?;
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
