//! The message faults, one file each. A file owns its spec (serde, with defaults), its validation (messages
//! name the field), its one-line description and its behaviour on the wire. [`REGISTRY`] is the one list of
//! type names (with the peer tools' aliases) that the plan loader knows.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::mcp_wire::jsonrpc::Reply;

mod burst_error;
mod connection_drop;
mod connection_refused;
mod drop_tool;
mod empty;
mod error;
mod flaky;
mod hang;
mod http_status;
mod latency;
mod malformed;
mod partial_result;
mod protocol_version_rejection;
mod rate_limit;
mod recover_after;
mod registry_inconsistency;
mod schema_drift;
mod server_degradation;
mod session_expiry;
mod stream_cut;
mod timeout;

pub use burst_error::BurstError;
pub use connection_drop::ConnectionDrop;
pub use connection_refused::ConnectionRefused;
pub use drop_tool::DropTool;
pub use empty::Empty;
pub use error::Error;
pub use flaky::Flaky;
pub use hang::Hang;
pub use http_status::HttpStatus;
pub use latency::Latency;
pub use malformed::Malformed;
pub use partial_result::PartialResult;
pub use protocol_version_rejection::ProtocolVersionRejection;
pub use rate_limit::RateLimit;
pub use recover_after::RecoverAfter;
pub use registry_inconsistency::RegistryInconsistency;
pub use schema_drift::{DriftTarget, SchemaDrift};
pub use server_degradation::ServerDegradation;
pub use session_expiry::SessionExpiry;
pub use stream_cut::StreamCut;
pub use timeout::Timeout;

/// What the relay knows about the call a fault acts on.
#[derive(Debug, Clone)]
pub struct CallContext<'a> {
    pub seed: u64,
    pub fault_index: usize,
    /// The tool name (`params.name`), or the method for calls without one.
    pub tool: &'a str,
    /// 1-based count of calls to this tool since the proxy started.
    pub ordinal: u64,
    /// The decision's roll (see [`super::roll`]).
    pub roll: f64,
}

impl CallContext<'_> {
    /// A further roll for the same call, independent of the decision's (e.g. jitter).
    pub fn roll_for(&self, salt: &str) -> f64 {
        super::roll::call_roll(self.seed, self.fault_index, self.tool, self.ordinal, salt)
    }
}

/// What to do with a call once a fault has fired on it.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Hold the request for this long, then forward it.
    DelayRequest(Duration),
    /// Forward the request, hold the response for this long.
    DelayResponse(Duration),
    /// Answer the client ourselves after `after`; with `call_upstream`, run the real call first and replace
    /// its answer, else never send the request.
    Reply {
        after: Duration,
        reply: Reply,
        call_upstream: bool,
    },
    /// Never answer: release on the client's cancellation, or after `max_hold` as `on_cap` says.
    Hang {
        forward: bool,
        max_hold: Duration,
        on_cap: OnCap,
    },
    /// Forward the request and rewrite its response with [`FaultSpec::rewrite`].
    Rewrite,
    /// Forward the request, then kill the server after `after`; restart it after `restart_after` if given.
    CrashServer {
        after: Duration,
        restart_after: Option<Duration>,
    },
    /// Close our stdout: the client sees the server go away.
    CloseClient,
    /// What only the Streamable HTTP front can do.
    Http(HttpAction),
}

/// A fault's act on the HTTP exchange itself (Streamable HTTP only).
#[derive(Debug, Clone, PartialEq)]
pub enum HttpAction {
    /// Answer `status` with these headers and body (bytes, content type) instead of the call's answer; with
    /// `expires_session`, only a request carrying a session id, whose later requests get the same answer.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: Option<(Vec<u8>, &'static str)>,
        expires_session: bool,
    },
    /// Forward the request, then close the SSE response after this many events.
    CutStream { after_events: u64 },
}

impl Action {
    /// Whether the action settles the call (answers in the server's place, hangs, or drops a connection),
    /// which ends a `policy: all` chain; delays and rewrites compose with what follows.
    pub fn ends_chain(&self) -> bool {
        !matches!(
            self,
            Action::DelayRequest(_) | Action::DelayResponse(_) | Action::Rewrite
        )
    }
}

