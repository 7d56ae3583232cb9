//! Jitter: spikes arrive as a Poisson process of `frequency` Hz; a spike delays the next chunk of
//! the flow by a uniform random delay in (0, amplitude]. Spikes between two chunks merge into one.

use std::time::Duration;

use rand::RngExt;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Exp};
use tokio::time::Instant;

use super::{Chunk, Stage, Verdict};
use crate::proxy::config::JitterSpec;

pub struct Jitter {
    amplitude: Duration,
    interarrival: Option<Exp<f64>>,
    next_spike: Option<Instant>,
    origin: Instant,
}

impl Jitter {
    pub fn new(spec: &JitterSpec) -> Self {
        Self {
            amplitude: spec.amplitude,
            interarrival: Exp::new(spec.frequency).ok(),
            next_spike: None,
            origin: Instant::now(),
        }
    }

    fn draw_gap(&self, rng: &mut StdRng) -> Duration {
        match &self.interarrival {
            Some(exp) => Duration::from_secs_f64(exp.sample(rng).min(3600.0)),
            None => Duration::from_secs(3600),
        }
    }
}

impl Stage for Jitter {
    fn on_chunk(&mut self, chunk: &Chunk<'_>, rng: &mut StdRng) -> Verdict {
        let next = match self.next_spike {
            Some(t) => t,
            None => {
                let t = self.origin + self.draw_gap(rng);
                self.next_spike = Some(t);
                t
            }
        };
        if chunk.now < next {
            return Verdict::Pass;
        }
        // Memoryless: the next spike is an exponential gap from now.
        self.next_spike = Some(chunk.now + self.draw_gap(rng));
        // (0, amplitude]: 1 - U[0,1) is in (0, 1].
        let share = 1.0 - rng.random::<f64>();
        let delay = self.amplitude.mul_f64(share);
        Verdict::after(delay)
    }
}
