//! Reset: the connection is reset (RST to both peers, as by `SO_LINGER` 0 then close) once `after_bytes`
//! bytes of the flow have passed, or `after` since the connection opened, whichever comes first; at once
//! when it opens if neither is given.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use tokio::time::Instant;

use super::flags::OwnFlags;
use super::{
    Chunk, ConnectionEnd, Injector, Placeable, Stage, TcpFaultSpec, Verdict, in_ms,
    on_selected_flows,
};
use crate::lenient::{Lenient, Number};
use crate::proxy::placement::{Direction, FaultCommon};
use crate::proxy::values::parse_ms;

#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
pub struct ResetSpec {
    #[serde(skip)]
    pub common: FaultCommon,
    /// Reset once this many bytes of the flow have passed; a whole number from 0 to 1000000000000. Default:
    /// no byte limit.
    #[serde(default, deserialize_with = "after_bytes")]
    #[schemars(with = "Lenient<f64>")]
    pub after_bytes: Option<u64>,
    /// Reset this many milliseconds after the connection opened; 0..=3600000. Default: no time limit. Without
    /// either limit, connections are reset as soon as they open.
    #[serde(rename = "after_ms", default, deserialize_with = "after_ms")]
    #[schemars(with = "Lenient<f64>")]
    pub after: Option<Duration>,
}

fn after_bytes<'de, D: Deserializer<'de>>(input: D) -> Result<Option<u64>, D::Error> {
    // Whole and at most 10^12: the cast is exact.
    Number::from_to(0.0, 1e12)
        .whole()
        .read(input)
        .map(|bytes| Some(bytes as u64))
}

fn after_ms<'de, D: Deserializer<'de>>(input: D) -> Result<Option<Duration>, D::Error> {
    Number::from_to(0.0, 3_600_000.0).millis(input).map(Some)
}

impl TcpFaultSpec for ResetSpec {
    const KIND: &'static str = "reset";
    const TITLE: &'static str = "Reset";
    const TOOL_DESCRIPTION: &'static str = "Evaluate an endpoint's reliability when connections on a TCP \
path are reset (RST to both peers, \"connection reset by peer\"): once `after_bytes` bytes of the flow have \
passed or `after_ms` milliseconds after a connection opened, whichever comes first, or as soon as it opens \
without either. Same topology, load and report as the latency scenario. Defaults: side server, direction \
ingress (responses).";
    const PLACEABLE: Option<Placeable> = Some(Placeable {
        tool_direction: Direction::Ingress,
        probability_help: "Share of connections reset (drawn per message), 0.0 to 1.0",
    });
    type Flags = ResetFlags;

    fn describe(&self) -> String {
        let when = match (self.after_bytes, self.after) {
            (None, None) => "as soon as they open".to_owned(),
            (Some(n), None) => format!("after {n} bytes"),
            (None, Some(d)) => format!("{} after they open", in_ms(d)),
            (Some(n), Some(d)) => format!(
                "after {n} bytes or {} after they open, whichever comes first",
                in_ms(d)
            ),
        };
        format!("Reset: connections reset (RST) {when}")
    }

    fn injector(&self) -> Arc<dyn Injector> {
        Arc::new(self.clone())
    }
}

impl Injector for ResetSpec {
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2] {
        let opened = Instant::now();
        let at = match (self.after_bytes, self.after) {
            (_, Some(after)) => Some(opened + after),
            (None, None) => Some(opened),
            (Some(_), None) => None,
        };
        on_selected_flows(acts_on, || {
            Box::new(Reset {
                after_bytes: self.after_bytes,
                at,
                passed: 0,
            })
        })
    }
}

/// `fault run` flags of the reset fault.
#[derive(Debug, Clone, clap::Args)]
pub struct ResetFlags {
    /// Reset connections (RST): after --reset-after-bytes, after --reset-after-ms, or at once.
    #[arg(long, env = "FAULT_WITH_RESET")]
    pub with_reset: bool,
    /// Reset once this many bytes of the flow have passed.
    #[arg(long, env = "FAULT_RESET_AFTER_BYTES")]
    pub reset_after_bytes: Option<u64>,
    /// Reset this many milliseconds after the connection opened.
    #[arg(long, env = "FAULT_RESET_AFTER_MS", value_parser = parse_ms)]
    pub reset_after_ms: Option<Duration>,
}

impl OwnFlags<ResetSpec> for ResetFlags {
    fn spec(&self) -> Option<ResetSpec> {
        self.with_reset.then_some(ResetSpec {
            common: FaultCommon::default(),
            after_bytes: self.reset_after_bytes,
            after: self.reset_after_ms,
        })
    }
}

pub struct Reset {
    after_bytes: Option<u64>,
    /// When the time limit runs out; cleared once it fired.
    at: Option<Instant>,
    passed: u64,
}

impl Stage for Reset {
    fn timer(&self) -> Option<Instant> {
        self.at
    }

    fn on_timer(&mut self, _now: Instant, _rng: &mut StdRng) -> Verdict {
        self.at = None;
        Verdict::End {
            keep: 0,
            how: ConnectionEnd::Reset,
        }
    }

    fn on_chunk(&mut self, chunk: &Chunk<'_>, _rng: &mut StdRng) -> Verdict {
        let Some(limit) = self.after_bytes else {
            return Verdict::Pass;
        };
        let len = chunk.bytes.len() as u64;
        if self.passed + len < limit {
            self.passed += len;
            return Verdict::Pass;
        }
        Verdict::End {
            keep: (limit - self.passed) as usize,
            how: ConnectionEnd::Reset,
        }
    }
}
