//! Blackhole: the flow's bytes are swallowed; the peer waits until its own timeout.

use std::sync::Arc;

use rand::rngs::StdRng;

use super::{Chunk, Injector, Stage, TcpFaultSpec, Verdict, on_selected_flows};
use crate::fields::{Field, FieldError, FieldInput};
use crate::proxy::placement::{Direction, FaultCommon, Placeable};

/// Blackhole: no field of its own.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlackholeSpec {
    pub common: FaultCommon,
}

impl TcpFaultSpec for BlackholeSpec {
    const KIND: &'static str = "blackhole";
    const TITLE: &'static str = "Blackhole";
    const TOOL_DESCRIPTION: &'static str = "Evaluate an endpoint's reliability during a blackhole: bytes on \
a TCP path are swallowed and connections stay open, so callers wait until their timeout. Same topology, load \
and report as the latency scenario.";
    const ENABLE: &'static str = "Swallow the flow's bytes; peers wait until their own timeout";
    const MODEL: &'static str = "the flow's bytes (and its FIN) are swallowed; the peer waits for its own \
timeout";
    const ACTED: &'static str = "reads swallowed";
    const PLACEABLE: Option<Placeable> = Some(Placeable::messages(Direction::Egress));
    const FIELDS: &'static [Field] = &[];

    fn read(_input: &FieldInput) -> Result<Self, FieldError> {
        Ok(Self::default())
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

pub struct Blackhole;

impl Stage for Blackhole {
    fn on_chunk(&mut self, _chunk: &Chunk<'_>, _rng: &mut StdRng) -> Verdict {
        Verdict::Drop
    }
}
