//! The whole capacity report: what the search was given, both sides, the cost, and its verdict in a line.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sides::{Cost, SideFigures};
use super::steps::SearchInfo;
use crate::report::impact::{CallInfo, FaultInfo, LatencySlo};

/// The version of this model; a reader checks it before it reads the rest.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole report; the markdown is rendered from it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CapacityReport {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    pub title: String,
    pub started_at: String,
    pub ended_at: String,
    pub call: CallInfo,
    /// The faults, held for the whole of each step of the side with them.
    pub faults: Vec<FaultInfo>,
    pub slos: Vec<LatencySlo>,
    pub search: SearchInfo,
    /// The side without the fault.
    pub without_fault: SideFigures,
    /// The side with the fault; `None` when it was not searched (see `notes`).
    pub with_fault: Option<SideFigures>,
    /// What the fault cost; `None` when a side has no capacity.
    pub cost: Option<Cost>,
    /// What the reader should know about how the search ended.
    pub notes: Vec<String>,
}

impl CapacityReport {
    /// The sides that ran, without the fault first.
    pub fn sides(&self) -> impl Iterator<Item = &SideFigures> {
        std::iter::once(&self.without_fault).chain(self.with_fault.as_ref())
    }

    /// The report's verdict in one line: the cost, or each side's capacity.
    pub fn summary(&self) -> String {
        match &self.cost {
            Some(cost) => cost.summary.clone(),
            None => self
                .sides()
                .map(|side| format!("{}: {}", side.name, side.capacity_text()))
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}
