//! The message faults, one file each. A file owns its spec (serde and JSON Schema, with defaults: the schema's
//! properties are the keys a plan may give it), its validation (messages name the field), the peer tools' types
//! and keys it reads and what they mean there, when it fires, its one-line description and its behaviour on
//! the wire. The decider, the engine and the plan loader reach a fault only through [`McpFaultSpec`];
//! [`REGISTRY`] is the one list of fault types, one line per fault.

use std::{collections::HashMap, sync::LazyLock, time::Duration};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::learned::{Ask, TaskRequest};
use super::trigger::{Matcher, Trigger};
use crate::mcp_wire::jsonrpc::Reply;

mod chain;
mod peer;

pub use chain::{Chain, ChainState};
pub use peer::{Format, PeerEntry, PeerType, PeerValueError};

/// What the proxy knows about the call a fault acts on.
#[derive(Debug, Clone, Default)]
pub struct CallContext<'a> {
    pub seed: u64,
    pub fault_index: usize,
    /// The tool name (`params.name`), or the method for calls without one.
    pub tool: &'a str,
    /// 1-based count of calls to this tool since the proxy started.
    pub ordinal: u64,
    /// Milliseconds from the proxy's start to the call's decision.
    pub elapsed_ms: u64,
    /// The decision's roll (see [`super::roll`]).
    pub roll: f64,
    /// The fault's trigger, for a fault that picks the tools of a listing ([`McpFaultSpec::acts_on_listing`]);
    /// `None` picks them all.
    pub tools: Option<&'a Matcher>,
    /// What the request says beyond its tool.
    pub request: RequestFacts<'a>,
}

/// What a request says that the faults on tasks, questions and protocol versions act on. Read only when a
/// fault of the plan needs it ([`McpFaultSpec::reads_learned`]), except the protocol version, which is one
/// lookup in the parameters the envelope already holds.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestFacts<'a> {
    /// The task a `tasks/*` request names, when the proxy saw the `tools/call` that made it (the call's
    /// `tool` is then that call's tool).
    pub task: Option<&'a TaskRequest>,
    /// The protocol version the request declares: its `_meta` `io.modelcontextprotocol/protocolVersion`, or
    /// an `initialize`'s `protocolVersion`.
    pub protocol_version: Option<&'a str>,
    /// For a `tools/call` that carries `inputResponses`: the question the server last asked of its tool.
    pub answers: Option<&'a Ask>,
}

impl CallContext<'_> {
    /// A further roll for the same call, independent of the decision's (e.g. jitter).
    pub fn roll_for(&self, salt: &str) -> f64 {
        super::roll::call_roll(self.seed, self.fault_index, self.tool, self.ordinal, salt)
    }

    /// Whether the fault's trigger picks the listed tool `name`.
    pub fn selects_tool(&self, name: &str) -> bool {
        self.tools.is_none_or(|m| m.matches_tool(name))
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
    /// Forward the request and rewrite its response with [`McpFaultSpec::rewrite`].
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallUpstream {
    /// The request never reaches the server.
    #[default]
    Skip,
    /// The server runs the call; its answer is replaced.
    Call,
}

/// A fault's spec refused; the message names the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultError {
    #[error("{field} must {rule}")]
    Rule {
        field: &'static str,
        rule: &'static str,
    },
    #[error("{field} must {rule}, got {got}")]
    Value {
        field: &'static str,
        rule: &'static str,
        got: String,
    },
    #[error("rename maps `{0}` to itself")]
    RenameToItself(String),
    #[error("then: {0}")]
    Then(Box<FaultError>),
}

/// A fault's rewrite of a response that could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    #[error("response is not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("{0}")]
    Encode(serde_json::Error),
}

/// What the decider keeps for one fault and one tool between that tool's calls, for the fault's own firing
/// rule: the tool's copy of a correlated fault's [`Chain`], where it last stood. It starts empty.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultMemory {
    pub chain: Option<ChainState>,
    /// The question (its serial) the fault last asked again, and how many times.
    pub asked_again: Option<(u64, u64)>,
}

/// How a fault that hides tools changes `tools/list` once it has fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hiding {
    /// Whether the client is told with `notifications/tools/list_changed`.
    pub notify: bool,
}

