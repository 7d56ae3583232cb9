//! Latency: a delay drawn from a distribution, once per message or on every read/write.

use std::time::Duration;

use rand::RngExt;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal, Pareto};

use super::{Chunk, Stage, Verdict};
use crate::proxy::config::{LatencyDistribution, LatencySpec};

pub struct Latency {
    sampler: Sampler,
    per_read_write: bool,
}

/// Draws delays in milliseconds with the configured mean and spread, clamped to [min, max] and ≥ 0.
pub struct Sampler {
    mean: f64,
    stddev: f64,
    distribution: LatencyDistribution,
    min: f64,
    max: f64,
}

impl Sampler {
    pub fn new(spec: &LatencySpec) -> Self {
        Self {
            mean: spec.mean.as_secs_f64() * 1e3,
            stddev: spec.stddev.as_secs_f64() * 1e3,
            distribution: spec.distribution,
            min: spec.min.map_or(0.0, |d| d.as_secs_f64() * 1e3),
            max: spec.max.map_or(f64::INFINITY, |d| d.as_secs_f64() * 1e3),
        }
    }

    fn normal(&self, rng: &mut StdRng) -> f64 {
        match Normal::new(self.mean, self.stddev) {
            Ok(n) => n.sample(rng),
            Err(_) => self.mean,
        }
    }

    /// Pareto with the requested mean and stddev: shape α = 1 + √(1 + mean²/σ²), scale = mean(α−1)/α.
    fn pareto(&self, rng: &mut StdRng) -> f64 {
        if self.stddev <= 0.0 || self.mean <= 0.0 {
            return self.mean;
        }
        let cv2 = (self.stddev / self.mean).powi(2);
        let shape = 1.0 + (1.0 + 1.0 / cv2).sqrt();
        let scale = self.mean * (shape - 1.0) / shape;
        match Pareto::new(scale, shape) {
            Ok(p) => p.sample(rng),
            Err(_) => self.mean,
        }
    }

    pub fn sample_ms(&self, rng: &mut StdRng) -> f64 {
        let raw = match self.distribution {
            LatencyDistribution::Normal => self.normal(rng),
            LatencyDistribution::Uniform => {
                let half = self.stddev * 3f64.sqrt();
                if half > 0.0 {
                    rng.random_range((self.mean - half)..=(self.mean + half))
                } else {
                    self.mean
                }
            }
            LatencyDistribution::Pareto => self.pareto(rng),
            LatencyDistribution::ParetoNormal => 0.75 * self.normal(rng) + 0.25 * self.pareto(rng),
        };
        raw.clamp(self.min, self.max).max(0.0)
    }

    pub fn sample(&self, rng: &mut StdRng) -> Duration {
        Duration::from_secs_f64(self.sample_ms(rng) / 1e3)
    }
}

impl Latency {
    pub fn new(spec: &LatencySpec) -> Self {
        Self {
            sampler: Sampler::new(spec),
            per_read_write: spec.per_read_write,
        }
    }
}

impl Stage for Latency {
    fn on_chunk(&mut self, chunk: &Chunk<'_>, rng: &mut StdRng) -> Verdict {
        if !(self.per_read_write || chunk.new_message) {
            return Verdict::Pass;
        }
        let delay = self.sampler.sample(rng);
        Verdict::after(delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn stats(distribution: LatencyDistribution) -> (f64, f64) {
        let spec = LatencySpec {
            mean: Duration::from_millis(100),
            stddev: Duration::from_millis(20),
            distribution,
            ..Default::default()
        };
        let s = Sampler::new(&spec);
        let mut rng = StdRng::seed_from_u64(7);
        let xs: Vec<f64> = (0..20_000).map(|_| s.sample_ms(&mut rng)).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        (mean, var.sqrt())
    }

    #[test]
    fn distributions_keep_mean_and_spread() {
        for d in [
            LatencyDistribution::Normal,
            LatencyDistribution::Uniform,
            LatencyDistribution::Pareto,
            LatencyDistribution::ParetoNormal,
        ] {
            let (mean, sd) = stats(d);
            assert!((mean - 100.0).abs() < 3.0, "{d}: mean {mean}");
            assert!(sd > 8.0 && sd < 30.0, "{d}: sd {sd}");
        }
    }

    #[test]
    fn clamps_apply() {
        let spec = LatencySpec {
            mean: Duration::from_millis(100),
            stddev: Duration::from_millis(50),
            min: Some(Duration::from_millis(90)),
            max: Some(Duration::from_millis(110)),
            ..Default::default()
        };
        let s = Sampler::new(&spec);
        let mut rng = StdRng::seed_from_u64(1);
        for _ in 0..1000 {
            let x = s.sample_ms(&mut rng);
            assert!((90.0..=110.0).contains(&x));
        }
    }
}
