//! Reset: the connection is reset (RST to both peers, as by `SO_LINGER` 0 then close) once `after_bytes`
//! bytes of the flow have passed, or `after` since the connection opened, whichever comes first; at once
//! when it opens if neither is given.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use tokio::time::Instant;

use super::{Chunk, ConnectionEnd, TcpFaultSpec, Injector, Stage, Verdict, in_ms, on_selected_flows};
use crate::proxy::placement::{Direction, FaultCommon, Schedule, Side};
use crate::proxy::values::{parse_ms, parse_probability};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResetSpec {
    pub common: FaultCommon,
    /// Reset once this many bytes of the flow have been forwarded.
    pub after_bytes: Option<u64>,
    /// Reset this long after the connection opened.
    pub after: Option<Duration>,
}

impl TcpFaultSpec for ResetSpec {
    fn kind(&self) -> &'static str {
        "reset"
    }

    fn common(&self) -> &FaultCommon {
        &self.common
    }

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
    #[arg(long, env = "FAULT_WITH_RESET", help_heading = "Reset")]
    pub with_reset: bool,
    /// Reset once this many bytes of the flow have passed.
    #[arg(long, env = "FAULT_RESET_AFTER_BYTES", help_heading = "Reset")]
    pub reset_after_bytes: Option<u64>,
    /// Reset this many milliseconds after the connection opened.
    #[arg(long, env = "FAULT_RESET_AFTER_MS", value_parser = parse_ms, help_heading = "Reset")]
    pub reset_after_ms: Option<Duration>,
    /// Side: client or server.
    #[arg(
        long,
        env = "FAULT_RESET_SIDE",
        default_value = "server",
        help_heading = "Reset"
    )]
    pub reset_side: Side,
    /// Direction: ingress, egress or both.
    #[arg(
        long,
        env = "FAULT_RESET_DIRECTION",
        default_value = "ingress",
        help_heading = "Reset"
    )]
    pub reset_direction: Direction,
    /// Share of connections reset (drawn per message), 0.0 to 1.0.
    #[arg(long, env = "FAULT_RESET_PROBABILITY", default_value = "1", value_parser = parse_probability, help_heading = "Reset")]
    pub reset_probability: f64,
    /// Active window: "start:10%,duration:50%" or "start:5s,duration:10s".
    #[arg(long, env = "FAULT_RESET_SCHED", help_heading = "Reset")]
    pub reset_sched: Option<Schedule>,
}

impl ResetFlags {
    pub fn spec(&self) -> Option<ResetSpec> {
        self.with_reset.then_some(ResetSpec {
            common: FaultCommon {
                side: self.reset_side,
                direction: self.reset_direction,
                probability: self.reset_probability,
                schedule: self.reset_sched,
            },
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
        Verdict::End { keep: 0, how: ConnectionEnd::Reset }
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
