//! The arrival rate over a run: constant, or stages whose rate moves linearly from the previous stage's rate
//! to their own (k6's ramping-arrival-rate meaning; the first stage starts from 0).
//!
//! The schedule is the rate's integral N(t), the starts due by time t: start number j (0-based, over all
//! clients) is due when N reaches j, so a constant rate R has start j at j / R and a ramp gets denser as it
//! climbs. The run plans every start due before its end: ⌈N(end)⌉ (exactly N(end) when it is whole).

use std::time::Duration;

/// A tolerance that keeps a whole count whole (3/s for 1 s is 3 starts, not 4 from a rounding error).
const WHOLE: f64 = 1e-9;

/// One stage of a run: `duration`, through which the rate moves linearly from `from` to `to` per second.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Segment {
    start: f64,
    duration: f64,
    from: f64,
    to: f64,
    /// N at the segment's start.
    before: f64,
}

impl Segment {
    /// Starts due within the first `t` seconds of the segment.
    fn count(&self, t: f64) -> f64 {
        let t = t.clamp(0.0, self.duration);
        let slope = if self.duration > 0.0 {
            (self.to - self.from) / self.duration
        } else {
            0.0
        };
        self.from * t + slope * t * t / 2.0
    }

    /// Seconds into the segment at which `n` starts of it are due (`n` within the segment's count).
    fn time_of(&self, n: f64) -> f64 {
        let half_slope = if self.duration > 0.0 {
            (self.to - self.from) / self.duration / 2.0
        } else {
            0.0
        };
        // The root of half_slope·t² + from·t − n = 0 that lies in the segment, in a form that holds for a
        // flat rate (half_slope = 0) and loses no precision when half_slope is small.
        let root = (self.from * self.from + 4.0 * half_slope * n)
            .max(0.0)
            .sqrt();
        let denominator = self.from + root;
        if denominator <= 0.0 {
            return 0.0;
        }
        (2.0 * n / denominator).clamp(0.0, self.duration)
    }
}

/// The arrival rate of a whole run, in starts per second over all clients.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    segments: Vec<Segment>,
}

impl Rate {
    /// `rate` per second for `duration`.
    pub fn constant(rate: f64, duration: Duration) -> Self {
        Self::build(rate, [(duration, rate)])
    }

    /// Stages of `(duration, rate)`, each moving linearly from the previous one's rate (0 for the first).
    pub fn stages(stages: &[(Duration, f64)]) -> Self {
        Self::build(0.0, stages.iter().copied())
    }

    fn build(mut from: f64, stages: impl IntoIterator<Item = (Duration, f64)>) -> Self {
        let mut segments = Vec::new();
        let (mut start, mut before) = (0.0, 0.0);
        for (duration, to) in stages {
            let segment = Segment {
                start,
                duration: duration.as_secs_f64(),
                from: from.max(0.0),
                to: to.max(0.0),
                before,
            };
            before += segment.count(segment.duration);
            start += segment.duration;
            from = to;
            segments.push(segment);
        }
        Self { segments }
    }

