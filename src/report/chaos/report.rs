//! The whole chaos report: the plan's faults, the client's policy, the run and its baseline side by side, the
//! gates and the sessions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::run_figures::ChaosFigures;
use super::{gates, sessions};

/// One fault of the plan.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PlannedFaultInfo {
    pub index: usize,
    #[serde(rename = "type")]
    pub fault_type: String,
    /// Tools (names or globs) it is limited to; empty means every tool.
    pub tools: Vec<String>,
    pub description: String,
}

/// The client policy the scenario tool drove calls with.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ClientPolicy {
    /// This long after a call was due (a retry: after its backoff), without an answer, the client sends
    /// `notifications/cancelled` and gives up.
    pub timeout_ms: u64,
    /// Further attempts after a failed one (error, isError, timeout, malformed answer).
    pub retries: u32,
    /// Wait before each retry.
    pub backoff_ms: u64,
    /// Logical calls in flight at once, per client.
    pub concurrency: u32,
    /// Client sessions driven at once.
    pub num_clients: u32,
    /// How calls were scheduled, e.g. "8 calls × 200 repeats".
    pub schedule: String,
}

/// One row of the with/without comparison.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ComparisonRow {
    /// "Baseline (no faults)" or "With faults".
    pub run: String,
    pub availability: f64,
    pub correctness: f64,
    pub effective_availability: f64,
    pub task_success_rate: f64,
    pub blast_radius: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub retries: u64,
}

/// The version of the MCP chaos result's format ([`ChaosReport`] as JSON, `docs/src/schemas/chaos-result.json`):
/// raised when a field changes meaning or a required one is added.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole report; the markdown is rendered from it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChaosReport {
    /// The version of this format (1).
    pub schema_version: u32,
    pub title: String,
    pub started_at: String,
    pub ended_at: String,
    /// The server's command line.
    pub server: String,
    pub seed: u64,
    pub faults: Vec<PlannedFaultInfo>,
    /// The driving client's policy (absent for a live proxy session, where the client is someone else's).
    pub client: Option<ClientPolicy>,
    /// The run with the faults.
    pub run: ChaosFigures,
    /// The same calls without faults, when `baseline` was asked for.
    pub baseline: Option<ChaosFigures>,
    pub comparison: Option<Vec<ComparisonRow>>,
    /// The run's gates, PASSED or FAILED each, when any were given.
    #[serde(default)]
    pub gates: Option<gates::GateReport>,
    /// With more than one session of the plan: how many handled their failures well, and pass^k. The
    /// report's figures are the first session's.
    #[serde(default)]
    pub sessions: Option<sessions::SessionsFigures>,
}

/// The with/without rows of a run and its baseline.
pub fn compare(baseline: &ChaosFigures, run: &ChaosFigures) -> Vec<ComparisonRow> {
    let row = |name: &str, f: &ChaosFigures| ComparisonRow {
        run: name.to_owned(),
        availability: f.overall.availability,
        correctness: f.overall.correctness,
        effective_availability: f.overall.effective_availability,
        task_success_rate: f.tasks.success_rate,
        blast_radius: f.tasks.blast_radius,
        p50_ms: f.overall.latency.p50_ms,
        p95_ms: f.overall.latency.p95_ms,
        p99_ms: f.overall.latency.p99_ms,
        retries: f.overall.client.retries,
    };
    vec![
        row("Baseline (no faults)", baseline),
        row("With faults", run),
    ]
}
