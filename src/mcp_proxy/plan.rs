//! The plan file: `seed`, `mode` and `faults`, in YAML or JSON. The peer tools' formats load unchanged and are
//! normalised to ours: mcp-chaos (`added_ms`, `error_injection` + `rate`, ...), mcptest (`kind: hang`,
//! `slow:<ms>`, `recover-after:<n>`, `target: {tool}`), mcp-chaos-monkey (camelCase `delayMs`, `statusCode`,
//! `hangMs`, `retryAfterSeconds`, `missingFields`, `target` + `config` + `duration_ms`) and SmartAI's
//! (`tool:` glob, `server:`). Unknown keys are an error naming the key and its line.

use std::{
    fmt,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::faults::{self, FaultError, McpFault, McpFaultSpec, PeerEntry, Registered};
use super::trigger::{TRIGGER_KEYS, Trigger, TriggerError};

/// What the proxy does when it fails itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Pass the original message on and log the error.
    #[default]
    FailSafe,
    /// Answer the client with a JSON-RPC error instead.
    Strict,
}

/// Which of the faults that fire on one call apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// The first fault, in plan order, that fires; the faults after it are not evaluated.
    #[default]
    First,
    /// Every fault that fires, in plan order (mcp-chaos applies its faults in sequence): delays add up,
    /// result rewrites chain, and the first fault that answers in the server's place (error, timeout, hang,
    /// dropped connection, ...) ends the chain, after the delays before it.
    All,
}

/// One fault of a plan: when (trigger) and what (spec).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedFault {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(flatten)]
    pub spec: McpFault,
    #[serde(flatten)]
    pub trigger: Trigger,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Plan {
    pub seed: u64,
    pub mode: Mode,
    pub policy: Policy,
    /// The server command from the plan (`upstream.command` or SmartAI's `server.command`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    pub faults: Vec<PlannedFault>,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("cannot read plan {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("plan {path} is not valid {format}: {message}")]
    Syntax {
        path: PathBuf,
        format: &'static str,
        message: String,
    },
    #[error("plan {path}: {error}")]
    Invalid { path: PathBuf, error: InvalidPlan },
}

/// `line N: ` before a message, when the line is known.
struct Line(Option<usize>);

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(line) => write!(f, "line {line}: "),
            None => Ok(()),
        }
    }
}

/// A plan's content refused: the message names the fault, the key and its line.
#[derive(Debug, thiserror::Error)]
pub enum InvalidPlan {
    #[error("a plan is a mapping with `faults`, or a list of faults")]
    NotAPlan,
    #[error("{}unknown key `{key}` (known: {})", Line(*line), TOP_KEYS.join(", "))]
    UnknownKey { key: String, line: Option<usize> },
    #[error("{}{message}", Line(*line))]
    BadValue {
        message: &'static str,
        line: Option<usize>,
    },
    #[error("{}{key}.command must be a list of strings", Line(*line))]
    BadCommandList { key: String, line: Option<usize> },
    #[error(
        "{}{key} must hold `command` (a string or list); only stdio servers are supported",
        Line(*line)
    )]
    NoCommand { key: String, line: Option<usize> },
    #[error("faults[{index}] must be a mapping with a `type`")]
    NotAMapping { index: usize },
    #[error("faults[{index}]: {error}")]
    Fault {
        index: usize,
        error: FaultEntryError,
    },
}

/// One fault of a plan refused.
#[derive(Debug, thiserror::Error)]
pub enum FaultEntryError {
    #[error("missing `type` (or mcptest's `kind`)")]
    MissingType,
    #[error("{}`type` must be a string", Line(*line))]
    TypeNotAString { line: Option<usize> },
    #[error("{}`{written}`: the part after `:` must be a whole number", Line(*line))]
    BadSuffix {
        written: String,
        line: Option<usize>,
    },
    #[error("{}unknown fault type `{written}` (known: {})", Line(*line), known_types())]
    UnknownType {
        written: String,
        line: Option<usize>,
    },
    #[error(
        "{}unknown key `{written}` for {fault} (it takes: {}; and the trigger keys: {})",
        Line(*line),
        list_or_nothing(takes),
        TRIGGER_KEYS.join(", ")
    )]
    UnknownKey {
        written: String,
        fault: &'static str,
        takes: &'static [String],
        line: Option<usize>,
    },
    #[error("{fault}: trigger: {message}")]
    TriggerValue {
        fault: &'static str,
        message: String,
    },
    #[error("{fault}: {error}")]
    Trigger {
        fault: &'static str,
        error: TriggerError,
    },
    #[error("{fault}: {message}")]
    SpecValue {
        fault: &'static str,
        message: String,
    },
    #[error("{fault}: {error}")]
    Spec {
        fault: &'static str,
        error: FaultError,
    },
}

