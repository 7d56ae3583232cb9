//! A scenario run as k sessions of the same plan: the share of sessions that handled every failure well (no
//! runaway, no duplicate write, Retry-After honoured), and pass^k as agent benchmarks report it: the chance
//! that j sessions drawn from the k all handled their failures well, C(c, j) / C(k, j) for c good sessions,
//! for j = 1 … k (pass^1 is the share; pass^k is 1 only when every session was good).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::judgement::Judgement;
use crate::report::round2;

/// pass^j for one j.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PassAt {
    pub j: u32,
    /// C(c, j) / C(k, j), 0..1, 4 decimals.
    pub pass: f64,
}

/// The sessions of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionsFigures {
    /// k: sessions run.
    pub sessions: u32,
    /// Sessions that handled every failure well.
    pub handled_well: u32,
    /// pass^1 … pass^k.
    pub pass: Vec<PassAt>,
    /// Each session's verdict, in order.
    pub verdicts: Vec<String>,
}

/// C(n, r) as a float (small n).
fn choose(n: u32, r: u32) -> f64 {
    if r > n {
        return 0.0;
    }
    (0..r).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
}

/// The figures of the sessions whose judgements these are.
pub fn sessions(judgements: &[&Judgement]) -> SessionsFigures {
    let k = judgements.len() as u32;
    let good = judgements.iter().filter(|j| j.handled_well).count() as u32;
    SessionsFigures {
        sessions: k,
        handled_well: good,
        pass: (1..=k)
            .map(|j| PassAt {
                j,
                pass: (round2(choose(good, j) / choose(k, j) * 100.0) / 100.0),
            })
            .collect(),
        verdicts: judgements.iter().map(|j| j.verdict.clone()).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_k_falls_as_k_grows_and_is_one_only_when_every_session_was_good() {
        let good = Judgement {
            handled_well: true,
            ..Judgement::default()
        };
        let bad = Judgement::default();
        let f = sessions(&[&good, &good, &bad, &good]);
        let pass: Vec<f64> = f.pass.iter().map(|p| p.pass).collect();
        assert_eq!(pass, [0.75, 0.5, 0.25, 0.0]);
        assert_eq!(f.handled_well, 3);
        let all = sessions(&[&good, &good]);
        assert_eq!(all.pass.last().map(|p| p.pass), Some(1.0));
    }
}
