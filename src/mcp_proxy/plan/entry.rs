//! One fault of a plan, from the mapping as written to a [`PlannedFault`]: the generic walk (peer wrappers and
//! spellings of the type, targets, camelCase keys), then the fault's own reading of its keys in the entry's
//! format, then the split of the keys between the trigger and the spec, each checked.

use serde_json::{Map, Value};

use super::PlannedFault;
use super::error::{FaultEntryError, NestedFaultError};
use super::format;
use super::text::{key_line, key_line_where};
use crate::mcp_proxy::faults::{self, Format, McpFault, PeerEntry, Registered};
use crate::mcp_proxy::trigger::{TRIGGER_KEYS, Trigger};

/// camelCase to snake_case (`retryAfterSeconds` → `retry_after_seconds`); other keys unchanged.
fn snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else if c == '-' {
            out.push('_');
        } else {
            out.push(c);
        }
    }
    out
}

/// A fault entry read: its registered type and its keys in our spelling and meaning.
struct Entry {
    fault: &'static Registered,
    keys: PeerEntry,
}

/// Reads one fault mapping written in `format`; `Ok(None)` for mcptest's `kind: none`.
fn normalise(
    map: Map<String, Value>,
    format: Format,
    source: &str,
) -> Result<Option<Entry>, FaultEntryError> {
    // mcp-chaos-monkey's inject request: {target, config: {type, ...}, duration_ms}
    let mut flat: Vec<(String, Value, String)> = Vec::new();
    for (written, value) in map {
        if written == "config"
            && let Value::Object(inner) = value
        {
            flat.extend(inner.into_iter().map(|(k, v)| (snake(&k), v, k)));
        } else {
            flat.push((snake(&written), value, written));
        }
    }
    let (_, kind, kind_written) = flat
        .iter()
        .position(|(k, _, _)| k == "type" || k == "kind")
        .map(|i| flat.remove(i))
        .ok_or(FaultEntryError::MissingType)?;
    let Value::String(type_written) = kind else {
        return Err(FaultEntryError::TypeNotAString {
            line: key_line(source, &kind_written),
        });
    };
    if type_written == "none" {
        return Ok(None);
    }
    // mcptest's `slow:<ms>` and `recover-after:<n>`
    let (type_name, suffix) = match type_written.split_once(':') {
        Some((name, number)) => {
            let number: u64 = number
                .trim()
                .parse()
                .map_err(|_| FaultEntryError::BadSuffix {
                    written: type_written.clone(),
                    line: key_line(source, &type_written),
                })?;
            (name.trim().to_owned(), Some(number))
        }
        None => (type_written.clone(), None),
    };
    let fault = faults::registered(&type_name).ok_or_else(|| FaultEntryError::UnknownType {
        written: type_written.clone(),
        line: key_line(source, &type_written),
    })?;
    let mut keys = PeerEntry::new(format, type_name, suffix, flat);
    (fault.read_peer)(&mut keys).map_err(|error| FaultEntryError::PeerValue {
        fault: fault.name,
        line: key_line(source, &error.written),
        error,
    })?;
    format::read_trigger(&mut keys);
    // targets: mcptest {tool, server} and mcp-chaos-monkey "name" name one tool exactly (a `*` in it is a
    // `*`); SmartAI's `tool:` is a glob, as our `tools` are.
    for key in ["target", "tool"] {
        if keys.is_claimed(key) {
            continue;
        }
        if let Some(value) = keys.take(key) {
            let tool = match value {
                Value::Object(mut target) => target.remove("tool"),
                other => Some(other),
            };
            match tool {
                Some(Value::String(name)) => {
                    let pattern = if key == "target" {
                        globset::escape(&name)
                    } else {
                        name
                    };
                    keys.set("tools", Value::from(vec![pattern]))
                }
                Some(list @ Value::Array(_)) => keys.set("tools", list),
                _ => {}
            }
        }
    }
    if let Some(duration) = keys.take("duration_ms") {
        keys.set("window", serde_json::json!({ "duration_ms": duration }));
    }
    Ok(Some(Entry { fault, keys }))
}