/// Behaviour every fault file implements. The defaults are those of a fault that acts on the call it fires
/// on, keyed by the tool and its ordinal, and fires whenever its trigger and roll say so.
pub trait McpFaultSpec {
    /// What the fault does on the wire, for the reference (one paragraph, markdown).
    fn wire() -> &'static str
    where
        Self: Sized;

    /// The fault's other type names of ours (`delay` for `latency`), read in every format.
    fn aliases() -> &'static [&'static str]
    where
        Self: Sized,
    {
        &[]
    }

    /// The peers' fault types this fault reads, read in every format: mcp-chaos's with the keys its fault
    /// takes (`error_injection` with `rate` and `tools` for `flaky`), mcp-chaos-monkey's (`rate-limit`),
    /// SmartAI's (`corrupt`), mcptest's (`wedged`). The plan loader recognises a peer's plans by them.
    fn peer_types() -> &'static [PeerType]
    where
        Self: Sized,
    {
        &[]
    }

    /// Reads what the entry's keys mean in its format into our keys (`added_ms` → `ms`, a peer's defaults,
    /// ...), before the plan loader checks the keys against the spec's; refuses what the peer refuses.
    fn read_peer(_entry: &mut PeerEntry) -> Result<(), PeerValueError>
    where
        Self: Sized,
    {
        Ok(())
    }

    /// Checks the spec's values; the error names the field.
    fn validate(&self) -> Result<(), FaultError> {
        Ok(())
    }

    /// Checks the trigger the fault is planned with.
    fn check_trigger(&self, _trigger: &Trigger) -> Result<(), FaultError> {
        Ok(())
    }

    /// Whether the fault acts only on Streamable HTTP exchanges (a plan error in stdio mode).
    fn http_only(&self) -> bool {
        false
    }

    /// A key given by the caller that the fault's roll is keyed on instead of (tool, ordinal): the roll is then
    /// that of (key, 0), the same for the same key on every machine.
    fn roll_key(&self, _arguments: Option<&Value>) -> Option<String> {
        None
    }

    /// Whether the fault fires on a call its trigger selected and its roll passed; `memory` is what the
    /// decider kept for this fault and this tool.
    fn fires(&self, _call: &CallContext<'_>, _memory: &mut FaultMemory) -> bool {
        true
    }

    /// Whether the fault acts on `tools/list` results, its trigger's `tools` picking tools inside the listing
    /// rather than the call (its `methods` then default to `[tools/list]`).
    fn acts_on_listing(&self) -> bool {
        false
    }

    /// The methods the fault acts on when the plan names none (`[tools/call]` when empty).
    fn default_methods(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether the fault reads what the proxy learns from answers ([`super::learned`]): the tasks' tools and
    /// polls, the tools' last questions.
    fn reads_learned(&self) -> bool {
        false
    }

    /// Whether the roll of a `tasks/*` request is the task's (keyed by its id), so every request of one task
    /// gets the same decision and `probability` is the share of tasks picked.
    fn rolls_per_task(&self) -> bool {
        false
    }

    /// Whether the trigger's tools leave `tools/list` results once the fault has fired (from the start when
    /// nothing in the trigger holds it back).
    fn hides_tools(&self) -> Option<Hiding> {
        None
    }

    /// A fault the spec holds, as the plan wrote it until the plan loader builds it (recover_after's `then`).
    fn nested_mut(&mut self) -> Option<&mut NestedFault> {
        None
    }

    /// One line saying what the fault does on the wire.
    fn describe(&self) -> String;

    /// What to do with a call this fault fired on.
    fn action(&self, call: &CallContext<'_>) -> Action;

    /// Rewrites the response of a call whose action was [`Action::Rewrite`].
    fn rewrite(&self, response: &mut Value, _call: &CallContext<'_>) {
        let _ = response;
    }

    /// Rewrites the raw response line (faults that break JSON itself); the default goes through [`Self::rewrite`].
    fn rewrite_line(&self, line: &[u8], call: &CallContext<'_>) -> Result<Vec<u8>, RewriteError> {
        let mut value: Value = serde_json::from_slice(line).map_err(RewriteError::NotJson)?;
        self.rewrite(&mut value, call);
        let mut out = serde_json::to_vec(&value).map_err(RewriteError::Encode)?;
        out.push(b'\n');
        Ok(out)
    }
}

/// A fault type of the registry.
pub struct Registered {
    /// The type name (the fault's module).
    pub name: &'static str,
    pub aliases: fn() -> &'static [&'static str],
    pub peer_types: fn() -> &'static [PeerType],
    /// What it does on the wire, for the reference.
    pub wire: fn() -> &'static str,
    pub read_peer: fn(&mut PeerEntry) -> Result<(), PeerValueError>,
    schema: fn() -> schemars::Schema,
    build: fn(Map<String, Value>) -> Result<McpFault, serde_json::Error>,
}

