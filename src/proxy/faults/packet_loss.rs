//! Packet loss: each segment (≤ one MSS) is lost with the configured rate; a lost segment arrives
//! one retransmission timeout late (200 ms, doubling each time the same segment is lost again),
//! holding the bytes behind it as TCP's in-order delivery would. Optional Gilbert-Elliott bursts.

use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use rand::rngs::StdRng;

use super::{
    Chunk, Injector, MSS, Stage, TcpFaultSpec, Verdict, declared_defaults, in_ms, on_selected_flows,
};
use crate::fields::{Field, FieldError, FieldInput, Unit, parses_as};
use crate::lenient::Number;
use crate::proxy::placement::{Direction, FaultCommon, Placeable};
use crate::proxy::values::{ParseError, parse_rate};

#[derive(Debug, Clone, PartialEq)]
pub struct PacketLossSpec {
    pub common: FaultCommon,
    /// Share of segments lost, 0 to below 1.
    pub rate: f64,
    /// Mean length of a loss burst in segments (Gilbert-Elliott); `None` = independent losses.
    pub burst_length: Option<f64>,
    /// First retransmission timeout; doubles each time the same segment is lost again.
    pub rto: Duration,
}

/// A share of segments: a fraction (0.05) or a percentage ("5%").
#[derive(Debug, Clone, Copy)]
pub struct LossRate(f64);

impl std::str::FromStr for LossRate {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_rate(s).map(LossRate)
    }
}

const RATE: Field = Field::parsed(
    "loss_rate",
    "Share of TCP segments lost (then retransmitted late, as TCP would)",
    "a fraction from 0 to below 1 (0.05) or a percentage (\"5%\")",
    parses_as::<LossRate>,
)
.numbers_too()
.flag("packet-loss-rate")
.default("0.05");
const BURST_LENGTH: Field = Field::number(
    "burst_length",
    "Mean length of a loss burst (Gilbert-Elliott)",
    Number::from_to(1.0, 1e6),
    Unit::Segments,
)
.optional("independent losses");

/// The first retransmission's wait, as Linux's minimum RTO (not an input: a model constant).
const RTO: Duration = Duration::from_millis(200);

impl Default for PacketLossSpec {
    fn default() -> Self {
        declared_defaults()
    }
}

impl TcpFaultSpec for PacketLossSpec {
    const KIND: &'static str = "packet_loss";
    const TITLE: &'static str = "Packet loss";
    const ENABLE: &'static str =
        "Lose packets (segments are delivered late by a retransmission timeout)";
    const MODEL: &'static str = "per segment (≤ 1460 B); a lost segment arrives one RTO (200 ms, doubling on \
repeated loss) late, bytes behind it wait; bursts = Gilbert-Elliott";
    const ACTED: &'static str = "segments lost";
    const TOOL_DESCRIPTION: &'static str = "Evaluate an endpoint's reliability during packet loss on a TCP \
path (lost segments are retransmitted late, as TCP would, so bytes arrive intact but slower). Same topology, \
load and report as the latency scenario.";
    const PLACEABLE: Option<Placeable> = Some(Placeable {
        direction: Direction::Egress,
        probability_help: "Share of messages whose segments may be lost",
    });
    const FIELDS: &'static [Field] = &[RATE, BURST_LENGTH];

    fn read(input: &FieldInput) -> Result<Self, FieldError> {
        Ok(Self {
            rate: input.parsed::<LossRate>(&RATE)?.0,
            burst_length: input.optional_number(&BURST_LENGTH)?,
            common: FaultCommon::default(),
            rto: RTO,
        })
    }

