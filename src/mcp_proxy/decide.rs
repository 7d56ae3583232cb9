//! Decisions: which fault, if any, fires on a call. Each decision depends only on (seed, fault index, tool,
//! that tool's call ordinal) through [`super::roll`], never on arrival order across tools.

use std::{collections::HashMap, time::Instant};

use serde::Serialize;

use super::faults::FaultSpec;
use super::plan::{Plan, PlannedFault};
use super::roll::call_roll;
use super::trigger::Matcher;

/// One fault's decision about one call, as recorded in events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionRecord {
    pub fault: usize,
    #[serde(rename = "type")]
    pub fault_type: &'static str,
    pub roll: f64,
    pub fired: bool,
}

/// The decision about one call.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    pub ordinal: u64,
    /// The key the rolls were keyed by: the tool, or the call's `arguments.call_id` for `flaky`.
    pub roll_key: String,
    pub records: Vec<DecisionRecord>,
    pub fired: Option<usize>,
    /// A `drop_tool` fault just took effect and asks for `notifications/tools/list_changed`.
    pub notify_list_changed: bool,
}

pub struct Decider {
    seed: u64,
    faults: Vec<(PlannedFault, Matcher)>,
    injections: Vec<u64>,
    ordinals: HashMap<(String, String), u64>,
    /// burst_error chains: (fault, tool) → (last ordinal stepped, failing).
    bursts: HashMap<(usize, String), (u64, bool)>,
    /// drop_tool faults in effect.
    dropping: Vec<bool>,
    start: Instant,
}

