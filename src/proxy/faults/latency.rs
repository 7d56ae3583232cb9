//! Latency: a delay drawn from a distribution, once per message or on every read/write.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use rand::RngExt;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal, Pareto};
use serde::{Deserialize, Serialize};

use super::{Chunk, Injector, Stage, TcpFaultSpec, Verdict, in_ms, on_selected_flows};
use crate::fields::{Field, FieldError, FieldInput, parses_as};
use crate::lenient::Number;
use crate::proxy::placement::{Direction, FaultCommon, Placeable};
use crate::proxy::values::{MAX_DELAY_MS, ParseError};

/// Shape of the latency samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LatencyDistribution {
    /// Uniform over mean ± √3·stddev.
    Uniform,
    #[default]
    Normal,
    /// Pareto with the given mean and standard deviation (heavy right tail).
    Pareto,
    /// 75% normal + 25% pareto, like netem's paretonormal.
    ParetoNormal,
}

impl FromStr for LatencyDistribution {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "uniform" => Ok(Self::Uniform),
            "normal" => Ok(Self::Normal),
            "pareto" => Ok(Self::Pareto),
            "pareto-normal" | "paretonormal" => Ok(Self::ParetoNormal),
            _ => Err(ParseError::new(format!(
                "latency distribution must be one of uniform, normal, pareto, pareto-normal; got '{s}'"
            ))),
        }
    }
}

impl fmt::Display for LatencyDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Uniform => "uniform",
            Self::Normal => "normal",
            Self::Pareto => "pareto",
            Self::ParetoNormal => "pareto-normal",
        })
    }
}

/// Latency: a delay drawn per message (or per read/write) with a mean and a spread.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LatencySpec {
    pub common: FaultCommon,
    pub mean: Duration,
    pub stddev: Duration,
    pub distribution: LatencyDistribution,
    pub min: Option<Duration>,
    pub max: Option<Duration>,
    pub per_read_write: bool,
}

const MEAN: Field = Field::millis(
    "latency",
    "Mean latency to add",
    Number::above_zero(MAX_DELAY_MS, ""),
)
.flag("latency-mean")
.required("300");
const DEVIATION: Field = Field::millis(
    "deviation",
    "Standard deviation around the mean",
    Number::from_to(0.0, MAX_DELAY_MS),
)
.flag("latency-stddev")
.default("0");
const DISTRIBUTION: Field = Field::parsed(
    "distribution",
    "Shape of the delays: uniform over mean ± √3·deviation, normal, pareto (heavy right tail) or \
     pareto-normal (75% normal + 25% pareto, as netem's paretonormal)",
    "uniform, normal, pareto or pareto-normal",
    parses_as::<LatencyDistribution>,
)
.default("normal");
const MIN: Field = Field::millis(
    "min",
    "Lowest delay: samples below it are raised to it",
    Number::from_to(0.0, MAX_DELAY_MS),
)
.optional("no lower clamp but 0");
const MAX: Field = Field::millis(
    "max",
    "Highest delay: samples above it are lowered to it",
    Number::from_to(0.0, MAX_DELAY_MS),
)
.optional("no upper clamp");
const PER_READ_WRITE: Field = Field::switch(
    "per_read_write_op",
    "Add the latency to every read/write on the connection instead of once per message",
)
.flag("latency-per-read-write");

impl TcpFaultSpec for LatencySpec {
    const KIND: &'static str = "latency";
    const TITLE: &'static str = "Latency";
    const ENABLE: &'static str = "Add latency";
    const MODEL: &'static str = "once per message (first chunk of a connection, or first after the other \
flow spoke) or on every read; each request/response exchange is `mean` slower, keep-alive or not";
    const ACTED: &'static str = "messages delayed (reads with per_read_write_op)";
    const TOOL_DESCRIPTION: &'static str = "Evaluate an endpoint's reliability while latency is added on a \
TCP path. Puts a fault-injecting proxy on the path to `url` (or runs the `proxies` you map in front of its \
upstream), sends open-model load (num_clients × rps requests per second for duration), and returns a markdown \
report (latency percentiles, errors by outcome, SLO verdicts, per-second sparkline); structuredContent holds \
every figure.";
    const PLACEABLE: Option<Placeable> = Some(Placeable {
        direction: Direction::Ingress,
        probability_help: "Share of messages delayed",
    });
    const FIELDS: &'static [Field] = &[MEAN, DEVIATION, DISTRIBUTION, MIN, MAX, PER_READ_WRITE];

