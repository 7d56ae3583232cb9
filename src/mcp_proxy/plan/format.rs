//! Which format a plan, or one of its faults, is written in. A plan that names its `format`, or is written as
//! only mcp-chaos writes one, is read in that format; otherwise each fault is recognised by its own spelling (mcptest's `kind`, SmartAI's
//! `tool`, mcp-chaos-monkey's `config`, camelCase keys and hyphenated types), and a fault without one is ours.
//! What a key means in a format is the fault's to say ([`McpFaultSpec::read_peer`]), except the trigger's
//! keys, read here.
//!
//! [`McpFaultSpec::read_peer`]: crate::mcp_proxy::faults::McpFaultSpec::read_peer

use serde_json::{Map, Value};

use super::Policy;
use crate::mcp_proxy::faults::{Format, PeerEntry};

/// mcp-chaos's fault types and the keys each takes: the fields of its fault classes
/// (`src/mcp_chaos/faults.py`, whose constructors refuse any other key).
const MCP_CHAOS_FAULTS: &[(&str, &[&str])] = &[
    ("latency", &["added_ms", "jitter_ms", "probability"]),
    ("drop_tool", &["tools"]),
    ("schema_drift", &["tools", "probability"]),
    ("partial_result", &["tools", "probability"]),
    ("registry_inconsistency", &["tools"]),
    ("error_injection", &["rate", "tools"]),
    ("burst_error", &["rate", "burst_len", "tools"]),
    (
        "server_degradation",
        &["tools", "episode_rate", "episode_len"],
    ),
];

/// mcp-chaos-monkey's fault types that only it spells with a hyphen.
const CHAOS_MONKEY_TYPES: &[&str] = &[
    "rate-limit",
    "schema-mismatch",
    "connection-refused",
    "connection-drop",
];

/// The format a whole plan is in: the one its `format` key names, or mcp-chaos's when the plan is one
/// mcp-chaos would load (`seed` and `faults` at the top and nothing else, every fault one of its types with only
/// its keys) and writes something only mcp-chaos writes (`error_injection`, `added_ms`). A plan that both
/// formats read alike in every word is ours unless it says `format: mcp-chaos`.
pub(super) fn plan_format(top: &Map<String, Value>) -> Result<Option<Format>, ()> {
    if let Some(name) = top.get("format") {
        return Format::ALL
            .iter()
            .find(|f| Some(f.key()) == name.as_str())
            .map(|f| Some(*f))
            .ok_or(());
    }
    let Some(faults) = top.get("faults").and_then(Value::as_array) else {
        return Ok(None);
    };
    let loadable = top.contains_key("seed")
        && top.keys().all(|k| k == "seed" || k == "faults")
        && faults.iter().all(is_mcp_chaos_fault);
    let its_own_words = faults.iter().any(|f| {
        f.get("type").and_then(Value::as_str) == Some("error_injection")
            || f.get("added_ms").is_some()
    });
    Ok((loadable && its_own_words).then_some(Format::McpChaos))
}

/// Whether `fault` is one of mcp-chaos's types with only its keys.
fn is_mcp_chaos_fault(fault: &Value) -> bool {
    let Some(fault) = fault.as_object() else {
        return false;
    };
    let kind = fault.get("type").and_then(Value::as_str);
    MCP_CHAOS_FAULTS
        .iter()
        .find(|(name, _)| Some(*name) == kind)
        .is_some_and(|(_, keys)| {
            fault
                .keys()
                .all(|k| k == "type" || keys.contains(&k.as_str()))
        })
}

/// The format of one fault, by its spelling.
pub(super) fn entry_format(fault: &Map<String, Value>) -> Format {
    let kind = fault.get("type").and_then(Value::as_str);
    if fault.contains_key("kind") {
        Format::McpTest
    } else if fault.contains_key("tool") {
        Format::SmartAi
    } else if fault.contains_key("config")
        || fault
            .keys()
            .any(|k| k.contains(|c: char| c.is_ascii_uppercase()))
        || kind.is_some_and(|k| CHAOS_MONKEY_TYPES.contains(&k))
    {
        Format::ChaosMonkey
    } else {
        Format::Own
    }
}

/// The policy of a plan that does not say, from its faults' formats: mcp-chaos applies every fault in turn,
/// mcp-chaos-monkey lets only the first fault aimed at a target roll.
pub(super) fn default_policy(formats: &[Format]) -> Policy {
    let all = |format| !formats.is_empty() && formats.iter().all(|f| *f == format);
    if all(Format::McpChaos) {
        Policy::All
    } else if all(Format::ChaosMonkey) {
        Policy::FirstMatch
    } else {
        Policy::First
    }
}

/// The trigger keys as the entry's format means them. SmartAI's `after_calls: N` fires from the N-th
/// matching call on (1, its default, is every call); ours fires after N calls have passed.
pub(super) fn read_trigger(entry: &mut PeerEntry) {
    if entry.format != Format::SmartAi {
        return;
    }
    match entry.get("after_calls").and_then(Value::as_u64) {
        Some(0 | 1) => {
            entry.take("after_calls");
        }
        Some(n) => entry.set("after_calls", (n - 1).into()),
        None => {}
    }
}