/// What a hang does once its hold cap is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnCap {
    /// Keep silent for good: the client never gets an answer.
    #[default]
    Drop,
    /// Answer with a timeout error (-32001).
    Error,
    /// Close our stdout.
    Close,
}

/// How a synthesised failure reaches the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyAs {
    /// A JSON-RPC error object.
    #[default]
    Protocol,
    /// A tool result with `isError: true` and the message as text.
    Tool,
}

/// A failure payload shared by the faults that fail a call (error, flaky, burst_error, server_degradation).
/// `code` and `message` default per fault type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    #[serde(rename = "as", default)]
    pub reply_as: ReplyAs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
}

impl Failure {
    pub const KEYS: &[&str] = &["as", "code", "message", "category"];

    /// The reply, with `code` and `message` defaulting to the fault type's.
    pub fn reply(&self, default_code: i64, default_message: &str) -> Reply {
        let message = self
            .message
            .as_deref()
            .unwrap_or(default_message)
            .to_owned();
        match self.reply_as {
            ReplyAs::Protocol => Reply::Error {
                code: self.code.unwrap_or(default_code),
                message,
                data: self
                    .category
                    .as_ref()
                    .map(|c| serde_json::json!({ "category": c })),
            },
            ReplyAs::Tool => Reply::ToolError { text: message },
        }
    }
}

/// Whether the real server is called when a fault answers in its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Upstream {
    /// The request never reaches the server.
    #[default]
    Skip,
    /// The server runs the call; its answer is replaced.
    Call,
}

/// Behaviour every fault file implements.
pub trait Fault {
    /// Checks the spec's values; the message names the field.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
    /// One line saying what the fault does on the wire.
    fn describe(&self) -> String;
    /// What to do with a call this fault fired on.
    fn action(&self, call: &CallContext<'_>) -> Action;
    /// Whether the fault acts only on Streamable HTTP exchanges (a plan error in stdio mode).
    fn http_only(&self) -> bool {
        false
    }
    /// Rewrites the response of a call whose action was [`Action::Rewrite`].
    fn rewrite(&self, response: &mut Value, _call: &CallContext<'_>) {
        let _ = response;
    }
    /// Rewrites the raw response line (faults that break JSON itself); the default goes through [`Self::rewrite`].
    fn rewrite_line(&self, line: &[u8], call: &CallContext<'_>) -> Result<Vec<u8>, String> {
        let mut value: Value =
            serde_json::from_slice(line).map_err(|e| format!("response is not JSON: {e}"))?;
        self.rewrite(&mut value, call);
        let mut out = serde_json::to_vec(&value).map_err(|e| e.to_string())?;
        out.push(b'\n');
        Ok(out)
    }
}

macro_rules! registry {
    ($( $variant:ident : $ty:ty = $name:literal $(| $alias:literal)* ),+ $(,)?) => {
        /// One fault of a plan, by type.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        pub enum FaultSpec {
            $( $variant($ty), )+
        }

        /// Every fault type: its name, the peer tools' aliases, and the keys its spec takes.
        pub const REGISTRY: &[(&str, &[&str], fn() -> &'static [&'static str])] = &[
            $( ($name, &[$($alias),*], || <$ty>::KEYS), )+
        ];

        impl FaultSpec {
            /// Builds the spec of type `name` (canonical) from its own keys.
            pub fn from_map(name: &str, map: Map<String, Value>) -> Result<Self, String> {
                match name {
                    $( $name => serde_json::from_value::<$ty>(Value::Object(map))
                        .map(FaultSpec::$variant)
                        .map_err(|e| e.to_string()), )+
                    other => Err(format!("unknown fault type `{other}`")),
                }
            }

            /// Whether this is a `schema_drift` of `tools/list` (`target: list`), which picks its tools
            /// inside the listing.
            pub fn drifts_list(&self) -> bool {
                matches!(self, FaultSpec::SchemaDrift(d) if d.target == schema_drift::DriftTarget::List)
            }

            /// The canonical type name.
            pub fn type_name(&self) -> &'static str {
                match self { $( FaultSpec::$variant(_) => $name, )+ }
            }