/// Builds one planned fault written in `format`, checking every key.
pub(super) fn planned_fault(
    map: Map<String, Value>,
    format: Format,
    source: &str,
) -> Result<Option<PlannedFault>, FaultEntryError> {
    let Some(Entry { fault, keys }) = normalise(map, format, source)? else {
        return Ok(None);
    };
    let own = fault.keys();
    let (mut trigger, mut spec, mut name) = (Map::new(), Map::new(), None);
    for (key, value, written) in keys.into_keys() {
        if key == "name" {
            name = value.as_str().map(str::to_owned);
        } else if key == "server" {
            // mcptest's target server: this proxy fronts one server.
        } else if TRIGGER_KEYS.contains(&key) {
            trigger.insert(key, value);
        } else if own.contains(&key) {
            spec.insert(key, value);
        } else {
            return Err(FaultEntryError::UnknownKey {
                line: key_line(source, &written),
                written,
                fault: fault.name,
                takes: own,
            });
        }
    }
    let name_of = fault.name;
    let mut trigger: Trigger = build(
        name_of,
        trigger,
        source,
        |map| serde_json::from_value(Value::Object(map)),
        |message| FaultEntryError::TriggerValue {
            fault: name_of,
            message,
        },
    )?;
    let trigger_error = |error| FaultEntryError::Trigger {
        fault: name_of,
        error,
    };
    trigger.validate().map_err(trigger_error)?;
    trigger.compile().map_err(trigger_error)?;
    let spec = build(
        name_of,
        spec,
        source,
        |map| build_with_nested(fault, map),
        |message| FaultEntryError::SpecValue {
            fault: name_of,
            message,
        },
    )?;
    let spec_error = |error| FaultEntryError::Spec {
        fault: name_of,
        error,
    };
    spec.inner().validate().map_err(spec_error)?;
    spec.inner().check_trigger(&trigger).map_err(spec_error)?;
    let default_methods = spec.inner().scope().default_methods();
    if !default_methods.is_empty() && trigger.has_default_methods() {
        trigger.methods = default_methods.iter().map(|m| (*m).to_owned()).collect();
    }
    Ok(Some(PlannedFault {
        name,
        spec,
        trigger,
    }))
}

/// `map` read with `read`. When it is refused, the error names the key whose value alone `read` refuses, and
/// its line; else `unlocated` carries serde's message (e.g. a missing field).
fn build<T>(
    fault: &'static str,
    map: Map<String, Value>,
    source: &str,
    read: impl Fn(Map<String, Value>) -> Result<T, serde_json::Error>,
    unlocated: impl FnOnce(String) -> FaultEntryError,
) -> Result<T, FaultEntryError> {
    let error = match read(map.clone()) {
        Ok(built) => return Ok(built),
        Err(error) => error,
    };
    let located = map.iter().find_map(|(key, value)| {
        let alone = Map::from_iter([(key.clone(), value.clone())]);
        let message = read(alone).err()?.to_string();
        if message.starts_with("missing field") {
            return None;
        }
        let written = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Some(FaultEntryError::KeyValue {
            fault,
            line: key_line_where(source, key, |rest| rest.contains(&written))
                .or_else(|| key_line(source, key)),
            key: key.clone(),
            message,
        })
    });
    Err(located.unwrap_or_else(|| unlocated(error.to_string())))
}

/// The spec of `fault` from its own keys, its nested fault (if any) built too.
fn build_with_nested(
    fault: &Registered,
    map: Map<String, Value>,
) -> Result<McpFault, serde_json::Error> {
    let mut spec = fault.build(map)?;
    if let Some(nested) = spec.inner_mut().nested_mut() {
        nested.build(|map| nested_fault(map).map_err(serde::de::Error::custom))?;
    }
    Ok(spec)
}

/// A fault nested in another (recover_after's `then`): its own keys only, no trigger.
pub fn nested_fault(map: Map<String, Value>) -> Result<McpFault, NestedFaultError> {
    let format = format::entry_format(&map);
    let Entry { fault, keys } = normalise(map, format, "")
        .map_err(NestedFaultError::Entry)?
        .ok_or(NestedFaultError::None)?;
    let own = fault.keys();
    let mut spec = Map::new();
    for (key, value, written) in keys.into_keys() {
        if !own.contains(&key) {
            return Err(NestedFaultError::UnknownKey {
                written,
                fault: fault.name,
                takes: own,
            });
        }
        spec.insert(key, value);
    }
    let spec = build_with_nested(fault, spec).map_err(NestedFaultError::Value)?;
    spec.inner().validate().map_err(NestedFaultError::Spec)?;
    Ok(spec)
}
