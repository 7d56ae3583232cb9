//! The impact scenario's report: a serde model built from load samples, SLO evaluation, and a markdown
//! renderer.
//!
//! Definitions (stated in the report too):
//! - latency percentiles, min, max and mean cover every request; a timeout counts at the moment it ended;
//! - latency = queueing delay (due → sent; a request that could not start waited its whole timeout) + service
//!   time (sent → the end of its body or its timeout, requests sent);
//! - errors = HTTP status ≥ 400 + transport errors + timeouts + requests that could not start (in-flight cap);
//! - a request counts towards an SLO only if it succeeded within the threshold;
//! - the scenario is Failed when any SLO is not met;
//! - phases, time to detect and to recover, burn rates and retry amplification: see [`phases`].

mod build;
mod comparison;
pub mod data;
mod figures;
mod latency;
mod markdown;
mod mix;
pub mod phases;
mod report;
mod slo;

pub use build::{DEFAULT_RECOVERY_SECONDS, RECOVERY_SECONDS, ReportInput, build};
pub use comparison::{Comparison, RequestComparison};
pub use data::ReportData;
pub use figures::{
    CurvePoint, LatencyPart, OutcomeCounts, PercentileRow, ProxyFigures, RequestFigures,
    RunFigures, StreamFigures, figures,
};
pub use markdown::render;
pub use mix::RequestInfo;
pub use phases::{
    ActiveWindow, Amplification, PhaseFigures, PhaseKind, PhaseSlo, PhaseUpstream, Recovery,
    RecoverySentence, UpstreamCounts, UpstreamSecond, UpstreamTally, WindowRecovery,
};
pub use report::{
    CallInfo, EngineInfo, FaultInfo, PASSTHROUGH_METHOD, Report, SCHEMA_VERSION, StageInfo, Status,
    StrategyInfo, WorkerInfo,
};
pub use slo::{Judged, LatencySlo, SloVerdict};
