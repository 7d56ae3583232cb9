//! Jitter: spikes arrive as a Poisson process of `frequency` Hz; a spike delays the next chunk of
//! the flow by a uniform random delay in (0, amplitude]. Spikes between two chunks merge into one.

use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Exp};
use tokio::time::Instant;

use super::{Chunk, Fault, Injector, Stage, Verdict, in_ms, on_selected_flows};
use crate::proxy::cli::{parse_ms, parse_probability};
use crate::proxy::config::{Direction, FaultCommon, ParseError, Schedule, Side};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct JitterSpec {
    pub common: FaultCommon,
    /// Largest delay one spike adds.
    pub amplitude: Duration,
    /// Spikes per second (a Poisson process).
    pub frequency: f64,
}

impl Fault for JitterSpec {
    fn kind(&self) -> &'static str {
        "jitter"
    }

    fn common(&self) -> &FaultCommon {
        &self.common
    }

    fn validate(&self) -> Result<(), ParseError> {
        if !(self.frequency.is_finite() && self.frequency > 0.0) {
            return Err(ParseError::new(format!(
                "jitter frequency must be a positive number of Hz; got {}",
                self.frequency
            )));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "Jitter: amplitude {}, frequency {}Hz",
            in_ms(self.amplitude),
            self.frequency
        )
    }

    fn injector(&self) -> Arc<dyn Injector> {
        Arc::new(self.clone())
    }
}

impl Injector for JitterSpec {
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2] {
        on_selected_flows(acts_on, || Box::new(Jitter::new(self)))
    }
}

/// `fault run` flags of the jitter fault.
#[derive(Debug, Clone, clap::Args)]
pub struct JitterFlags {
    /// Add jitter.
    #[arg(long, env = "FAULT_WITH_JITTER", help_heading = "Jitter")]
    pub with_jitter: bool,
    /// Largest delay of one spike, in milliseconds.
    #[arg(long, env = "FAULT_JITTER_AMPLITUDE", default_value = "20", value_parser = parse_ms, help_heading = "Jitter")]
    pub jitter_amplitude: Duration,
    /// Spikes per second (Hz).
    #[arg(
        long,
        env = "FAULT_JITTER_FREQUENCY",
        default_value = "5",
        help_heading = "Jitter"
    )]
    pub jitter_frequency: f64,
    /// Side: client or server.
    #[arg(
        long,
        env = "FAULT_JITTER_SIDE",
        default_value = "server",
        help_heading = "Jitter"
    )]
    pub jitter_side: Side,
    /// Direction: ingress, egress or both.
    #[arg(
        long,
        env = "FAULT_JITTER_DIRECTION",
        default_value = "ingress",
        help_heading = "Jitter"
    )]
    pub jitter_direction: Direction,
    /// Share of messages affected, 0.0 to 1.0.
    #[arg(long, env = "FAULT_JITTER_PROBABILITY", default_value = "1", value_parser = parse_probability, help_heading = "Jitter")]
    pub jitter_probability: f64,
    /// Active window: "start:10%,duration:50%" or "start:5s,duration:10s".
    #[arg(long, env = "FAULT_JITTER_SCHED", help_heading = "Jitter")]
    pub jitter_sched: Option<Schedule>,
}

impl JitterFlags {
    pub fn spec(&self) -> Option<JitterSpec> {
        self.with_jitter.then_some(JitterSpec {
            common: FaultCommon {
                side: self.jitter_side,
                direction: self.jitter_direction,
                probability: self.jitter_probability,
                schedule: self.jitter_sched,
            },
            amplitude: self.jitter_amplitude,
            frequency: self.jitter_frequency,
        })
    }
}

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
