//! `version_refused`: a server that does not speak the client's protocol version. A request whose declared
//! version (a 2026-07-28 request's `_meta` `io.modelcontextprotocol/protocolVersion`, an older client's
//! `initialize` `protocolVersion`) is one of `versions` is answered UNSUPPORTED_PROTOCOL_VERSION (-32022) with
//! the versions the server supports and the one requested in `data`, as the 2026-07-28 schema shapes it, on
//! stdio and HTTP alike (there with status 400). `protocol_version_rejection` is the older, HTTP-only form: a
//! 400 with -32600 for whatever `MCP-Protocol-Version` header.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Action, CallContext, FaultError, FaultMemory, McpFaultSpec, Scope, ms};
use crate::mcp_wire::jsonrpc::Reply;

pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// The versions a server is taken to support when the plan names none: these, less the refused ones.
const KNOWN_VERSIONS: &[&str] = &[
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

fn latest() -> Vec<String> {
    vec![KNOWN_VERSIONS[0].to_owned()]
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VersionRefused {
    /// The protocol versions refused (exact); by default the latest, as a server that predates it answers.
    #[serde(default = "latest")]
    pub versions: Vec<String>,
    /// The versions the answer says the server supports; by default the known ones that are not refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported: Option<Vec<String>>,
}

impl VersionRefused {
    fn supported(&self) -> Vec<String> {
        self.supported.clone().unwrap_or_else(|| {
            KNOWN_VERSIONS
                .iter()
                .filter(|v| !self.versions.iter().any(|r| r == *v))
                .map(|v| (*v).to_owned())
                .collect()
        })
    }
}

impl McpFaultSpec for VersionRefused {
    fn wire() -> &'static str {
        "a request declaring one of `versions` (2026-07-28: `_meta` `io.modelcontextprotocol/protocolVersion`; \
        older clients: the `initialize`'s `protocolVersion`) is answered `{\"code\":-32022,\"message\":\
        \"Unsupported protocol version\",\"data\":{\"supported\":[…],\"requested\":…}}` by the proxy, on stdio \
        and HTTP (there with status 400, as the spec says); requests declaring no version pass. Unlike \
        `protocol_version_rejection` (HTTP only, a 400 whatever the version), it picks clients by the version \
        they speak"
    }

    fn scope(&self) -> Scope {
        Scope::Requests { methods: &["*"] }
    }

    fn validate(&self) -> Result<(), FaultError> {
        if self.versions.is_empty() || self.versions.iter().any(String::is_empty) {
            return Err(FaultError::Rule {
                field: "versions",
                rule: "name at least one protocol version, none empty",
            });
        }
        if self
            .supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|v| v.is_empty() || self.versions.contains(v)))
        {
            return Err(FaultError::Rule {
                field: "supported",
                rule: "name versions that are not empty and not refused",
            });
        }
        Ok(())
    }

    fn fires(&self, call: &CallContext<'_>, _memory: &mut FaultMemory) -> bool {
        call.request
            .protocol_version
            .is_some_and(|v| self.versions.iter().any(|r| r == v))
    }

    fn describe(&self) -> String {
        format!(
            "answer -32022 unsupported protocol version to {}",
            self.versions.join(", ")
        )
    }

    fn action(&self, call: &CallContext<'_>) -> Action {
        Action::Reply {
            after: ms(0),
            reply: Reply::Error {
                code: UNSUPPORTED_PROTOCOL_VERSION,
                message: "Unsupported protocol version".to_owned(),
                data: Some(json!({
                    "supported": self.supported(),
                    "requested": call.request.protocol_version.unwrap_or_default(),
                })),
            },
            call_upstream: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::mcp_proxy::plan::Plan;

    fn refusal(fault: &str) -> String {
        let text = format!("faults:\n  - {fault}\n");
        let value = serde_yaml_ng::from_str(&text).unwrap();
        Plan::from_value(value, &text)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_new_surfaces_faults_refuse_bad_values_naming_the_field() {
        for (fault, field) in [
            ("{type: version_refused, versions: []}", "versions must"),
            (
                "{type: version_refused, versions: [a], supported: [a]}",
                "supported must",
            ),
            ("{type: task_stuck, polls: 0}", "polls must"),
            ("{type: task_fails_late, message: ''}", "message must"),
            ("{type: input_loop, times: 0}", "times must"),
        ] {
            let error = refusal(fault);
            assert!(error.contains(field), "{fault}: {error}");
        }
        let text = "faults:\n  - {type: task_lost}\n";
        let plan = Plan::from_value(serde_yaml_ng::from_str(text).unwrap(), text).unwrap();
        assert_eq!(
            plan.faults[0].trigger.methods,
            ["tasks/get", "tasks/cancel"]
        );
    }
}
