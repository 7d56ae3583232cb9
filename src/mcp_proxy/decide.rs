//! Decisions: which faults, if any, apply to a call. Each decision depends only on (seed, plan, tool, that
//! tool's call ordinal) through [`crate::seeded`], never on arrival order across tools: a tool's calls are
//! decided one after another in ordinal order, and every counter a decision reads (`max_injections`, the
//! correlated faults' chains) is kept per (fault, tool) and advanced only by that tool's own decisions. The exceptions
//! are the wall-clock ones by nature: `window`, and `server_degradation` with `clock: ms`.

use std::{collections::HashMap, time::Instant};

use serde::Serialize;
use serde_json::Value;

use super::faults::{CallContext, FaultMemory, RequestFacts};
use super::learned::Learned;
use super::plan::{Plan, PlannedFault, Policy};
use super::trigger::{Matcher, TriggerError};
use crate::seeded::call_roll;

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
    /// Milliseconds from the proxy's start to the decision.
    pub elapsed_ms: u64,
    /// The key the rolls were keyed by: the tool, or a key the call gave (see
    /// [`McpFaultSpec::roll_key`](super::faults::McpFaultSpec::roll_key)).
    pub roll_key: String,
    pub records: Vec<DecisionRecord>,
    /// The first fault applied.
    pub fired: Option<usize>,
    /// Every fault applied, in plan order (one at most under `policy: first`).
    pub applied: Vec<usize>,
    /// A fault that hides tools just took effect and asks for `notifications/tools/list_changed`.
    pub notify_list_changed: bool,
}

/// What the decider remembers about one (method, tool): its last ordinal and, per fault, how many of its
/// calls the fault was applied to and what the fault's own firing rule keeps.
#[derive(Debug, Default)]
struct TargetState {
    ordinal: u64,
    injected: Vec<u64>,
    memory: Vec<FaultMemory>,
}

/// A plan the decider cannot run.
#[derive(Debug, thiserror::Error)]
#[error("faults[{fault}]: {error}")]
pub struct DeciderError {
    pub fault: usize,
    pub error: TriggerError,
}

pub struct Decider {
    seed: u64,
    policy: Policy,
    faults: Vec<(PlannedFault, Matcher)>,
    targets: HashMap<(String, String), TargetState>,
    /// Per fault, whether the tools it hides are gone from listings.
    hiding: Vec<bool>,
    start: Instant,
    /// What the answers taught, when a fault reads it.
    learned: Option<Learned>,
}

