//! When a fault applies: the trigger fields every fault takes.

use std::sync::LazyLock;

use globset::{Glob, GlobSet, GlobSetBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

fn tools_call() -> Vec<String> {
    vec!["tools/call".into()]
}

fn one() -> f64 {
    1.0
}

fn is_tools_call(methods: &[String]) -> bool {
    methods == tools_call().as_slice()
}

fn is_one(p: &f64) -> bool {
    *p == 1.0
}

/// A time window relative to the proxy's start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Window {
    #[serde(default)]
    pub start_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    /// Tool names or globs (`search_*`); empty matches every tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// JSON-RPC methods or globs; `tools/call` by default.
    #[serde(default = "tools_call", skip_serializing_if = "is_tools_call")]
    pub methods: Vec<String>,
    /// Share of eligible calls the fault fires on, decided by the call's keyed roll.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub probability: f64,
    /// Only the first N calls of each tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_n: Option<u64>,
    /// Only after N calls of each tool have passed (from call N+1 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_calls: Option<u64>,
    /// Only the N-th call of each tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_call: Option<u64>,
    /// At most N injections per tool: the N-th call of a tool is eligible only while fewer than N of that
    /// tool's earlier calls (ordinals below it) had this fault applied. A pure function of the seed, the plan
    /// and the ordinal, so it stops at the same call whatever the arrival order across tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_injections: Option<u64>,
    /// A wall-clock window: the one trigger that depends on when a call arrives, not on its ordinal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
}

impl Default for Trigger {
    fn default() -> Self {
        Self {
            tools: Vec::new(),
            methods: tools_call(),
            probability: 1.0,
            first_n: None,
            after_calls: None,
            on_call: None,
            max_injections: None,
            window: None,
        }
    }
}

/// The keys a trigger takes, every fault alike: its fields, from its schema.
pub static TRIGGER_KEYS: LazyLock<Vec<String>> = LazyLock::new(|| {
    schemars::schema_for!(Trigger)
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
});

/// A trigger refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TriggerError {
    #[error("probability must be between 0 and 1, got {0}")]
    Probability(f64),
    #[error("methods must name at least one method")]
    NoMethod,
    #[error("{field}: bad pattern `{pattern}`: {message}")]
    Pattern {
        field: &'static str,
        pattern: String,
        message: String,
    },
    #[error("{field}: {message}")]
    PatternSet {
        field: &'static str,
        message: String,
    },
}

impl Trigger {
    pub fn validate(&self) -> Result<(), TriggerError> {
        if !(0.0..=1.0).contains(&self.probability) {
            return Err(TriggerError::Probability(self.probability));
        }
        if self.methods.is_empty() {
            return Err(TriggerError::NoMethod);
        }
        Ok(())
    }

    /// Whether the fault may act before any call: no `after_calls`, `on_call` or `window` holds it back.
    pub fn starts_at_once(&self) -> bool {
        self.after_calls.is_none() && self.on_call.is_none() && self.window.is_none()
    }

    /// Whether `methods` is the default, `[tools/call]`.
    pub fn has_default_methods(&self) -> bool {
        is_tools_call(&self.methods)
    }

    /// The trigger with its globs compiled.
    pub fn compile(&self) -> Result<Matcher, TriggerError> {
        let set =
            |field: &'static str, patterns: &[String]| -> Result<Option<GlobSet>, TriggerError> {
                if patterns.is_empty() {
                    return Ok(None);
                }
                let mut builder = GlobSetBuilder::new();
                for pattern in patterns {
                    builder.add(Glob::new(pattern).map_err(|e| TriggerError::Pattern {
                        field,
                        pattern: pattern.clone(),
                        message: e.to_string(),
                    })?);
                }
                builder
                    .build()
                    .map(Some)
                    .map_err(|e| TriggerError::PatternSet {
                        field,
                        message: e.to_string(),
                    })
            };
        Ok(Matcher {
            tools: set("tools", &self.tools)?,
            methods: set("methods", &self.methods)?,
        })
    }

    /// Whether a call (`ordinal`-th of its tool, `elapsed_ms` after start, after `injected` injections of this
    /// fault into the tool's earlier calls) is eligible, before the roll.
    pub fn eligible(&self, ordinal: u64, elapsed_ms: u64, injected: u64) -> bool {
        self.first_n.is_none_or(|n| ordinal <= n)
            && self.after_calls.is_none_or(|n| ordinal > n)
            && self.on_call.is_none_or(|n| ordinal == n)
            && self.max_injections.is_none_or(|n| injected < n)
            && self.window.as_ref().is_none_or(|w| {
                elapsed_ms >= w.start_ms
                    && w.duration_ms
                        .is_none_or(|d| elapsed_ms < w.start_ms.saturating_add(d))
            })
    }
}

/// The compiled name patterns of a trigger.
#[derive(Debug, Clone)]
pub struct Matcher {
    tools: Option<GlobSet>,
    methods: Option<GlobSet>,
}

impl Matcher {
    pub fn matches_method(&self, method: &str) -> bool {
        self.methods.as_ref().is_none_or(|m| m.is_match(method))
    }

    pub fn matches_tool(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|t| t.is_match(tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_and_counts() {
        let trigger = Trigger {
            tools: vec!["search_*".into(), "echo".into()],
            after_calls: Some(2),
            ..Default::default()
        };
        let matcher = trigger.compile().unwrap();
        assert!(matcher.matches_tool("search_docs") && matcher.matches_tool("echo"));
        assert!(!matcher.matches_tool("get_item"));
        assert!(matcher.matches_method("tools/call") && !matcher.matches_method("tools/list"));
        assert!(!trigger.eligible(2, 0, 0) && trigger.eligible(3, 0, 0));
    }
}
