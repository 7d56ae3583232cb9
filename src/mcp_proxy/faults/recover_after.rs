//! `recover_after`: the first `failures` calls of each tool get the `then` fault (a hang by default), later
//! calls pass through.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, FaultError, FaultMemory, Format, Hang, McpFault, McpFaultSpec,
    NestedFault, PeerEntry, PeerType, PeerValueError, RewriteError,
};

fn one() -> u64 {
    1
}

/// The `then` of a plan that gives none, and the stand-in of one not built yet.
static HANG: McpFault = McpFault::Hang(Hang::DEFAULT);

/// Read through [`Raw`]; the schema, and so the keys a plan may give, is that of the plan form.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RecoverAfter {
    #[serde(default = "one")]
    pub failures: u64,
    /// A nested fault (`{type: error, ...}`), built by the plan loader; a hang by default.
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub then: NestedFault,
}

/// The plan form: `then` is a nested fault as written.
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
        Ok(Self {
            failures: raw.failures,
            then: match raw.then {
                None => NestedFault::Built(Box::new(HANG.clone())),
                Some(map) => NestedFault::Written(map),
            },
        })
    }
}

impl RecoverAfter {
    fn then(&self) -> &McpFault {
        self.then.built().unwrap_or(&HANG)
    }
}

impl McpFaultSpec for RecoverAfter {
    fn wire() -> &'static str {
        "the calls of ordinal ≤ `failures` of each tool get `then` (default a hang), later ones pass"
    }

    fn peer_types() -> &'static [PeerType] {
        const {
            &[
                PeerType::of(Format::McpTest, "recover-after"),
                PeerType::of(Format::McpTest, "recover_after"),
            ]
        }
    }

    /// mcptest's `recover-after:<n>`.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        entry.set_from_suffix("failures");
        Ok(())
    }

    fn nested_mut(&mut self) -> Option<&mut NestedFault> {
        Some(&mut self.then)
    }

    fn validate(&self) -> Result<(), FaultError> {
        if matches!(self.then(), McpFault::RecoverAfter(_)) {
            return Err(FaultError::Rule {
                field: "then",
                rule: "not be another recover_after",
            });
        }
        self.then()
            .inner()
            .validate()
            .map_err(|e| FaultError::Then(Box::new(e)))
    }

    /// The calls of each tool up to `failures` fail.
    fn fires(&self, call: &CallContext<'_>, _memory: &mut FaultMemory) -> bool {
        call.ordinal <= self.failures
    }

    fn describe(&self) -> String {
        format!(
            "the first {} calls of each tool: {}; then pass",
            self.failures,
            self.then().inner().describe()
        )
    }

    fn action(&self, call: &CallContext<'_>) -> Action {
        self.then().inner().action(call)
    }

    fn rewrite(&self, response: &mut serde_json::Value, call: &CallContext<'_>) {
        self.then().inner().rewrite(response, call)
    }

    fn rewrite_line(&self, line: &[u8], call: &CallContext<'_>) -> Result<Vec<u8>, RewriteError> {
        self.then().inner().rewrite_line(line, call)
    }
}