impl Registered {
    /// Whether `name` is this type's name, one of its aliases or a peer's name for it.
    pub fn is_named(&self, name: &str) -> bool {
        self.is_ours(name) || (self.peer_types)().iter().any(|p| p.name == name)
    }

    /// Whether `name` is this type's name or one of our aliases for it.
    pub fn is_ours(&self, name: &str) -> bool {
        self.name == name || (self.aliases)().contains(&name)
    }

    /// The keys the fault's spec takes: its schema's properties (flattened ones included).
    pub fn keys(&self) -> &'static [String] {
        static KEYS: LazyLock<HashMap<&'static str, Vec<String>>> = LazyLock::new(|| {
            REGISTRY
                .iter()
                .map(|r| (r.name, property_names(&(r.schema)())))
                .collect()
        });
        KEYS.get(self.name).map_or(&[], Vec::as_slice)
    }

    /// The spec from its own keys.
    pub fn build(&self, map: Map<String, Value>) -> Result<McpFault, serde_json::Error> {
        (self.build)(map)
    }
}

/// The property names of a schema, in order.
pub(crate) fn property_names(schema: &schemars::Schema) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

macro_rules! registry {
    ($( $module:ident :: $fault:ident ),+ $(,)?) => {
        $(
            mod $module;
            pub use $module::$fault;
        )+

        /// One fault of a plan, by type.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        pub enum McpFault {
            $( $fault($fault), )+
        }

        /// Every fault type, in the order the plan loader lists them.
        pub const REGISTRY: &[Registered] = &[
            $( Registered {
                name: stringify!($module),
                aliases: <$fault as McpFaultSpec>::aliases,
                peer_types: <$fault as McpFaultSpec>::peer_types,
                wire: <$fault as McpFaultSpec>::wire,
                read_peer: <$fault as McpFaultSpec>::read_peer,
                schema: || schemars::schema_for!($fault),
                build: |map| serde_json::from_value::<$fault>(Value::Object(map)).map(McpFault::$fault),
            }, )+
        ];

        impl McpFault {
            /// The type name.
            pub fn type_name(&self) -> &'static str {
                match self { $( McpFault::$fault(_) => stringify!($module), )+ }
            }

            fn inner(&self) -> &dyn McpFaultSpec {
                match self { $( McpFault::$fault(f) => f, )+ }
            }

            fn inner_mut(&mut self) -> &mut dyn McpFaultSpec {
                match self { $( McpFault::$fault(f) => f, )+ }
            }
        }
    };
}

registry! {
    latency::Latency,
    hang::Hang,
    timeout::Timeout,
    error::Error,
    flaky::Flaky,
    recover_after::RecoverAfter,
    rate_limit::RateLimit,
    malformed::Malformed,
    connection_drop::ConnectionDrop,
    connection_refused::ConnectionRefused,
    schema_drift::SchemaDrift,
    partial_result::PartialResult,
    empty::Empty,
    registry_inconsistency::RegistryInconsistency,
    drop_tool::DropTool,
    burst_error::BurstError,
    server_degradation::ServerDegradation,
    http_status::HttpStatus,
    session_expiry::SessionExpiry,
    stream_cut::StreamCut,
    protocol_version_rejection::ProtocolVersionRejection,
    oversized_result::OversizedResult,
    inject::Inject,
    stale::Stale,
    swap_fields::SwapFields,
    plausible_empty::PlausibleEmpty,
    numeric_drift::NumericDrift,
    task_stuck::TaskStuck,
    task_lost::TaskLost,
    task_fails_late::TaskFailsLate,
    input_loop::InputLoop,
    version_refused::VersionRefused,
}

/// The registered type that `name` (a type name or an alias) names.
pub fn registered(name: &str) -> Option<&'static Registered> {
    REGISTRY.iter().find(|r| r.is_named(name))
}

