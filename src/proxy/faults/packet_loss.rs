//! Packet loss: each segment (≤ one MSS) is lost with the configured rate; a lost segment arrives
//! one retransmission timeout late (200 ms, doubling each time the same segment is lost again),
//! holding the bytes behind it as TCP's in-order delivery would. Optional Gilbert-Elliott bursts.

use std::time::Duration;

use rand::RngExt;
use rand::rngs::StdRng;

use super::{Chunk, Stage, Verdict};
use crate::proxy::config::PacketLossSpec;

/// Ethernet MSS for IPv4.
pub const MSS: usize = 1460;
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
            flow: crate::proxy::config::Flow::Response,
            new_message: false,
            now: Instant::now(),
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
