//! Which format a plan, or one of its faults, is written in. A plan that names its `format`, or is written as
//! only mcp-chaos writes one, is read in that format; otherwise each fault is recognised by its own spelling
//! (mcptest's `kind`, SmartAI's `tool`, mcp-chaos-monkey's `config`, camelCase keys and the hyphenated types
//! only it writes), and a fault without one is ours. The peers' types and keys are declared by the faults that
//! read them ([`McpFaultSpec::peer_types`]), and read here from the registry. What a key means in a format is
//! the fault's to say ([`McpFaultSpec::read_peer`]), except the trigger's keys, read here.
//!
//! [`McpFaultSpec::peer_types`]: crate::mcp_proxy::faults::McpFaultSpec::peer_types
//! [`McpFaultSpec::read_peer`]: crate::mcp_proxy::faults::McpFaultSpec::read_peer

use serde_json::{Map, Value};

use super::Policy;
use crate::mcp_proxy::faults::{Format, PeerEntry, REGISTRY, registered};
use crate::mcp_proxy::trigger::TRIGGER_KEYS;

/// The format a whole plan is in: the one its `format` key names, or mcp-chaos's when the plan is one
/// mcp-chaos would load (`seed` and `faults` at the top and nothing else, every fault one of its types with only
/// its keys) and writes something only mcp-chaos writes (a type or a key none of ours is, such as
/// `error_injection` or `added_ms`). A plan that both formats read alike in every word is ours unless it says
/// `format: mcp-chaos`. mcp-chaos's types and keys are those its faults declare ([`PeerType`]).
///
/// [`PeerType`]: crate::mcp_proxy::faults::PeerType
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
    let faults: Option<Vec<&Map<String, Value>>> = faults.iter().map(Value::as_object).collect();
    let Some(faults) = faults else {
        return Ok(None);
    };
    let loadable = top.contains_key("seed")
        && top.keys().all(|k| k == "seed" || k == "faults")
        && faults.iter().all(|f| is_mcp_chaos_fault(f));
    let its_own_words = faults.iter().any(|f| has_mcp_chaos_words(f));
    Ok((loadable && its_own_words).then_some(Format::McpChaos))
}

/// The keys mcp-chaos's type `kind` takes, if it is one of its types.
fn mcp_chaos_keys(kind: &str) -> Option<&'static [&'static str]> {
    REGISTRY.iter().find_map(|fault| {
        (fault.peer_types)()
            .iter()
            .find(|p| p.format == Format::McpChaos && p.name == kind)
            .map(|p| p.keys)
    })
}

/// Whether `fault` is one of mcp-chaos's types with only its keys.
fn is_mcp_chaos_fault(fault: &Map<String, Value>) -> bool {
    let kind = fault
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    mcp_chaos_keys(kind).is_some_and(|keys| {
        fault
            .keys()
            .all(|k| k == "type" || keys.contains(&k.as_str()))
    })
}

/// Whether mcp-chaos's `fault` says something only mcp-chaos says: its type is no name of ours, or one of its
/// keys is none of the keys our fault of that type or the trigger take.
fn has_mcp_chaos_words(fault: &Map<String, Value>) -> bool {
    let kind = fault
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(ours) = registered(kind) else {
        return false;
    };
    only_written_by(Format::McpChaos, kind)
        || fault
            .keys()
            .any(|k| k != "type" && !ours.keys().contains(k) && !TRIGGER_KEYS.contains(k))
}

/// Whether `name` is a fault type that `format` writes and no other format does (mcp-chaos-monkey's
/// `rate-limit`, mcp-chaos's `error_injection`).
fn only_written_by(format: Format, name: &str) -> bool {
    let mut written = false;
    for fault in REGISTRY {
        if fault.is_ours(name) {
            return false;
        }
        for peer in (fault.peer_types)().iter().filter(|p| p.name == name) {
            if peer.format != format {
                return false;
            }
            written = true;
        }
    }
    written
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
        || kind.is_some_and(|k| only_written_by(Format::ChaosMonkey, k))
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
