//! The message faults, one file each. A file owns its spec (serde and JSON Schema, with defaults: the schema's
//! properties are the keys a plan may give it), its validation (messages name the field), the peer tools' types
//! and keys it reads and what they mean there, when it fires, its one-line description and its behaviour on
//! the wire. The decider, the engine and the plan loader reach a fault only through [`McpFaultSpec`];
//! [`REGISTRY`] is the one list of fault types, one line per fault (below).
//!
//! Beside the faults: what a fired fault does to the call ([`action`]), what the proxy knows about the call
//! ([`context`]), the trait and the checks specs share ([`spec`]), what a fault acts on ([`scope`]), the registry's reading of each type
//! ([`registry`]), a fault nested in another ([`nested`]), the response edits rewriting faults share
//! ([`edit`]), the correlated faults' chain ([`chain`]) and the peers' formats ([`peer`]).

mod action;
mod chain;
mod context;
mod edit;
mod nested;
mod peer;
mod registry;
mod scope;
mod spec;

pub(crate) use action::ms;
pub use action::{Action, CallUpstream, Failure, HttpAction, OnCap, ReplyAs};
pub use chain::{Chain, ChainState};
pub use context::{CallContext, FaultMemory, RequestFacts};
pub(crate) use edit::{edit_payloads, hide_listed_tools, result_mut};
pub use nested::NestedFault;
pub use peer::{Format, PeerEntry, PeerType, PeerValueError};
pub use registry::{Registered, registered};
pub use scope::Scope;
pub use spec::{FaultError, Hiding, McpFaultSpec, RewriteError};
pub(crate) use spec::{check_probability, no_tools_no_fault, require_tools};

registry::registry! {
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
