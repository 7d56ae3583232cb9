//! `recover_after`: the first `failures` calls of each tool get the `then` fault (a hang by default), later
//! calls pass through.

use serde::{Deserialize, Serialize};

use super::{Action, CallContext, Fault, FaultSpec, Hang};

fn one() -> u64 {
    1
}

fn hang() -> Box<FaultSpec> {
    Box::new(FaultSpec::Hang(Hang::default()))
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecoverAfter {
    pub failures: u64,
    pub then: Box<FaultSpec>,
}

/// The plan form: `then` is a nested fault (`{type: error, ...}`), built by the plan loader.
#[derive(Deserialize)]
struct Raw {
    #[serde(default = "one")]
    failures: u64,
    #[serde(default)]
    then: Option<serde_json::Map<String, serde_json::Value>>,
}

impl<'de> Deserialize<'de> for RecoverAfter {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Raw::deserialize(deserializer)?;
        let then = match raw.then {
            None => hang(),
            Some(map) => Box::new(
                crate::mcp_proxy::plan::nested_fault(map).map_err(serde::de::Error::custom)?,
            ),
        };
        Ok(Self {
            failures: raw.failures,
            then,
        })
    }
}

impl RecoverAfter {
    pub const KEYS: &[&str] = &["failures", "then"];

    /// Whether the call of this ordinal still fails.
    pub fn failing(&self, ordinal: u64) -> bool {
        ordinal <= self.failures
    }
}

impl Fault for RecoverAfter {
    fn validate(&self) -> Result<(), String> {
        if matches!(*self.then, FaultSpec::RecoverAfter(_)) {
            return Err("then must not be another recover_after".into());
        }
        self.then.validate().map_err(|e| format!("then: {e}"))
    }

    fn describe(&self) -> String {
        format!(
            "the first {} calls of each tool: {}; then pass",
            self.failures,
            self.then.describe()
        )
    }

    fn action(&self, call: &CallContext<'_>) -> Action {
        self.then.action(call)
    }

    fn rewrite(&self, response: &mut serde_json::Value, call: &CallContext<'_>) {
        self.then.rewrite(response, call)
    }

    fn rewrite_line(&self, line: &[u8], call: &CallContext<'_>) -> Result<Vec<u8>, String> {
        self.then.rewrite_line(line, call)
    }
}