/// A fault nested in another (`recover_after`'s `then`) refused.
#[derive(Debug, thiserror::Error)]
pub enum NestedFaultError {
    #[error("then: `none` is not a fault")]
    None,
    #[error("then: unknown key `{written}` for {fault} (it takes: {})", takes.join(", "))]
    UnknownKey {
        written: String,
        fault: &'static str,
        takes: &'static [String],
    },
    #[error("{0}")]
    Entry(FaultEntryError),
    #[error("{0}")]
    Value(serde_json::Error),
    #[error("{0}")]
    Spec(FaultError),
}

fn known_types() -> String {
    faults::REGISTRY
        .iter()
        .map(|r| r.name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_or_nothing(keys: &[String]) -> String {
    if keys.is_empty() {
        "nothing".to_owned()
    } else {
        keys.join(", ")
    }
}

const TOP_KEYS: &[&str] = &[
    "version", "seed", "mode", "faults", "upstream", "server", "policy",
];

impl Plan {
    /// Reads and normalises the plan at `path` (JSON when it ends in `.json`, else YAML).
    pub fn load(path: &Path) -> Result<Plan, PlanError> {
        let text = std::fs::read_to_string(path).map_err(|source| PlanError::Read {
            path: path.to_owned(),
            source,
        })?;
        let json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let root: Value = if json {
            serde_json::from_str(&text).map_err(|e| PlanError::Syntax {
                path: path.to_owned(),
                format: "JSON",
                message: e.to_string(),
            })?
        } else {
            serde_yaml_ng::from_str(&text).map_err(|e| PlanError::Syntax {
                path: path.to_owned(),
                format: "YAML",
                message: e.to_string(),
            })?
        };
        Plan::from_value(root, &text).map_err(|error| PlanError::Invalid {
            path: path.to_owned(),
            error,
        })
    }

    /// Normalises a parsed plan; `source` is the file's text, to give line numbers.
    pub fn from_value(root: Value, source: &str) -> Result<Plan, InvalidPlan> {
        let mut plan = Plan::default();
        let bad = |key: &str, message: &'static str| InvalidPlan::BadValue {
            message,
            line: key_line(source, key),
        };
        let items = match root {
            Value::Null => Vec::new(),
            Value::Array(items) => items,
            Value::Object(top) => {
                let mut items = Vec::new();
                for (key, value) in top {
                    match key.as_str() {
                        "version" => {}
                        "seed" => {
                            plan.seed = value
                                .as_u64()
                                .ok_or_else(|| bad("seed", "seed must be a non-negative integer"))?
                        }
                        "mode" => {
                            plan.mode = serde_json::from_value(value)
                                .map_err(|_| bad("mode", "mode must be fail_safe or strict"))?
                        }
                        "policy" => {
                            plan.policy = serde_json::from_value(value).map_err(|_| {
                                bad(
                                    "policy",
                                    "policy must be `first` (the first fault that fires on a call applies) \
                                     or `all` (every fault that fires applies, in plan order)",
                                )
                            })?
                        }
                        "upstream" | "server" => plan.command = command_of(&key, &value, source)?,
                        "faults" => {
                            items = match value {
                                Value::Array(items) => items,
                                Value::Null => Vec::new(),
                                _ => return Err(bad("faults", "faults must be a list")),
                            }
                        }
                        other => {
                            return Err(InvalidPlan::UnknownKey {
                                key: other.to_owned(),
                                line: key_line(source, other),
                            });
                        }
                    }
                }
                items
            }
            _ => return Err(InvalidPlan::NotAPlan),
        };
        for (index, item) in items.into_iter().enumerate() {
            let Value::Object(map) = item else {
                return Err(InvalidPlan::NotAMapping { index });
            };
            if let Some(fault) =
                planned_fault(map, source).map_err(|error| InvalidPlan::Fault { index, error })?
            {
                plan.faults.push(fault);
            }
        }
        Ok(plan)
    }

    /// The normalised plan, as YAML.
    pub fn to_yaml(&self) -> String {
        serde_yaml_ng::to_string(self).unwrap_or_else(|e| format!("# cannot print the plan: {e}\n"))
    }
}

/// The server command of an `upstream:`/`server:` entry: a string (split on spaces) or a list.
fn command_of(key: &str, value: &Value, source: &str) -> Result<Vec<String>, InvalidPlan> {
    let command = value.get("command").unwrap_or(value);
    match command {
        Value::String(s) => Ok(s.split_whitespace().map(str::to_owned).collect()),
        Value::Array(parts) => parts
            .iter()
            .map(|p| p.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| InvalidPlan::BadCommandList {
                key: key.to_owned(),
                line: key_line(source, key),
            }),
        _ => Err(InvalidPlan::NoCommand {
            key: key.to_owned(),
            line: key_line(source, key),
        }),
    }
}

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

/// A fault entry read: its registered type and its keys in our spelling.
struct Entry {
    fault: &'static Registered,
    keys: PeerEntry,
}

/// Reads one fault mapping in whichever peer spelling it is written; `Ok(None)` for mcptest's `kind: none`.
/// The walk is generic; what a fault's peers call its keys is the fault's own [`McpMcpFault::read_peer`].
fn normalise(map: Map<String, Value>, source: &str) -> Result<Option<Entry>, FaultEntryError> {
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
    let mut keys = PeerEntry::new(type_name, suffix, flat);
    (fault.read_peer)(&mut keys);
    // targets: mcptest {tool, server}, mcp-chaos-monkey "name", SmartAI `tool:`
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
                Some(Value::String(name)) => keys.set("tools", Value::from(vec![name])),
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

/// Builds one planned fault, checking every key.
fn planned_fault(
    map: Map<String, Value>,
    source: &str,
) -> Result<Option<PlannedFault>, FaultEntryError> {
    let Some(Entry { fault, keys }) = normalise(map, source)? else {
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
    let mut trigger: Trigger = serde_json::from_value(Value::Object(trigger)).map_err(|e| {
        FaultEntryError::TriggerValue {
            fault: name_of,
            message: e.to_string(),
        }
    })?;
    let trigger_error = |error| FaultEntryError::Trigger {
        fault: name_of,
        error,
    };
    trigger.validate().map_err(trigger_error)?;
    trigger.compile().map_err(trigger_error)?;
    let spec = fault.build(spec).map_err(|e| FaultEntryError::SpecValue {
        fault: name_of,
        message: e.to_string(),
    })?;
    let spec_error = |error| FaultEntryError::Spec {
        fault: name_of,
        error,
    };
    spec.validate().map_err(spec_error)?;
    spec.check_trigger(&trigger).map_err(spec_error)?;
    if spec.acts_on_listing() && trigger.has_default_methods() {
        // A fault on the listing picks its tools inside it; its calls are `tools/list`.
        trigger.methods = vec!["tools/list".into()];
    }
    Ok(Some(PlannedFault {
        name,
        spec,
        trigger,
    }))
}

/// A fault nested in another (recover_after's `then`): its own keys only, no trigger.
pub fn nested_fault(map: Map<String, Value>) -> Result<McpFault, NestedFaultError> {
    let Entry { fault, keys } = normalise(map, "")
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
    let spec = fault.build(spec).map_err(NestedFaultError::Value)?;
    spec.validate().map_err(NestedFaultError::Spec)?;
    Ok(spec)
}

/// The line where `key` is first written in `source` (a mapping key in YAML or JSON).
fn key_line(source: &str, key: &str) -> Option<usize> {
    if key.is_empty() {
        return None;
    }
    source
        .lines()
        .position(|line| {
            line.match_indices(key).any(|(start, _)| {
                let before = line[..start].chars().next_back();
                let after = &line[start + key.len()..];
                let after = after
                    .strip_prefix(['"', '\''])
                    .unwrap_or(after)
                    .trim_start();
                before.is_none_or(|c| matches!(c, ' ' | '-' | '{' | ',' | '"' | '\'' | '\t'))
                    && (after.starts_with(':') || line[..start].trim_end().ends_with(':'))
            })
        })
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Result<Plan, String> {
        Plan::from_value(serde_yaml_ng::from_str(text).unwrap(), text).map_err(|e| e.to_string())
    }

    #[test]
    fn unknown_key_names_key_and_line() {
        let err = yaml("seed: 1\nfaults:\n  - type: latency\n    ms: 10\n    jitterr_ms: 5\n")
            .unwrap_err();
        assert!(
            err.contains("line 5") && err.contains("`jitterr_ms`"),
            "{err}"
        );
        let err = yaml("seed: 1\nfault:\n  - type: latency\n").unwrap_err();
        assert!(err.contains("line 2") && err.contains("`fault`"), "{err}");
    }

    #[test]
    fn peer_formats_normalise() {
        let plan = yaml(
            "faults:\n  - kind: slow:300\n    target: {tool: search}\n  - kind: recover-after:2\n  - type: rate-limit\n    retryAfterSeconds: 7\n  - type: error_injection\n    rate: 0.5\n  - type: latency\n    added_ms: 250\n    jitter_ms: 10\n",
        )
        .unwrap();
        assert_eq!(plan.faults.len(), 5);
        assert_eq!(plan.faults[0].trigger.tools, vec!["search".to_string()]);
        assert!(matches!(&plan.faults[0].spec, McpFault::Latency(l) if l.ms == 300));
        assert!(matches!(&plan.faults[1].spec, McpFault::RecoverAfter(r) if r.failures == 2));
        assert!(
            matches!(&plan.faults[2].spec, McpFault::RateLimit(r) if r.retry_after_seconds == 7)
        );
        assert_eq!(plan.faults[3].trigger.probability, 0.5);
        assert!(
            matches!(&plan.faults[4].spec, McpFault::Latency(l) if l.ms == 250 && l.jitter_ms == 10)
        );
    }

    #[test]
    fn bad_values_name_the_field() {
        let err = yaml("faults:\n  - type: partial_result\n    keep_ratio: 2\n").unwrap_err();
        assert!(err.contains("keep_ratio"), "{err}");
        let err = yaml("faults:\n  - type: latency\n").unwrap_err();
        assert!(err.contains("missing field `ms`"), "{err}");
    }
}
