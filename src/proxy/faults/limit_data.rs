//! Limit data: the connection is closed cleanly (FIN to both peers) once exactly `bytes` bytes of the
//! flow have been forwarded, like a peer or middlebox that stops after a quota.

use std::sync::Arc;

use rand::rngs::StdRng;

use super::{Chunk, ConnectionEnd, Injector, Stage, TcpFaultSpec, Verdict, on_selected_flows};
use crate::fields::{Field, FieldError, FieldInput, Unit};
use crate::lenient::Number;
use crate::proxy::placement::{Direction, FaultCommon, Placeable};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct LimitDataSpec {
    pub common: FaultCommon,
    /// Bytes of the flow forwarded before the connection is closed.
    pub bytes: u64,
}

const BYTES: Field = Field::number(
    "bytes",
    "Bytes of the flow forwarded before the connection is closed",
    Number::from_to(0.0, 1e12).whole(),
    Unit::Bytes,
)
.required("1024");

impl TcpFaultSpec for LimitDataSpec {
    const KIND: &'static str = "limit_data";
    const TITLE: &'static str = "Limit data";
    const TOOL_DESCRIPTION: &'static str = "Evaluate an endpoint's reliability when connections on a TCP \
path are closed cleanly (FIN to both peers) once `bytes` bytes of the flow have passed, as a peer or \
middlebox with a quota would: the caller reads that many bytes, then the end of the stream. Same topology, \
load and report as the latency scenario.";
    const ENABLE: &'static str =
        "Close connections cleanly (FIN) after --limit-data-bytes bytes of the flow";
    const MODEL: &'static str = "the connection is closed cleanly (FIN to both peers) once exactly `bytes` \
bytes of the flow have passed: the client reads that many bytes, then end of stream";
    const ACTED: &'static str = "connections closed";
    const PLACEABLE: Option<Placeable> = Some(Placeable::messages(Direction::Ingress));
    const FIELDS: &'static [Field] = &[BYTES];

    fn read(input: &FieldInput) -> Result<Self, FieldError> {
        Ok(Self {
            common: FaultCommon::default(),
            bytes: input.whole(&BYTES)?,
        })
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