impl McpFaultSpec for McpFault {
    /// A fault of any type: each type says what it does.
    fn wire() -> &'static str {
        "what its type does (see the registered types)"
    }

    fn nested_mut(&mut self) -> Option<&mut NestedFault> {
        self.inner_mut().nested_mut()
    }
    fn validate(&self) -> Result<(), FaultError> {
        self.inner().validate()
    }
    fn check_trigger(&self, trigger: &Trigger) -> Result<(), FaultError> {
        self.inner().check_trigger(trigger)
    }
    fn http_only(&self) -> bool {
        self.inner().http_only()
    }
    fn roll_key(&self, arguments: Option<&Value>) -> Option<String> {
        self.inner().roll_key(arguments)
    }
    fn fires(&self, call: &CallContext<'_>, memory: &mut FaultMemory) -> bool {
        self.inner().fires(call, memory)
    }
    fn acts_on_listing(&self) -> bool {
        self.inner().acts_on_listing()
    }
    fn default_methods(&self) -> &'static [&'static str] {
        self.inner().default_methods()
    }
    fn reads_learned(&self) -> bool {
        self.inner().reads_learned()
    }
    fn rolls_per_task(&self) -> bool {
        self.inner().rolls_per_task()
    }
    fn hides_tools(&self) -> Option<Hiding> {
        self.inner().hides_tools()
    }
    fn describe(&self) -> String {
        self.inner().describe()
    }
    fn action(&self, call: &CallContext<'_>) -> Action {
        self.inner().action(call)
    }
    fn rewrite(&self, response: &mut Value, call: &CallContext<'_>) {
        self.inner().rewrite(response, call)
    }
    fn rewrite_line(&self, line: &[u8], call: &CallContext<'_>) -> Result<Vec<u8>, RewriteError> {
        self.inner().rewrite_line(line, call)
    }
}

/// A fault inside another's spec: as the plan wrote it, until the plan loader builds it with the peer
/// spellings and key checks that live in the loader (so no fault reaches up into it).
#[derive(Debug, Clone, PartialEq)]
pub enum NestedFault {
    Written(Map<String, Value>),
    Built(Box<McpFault>),
}

impl NestedFault {
    /// The built fault (the plan loader builds every nested fault before the plan is used).
    pub fn built(&self) -> Option<&McpFault> {
        match self {
            NestedFault::Built(fault) => Some(fault),
            NestedFault::Written(_) => None,
        }
    }

    /// Builds a written fault with `build`.
    pub fn build<E>(
        &mut self,
        build: impl FnOnce(Map<String, Value>) -> Result<McpFault, E>,
    ) -> Result<(), E> {
        if let NestedFault::Written(map) = self {
            *self = NestedFault::Built(Box::new(build(std::mem::take(map))?));
        }
        Ok(())
    }
}

impl Serialize for NestedFault {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            NestedFault::Written(map) => map.serialize(serializer),
            NestedFault::Built(fault) => fault.serialize(serializer),
        }
    }
}

/// For a peer whose fault with no (or empty) `tools` acts on no tool, where our trigger would pick every tool:
/// a fault that fires on no call.
pub(crate) fn no_tools_no_fault(entry: &mut PeerEntry) {
    if entry
        .get("tools")
        .is_none_or(|tools| tools.as_array().is_some_and(Vec::is_empty))
    {
        entry.set("probability", 0.0.into());
    }
}

/// For a fault whose `tools` name what it acts on, where a peer's without `tools` acts on nothing: refuses a
/// trigger without tools unless it fires on no call (a peer's fault read by [`no_tools_no_fault`]).
pub(crate) fn require_tools(trigger: &Trigger, rule: &'static str) -> Result<(), FaultError> {
    if trigger.tools.is_empty() && trigger.probability > 0.0 {
        return Err(FaultError::Rule {
            field: "tools",
            rule,
        });
    }
    Ok(())
}

/// `ms` as a [`Duration`].
pub(crate) fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Checks that `value` of `field` is a probability.
pub(crate) fn check_probability(field: &'static str, value: f64) -> Result<(), FaultError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(FaultError::Value {
            field,
            rule: "be between 0 and 1",
            got: value.to_string(),
        })
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