    /// How long the run lasts.
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.end())
    }

    fn end(&self) -> f64 {
        self.segments.last().map_or(0.0, |s| s.start + s.duration)
    }

    /// The highest rate of the run, per second.
    pub fn peak(&self) -> f64 {
        self.segments
            .iter()
            .map(|s| s.from.max(s.to))
            .fold(0.0, f64::max)
    }

    /// Its stages in order: when each starts (seconds from the run's start), how long it lasts, and the rates
    /// it moves from and to (per second).
    pub fn stages_in_order(&self) -> impl Iterator<Item = (f64, f64, f64, f64)> + '_ {
        self.segments
            .iter()
            .map(|s| (s.start, s.duration, s.from, s.to))
    }

    /// Starts due in the first `t` seconds: N(t).
    pub fn count_before(&self, t: f64) -> f64 {
        let index = self
            .segments
            .partition_point(|s| s.start <= t)
            .saturating_sub(1);
        self.segments
            .get(index)
            .map_or(0.0, |s| s.before + s.count(t - s.start))
    }

    /// Starts the run plans: every one due before its end.
    pub fn planned(&self) -> u64 {
        (self.count_before(self.end()) - WHOLE).ceil().max(0.0) as u64
    }

    /// When start number `j` (over all clients) is due, from the run's start.
    pub fn due(&self, j: u64) -> Duration {
        let n = j as f64;
        // The segment within which N reaches n: the last one that starts at or below it.
        let index = self
            .segments
            .partition_point(|s| s.before <= n)
            .saturating_sub(1);
        // A segment of rate 0 adds no starts: the start is due where the next one that adds some begins.
        let segment = self.segments[index..]
            .iter()
            .find(|s| s.before + s.count(s.duration) > n)
            .or(self.segments.get(index));
        Duration::from_secs_f64(segment.map_or(0.0, |s| s.start + s.time_of(n - s.before)))
    }

    /// Starts due in each second of the run (the offered rate), the last second possibly partial.
    pub fn due_per_second(&self) -> Vec<u64> {
        let seconds = self.end().ceil().max(1.0) as usize;
        let planned = self.planned();
        // Starts j with N⁻¹(j) < t: ⌈N(t)⌉, up to the plan.
        let before = |t: f64| ((self.count_before(t) - WHOLE).ceil().max(0.0) as u64).min(planned);
        (0..seconds)
            .map(|s| before(s as f64 + 1.0) - before(s as f64))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn a_constant_rate_plans_every_start_due_before_its_end() {
        let rate = Rate::constant(3.0, secs(1.5));
        assert_eq!(rate.planned(), 5);
        let due: Vec<f64> = (0..5).map(|j| rate.due(j).as_secs_f64()).collect();
        for (got, want) in due.iter().zip([0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0, 4.0 / 3.0]) {
            assert!((got - want).abs() < 1e-9, "{due:?}");
        }
        assert_eq!(Rate::constant(3.0, secs(1.0)).planned(), 3);
        assert_eq!(Rate::constant(6.0, secs(1.5)).due_per_second(), [6, 3]);
        assert_eq!(Rate::constant(0.5, secs(3.0)).due_per_second(), [1, 0, 1]);
        assert_eq!(Rate::constant(0.0, secs(3.0)).planned(), 0);
    }

    #[test]
    fn a_ramp_is_due_as_its_rate_climbs() {
        // 0 → 200/s over 10 s, then 200/s for 5 s: 1,000 + 1,000 starts.
        let rate = Rate::stages(&[(secs(10.0), 200.0), (secs(5.0), 200.0)]);
        assert_eq!(rate.duration(), secs(15.0));
        assert_eq!(rate.planned(), 2000);
        assert_eq!(rate.peak(), 200.0);
        let per_second = rate.due_per_second();
        // Second s of the ramp has the rate of its middle: 20·s + 10.
        for (s, due) in per_second.iter().enumerate().take(10) {
            assert!(due.abs_diff(20 * s as u64 + 10) <= 1, "{per_second:?}");
        }
        assert!(
            per_second[10..].iter().all(|due| *due == 200),
            "{per_second:?}"
        );
        assert_eq!(per_second.iter().sum::<u64>(), 2000);
        // Start j of the ramp is due at √(j / 10) s (N(t) = 10 t²).
        for j in [0, 1, 250, 999] {
            let want = (j as f64 / 10.0).sqrt();
            assert!((rate.due(j).as_secs_f64() - want).abs() < 1e-6, "{j}");
        }
        assert!((rate.due(1500).as_secs_f64() - 12.5).abs() < 1e-6);
        // Due times never go back.
        assert!((1..2000).all(|j| rate.due(j) >= rate.due(j - 1)));
    }

    #[test]
    fn a_ramp_down_and_a_pause_keep_their_shape() {
        // Up to 100/s over 1 s, 100/s for 1 s, down to 0 over 2 s, nothing for 1 s, back up to 100/s over 1 s.
        let rate = Rate::stages(&[
            (secs(1.0), 100.0),
            (secs(1.0), 100.0),
            (secs(2.0), 0.0),
            (secs(1.0), 0.0),
            (secs(1.0), 100.0),
        ]);
        let per_second = rate.due_per_second();
        assert_eq!(per_second, [50, 100, 75, 25, 0, 50], "{per_second:?}");
        // The first start after the pause is due after it.
        assert!(rate.due(250).as_secs_f64() >= 5.0);
        assert!(rate.due(249).as_secs_f64() < 4.0);
    }
}