impl Decider {
    pub fn new(plan: &Plan) -> Result<Self, String> {
        let faults = plan
            .faults
            .iter()
            .enumerate()
            .map(|(i, f)| {
                f.trigger
                    .compile()
                    .map(|m| (f.clone(), m))
                    .map_err(|e| format!("faults[{i}]: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let dropping = faults
            .iter()
            .map(|(f, _)| {
                matches!(f.spec, FaultSpec::DropTool(_))
                    && f.trigger.after_calls.is_none()
                    && f.trigger.on_call.is_none()
                    && f.trigger.window.is_none()
            })
            .collect();
        Ok(Self {
            seed: plan.seed,
            injections: vec![0; faults.len()],
            faults,
            ordinals: HashMap::new(),
            bursts: HashMap::new(),
            dropping,
            start: Instant::now(),
        })
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn fault(&self, index: usize) -> Option<&PlannedFault> {
        self.faults.get(index).map(|(f, _)| f)
    }

    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    /// Whether some fault could act on `method` (beyond `tools/call`, which is always tracked).
    pub fn watches_method(&self, method: &str) -> bool {
        self.faults.iter().any(|(_, m)| m.matches_method(method))
            || (method == "tools/list" && self.has_drop_tool())
    }

    pub fn has_drop_tool(&self) -> bool {
        self.faults
            .iter()
            .any(|(f, _)| matches!(f.spec, FaultSpec::DropTool(_)))
    }

    /// Whether `tool` is currently removed from `tools/list` by a `drop_tool` fault.
    pub fn dropped(&self, tool: &str) -> bool {
        self.faults
            .iter()
            .zip(&self.dropping)
            .any(|((_, m), on)| *on && m.matches_tool(tool))
    }

    /// Decides about the next call of `method` on `target` (a tool name for `tools/call`).
    pub fn decide(&mut self, method: &str, target: &str, call_id: Option<&str>) -> Decision {
        let ordinal = {
            let n = self
                .ordinals
                .entry((method.to_owned(), target.to_owned()))
                .or_insert(0);
            *n += 1;
            *n
        };
        let elapsed_ms = self.start.elapsed().as_millis() as u64;
        let mut decision = Decision {
            ordinal,
            roll_key: target.to_owned(),
            ..Default::default()
        };
        for index in 0..self.faults.len() {
            let (fault, matcher) = &self.faults[index];
            if !matcher.matches_method(method)
                || !matcher.matches_tool(target)
                || !fault
                    .trigger
                    .eligible(ordinal, elapsed_ms, self.injections[index])
            {
                continue;
            }
            let (key, key_ordinal) = match (&fault.spec, call_id) {
                (FaultSpec::Flaky(_), Some(id)) => (id, 0),
                _ => (target, ordinal),
            };
            let roll = call_roll(self.seed, index, key, key_ordinal, "");
            let spec = fault.spec.clone();
            let probability = fault.trigger.probability;
            let fired = roll < probability
                && match &spec {
                    FaultSpec::RecoverAfter(r) => r.failing(ordinal),
                    FaultSpec::BurstError(b) => self.burst_failing(index, b, target, ordinal),
                    FaultSpec::ServerDegradation(d) => {
                        d.degraded(self.seed, index, d.tick(ordinal, elapsed_ms))
                    }
                    _ => true,
                };
            decision.records.push(DecisionRecord {
                fault: index,
                fault_type: spec.type_name(),
                roll,
                fired,
            });
            if fired {
                if key != target {
                    decision.roll_key = key.to_owned();
                }
                self.injections[index] += 1;
                if matches!(spec, FaultSpec::DropTool(ref d) if d.notify) && !self.dropping[index] {
                    decision.notify_list_changed = true;
                }
                if matches!(spec, FaultSpec::DropTool(_)) {
                    self.dropping[index] = true;
                }
                decision.fired = Some(index);
                break;
            }
        }
        decision
    }

    /// The burst chain's state at `ordinal`, stepped from the last known state (or from the start).
    fn burst_failing(
        &mut self,
        index: usize,
        burst: &super::faults::BurstError,
        tool: &str,
        ordinal: u64,
    ) -> bool {
        let key = (index, tool.to_owned());
        let (mut at, mut failing) = match self.bursts.get(&key) {
            Some(&(at, failing)) if at <= ordinal => (at, failing),
            _ => (0, false),
        };
        while at < ordinal {
            at += 1;
            failing = burst.step(failing, call_roll(self.seed, index, tool, at, "burst"));
        }
        self.bursts.insert(key, (at, failing));
        failing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Plan {
        Plan::from_value(serde_yaml_ng::from_str(text).unwrap(), text).unwrap()
    }

    #[test]
    fn decisions_depend_on_tool_ordinal_not_arrival() {
        let p = plan("seed: 42\nfaults:\n  - type: flaky\n    fail_rate: 0.5\n");
        let mut a = Decider::new(&p).unwrap();
        let mut b = Decider::new(&p).unwrap();
        let a_calls: Vec<_> = (0..50)
            .flat_map(|_| ["x", "y"])
            .map(|t| (t, a.decide("tools/call", t, None)))
            .collect();
        // b sees all of y's calls first, then x's.
        let mut b_calls: Vec<_> = (0..50)
            .map(|_| ("y", b.decide("tools/call", "y", None)))
            .collect();
        b_calls.extend((0..50).map(|_| ("x", b.decide("tools/call", "x", None))));
        for (tool, d) in &a_calls {
            let other = b_calls
                .iter()
                .find(|(t, e)| t == tool && e.ordinal == d.ordinal)
                .unwrap();
            assert_eq!(d.records, other.1.records);
        }
        let fired = a_calls.iter().filter(|(_, d)| d.fired.is_some()).count();
        assert!(
            (30..70).contains(&fired),
            "{fired} of 100 fired at rate 0.5"
        );
    }

    #[test]
    fn burst_error_keeps_its_rate_and_bursts() {
        let p = plan("seed: 7\nfaults:\n  - type: burst_error\n    rate: 0.2\n    burst_len: 10\n");
        let mut d = Decider::new(&p).unwrap();
        let outcomes: Vec<bool> = (0..5000)
            .map(|_| d.decide("tools/call", "t", None).fired.is_some())
            .collect();
        let share = outcomes.iter().filter(|f| **f).count() as f64 / 5000.0;
        assert!((share - 0.2).abs() < 0.06, "failure share {share}");
        let runs = outcomes.windows(2).filter(|w| w[0] && !w[1]).count().max(1);
        let mean_run = outcomes.iter().filter(|f| **f).count() as f64 / runs as f64;
        assert!(mean_run > 5.0, "mean burst length {mean_run}");
    }

    #[test]
    fn recover_after_fails_the_first_calls_of_each_tool() {
        let p = plan("faults:\n  - kind: recover-after:2\n");
        let mut d = Decider::new(&p).unwrap();
        let fired: Vec<bool> = (0..4)
            .map(|_| d.decide("tools/call", "a", None).fired.is_some())
            .collect();
        assert_eq!(fired, [true, true, false, false]);
        assert!(d.decide("tools/call", "b", None).fired.is_some());
    }
}
