//! Limit data: the connection is closed cleanly (FIN to both peers) once exactly `bytes` bytes of the
//! flow have been forwarded, like a peer or middlebox that stops after a quota.

use std::sync::Arc;

use rand::rngs::StdRng;

use super::{Chunk, ConnectionEnd, TcpFaultSpec, Injector, Stage, Verdict, on_selected_flows};
use crate::proxy::placement::{Direction, FaultCommon, Schedule, Side};
use crate::proxy::values::{parse_probability};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct LimitDataSpec {
    pub common: FaultCommon,
    /// Bytes of the flow forwarded before the connection is closed.
    pub bytes: u64,
}

impl TcpFaultSpec for LimitDataSpec {
    fn kind(&self) -> &'static str {
        "limit_data"
    }

    fn common(&self) -> &FaultCommon {
        &self.common
    }

    fn describe(&self) -> String {
        format!(
            "Limit data: connections closed (FIN) after {} bytes of the flow",
            self.bytes
        )
    }

    fn injector(&self) -> Arc<dyn Injector> {
        Arc::new(self.clone())
    }
}

impl Injector for LimitDataSpec {
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2] {
        on_selected_flows(acts_on, || {
            Box::new(LimitData {
                limit: self.bytes,
                passed: 0,
            })
        })
    }
}

/// `fault run` flags of the limit_data fault.
#[derive(Debug, Clone, clap::Args)]
pub struct LimitDataFlags {
    /// Close connections cleanly (FIN) after --limit-data-bytes bytes of the flow.
    #[arg(long, env = "FAULT_WITH_LIMIT_DATA", help_heading = "Limit data")]
    pub with_limit_data: bool,
    /// Bytes of the flow forwarded before the close.
    #[arg(
        long,
        env = "FAULT_LIMIT_DATA_BYTES",
        default_value = "0",
        help_heading = "Limit data"
    )]
    pub limit_data_bytes: u64,
    /// Side: client or server.
    #[arg(
        long,
        env = "FAULT_LIMIT_DATA_SIDE",
        default_value = "server",
        help_heading = "Limit data"
    )]
    pub limit_data_side: Side,
    /// Direction: ingress, egress or both.
    #[arg(
        long,
        env = "FAULT_LIMIT_DATA_DIRECTION",
        default_value = "ingress",
        help_heading = "Limit data"
    )]
    pub limit_data_direction: Direction,
    /// Share of messages affected, 0.0 to 1.0.
    #[arg(long, env = "FAULT_LIMIT_DATA_PROBABILITY", default_value = "1", value_parser = parse_probability, help_heading = "Limit data")]
    pub limit_data_probability: f64,
    /// Active window: "start:10%,duration:50%" or "start:5s,duration:10s".
    #[arg(long, env = "FAULT_LIMIT_DATA_SCHED", help_heading = "Limit data")]
    pub limit_data_sched: Option<Schedule>,
}

impl LimitDataFlags {
    pub fn spec(&self) -> Option<LimitDataSpec> {
        self.with_limit_data.then_some(LimitDataSpec {
            common: FaultCommon {
                side: self.limit_data_side,
                direction: self.limit_data_direction,
                probability: self.limit_data_probability,
                schedule: self.limit_data_sched,
            },
            bytes: self.limit_data_bytes,
        })
    }
}

pub struct LimitData {
    limit: u64,
    passed: u64,
}

impl Stage for LimitData {
    fn on_chunk(&mut self, chunk: &Chunk<'_>, _rng: &mut StdRng) -> Verdict {
        let len = chunk.bytes.len() as u64;
        if self.passed + len < self.limit {
            self.passed += len;
            return Verdict::Pass;
        }
        Verdict::End {
            keep: (self.limit - self.passed) as usize,
            how: ConnectionEnd::Close,
        }
    }
}
