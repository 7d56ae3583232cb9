//! An mcptest suite's `agents:`: each agent's `recovery:` budgets, read as gates, and the faults its `inject:`
//! names, the only ones that apply.

use serde_json::Value;

use super::Plan;
use super::error::InvalidPlan;
use super::gates::{Gates, gates_of};
use super::text::key_line;

/// What the proxy takes from an mcptest suite's `agents:`.
pub(super) struct Agents {
    /// Each agent's `recovery:` read with mcptest's meaning; several agents are held to the strictest.
    pub(super) gates: Gates,
    /// The faults the agents' `inject:` lists name, with the agent that names each.
    pub(super) injected: Vec<(usize, String)>,
}

/// Reads an mcptest suite's `agents:`. Their other keys (model, prompt, servers) are mcptest's own runner's:
/// the proxy fronts whatever client connects.
pub(super) fn agents_of(value: Value, source: &str) -> Result<Agents, InvalidPlan> {
    let bad = || InvalidPlan::BadAgents {
        line: key_line(source, "agents"),
    };
    let Value::Array(agents) = value else {
        return Err(bad());
    };
    let mut suite = Agents {
        gates: Gates::default(),
        injected: Vec::new(),
    };
    for (i, agent) in agents.into_iter().enumerate() {
        let Value::Object(mut agent) = agent else {
            return Err(bad());
        };
        if let Some(recovery) = agent.remove("recovery") {
            let budget = gates_of(&format!("agents[{i}].recovery"), recovery, source)?;
            suite.gates = suite.gates.strictest(&budget);
        }
        match agent.remove("inject") {
            None | Some(Value::Null) => {}
            Some(Value::Array(names)) => {
                for name in names {
                    let Value::String(name) = name else {
                        return Err(bad());
                    };
                    suite.injected.push((i, name));
                }
            }
            Some(_) => return Err(bad()),
        }
    }
    Ok(suite)
}

/// Keeps the faults an mcptest suite's agents inject, as mcptest applies a fault only to the agents that name
/// it. The proxy cannot tell which agent connects, so a fault any agent names applies; a name no fault has is
/// refused with the closest one.
pub(super) fn keep_injected(
    plan: &mut Plan,
    injected: &[(usize, String)],
    source: &str,
) -> Result<(), InvalidPlan> {
    let names: Vec<&str> = plan
        .faults
        .iter()
        .filter_map(|f| f.name.as_deref())
        .collect();
    for (agent, name) in injected {
        if !names.contains(&name.as_str()) {
            return Err(InvalidPlan::UnknownInjected {
                agent: *agent,
                name: name.clone(),
                closest: crate::fields::closest(name, names.iter().copied()).map(str::to_owned),
                line: key_line(source, "inject"),
            });
        }
    }
    plan.faults.retain(|fault| {
        let kept = fault
            .name
            .as_ref()
            .is_some_and(|name| injected.iter().any(|(_, n)| n == name));
        if !kept {
            tracing::info!(
                fault = fault.name.as_deref().unwrap_or(fault.spec.type_name()),
                "mcp-proxy: fault left out: no agent of the mcptest suite injects it"
            );
        }
        kept
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Result<Plan, String> {
        Plan::from_value(serde_yaml_ng::from_str(text).unwrap(), text).map_err(|e| e.to_string())
    }

    #[test]
    fn gates_and_an_mcptest_suites_recovery_budgets_are_read() {
        let plan = yaml("gates:\n  max_runaways: 0\n  duplicate_writes: 0\nfaults: []\n").unwrap();
        assert_eq!(plan.gates.max_runaways, Some(0));
        assert_eq!(plan.gates.duplicate_writes, Some(0));
        let suite = "faults:
  - name: hung-search
    target: { tool: search }
    kind: hang
agents:
  - name: recovers
    model: some-model
    inject: [hung-search]
    prompt: Search.
    recovery: { max_detection_ms: 3000, max_recovery_ms: 5000, require_clean_timeout: true }
  - name: stricter
    recovery: { max_recovery_ms: 2000 }
";
        // Only what an agent injects applies; a name no fault has is refused with the closest.
        let two = suite.replace(
            "faults:\n",
            "faults:\n  - name: slow-fetch\n    target: { tool: fetch }\n    kind: slow:300\n",
        );
        assert_eq!(yaml(&two).unwrap().faults.len(), 1);
        let err =
            yaml(&suite.replace("inject: [hung-search]", "inject: [hung-serch]")).unwrap_err();
        assert!(
            err.contains("agents[0].inject names `hung-serch`")
                && err.contains("the closest is `hung-search`"),
            "{err}"
        );
        let plan = yaml(suite).unwrap();
        assert_eq!(plan.faults.len(), 1);
        assert_eq!(plan.gates.max_detection_ms, Some(3000));
        assert_eq!(plan.gates.max_recovery_ms, Some(2000));
        assert!(plan.gates.require_clean_timeout);
        let err = yaml("gates:\n  max_runaway: 0\n").unwrap_err();
        assert!(
            err.contains("line 1") && err.contains("gates: unknown field `max_runaway`"),
            "{err}"
        );
        let err = yaml("agents:\n  - recovery: {max_recovery_ms: soon}\n").unwrap_err();
        assert!(err.contains("agents[0].recovery"), "{err}");
    }
}
