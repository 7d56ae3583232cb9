//! The plan file: `seed`, `mode` and `faults`, in YAML or JSON. The peer tools' formats load unchanged and are
//! normalised to ours: mcp-chaos (`added_ms`, `error_injection` + `rate`, ...), mcptest (`kind: hang`,
//! `slow:<ms>`, `recover-after:<n>`, `target: {tool}`), mcp-chaos-monkey (camelCase `delayMs`, `statusCode`,
//! `hangMs`, `retryAfterSeconds`, `missingFields`, `target` + `config` + `duration_ms`) and SmartAI's
//! (`tool:` glob, `server:`). Unknown keys are an error naming the key and its line.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::faults::{self, Fault, FaultSpec};
use super::trigger::{TRIGGER_KEYS, Trigger};

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
    pub spec: FaultSpec,
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
    #[error("plan {path}: {message}")]
    Invalid { path: PathBuf, message: String },
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
        Plan::from_value(root, &text).map_err(|message| PlanError::Invalid {
            path: path.to_owned(),
            message,
        })
    }

    /// Normalises a parsed plan; `source` is the file's text, to give line numbers.
    pub fn from_value(root: Value, source: &str) -> Result<Plan, String> {
        let mut plan = Plan::default();
        let items = match root {
            Value::Null => Vec::new(),
            Value::Array(items) => items,
            Value::Object(top) => {
                let mut items = Vec::new();
                for (key, value) in top {
                    match key.as_str() {
                        "version" => {}
                        "seed" => {
                            plan.seed = value.as_u64().ok_or_else(|| {
                                at(source, "seed", "seed must be a non-negative integer")
                            })?
                        }
                        "mode" => {
                            plan.mode = serde_json::from_value(value).map_err(|_| {
                                at(source, "mode", "mode must be fail_safe or strict")
                            })?
                        }
                        "policy" => {
                            plan.policy = serde_json::from_value(value).map_err(|_| {
                                at(
                                    source,
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
                                _ => return Err(at(source, "faults", "faults must be a list")),
                            }
                        }
                        other => {
                            return Err(at(
                                source,
                                other,
                                &format!("unknown key `{other}` (known: {})", TOP_KEYS.join(", ")),
                            ));
                        }
                    }
                }
                items
            }
            _ => return Err("a plan is a mapping with `faults`, or a list of faults".into()),
        };
        for (index, item) in items.into_iter().enumerate() {
            let Value::Object(map) = item else {
                return Err(format!("faults[{index}] must be a mapping with a `type`"));
            };
            if let Some(fault) =
                planned_fault(map, source).map_err(|e| format!("faults[{index}]: {e}"))?
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
fn command_of(key: &str, value: &Value, source: &str) -> Result<Vec<String>, String> {
    let command = value.get("command").unwrap_or(value);
    match command {
        Value::String(s) => Ok(s.split_whitespace().map(str::to_owned).collect()),
        Value::Array(parts) => parts
            .iter()
            .map(|p| p.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                at(
                    source,
                    key,
                    &format!("{key}.command must be a list of strings"),
                )
            }),
        _ => Err(at(
            source,
            key,
            &format!(
                "{key} must hold `command` (a string or list); only stdio servers are supported"
            ),
        )),
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

/// A fault entry with its keys normalised: `(canonical type, keys → (value, key as written))`.
struct Entry {
    canonical: &'static str,
    keys: Vec<(String, Value, String)>,
}

impl Entry {
    fn take(&mut self, key: &str) -> Option<Value> {
        let position = self.keys.iter().position(|(k, _, _)| k == key)?;
        Some(self.keys.remove(position).1)
    }

    fn set(&mut self, key: &str, value: Value) {
        self.take(key);
        self.keys.push((key.to_owned(), value, key.to_owned()));
    }

    /// Renames `from` to `to` (a peer's spelling to ours), keeping the key as written for messages.
    fn alias(&mut self, from: &str, to: &str) {
        if let Some(entry) = self.keys.iter_mut().find(|(k, _, _)| k == from) {
            entry.0 = to.to_owned();
        }
    }
}

/// Normalises one fault mapping's peer spellings; `Ok(None)` for mcptest's `kind: none`.
fn normalise(map: Map<String, Value>, source: &str) -> Result<Option<Entry>, String> {
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
    let kind = flat
        .iter()
        .position(|(k, _, _)| k == "type" || k == "kind")
        .map(|i| flat.remove(i))
        .ok_or("missing `type` (or mcptest's `kind`)")?;
    let Value::String(type_written) = kind.1 else {
        return Err(at(source, &kind.2, "`type` must be a string"));
    };
    if type_written == "none" {
        return Ok(None);
    }
    // mcptest's `slow:<ms>` and `recover-after:<n>`
    let (type_name, inline) = match type_written.split_once(':') {
        Some((name, number)) => {
            let number: u64 = number.trim().parse().map_err(|_| {
                at(
                    source,
                    &type_written,
                    &format!("`{type_written}`: the part after `:` must be a whole number"),
                )
            })?;
            (name.trim().to_owned(), Some(number))
        }
        None => (type_written.clone(), None),
    };
    let canonical = faults::canonical_type(&type_name).ok_or_else(|| {
        let known: Vec<&str> = faults::REGISTRY.iter().map(|(n, _, _)| *n).collect();
        at(
            source,
            &type_written,
            &format!(
                "unknown fault type `{type_written}` (known: {})",
                known.join(", ")
            ),
        )
    })?;
    let mut entry = Entry {
        canonical,
        keys: flat,
    };
    // schema_drift's own `target: list | result` (what it drifts), not a tool name
    let drift_target = canonical == "schema_drift"
        && entry
            .keys
            .iter()
            .any(|(k, v, _)| k == "target" && matches!(v.as_str(), Some("list" | "result")));
    // targets: mcptest {tool, server}, mcp-chaos-monkey "name", SmartAI `tool:`
    for key in ["target", "tool"] {
        if key == "target" && drift_target {
            continue;
        }
        if let Some(value) = entry.take(key) {
            let tool = match value {
                Value::Object(mut target) => target.remove("tool"),
                other => Some(other),
            };
            match tool {
                Some(Value::String(name)) => entry.set("tools", Value::from(vec![name])),
                Some(list @ Value::Array(_)) => entry.set("tools", list),
                _ => {}
            }
        }
    }
    if let Some(duration) = entry.take("duration_ms") {
        entry.set("window", serde_json::json!({ "duration_ms": duration }));
    }
    match canonical {
        "latency" => {
            entry.alias("added_ms", "ms");
            entry.alias("delay_ms", "ms");
            if let Some(ms) = inline {
                entry.set("ms", ms.into());
            }
        }
        "hang" if entry.keys.iter().all(|(k, _, _)| k != "label") => {
            entry.set("label", type_name.clone().into());
        }
        "timeout" => entry.alias("hang_ms", "after_ms"),
        "error" => {
            if let Some(as_tool) = entry.take("as_tool") {
                let reply_as = if as_tool.as_bool() == Some(true) {
                    "tool"
                } else {
                    "protocol"
                };
                entry.set("as", reply_as.into());
            }
            if let Some(status) = entry
                .keys
                .iter()
                .find(|(k, _, _)| k == "status_code")
                .map(|e| e.1.clone())
                && entry.keys.iter().all(|(k, _, _)| k != "message")
            {
                entry.set("message", format!("HTTP {status}").into());
            }
        }
        "flaky" => {
            entry.alias("fail_rate", "probability");
            entry.alias("rate", "probability");
            if type_name == "error_injection" && entry.keys.iter().all(|(k, _, _)| k != "message") {
                entry.set("message", "injected error".into());
            }
        }
        "recover_after" => {
            if let Some(n) = inline {
                entry.set("failures", n.into());
            }
        }
        "rate_limit" => entry.alias("retry_after", "retry_after_seconds"),
        "malformed" => {
            entry.take("corrupt_response");
        }
        "schema_drift" => entry.alias("missing_fields", "drop_fields"),
        _ => {}
    }
    Ok(Some(entry))
}

/// Builds one planned fault, checking every key.
fn planned_fault(map: Map<String, Value>, source: &str) -> Result<Option<PlannedFault>, String> {
    let Some(mut entry) = normalise(map, source)? else {
        return Ok(None);
    };
    let canonical = entry.canonical;
    let own = faults::keys_of(canonical);
    let (mut trigger, mut spec, mut name) = (Map::new(), Map::new(), None);
    for (key, value, written) in std::mem::take(&mut entry.keys) {
        if key == "name" {
            name = value.as_str().map(str::to_owned);
        } else if key == "server" {
            // mcptest's target server: this proxy fronts one server.
        } else if TRIGGER_KEYS.contains(&key.as_str()) {
            trigger.insert(key, value);
        } else if own.contains(&key.as_str()) {
            spec.insert(key, value);
        } else {
            return Err(unknown_key(source, &written, canonical, own));
        }
    }
    let mut trigger: Trigger = serde_json::from_value(Value::Object(trigger))
        .map_err(|e| format!("{canonical}: trigger: {e}"))?;
    trigger
        .validate()
        .map_err(|e| format!("{canonical}: {e}"))?;
    trigger.compile().map_err(|e| format!("{canonical}: {e}"))?;
    let spec = FaultSpec::from_map(canonical, spec).map_err(|e| format!("{canonical}: {e}"))?;
    spec.validate().map_err(|e| format!("{canonical}: {e}"))?;
    if matches!(spec, FaultSpec::DropTool(_)) && trigger.tools.is_empty() {
        return Err("drop_tool: tools must name the tools to drop".into());
    }
    if spec.drifts_list() && trigger.methods == ["tools/call"] {
        // Interface drift acts on the listing; `tools` then picks the listed tools to drift.
        trigger.methods = vec!["tools/list".into()];
    }
    Ok(Some(PlannedFault {
        name,
        spec,
        trigger,
    }))
}

/// A fault nested in another (recover_after's `then`): its own keys only, no trigger.
pub fn nested_fault(map: Map<String, Value>) -> Result<FaultSpec, String> {
    let Some(mut entry) = normalise(map, "")? else {
        return Err("then: `none` is not a fault".into());
    };
    let own = faults::keys_of(entry.canonical);
    let mut spec = Map::new();
    for (key, value, written) in std::mem::take(&mut entry.keys) {
        if !own.contains(&key.as_str()) {
            return Err(format!(
                "then: unknown key `{written}` for {} (it takes: {})",
                entry.canonical,
                own.join(", ")
            ));
        }
        spec.insert(key, value);
    }
    let spec = FaultSpec::from_map(entry.canonical, spec)?;
    spec.validate()?;
    Ok(spec)
}

fn unknown_key(source: &str, written: &str, canonical: &str, own: &[&str]) -> String {
    at(
        source,
        written,
        &format!(
            "unknown key `{written}` for {canonical} (it takes: {}; and the trigger keys: {})",
            if own.is_empty() {
                "nothing".to_owned()
            } else {
                own.join(", ")
            },
            TRIGGER_KEYS.join(", ")
        ),
    )
}

/// `message`, with the line where `key` is first written in `source` (a mapping key in YAML or JSON).
fn at(source: &str, key: &str, message: &str) -> String {
    match key_line(source, key) {
        Some(line) => format!("line {line}: {message}"),
        None => message.to_owned(),
    }
}

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
        Plan::from_value(serde_yaml_ng::from_str(text).unwrap(), text)
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
        assert!(matches!(&plan.faults[0].spec, FaultSpec::Latency(l) if l.ms == 300));
        assert!(matches!(&plan.faults[1].spec, FaultSpec::RecoverAfter(r) if r.failures == 2));
        assert!(
            matches!(&plan.faults[2].spec, FaultSpec::RateLimit(r) if r.retry_after_seconds == 7)
        );
        assert_eq!(plan.faults[3].trigger.probability, 0.5);
        assert!(
            matches!(&plan.faults[4].spec, FaultSpec::Latency(l) if l.ms == 250 && l.jitter_ms == 10)
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
