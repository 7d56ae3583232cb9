//! Blackhole: the flow's bytes are swallowed; the peer waits until its own timeout.

use rand::rngs::StdRng;

use super::{Chunk, Stage, Verdict};

pub struct Blackhole;

impl Stage for Blackhole {
    fn on_chunk(&mut self, _chunk: &Chunk<'_>, _rng: &mut StdRng) -> Verdict {
        Verdict::Drop
    }
}
