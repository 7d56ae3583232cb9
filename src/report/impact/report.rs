//! The whole report and what the scenario was given: the call or the mix, the load's shape, the faults, the
//! engine that sent the load; its status, and the fault that never acted that makes it inconclusive.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::comparison::Comparison;
use super::data::ReportData;
use super::figures::{ProxyFigures, RequestFigures, RunFigures};
use super::phases::{self, ActiveWindow, Amplification, PhaseFigures, WindowRecovery};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Status {
    Passed,
    Failed,
}

/// The call the load generator made.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CallInfo {
    pub url: String,
    pub method: String,
    pub timeout_ms: u64,
    /// Header names sent (values are not echoed).
    pub headers: Vec<String>,
    pub has_body: bool,
}

/// The load shape.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StrategyInfo {
    pub duration_s: f64,
    pub num_clients: u32,
    /// Requests per second per client, at a constant rate; 0 when the rate followed `stages`.
    pub rps: u32,
    /// The stages the rate (over all clients) followed, in order; empty at a constant rate.
    #[serde(default)]
    pub stages: Vec<StageInfo>,
}

/// One stage of a ramp: the rate over all clients moved linearly from `from_rps` to `to_rps`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageInfo {
    /// When it started, in seconds from the run's start.
    pub from_s: f64,
    pub duration_s: f64,
    pub from_rps: f64,
    pub to_rps: f64,
}

/// One fault applied during the run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FaultInfo {
    /// latency, jitter, packet_loss, bandwidth, blackhole, http_error, reset, limit_data or corrupt.
    pub kind: String,
    /// Human description of its parameters.
    pub description: String,
    /// Its schedule as given (`sched`); `None`: active for the whole run.
    pub sched: Option<String>,
    /// When it was active, in seconds from the run's start, in time order (the whole run without a schedule).
    pub windows: Vec<ActiveWindow>,
    /// Where it was applied, e.g. "proxy 127.0.0.1:34000 → 127.0.0.1:8080 (server side, ingress)".
    pub applied_on: String,
    /// Times it acted during the run, in the unit of its kind (messages delayed, segments lost, responses
    /// replaced, …); `None` when the proxy's counts were not read.
    pub applications: Option<u64>,
}

/// The version of the impact result's format ([`Report`] as JSON, `docs/src/schemas/impact-result.json`): raised
/// when a field changes meaning or a required one is added, so that a reader (`fault report merge`) refuses a
/// result it would misread.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole report; the markdown is rendered from it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// The version of this format (1).
    pub schema_version: u32,
    pub title: String,
    pub started_at: String,
    pub ended_at: String,
    pub status: Status,
    pub call: CallInfo,
    pub strategy: StrategyInfo,
    pub faults: Vec<FaultInfo>,
    /// Each request of the traffic mix over the faulted run, in the mix's order (one row with one request).
    #[serde(default)]
    pub requests: Vec<RequestFigures>,
    /// The run with the faults applied.
    pub run: RunFigures,
    /// The same load without faults, when `baseline` was asked for.
    pub baseline: Option<RunFigures>,
    pub comparison: Option<Comparison>,
    /// Proxy counters of the faulted run.
    pub proxy: Option<ProxyFigures>,
    /// Set when the status says nothing about the fault: why (the fault never acted during the run).
    pub inconclusive: Option<String>,
    /// The faulted run cut at the faults' windows: before, during, between and after, each judged on its own;
    /// empty when the faults held for the whole run.
    #[serde(default)]
    pub phases: Vec<PhaseFigures>,
    /// Time to detect and time to recover of each window (the faults' windows merged where they overlap);
    /// empty when the faults held for the whole run.
    #[serde(default)]
    pub recovery: Vec<WindowRecovery>,
    /// N of time to recover: seconds in a row that must hold every SLO, back at the before phase's errors.
    pub recovery_seconds: u32,
    /// What the proxies sent upstream against the load's requests (retry amplification), over the run and
    /// per second; `None` when the proxy's counts were not read.
    #[serde(default)]
    pub upstream: Option<Amplification>,
    /// The external engine that sent the load (Locust), with its users and each worker's share; `None`: fault's
    /// own generator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineInfo>,
    /// What the report was built from (the runs' samples with their histograms in HdrHistogram's encoding,
    /// the SLOs, the upstream counts): enough to build it again, alone or added to other runs of the same
    /// scenario (`fault report merge`).
    pub data: ReportData,
}

/// The external engine that sent a run's load: its results are the report's samples.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EngineInfo {
    /// "locust".
    pub engine: String,
    pub version: String,
    /// Its users over all workers (a closed model: each waits for its answer before its next request).
    pub users: u32,
    /// Users started per second until all ran.
    pub spawn_rate: f64,
    /// Each worker's share of the requests, in the order they first reported.
    pub workers: Vec<WorkerInfo>,
    /// Whose latencies these are and what the model means for them.
    pub note: String,
}

/// One worker of an external engine and the requests it sent.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WorkerInfo {
    pub id: String,
    pub requests: u64,
    /// Its share of all requests, in percent.
    pub percent: f64,
}

impl Report {
    /// Says which external engine sent the load.
    pub fn with_engine(mut self, engine: EngineInfo) -> Self {
        self.engine = Some(engine);
        self
    }

    /// Adds the proxy's counters; a fault that acted 0 times makes the run inconclusive, whatever its status.
    pub fn with_proxy(mut self, proxy: ProxyFigures) -> Self {
        let idle: Vec<&str> = self
            .faults
            .iter()
            .filter(|fault| fault.applications == Some(0))
            .map(|fault| fault.kind.as_str())
            .collect();
        let why = |subject: String| {
            format!(
                "{subject} 0 times during the run, so this status says nothing about it: check that the traffic \
                 goes through the proxy, that the fault's side and direction match it and that its window sees \
                 traffic"
            )
        };
        if proxy.fault_applications == 0 {
            self.inconclusive = Some(why("the fault acted".into()));
        } else if !idle.is_empty() {
            self.inconclusive = Some(why(format!(
                "the fault {} acted",
                idle.join(" and the fault ")
            )));
        }
        self.proxy = Some(proxy);
        self
    }

    /// The faults' windows merged where they overlap or touch, in time order.
    pub fn merged_windows(&self) -> Vec<ActiveWindow> {
        phases::merge_windows(self.faults.iter().flat_map(|f| f.windows.iter().copied()))
    }
}

/// The method a proxy's result names for its call: it measured whatever passed through it (`fault run
/// --result`), not a load it sent.
pub const PASSTHROUGH_METHOD: &str = "*";
