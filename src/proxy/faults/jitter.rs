//! Jitter: spikes arrive as one Poisson process of `frequency` Hz per proxy and flow, shared by all its
//! connections; a spike delays the next message on the flow (a request or a response), whichever connection
//! carries it, by a uniform random delay in (0, amplitude]. Spikes between two messages merge into one.
//!
//! The process is drawn message by message: a message that starts `gap` after the flow's previous one (on any
//! connection) meets at least one spike with probability `1 - exp(-frequency × gap)`, which is exactly the
//! Poisson process's. The draws are keyed by message (see [`super::message_rng`]), so a seed repeats them; a
//! short connection sees spikes as often as a long one.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::RngExt;
use rand::rngs::StdRng;
use tokio::time::Instant;

use super::{Chunk, Injector, Stage, TcpFaultSpec, Verdict, in_ms};
use crate::fields::{Field, FieldError, FieldInput, Unit};
use crate::lenient::Number;
use crate::proxy::placement::{Direction, FaultCommon, Flow, Placeable};
use crate::proxy::values::{MAX_DELAY_MS, ParseError};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct JitterSpec {
    pub common: FaultCommon,
    pub amplitude: Duration,
    pub frequency: f64,
}

const AMPLITUDE: Field = Field::millis(
    "amplitude",
    "Largest extra delay of one spike (each spike delays by a uniform draw up to it)",
    Number::above_zero(MAX_DELAY_MS, ""),
)
.default("20");
const FREQUENCY: Field = Field::number(
    "frequency",
    "Delay spikes per second, one Poisson process per proxy and flow",
    Number::above_zero(1000.0, ""),
    Unit::Hertz,
)
.default("5");

/// The bandwidth tool's fields, which the user guide's payload template for this tool carries.
const GUIDE_RATE: Field = Field::ignored(
    "rate",
    "The bandwidth tool's field, which the user guide's jitter payload template carries; jitter's own are \
     `amplitude` and `frequency`",
);
const GUIDE_UNIT: Field = Field::ignored(
    "unit",
    "The bandwidth tool's field, which the user guide's jitter payload template carries; jitter's own are \
     `amplitude` and `frequency`",
);

impl TcpFaultSpec for JitterSpec {
    const KIND: &'static str = "jitter";
    const TITLE: &'static str = "Jitter";
    const ENABLE: &'static str = "Add jitter";
    const MODEL: &'static str = "one Poisson process of `frequency` spikes per proxy and flow, shared by its \
connections; a spike delays the next message (request or response) on the flow, whatever its connection, by \
U(0, amplitude] (drawn per message: a message `gap` after the flow's previous one meets a spike with \
probability 1 − e^(−frequency·gap))";
    const ACTED: &'static str = "messages delayed by a spike";
    const TOOL_DESCRIPTION: &'static str = "Evaluate an endpoint's reliability during jitter (random extra \
delays up to `amplitude` ms, `frequency` spikes per second) on a TCP path. Same topology, load and report as \
the latency scenario.";
    const PLACEABLE: Option<Placeable> = Some(Placeable::messages(Direction::Ingress));
    const FIELDS: &'static [Field] = &[AMPLITUDE, FREQUENCY, GUIDE_RATE, GUIDE_UNIT];

    fn read(input: &FieldInput) -> Result<Self, FieldError> {
        Ok(Self {
            common: FaultCommon::default(),
            amplitude: input.millis(&AMPLITUDE)?,
            frequency: input.number(&FREQUENCY)?,
        })
    }

    fn validate(&self) -> Result<(), ParseError> {
        AMPLITUDE.check_number(self.amplitude.as_secs_f64() * 1000.0)?;
        Ok(FREQUENCY.check_number(self.frequency)?)
    }

    fn describe(&self) -> String {
        format!(
            "Jitter: amplitude {}, frequency {}Hz",
            in_ms(self.amplitude),
            self.frequency
        )
    }

    fn injector(&self) -> Arc<dyn Injector> {
        let started = Instant::now();
        Arc::new(SpikeProcesses {
            spec: self.clone(),
            flows: [Flow::Request, Flow::Response].map(|_| Arc::new(SpikeProcess::new(started))),
        })
    }
}

/// The jitter of one proxy: one spike process per flow.
struct SpikeProcesses {
    spec: JitterSpec,
    flows: [Arc<SpikeProcess>; 2],
}

impl Injector for SpikeProcesses {
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2] {
        std::array::from_fn(|flow| {
            acts_on[flow].then(|| {
                Box::new(Jitter::new(&self.spec, self.flows[flow].clone())) as Box<dyn Stage>
            })
        })
    }
}

/// When a message last started on a flow of the proxy, on any connection.
pub struct SpikeProcess {
    last_message: Mutex<Instant>,
}

impl SpikeProcess {
    pub fn new(started: Instant) -> Self {
        Self {
            last_message: Mutex::new(started),
        }
    }

    /// Time since the flow's previous message; `now` becomes the previous message.
    fn gap(&self, now: Instant) -> Duration {
        let mut last = self.last_message.lock().unwrap_or_else(|p| p.into_inner());
        let gap = now.saturating_duration_since(*last);
        *last = (*last).max(now);
        gap
    }
}

/// The jitter stage of one flow of one connection.
pub struct Jitter {
    amplitude: Duration,
    frequency: f64,
    process: Arc<SpikeProcess>,
}

impl Jitter {
    pub fn new(spec: &JitterSpec, process: Arc<SpikeProcess>) -> Self {
        Self {
            amplitude: spec.amplitude,
            frequency: spec.frequency,
            process,
        }
    }
}

impl Stage for Jitter {
    fn on_chunk(&mut self, chunk: &Chunk<'_>, rng: &mut StdRng) -> Verdict {
        // How a message is split into reads depends on timing; deciding once per message keeps a seed's
        // decisions the same from run to run.
        if !chunk.new_message {
            return Verdict::Pass;
        }
        let gap = self.process.gap(chunk.now);
        // Both draws every time, so whether a spike came does not shift the delay's draw.
        let roll = rng.random::<f64>();
        // (0, amplitude]: 1 - U[0,1) is in (0, 1].
        let share = 1.0 - rng.random::<f64>();
        let spiked = 1.0 - (-self.frequency * gap.as_secs_f64()).exp();
        if roll < spiked {
            Verdict::after(self.amplitude.mul_f64(share))
        } else {
            Verdict::Pass
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn chunk(now: Instant) -> Chunk<'static> {
        Chunk {
            bytes: b"x",
            flow: Flow::Response,
            new_message: true,
            now,
            active: true,
        }
    }

    #[test]
    fn spikes_come_at_the_frequency_whatever_the_connection_pattern() {
        let spec = JitterSpec {
            amplitude: Duration::from_millis(150),
            frequency: 5.0,
            ..JitterSpec::default()
        };
        let start = Instant::now();
        let process = Arc::new(SpikeProcess::new(start));
        let mut rng = StdRng::seed_from_u64(5);
        // One message every 10 ms for 200 s, each on a new connection (a new stage).
        let spiked = (1..=20_000u32)
            .filter(|i| {
                let now = start + Duration::from_millis(u64::from(*i) * 10);
                Jitter::new(&spec, process.clone()).on_chunk(&chunk(now), &mut rng) != Verdict::Pass
            })
            .count();
        // About 5 spikes per second over 200 s (a few merge at 10 ms apart: 1 - e^-0.05 per chunk).
        let expected = 20_000.0 * (1.0 - (-0.05f64).exp());
        assert!(
            (spiked as f64 - expected).abs() < expected * 0.1,
            "{spiked} spikes, expected about {expected}"
        );
    }
}
