//! Blackhole: the flow's bytes are swallowed; the peer waits until its own timeout.

use std::sync::Arc;

use rand::rngs::StdRng;

use super::{Chunk, TcpFaultSpec, Injector, Stage, Verdict, on_selected_flows};
use crate::proxy::placement::{Direction, FaultCommon, Schedule, Side};
use crate::proxy::values::{parse_probability};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlackholeSpec {
    pub common: FaultCommon,
}

impl TcpFaultSpec for BlackholeSpec {
    fn kind(&self) -> &'static str {
        "blackhole"
    }

    fn common(&self) -> &FaultCommon {
        &self.common
    }

    fn describe(&self) -> String {
        "Blackhole: bytes swallowed, connections left open".to_owned()
    }

    fn injector(&self) -> Arc<dyn Injector> {
        Arc::new(self.clone())
    }
}

impl Injector for BlackholeSpec {
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2] {
        on_selected_flows(acts_on, || Box::new(Blackhole))
    }
}

/// `fault run` flags of the blackhole fault.
#[derive(Debug, Clone, clap::Args)]
pub struct BlackholeFlags {
    /// Swallow the flow's bytes; peers wait until their own timeout.
    #[arg(long, env = "FAULT_WITH_BLACKHOLE", help_heading = "Blackhole")]
    pub with_blackhole: bool,
    /// Side: client or server.
    #[arg(
        long,
        env = "FAULT_BLACKHOLE_SIDE",
        default_value = "server",
        help_heading = "Blackhole"
    )]
    pub blackhole_side: Side,
    /// Direction: ingress, egress or both.
    #[arg(
        long,
        env = "FAULT_BLACKHOLE_DIRECTION",
        default_value = "ingress",
        help_heading = "Blackhole"
    )]
    pub blackhole_direction: Direction,
    /// Share of messages affected, 0.0 to 1.0.
    #[arg(long, env = "FAULT_BLACKHOLE_PROBABILITY", default_value = "1", value_parser = parse_probability, help_heading = "Blackhole")]
    pub blackhole_probability: f64,
    /// Active window: "start:10%,duration:50%" or "start:5s,duration:10s".
    #[arg(long, env = "FAULT_BLACKHOLE_SCHED", help_heading = "Blackhole")]
    pub blackhole_sched: Option<Schedule>,
}

impl BlackholeFlags {
    pub fn spec(&self) -> Option<BlackholeSpec> {
        self.with_blackhole.then_some(BlackholeSpec {
            common: FaultCommon {
                side: self.blackhole_side,
                direction: self.blackhole_direction,
                probability: self.blackhole_probability,
                schedule: self.blackhole_sched,
            },
        })
    }
}

pub struct Blackhole;

impl Stage for Blackhole {
    fn on_chunk(&mut self, _chunk: &Chunk<'_>, _rng: &mut StdRng) -> Verdict {
        Verdict::Drop
    }
}