    fn read(input: &FieldInput) -> Result<Self, FieldError> {
        let spec = Self {
            common: FaultCommon::default(),
            mean: input.millis(&MEAN)?,
            stddev: input.millis(&DEVIATION)?,
            distribution: input.parsed(&DISTRIBUTION)?,
            min: input.optional_millis(&MIN)?,
            max: input.optional_millis(&MAX)?,
            per_read_write: input.switch(&PER_READ_WRITE)?,
        };
        spec.validate()
            .map_err(|e| input.refuse(&MAX, e.to_string()))?;
        Ok(spec)
    }

    fn validate(&self) -> Result<(), ParseError> {
        if let (Some(min), Some(max)) = (self.min, self.max)
            && min > max
        {
            return Err(ParseError::new(format!(
                "latency min ({}) is above latency max ({})",
                in_ms(min),
                in_ms(max)
            )));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let clamp = match (self.min, self.max) {
            (None, None) => String::new(),
            (min, max) => format!(
                ", clamped to [{}, {}]",
                min.map_or("0ms".into(), in_ms),
                max.map_or("∞".into(), in_ms)
            ),
        };
        format!(
            "Latency: mean {}, deviation {}, {} distribution{clamp}, {}",
            in_ms(self.mean),
            in_ms(self.stddev),
            self.distribution,
            if self.per_read_write {
                "on every read/write"
            } else {
                "once per message"
            }
        )
    }

    fn injector(&self) -> Arc<dyn Injector> {
        Arc::new(self.clone())
    }
}

impl Injector for LatencySpec {
    fn connection(&self, acts_on: [bool; 2]) -> [Option<Box<dyn Stage>>; 2] {
        on_selected_flows(acts_on, || Box::new(Latency::new(self)))
    }
}

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
        // (distribution, expected sd, mean tolerance, sd tolerance): 20 000 samples put the normal and
        // uniform means within ±0.5 ms (4 standard errors); pareto's heavy tail needs more room.
        // pareto-normal is 0.75·N + 0.25·P of two draws: sd = √(0.75² + 0.25²)·20 ≈ 15.8.
        let cases = [
            (LatencyDistribution::Normal, 20.0, 0.6, 0.6),
            (LatencyDistribution::Uniform, 20.0, 0.6, 0.6),
            (LatencyDistribution::Pareto, 20.0, 1.5, 6.0),
            (LatencyDistribution::ParetoNormal, 15.8, 0.8, 2.0),
        ];
        for (d, expected_sd, mean_tolerance, sd_tolerance) in cases {
            let (mean, sd) = stats(d);
            assert!(
                (mean - 100.0).abs() < mean_tolerance,
                "{d}: mean {mean}, expected 100 ± {mean_tolerance}"
            );
            assert!(
                (sd - expected_sd).abs() < sd_tolerance,
                "{d}: sd {sd}, expected {expected_sd} ± {sd_tolerance}"
            );
        }
    }

    #[test]
    fn clamps_apply_and_limit() {
        let spec = LatencySpec {
            mean: Duration::from_millis(100),
            stddev: Duration::from_millis(50),
            min: Some(Duration::from_millis(90)),
            max: Some(Duration::from_millis(110)),
            ..Default::default()
        };
        let s = Sampler::new(&spec);
        let mut rng = StdRng::seed_from_u64(1);
        let xs: Vec<f64> = (0..1000).map(|_| s.sample_ms(&mut rng)).collect();
        assert!(xs.iter().all(|x| (90.0..=110.0).contains(x)), "{xs:?}");
        // N(100, 50) falls below 90 or above 110 with probability 0.42 each: both bounds must bite.
        let at_min = xs.iter().filter(|&&x| x == 90.0).count();
        let at_max = xs.iter().filter(|&&x| x == 110.0).count();
        assert!((340..500).contains(&at_min), "{at_min} samples at the min");
        assert!((340..500).contains(&at_max), "{at_max} samples at the max");
    }
}