/// Removes from a `tools/list` response the tools `hidden` says are gone.
pub(crate) fn hide_listed_tools(response: &mut Value, hidden: impl Fn(&str) -> bool) {
    if let Some(Value::Array(tools)) = result_mut(response).and_then(|r| r.get_mut("tools")) {
        tools.retain(|tool| {
            !tool
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(&hidden)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp_proxy::plan::Plan;
    use crate::mcp_proxy::trigger::TRIGGER_KEYS;

    /// A value no field of a fault takes: serde must refuse it for every key the fault accepts.
    fn junk() -> Value {
        serde_json::json!([[[]]])
    }

    #[test]
    fn every_accepted_key_is_a_field_serde_reads() {
        for fault in REGISTRY {
            assert!(!fault.keys().is_empty() || fault.build(Map::new()).is_ok());
            for key in fault.keys() {
                let map = Map::from_iter([(key.clone(), junk())]);
                let error = fault.build(map).map(|_| ()).unwrap_err().to_string();
                assert!(
                    !error.starts_with("missing field"),
                    "{}: serde ignored `{key}`: {error}",
                    fault.name
                );
            }
        }
        for key in TRIGGER_KEYS.iter() {
            let map = Map::from_iter([(key.clone(), junk())]);
            assert!(serde_json::from_value::<Trigger>(Value::Object(map)).is_err());
        }
    }

    /// A sample value of a required property, by its schema type.
    fn sample(schema: &Value) -> Value {
        match schema.get("type").and_then(Value::as_str) {
            Some("integer" | "number") => 1.into(),
            Some("boolean") => true.into(),
            Some("array") => Value::Array(Vec::new()),
            _ => "x".into(),
        }
    }

    #[test]
    fn every_fault_prints_as_keys_it_accepts_and_loads_back() {
        for fault in REGISTRY {
            let schema = (fault.schema)().to_value();
            let mut entry = Map::from_iter([
                ("type".to_owned(), Value::from(fault.name)),
                ("tools".to_owned(), serde_json::json!(["t"])),
            ]);
            for required in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                entry.insert(required.to_owned(), sample(&schema["properties"][required]));
            }
            let root = serde_json::json!({ "faults": [entry] });
            let plan = Plan::from_value(root, "").unwrap();
            assert_eq!(plan.faults[0].spec.type_name(), fault.name);
            let printed: Value = serde_yaml_ng::from_str(&plan.to_yaml()).unwrap();
            for key in printed["faults"][0].as_object().unwrap().keys() {
                assert!(
                    ["type", "name"].contains(&key.as_str())
                        || fault.keys().contains(key)
                        || TRIGGER_KEYS.contains(key),
                    "{}: prints `{key}`, which it does not accept",
                    fault.name
                );
            }
            assert_eq!(printed["faults"][0]["type"], fault.name);
            // Printed and loaded again, it stays put (a nested default may gain its label on the first trip).
            let again = Plan::from_value(printed, "").unwrap();
            let printed: Value = serde_yaml_ng::from_str(&again.to_yaml()).unwrap();
            assert_eq!(
                Plan::from_value(printed, "").unwrap(),
                again,
                "{}",
                fault.name
            );
        }
    }

    #[test]
    fn type_names_aliases_and_peer_names_name_one_fault_each() {
        let mut seen = std::collections::HashMap::new();
        for fault in REGISTRY {
            let peer_names = (fault.peer_types)().iter().map(|p| p.name);
            let names = std::iter::once(fault.name)
                .chain((fault.aliases)().iter().copied())
                .chain(peer_names);
            for name in names {
                let owner = *seen.entry(name).or_insert(fault.name);
                assert_eq!(owner, fault.name, "`{name}` names two faults");
                assert_eq!(registered(name).map(|r| r.name), Some(fault.name));
            }
        }
    }

    #[test]
    fn mcp_chaos_keys_are_read_by_the_fault() {
        // Each key an mcp-chaos fault takes is one the loader reads for the fault that answers to it.
        for fault in REGISTRY {
            for peer in (fault.peer_types)() {
                for key in peer.keys {
                    let mut entry =
                        PeerEntry::new(peer.format, peer.name.to_owned(), None, std::iter::empty());
                    entry.set(key, Value::Null);
                    (fault.read_peer)(&mut entry).unwrap_or_else(|e| panic!("{e}"));
                    let read = entry.into_keys().map(|(k, _, _)| k).collect::<Vec<_>>();
                    assert!(
                        read.iter()
                            .all(|k| fault.keys().contains(k) || TRIGGER_KEYS.contains(k)),
                        "{}: mcp-chaos's `{key}` is read as {read:?}",
                        fault.name
                    );
                }
            }
        }
    }
}
