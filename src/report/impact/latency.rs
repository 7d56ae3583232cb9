//! A run's latency read from its samples: at a quantile, the largest, the mean (0 without requests).

use crate::load::Samples;
use crate::report::{ms, quantile, round2};

/// The latency at `q` of every request of `samples` (0 without requests).
pub(super) fn latency_at(samples: &Samples, q: f64) -> f64 {
    if samples.requests() == 0 {
        0.0
    } else {
        ms(quantile(&samples.all_us, q))
    }
}

pub(super) fn max_latency(samples: &Samples) -> f64 {
    if samples.requests() == 0 {
        0.0
    } else {
        ms(samples.all_us.median_equivalent(samples.all_us.max()))
    }
}

pub(super) fn mean_latency(samples: &Samples) -> f64 {
    let total = samples.requests();
    if total == 0 {
        0.0
    } else {
        round2(samples.sum_us as f64 / total as f64 / 1000.0)
    }
}