impl Decider {
    pub fn new(plan: &Plan) -> Result<Self, DeciderError> {
        let faults = plan
            .faults
            .iter()
            .enumerate()
            .map(|(fault, f)| {
                f.trigger
                    .compile()
                    .map(|m| (f.clone(), m))
                    .map_err(|error| DeciderError { fault, error })
            })
            .collect::<Result<Vec<_>, _>>()?;
        // A fault that fires on no call (a peer's without tools) hides nothing.
        let hiding = faults
            .iter()
            .map(|(f, _)| {
                f.spec.inner().hides_tools().is_some()
                    && f.trigger.starts_at_once()
                    && f.trigger.probability > 0.0
            })
            .collect();
        let learned = faults
            .iter()
            .any(|(f, _)| f.spec.inner().scope().reads_learned())
            .then(Learned::default);
        Ok(Self {
            seed: plan.seed,
            policy: plan.policy,
            faults,
            targets: HashMap::new(),
            hiding,
            start: Instant::now(),
            learned,
        })
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn fault(&self, index: usize) -> Option<&PlannedFault> {
        self.faults.get(index).map(|(f, _)| f)
    }

    /// Fault `index`'s compiled trigger.
    pub fn matcher(&self, index: usize) -> Option<&Matcher> {
        self.faults.get(index).map(|(_, m)| m)
    }

    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    /// Whether some fault could act on `method` (beyond `tools/call`, which is always tracked).
    pub fn watches_method(&self, method: &str) -> bool {
        self.faults.iter().any(|(_, m)| m.matches_method(method))
            || (method == "tools/list" && self.hides_tools())
    }

    /// Whether some fault hides tools from `tools/list` results.
    pub fn hides_tools(&self) -> bool {
        self.faults
            .iter()
            .any(|(f, _)| f.spec.inner().hides_tools().is_some())
    }

    /// Whether `tool` is currently hidden from `tools/list` results.
    pub fn hidden(&self, tool: &str) -> bool {
        self.faults
            .iter()
            .zip(&self.hiding)
            .any(|((_, m), on)| *on && m.matches_tool(tool))
    }

    /// Learns from the answers from now on, for a recorder that counts tasks by tool.
    pub fn learn_tasks(&mut self) {
        self.learned.get_or_insert_with(Learned::default);
    }

    /// What the answers taught, when a fault of the plan reads it or a recorder asked (else nothing is
    /// learned).
    pub fn learned(&mut self) -> Option<&mut Learned> {
        self.learned.as_mut()
    }

    /// Decides about the next call of `method` on `target` (a tool name for `tools/call`) with `arguments`,
    /// from a request that says nothing else.
    pub fn decide(&mut self, method: &str, target: &str, arguments: Option<&Value>) -> Decision {
        self.decide_request(method, target, arguments, RequestFacts::default())
    }

    /// Decides about the next call of `method` on `target` (a tool name for `tools/call`, the tool whose call
    /// made the task for a `tasks/*` request) with `arguments`; `request` is what else the request says.
    pub fn decide_request(
        &mut self,
        method: &str,
        target: &str,
        arguments: Option<&Value>,
        request: RequestFacts<'_>,
    ) -> Decision {
        let faults = self.faults.len();
        let key = (method.to_owned(), target.to_owned());
        let mut state = self.targets.remove(&key).unwrap_or_else(|| TargetState {
            ordinal: 0,
            injected: vec![0; faults],
            memory: vec![FaultMemory::default(); faults],
        });
        state.ordinal += 1;
        let ordinal = state.ordinal;
        let elapsed_ms = self.start.elapsed().as_millis() as u64;
        let mut decision = Decision {
            ordinal,
            elapsed_ms,
            roll_key: target.to_owned(),
            ..Default::default()
        };
        for (index, (fault, matcher)) in self.faults.iter().enumerate() {
            let spec = fault.spec.inner();
            let scope = spec.scope();
            // A fault on the listing picks its tools inside the listing, not by the call's target.
            let tool_matches = scope.acts_on_listing() || matcher.matches_tool(target);
            if !matcher.matches_method(method)
                || !tool_matches
                || !fault
                    .trigger
                    .eligible(ordinal, elapsed_ms, state.injected[index])
            {
                continue;
            }
            let caller_key = spec.roll_key(arguments).or_else(|| {
                request
                    .task
                    .filter(|_| scope.rolls_per_task())
                    .map(|task| task.task_id.clone())
            });
            let (key, key_ordinal) = match &caller_key {
                Some(key) => (key.as_str(), 0),
                None => (target, ordinal),
            };
            let roll = call_roll(self.seed, index, key, key_ordinal, "");
            let call = CallContext {
                seed: self.seed,
                fault_index: index,
                tool: target,
                ordinal,
                elapsed_ms,
                roll,
                tools: Some(matcher),
                request,
            };
            let fired = roll < fault.trigger.probability
                && (!scope.needs_known_task() || call.request.task.is_some())
                && spec.fires(&call, &mut state.memory[index]);
            decision.records.push(DecisionRecord {
                fault: index,
                fault_type: fault.spec.type_name(),
                roll,
                fired,
            });
            if !fired {
                if self.policy == Policy::FirstMatch {
                    break;
                }
                continue;
            }
            if decision.fired.is_none() {
                decision.fired = Some(index);
                if key != target {
                    decision.roll_key = key.to_owned();
                }
            }
            decision.applied.push(index);
            state.injected[index] += 1;
            if let Some(hiding) = spec.hides_tools() {
                if hiding.notify && !self.hiding[index] {
                    decision.notify_list_changed = true;
                }
                self.hiding[index] = true;
            }
            if self.policy != Policy::All || spec.action(&call).ends_chain() {
                break;
            }
        }
        self.targets.insert(key, state);
        decision
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

    /// Each tool's decisions, in ordinal order, when the calls of `tools` arrive in the order given.
    fn per_tool(plan: &Plan, order: &[&str]) -> HashMap<String, Vec<Vec<usize>>> {
        let mut decider = Decider::new(plan).unwrap();
        let mut seen: HashMap<String, Vec<Vec<usize>>> = HashMap::new();
        for tool in order {
            let d = decider.decide("tools/call", tool, None);
            seen.entry(tool.to_string()).or_default().push(d.applied);
        }
        seen
    }

    #[test]
    fn max_injections_counts_per_tool_by_ordinal_whatever_the_arrival_order() {
        let p = plan(
            "seed: 42\nfaults:\n  - type: error\n    probability: 0.5\n    max_injections: 3\n  - type: latency\n    ms: 1\n    after_calls: 2\n    max_injections: 4\n",
        );
        let interleaved: Vec<&str> = (0..40).flat_map(|_| ["x", "y"]).collect();
        let mut grouped: Vec<&str> = vec!["y"; 40];
        grouped.extend(vec!["x"; 40]);
        let a = per_tool(&p, &interleaved);
        let b = per_tool(&p, &grouped);
        assert_eq!(a, b);
        for (tool, calls) in &a {
            let errors = calls.iter().filter(|c| c.first() == Some(&0)).count();
            let delays = calls.iter().filter(|c| c.first() == Some(&1)).count();
            assert_eq!((errors, delays), (3, 4), "{tool}: {calls:?}");
            // The cap is reached at the ordinal the rolls say, and nothing fires after it.
            let last_error = calls.iter().rposition(|c| c.first() == Some(&0)).unwrap() as u64;
            let third_roll_below = (1..=40u64)
                .filter(|n| call_roll(42, 0, tool, *n, "") < 0.5)
                .nth(2)
                .unwrap();
            assert_eq!(last_error + 1, third_roll_below, "{tool}");
        }
    }

    #[test]
    fn degradation_episodes_are_the_same_for_every_tool_whatever_the_arrival_order() {
        // An error before the degradation takes some calls (so their chain is stepped later, or not at all).
        let p = plan(
            "seed: 5\nfaults:\n  - type: error\n    tools: [x]\n    probability: 0.3\n  - type: server_degradation\n    tools: [x, y]\n    episode_rate: 0.3\n    episode_len: 4\n",
        );
        let interleaved: Vec<&str> = (0..300).flat_map(|_| ["x", "y"]).collect();
        let mut grouped: Vec<&str> = vec!["y"; 300];
        grouped.extend(vec!["x"; 300]);
        let a = per_tool(&p, &interleaved);
        assert_eq!(a, per_tool(&p, &grouped));
        // Where x's call was not taken by the error, x and y are degraded at the same ordinals.
        let (x, y) = (&a["x"], &a["y"]);
        let degraded_y = y.iter().filter(|c| c.first() == Some(&1)).count();
        assert!((45..135).contains(&degraded_y), "{degraded_y} of 300");
        for (x, y) in x.iter().zip(y) {
            if x.first() != Some(&0) {
                assert_eq!(x, y);
            }
        }
    }

    #[test]
    fn policy_all_applies_every_fault_until_one_answers() {
        let p = plan(
            "policy: all\nfaults:\n  - type: latency\n    ms: 5\n  - type: schema_drift\n    rename: {a: b}\n  - type: error\n  - type: empty\n",
        );
        let mut d = Decider::new(&p).unwrap();
        let decision = d.decide("tools/call", "t", None);
        assert_eq!(decision.applied, [0, 1, 2]);
        assert_eq!(decision.fired, Some(0));
        assert_eq!(
            decision.records.len(),
            3,
            "the fault after the error is not evaluated"
        );
        let first = plan("faults:\n  - type: latency\n    ms: 5\n  - type: error\n");
        assert_eq!(
            Decider::new(&first)
                .unwrap()
                .decide("tools/call", "t", None)
                .applied,
            [0]
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