    fn validate(&self) -> Result<(), ParseError> {
        RATE.check_number(self.rate)?;
        if let Some(burst_length) = self.burst_length {
            BURST_LENGTH.check_number(burst_length)?;
        }
        if self.rto.is_zero() {
            return Err(ParseError::new("packet loss rto must be above 0"));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let bursts = match self.burst_length {
            Some(b) => format!(" in bursts of {b} segments on average"),
            None => String::new(),
        };
        format!(
            "Packet loss: {:.1}% of segments lost{bursts} and retransmitted late (first retransmission after {}, doubling)",
            self.rate * 100.0,
            in_ms(self.rto)
        )
    }

    fn injector(&self) -> Arc<dyn Injector> {
        Arc::new(self.clone())
    }
}

impl Injector for PacketLossSpec {
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2] {
        on_selected_flows(acts_on, || Box::new(PacketLoss::new(self)))
    }
}

/// Retransmissions of one segment before it is taken as delivered (a stack would give up later).
const MAX_RETRIES: u32 = 6;

enum Model {
    Bernoulli {
        rate: f64,
    },
    /// Two states: Good (no loss) and Bad (every segment lost). Mean time in Bad = burst length;
    /// the entry probability keeps the long-run loss share equal to `rate`.
    GilbertElliott {
        enter_bad: f64,
        leave_bad: f64,
        bad: bool,
    },
}

pub struct PacketLoss {
    model: Model,
    rate: f64,
    rto: Duration,
}

impl PacketLoss {
    pub fn new(spec: &PacketLossSpec) -> Self {
        let model = match spec.burst_length {
            Some(len) if len >= 1.0 && spec.rate > 0.0 => {
                let leave_bad = 1.0 / len;
                let enter_bad = (spec.rate * leave_bad / (1.0 - spec.rate)).min(1.0);
                Model::GilbertElliott {
                    enter_bad,
                    leave_bad,
                    bad: false,
                }
            }
            _ => Model::Bernoulli { rate: spec.rate },
        };
        Self {
            model,
            rate: spec.rate,
            rto: spec.rto,
        }
    }

    /// Whether the first transmission of the next segment is lost.
    fn lost(&mut self, rng: &mut StdRng) -> bool {
        match &mut self.model {
            Model::Bernoulli { rate } => rng.random::<f64>() < *rate,
            Model::GilbertElliott {
                enter_bad,
                leave_bad,
                bad,
            } => {
                let flip = if *bad { *leave_bad } else { *enter_bad };
                if rng.random::<f64>() < flip {
                    *bad = !*bad;
                }
                *bad
            }
        }
    }
}

impl Stage for PacketLoss {
    fn max_chunk(&self) -> Option<usize> {
        Some(MSS)
    }

    fn on_chunk(&mut self, _chunk: &Chunk<'_>, rng: &mut StdRng) -> Verdict {
        if !self.lost(rng) {
            return Verdict::Pass;
        }
        // The retransmission goes out one RTO later, outside the burst that hit the segment:
        // it is lost again with the long-run rate.
        let mut delay = self.rto;
        let mut rto = self.rto * 2;
        let mut retries = 1;
        while retries < MAX_RETRIES && rng.random::<f64>() < self.rate {
            delay += rto;
            rto *= 2;
            retries += 1;
        }
        Verdict::after(delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use tokio::time::Instant;

    fn loss_share(spec: &PacketLossSpec) -> f64 {
        let mut stage = PacketLoss::new(spec);
        let mut rng = StdRng::seed_from_u64(3);
        let bytes = [0u8; 10];
        let chunk = Chunk {
            bytes: &bytes,
            flow: crate::proxy::placement::Flow::Response,
            new_message: false,
            now: Instant::now(),
            active: true,
        };
        let n = 50_000;
        let lost = (0..n)
            .filter(|_| stage.on_chunk(&chunk, &mut rng) != Verdict::Pass)
            .count();
        lost as f64 / n as f64
    }

    #[tokio::test]
    async fn bernoulli_and_bursty_keep_the_rate() {
        let spec = PacketLossSpec::default();
        let share = loss_share(&spec);
        assert!((share - 0.05).abs() < 0.01, "{share}");
        let bursty = PacketLossSpec {
            burst_length: Some(4.0),
            ..Default::default()
        };
        let share = loss_share(&bursty);
        assert!((share - 0.05).abs() < 0.015, "{share}");
    }
}
