//! The two-state chain of the correlated faults (`burst_error`, `server_degradation`), as mcp-chaos defines it
//! (`BurstErrorFault`, `ServerDegradationFault`): `rate` is the long-run share of ticks the chain is on and
//! `mean_len` the mean length of a run of on ticks. It starts in that long-run state (on with probability
//! `rate`), then at each tick an on chain stays on with probability 1 - 1/len and an off chain turns on with
//! probability rate / (len · (1 - rate)) (always when `rate` is 1), where len = max(1, `mean_len`).
//!
//! Every step's roll is keyed by (seed, fault index, tick) alone, never by the tool or the arrival order: each
//! tool steps its own copy of the chain (kept in its [`FaultMemory`](super::FaultMemory)) up to the tick of its
//! call, and all copies agree, so every tool of the trigger sees the same runs.

use crate::seeded::call_roll;

/// The chain's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chain {
    /// The long-run share of on ticks.
    pub rate: f64,
    /// The mean length of a run of on ticks (below 1 counts as 1).
    pub mean_len: f64,
}

/// Where a tool's copy of a chain stands: its state as of a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainState {
    pub tick: u64,
    pub on: bool,
}

impl Chain {
    fn len(&self) -> f64 {
        self.mean_len.max(1.0)
    }

    fn exit_probability(&self) -> f64 {
        1.0 / self.len()
    }

    fn enter_probability(&self) -> f64 {
        if self.rate < 1.0 {
            self.rate / (self.len() * (1.0 - self.rate))
        } else {
            1.0
        }
    }

    /// The next state from `on`, given this tick's roll.
    fn step(&self, on: bool, roll: f64) -> bool {
        if on {
            roll >= self.exit_probability()
        } else {
            roll < self.enter_probability()
        }
    }

    /// Whether the chain of fault `fault_index` is on at `tick`, stepped on from where `state` left it (or
    /// from tick 0, in the long-run state).
    pub fn on_at(
        &self,
        seed: u64,
        fault_index: usize,
        tick: u64,
        state: &mut Option<ChainState>,
    ) -> bool {
        let roll = |tick| call_roll(seed, fault_index, "", tick, "chain");
        let (mut at, mut on) = match *state {
            Some(state) if state.tick <= tick => (state.tick, state.on),
            _ => (0, roll(0) < self.rate),
        };
        while at < tick {
            at += 1;
            on = self.step(on, roll(at));
        }
        *state = Some(ChainState { tick: at, on });
        on
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The share of on ticks and the mean run of on ticks over `ticks` ticks.
    fn measure(chain: Chain, seed: u64, ticks: u64) -> (f64, f64) {
        let mut memory = None;
        let states: Vec<bool> = (1..=ticks)
            .map(|t| chain.on_at(seed, 0, t, &mut memory))
            .collect();
        let on = states.iter().filter(|s| **s).count();
        let runs = states
            .iter()
            .zip(std::iter::once(&false).chain(&states))
            .filter(|(now, before)| **now && !**before)
            .count();
        (on as f64 / ticks as f64, on as f64 / runs.max(1) as f64)
    }

    #[test]
    fn the_long_run_share_is_rate_and_runs_last_mean_len() {
        let (share, mean_run) = measure(
            Chain {
                rate: 0.08,
                mean_len: 20.0,
            },
            42,
            400_000,
        );
        assert!((share - 0.08).abs() < 0.01, "share {share}");
        assert!((mean_run - 20.0).abs() < 2.0, "mean run {mean_run}");
        // A fractional mean is kept, not rounded.
        let (_, mean_run) = measure(
            Chain {
                rate: 0.2,
                mean_len: 2.5,
            },
            7,
            200_000,
        );
        assert!((mean_run - 2.5).abs() < 0.15, "mean run {mean_run}");
    }

    #[test]
    fn copies_stepped_from_anywhere_agree() {
        let chain = Chain {
            rate: 0.3,
            mean_len: 4.0,
        };
        let mut every_tick = None;
        let all: Vec<bool> = (0..300)
            .map(|t| chain.on_at(9, 2, t, &mut every_tick))
            .collect();
        // Another tool's copy, asked only now and then, and once going back.
        let mut sparse = None;
        for t in [5, 17, 18, 140, 60, 299] {
            assert_eq!(
                chain.on_at(9, 2, t, &mut sparse),
                all[t as usize],
                "tick {t}"
            );
        }
    }

    #[test]
    fn a_rate_of_one_or_zero() {
        let mut memory = None;
        let never = Chain {
            rate: 0.0,
            mean_len: 3.0,
        };
        assert!((0..100).all(|t| !never.on_at(1, 0, t, &mut memory)));
        // mcp-chaos re-enters at once after each exit: on (mean_len) of every (mean_len + 1) ticks.
        let (share, _) = measure(
            Chain {
                rate: 1.0,
                mean_len: 4.0,
            },
            3,
            100_000,
        );
        assert!((share - 0.8).abs() < 0.01, "share {share}");
    }
}
