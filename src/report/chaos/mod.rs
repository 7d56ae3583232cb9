//! The MCP chaos report's data: every figure, per tool and overall, computed from call records
//! ([`record::CallRecord`]). The markdown ([`markdown`]) shows these same values, so the text and
//! `structuredContent` agree.
//!
//! Definitions (stated in the report too):
//! - availability A = answered calls (a result, valid or not) / calls; correctness C = valid results /
//!   answered calls; effective availability A×C = valid results / calls;
//! - a retry is a further attempt of the same logical call; a call is a runaway when 3 or more attempts
//!   followed its first failure; a duplicate is a retry of a failed attempt the server had received;
//! - latency runs from when a call was due to its answer or cancel: queueing delay (due → sent) and service
//!   time (sent → answer or cancel);
//! - time to detect runs from a request to the client's cancel; time to recovery from a failed call to the
//!   next valid result of the same tool, in ms and in calls;
//! - a task fails when one of its logical calls ends (after retries) without a valid result; the blast
//!   radius is the share of tasks that met an injected fault and failed;
//! - the judgement ([`judgement`]) says what the client did after each failure and gives verdicts per tool
//!   and for the run, with the tools' annotations telling a duplicate write from a harmless retry.

pub mod gates;
pub mod head_of_line;
pub mod judgement;
pub mod latency;
pub mod markdown;
pub mod mcp_tasks;
pub mod record;
mod report;
mod run_figures;
pub mod sessions;
mod task_figures;
pub mod timeline;
mod tool_figures;

pub use latency::LatencyFigures;
pub use markdown::{render, render_sessions};
pub use report::{
    ChaosReport, ClientPolicy, ComparisonRow, PlannedFaultInfo, SCHEMA_VERSION, compare,
};
pub use run_figures::{ChaosFigures, figures};
pub use task_figures::TaskFigures;
pub use tool_figures::{ChaosOutcomes, ClientFigures, RUNAWAY_ATTEMPTS, ToolFigures, is_runaway};
