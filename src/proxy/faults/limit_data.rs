//! Limit data: the connection is closed cleanly (FIN to both peers) once exactly `bytes` bytes of the
//! flow have been forwarded, like a peer or middlebox that stops after a quota.

use std::sync::Arc;

use rand::rngs::StdRng;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

use super::flags::OwnFlags;
use super::{
    Chunk, ConnectionEnd, Injector, Placeable, Stage, TcpFaultSpec, Verdict, on_selected_flows,
};
use crate::lenient::{Lenient, Number};
use crate::proxy::placement::{Direction, FaultCommon};

#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
pub struct LimitDataSpec {
    #[serde(skip)]
    pub common: FaultCommon,
    /// Bytes of the flow forwarded before the connection is closed; a whole number from 0 to 1000000000000.
    #[serde(deserialize_with = "bytes")]
    #[schemars(with = "Lenient<f64>")]
    pub bytes: u64,
}

fn bytes<'de, D: Deserializer<'de>>(input: D) -> Result<u64, D::Error> {
    // Whole and at most 10^12: the cast is exact.
    Number::from_to(0.0, 1e12)
        .whole()
        .required("bytes of the flow forwarded before the close, e.g. 1024")
        .read(input)
        .map(|bytes| bytes as u64)
}

impl TcpFaultSpec for LimitDataSpec {
    const KIND: &'static str = "limit_data";
    const TITLE: &'static str = "Limit data";
    const TOOL_DESCRIPTION: &'static str = "Evaluate an endpoint's reliability when connections on a TCP \
path are closed cleanly (FIN to both peers) once `bytes` bytes of the flow have passed, as a peer or \
middlebox with a quota would: the caller reads that many bytes, then the end of the stream. Same topology, \
load and report as the latency scenario. Defaults: side server, direction ingress (responses).";
    const PLACEABLE: Option<Placeable> = Some(Placeable::messages(Direction::Ingress));
    type Flags = LimitDataFlags;

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
    #[arg(long, env = "FAULT_WITH_LIMIT_DATA")]
    pub with_limit_data: bool,
    /// Bytes of the flow forwarded before the close.
    #[arg(long, env = "FAULT_LIMIT_DATA_BYTES", default_value = "0")]
    pub limit_data_bytes: u64,
}

impl OwnFlags<LimitDataSpec> for LimitDataFlags {
    fn spec(&self) -> Option<LimitDataSpec> {
        self.with_limit_data.then_some(LimitDataSpec {
            common: FaultCommon::default(),
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