            fn inner(&self) -> &dyn Fault {
                match self { $( FaultSpec::$variant(f) => f, )+ }
            }
        }
    };
}

registry! {
    Latency: Latency = "latency" | "slow" | "delay",
    Hang: Hang = "hang" | "wedged",
    Timeout: Timeout = "timeout",
    Error: Error = "error",
    Flaky: Flaky = "flaky" | "error_injection",
    RecoverAfter: RecoverAfter = "recover_after" | "recover-after",
    RateLimit: RateLimit = "rate_limit" | "rate-limit",
    Malformed: Malformed = "malformed" | "corrupt",
    ConnectionDrop: ConnectionDrop = "connection_drop" | "connection-drop",
    ConnectionRefused: ConnectionRefused = "connection_refused" | "connection-refused",
    SchemaDrift: SchemaDrift = "schema_drift" | "schema_mismatch" | "schema-mismatch",
    PartialResult: PartialResult = "partial_result",
    Empty: Empty = "empty",
    RegistryInconsistency: RegistryInconsistency = "registry_inconsistency",
    DropTool: DropTool = "drop_tool",
    BurstError: BurstError = "burst_error",
    ServerDegradation: ServerDegradation = "server_degradation",
    HttpStatus: HttpStatus = "http_status" | "http-status",
    SessionExpiry: SessionExpiry = "session_expiry" | "session_expired",
    StreamCut: StreamCut = "stream_cut" | "stream-cut",
    ProtocolVersionRejection: ProtocolVersionRejection = "protocol_version_rejection" | "bad_protocol_version",
}

/// The canonical name of a type name or alias.
pub fn canonical_type(name: &str) -> Option<&'static str> {
    REGISTRY
        .iter()
        .find(|(canonical, aliases, _)| *canonical == name || aliases.contains(&name))
        .map(|(canonical, _, _)| *canonical)
}

/// The keys a fault type's own spec takes.
pub fn keys_of(canonical: &str) -> &'static [&'static str] {
    REGISTRY
        .iter()
        .find(|(name, _, _)| *name == canonical)
        .map(|(_, _, keys)| keys())
        .unwrap_or(&[])
}

impl Fault for FaultSpec {
    fn validate(&self) -> Result<(), String> {
        self.inner().validate()
    }
    fn describe(&self) -> String {
        self.inner().describe()
    }
    fn http_only(&self) -> bool {
        self.inner().http_only()
    }
    fn action(&self, call: &CallContext<'_>) -> Action {
        self.inner().action(call)
    }
    fn rewrite(&self, response: &mut Value, call: &CallContext<'_>) {
        self.inner().rewrite(response, call)
    }
    fn rewrite_line(&self, line: &[u8], call: &CallContext<'_>) -> Result<Vec<u8>, String> {
        self.inner().rewrite_line(line, call)
    }
}

/// `ms` as a [`Duration`].
pub(crate) fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Checks that `value` of `field` is a probability.
pub(crate) fn check_probability(field: &str, value: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(format!("{field} must be between 0 and 1, got {value}"))
    }
}

/// The `result` object of a JSON-RPC response, when it is one.
pub(crate) fn result_mut(response: &mut Value) -> Option<&mut Map<String, Value>> {
    response.get_mut("result").and_then(Value::as_object_mut)
}

/// Applies `edit` to `structuredContent` and to every text block whose text is a JSON value, keeping the two
/// views of a tool result consistent.
pub(crate) fn edit_payloads(response: &mut Value, mut edit: impl FnMut(&mut Value)) {
    let Some(result) = result_mut(response) else {
        return;
    };
    if let Some(structured) = result.get_mut("structuredContent") {
        edit(structured);
    }
    if let Some(Value::Array(blocks)) = result.get_mut("content") {
        for block in blocks {
            if block.get("type").and_then(Value::as_str) != Some("text") {
                continue;
            }
            let Some(Value::String(text)) = block.get_mut("text") else {
                continue;
            };
            if let Ok(mut parsed) = serde_json::from_str::<Value>(text)
                && (parsed.is_object() || parsed.is_array())
            {
                edit(&mut parsed);
                *text = parsed.to_string();
            }
        }
    }
}
