//! Corrupt: as netem's corrupt, each chunk of the flow (at most one TCP segment) is corrupted with probability
//! `rate`: one bit at a random offset is flipped. The draws come from the stage's keyed generator, so a seed
//! repeats them for the same chunks.

use std::sync::Arc;

use bytes::Bytes;
use rand::RngExt;
use rand::rngs::StdRng;

use super::{Chunk, Injector, MSS, Stage, TcpFaultSpec, Verdict, on_selected_flows};
use crate::fields::{Field, FieldError, FieldInput, Unit};
use crate::lenient::Number;
use crate::proxy::placement::{Direction, FaultCommon, Placeable};
use crate::proxy::values::ParseError;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct CorruptSpec {
    pub common: FaultCommon,
    /// Share of chunks with one bit flipped.
    pub rate: f64,
}

const RATE: Field = Field::number(
    "rate",
    "Share of chunks of the flow (each at most one TCP segment, 1460 bytes) with one bit flipped",
    Number::from_to(0.0, 1.0),
    Unit::None,
)
.default("0.01");

impl TcpFaultSpec for CorruptSpec {
    const KIND: &'static str = "corrupt";
    const TITLE: &'static str = "Corrupt";
    const TOOL_DESCRIPTION: &'static str = "Evaluate an endpoint's reliability when bytes on a TCP path are \
corrupted, as netem's corrupt does: with probability `rate`, a chunk of the flow (at most one TCP segment) gets \
one bit flipped at a random offset. Same topology, load and report as the latency scenario.";
    const ENABLE: &'static str =
        "Corrupt bytes: flip one random bit in a share of the flow's segments";
    const MODEL: &'static str = "as netem's corrupt: per segment (≤ 1460 B), with probability `rate` one bit \
at a random offset is flipped; the length and the order of bytes stay; a seed repeats the flips";
    const ACTED: &'static str = "segments corrupted";
    const PLACEABLE: Option<Placeable> = Some(Placeable::messages(Direction::Ingress));
    const FIELDS: &'static [Field] = &[RATE];

    fn read(input: &FieldInput) -> Result<Self, FieldError> {
        Ok(Self {
            common: FaultCommon::default(),
            rate: input.number(&RATE)?,
        })
    }

    fn validate(&self) -> Result<(), ParseError> {
        Ok(RATE.check_number(self.rate)?)
    }

    fn describe(&self) -> String {
        format!(
            "Corrupt: {:.1}% of chunks (at most {MSS} bytes each) with one bit flipped",
            self.rate * 100.0
        )
    }

    fn injector(&self) -> Arc<dyn Injector> {
        Arc::new(self.clone())
    }
}

impl Injector for CorruptSpec {
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2] {
        on_selected_flows(acts_on, || Box::new(Corrupt { rate: self.rate }))
    }
}

pub struct Corrupt {
    rate: f64,
}

impl Stage for Corrupt {
    fn max_chunk(&self) -> Option<usize> {
        Some(MSS)
    }

    fn on_chunk(&mut self, chunk: &Chunk<'_>, rng: &mut StdRng) -> Verdict {
        if chunk.bytes.is_empty() || rng.random::<f64>() >= self.rate {
            return Verdict::Pass;
        }
        let offset = rng.random_range(0..chunk.bytes.len());
        let bit = rng.random_range(0..8u32);
        let mut bytes = chunk.bytes.to_vec();
        bytes[offset] ^= 1 << bit;
        Verdict::Replace(Bytes::from(bytes))
    }
}
