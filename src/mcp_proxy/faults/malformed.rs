//! `malformed`: the response line is broken but the newline framing is kept: replaced by garbage bytes,
//! cut short (`truncate_json`), or valid JSON with a bad envelope (no `jsonrpc`, or a wrong `id`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, FaultError, Format, McpFaultSpec, PeerEntry, PeerType, PeerValueError,
    RewriteError,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// The whole line becomes `bytes`.
    #[default]
    Replace,
    /// The serialised response cut at byte `at` (default: half).
    TruncateJson,
    /// Valid JSON without `jsonrpc` (or with a wrong id when `wrong_id` is set).
    BadEnvelope,
}

fn corrupted() -> String {
    "<<<CORRUPTED_RESPONSE>>>{{{{not json".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Malformed {
    #[serde(default)]
    pub variant: Variant,
    #[serde(default = "corrupted")]
    pub bytes: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<usize>,
    #[serde(default)]
    pub wrong_id: bool,
}

impl McpFaultSpec for Malformed {
    fn wire() -> &'static str {
        "the response line becomes `<<<CORRUPTED_RESPONSE>>>{{{{not json`, is cut (`variant: truncate_json`, \
        `at`), or loses `jsonrpc` / gets a wrong id (`bad_envelope`); the newline framing is kept"
    }

    fn peer_types() -> &'static [PeerType] {
        const { &[PeerType::of(Format::ChaosMonkey, "malformed")] }
    }

    /// mcp-chaos-monkey's `corruptResponse` says whether the response is corrupted: a boolean, and `false`
    /// never corrupts (the fault stays in the plan, firing on no call).
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        match entry.get("corrupt_response") {
            None | Some(serde_json::Value::Bool(true)) => {}
            Some(serde_json::Value::Bool(false)) => entry.set("probability", 0.0.into()),
            Some(_) => return Err(entry.refuse("corrupt_response", "be a boolean (true or false)")),
        }
        entry.take("corrupt_response");
        Ok(())
    }

    fn validate(&self) -> Result<(), FaultError> {
        if self.bytes.contains('\n') {
            return Err(FaultError::Rule {
                field: "bytes",
                rule: "not contain a newline (stdio framing)",
            });
        }
        Ok(())
    }

    fn describe(&self) -> String {
        match self.variant {
            Variant::Replace => format!("replace the response line with {:?}", self.bytes),
            Variant::TruncateJson => "cut the response line short".into(),
            Variant::BadEnvelope => "send a response with a broken JSON-RPC envelope".into(),
        }
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Rewrite
    }

    fn rewrite_line(&self, line: &[u8], _call: &CallContext<'_>) -> Result<Vec<u8>, RewriteError> {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        let mut out = match self.variant {
            Variant::Replace => self.bytes.as_bytes().to_vec(),
            Variant::TruncateJson => {
                let at = self
                    .at
                    .unwrap_or(body.len() / 2)
                    .min(body.len().saturating_sub(1));
                body[..at].to_vec()
            }
            Variant::BadEnvelope => {
                let mut value: serde_json::Value =
                    serde_json::from_slice(body).map_err(RewriteError::NotJson)?;
                if let Some(object) = value.as_object_mut() {
                    if self.wrong_id {
                        object.insert("id".into(), "fault-wrong-id".into());
                    } else {
                        object.remove("jsonrpc");
                    }
                }
                serde_json::to_vec(&value).map_err(RewriteError::Encode)?
            }
        };
        out.push(b'\n');
        Ok(out)
    }
}
