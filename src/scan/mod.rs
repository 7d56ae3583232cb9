//! `fault mcp-scan` and `fault_scan_mcp_server`: one scan of an MCP server that says whether it is ready
//! and what to change if not.
//!
//! - [`spec`]: the inputs, declared once (tool schema, flags, book table);
//! - [`run`]: the scan from start to end, over one [`session`] with the server;
//! - the phases ([`phases`] runs those that call the server): [`hygiene`] (schemas as strict clients read them, over [`schema`]), [`load`] (baseline,
//!   saturation, head-of-line blocking), [`cases`] and [`contract`] (invalid input built from each schema,
//!   and the server's answer judged), [`faults`] (replies lost through `fault mcp-proxy`, retried, and
//!   writes checked against the server's state), each call made by [`calls`];
//! - what it says: [`finding`], [`policy`] and [`verdict`] (scores with their evidence), [`report`] (the
//!   result and its markdown), [`guide`] (the fix guide, since-last, JUnit);
//! - [`cli`]: the command and its exit codes.

pub mod calls;
pub mod cases;
pub mod cli;
pub mod contract;
pub mod faults;
pub mod finding;
pub mod guide;
pub mod hygiene;
pub mod load;
mod phases;
pub mod policy;
pub mod report;
pub mod run;
pub mod schema;
mod session;
pub mod spec;
pub mod verdict;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use report::ScanReport;
pub use run::run;
pub use spec::ScanSpec;

/// The scan's phases, in the order they run.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Hygiene,
    Baseline,
    Saturation,
    Contract,
    Faults,
}

impl Phase {
    pub const ALL: [Self; 5] = [
        Self::Hygiene,
        Self::Baseline,
        Self::Saturation,
        Self::Contract,
        Self::Faults,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Hygiene => "hygiene",
            Self::Baseline => "baseline",
            Self::Saturation => "saturation",
            Self::Contract => "contract",
            Self::Faults => "faults",
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == text.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|p| p.name()).collect();
                crate::fields::unknown_field(text.trim(), &names)
            })
    }
}

/// Why a scan could not run (its findings are not errors).
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error(transparent)]
    Policy(#[from] policy::PolicyError),
    #[error(transparent)]
    Previous(#[from] guide::PreviousError),
    #[error(transparent)]
    Server(#[from] crate::mcp_chaos::ChaosError),
    #[error("the server did not finish its handshake and listing within {} s", .0.as_secs())]
    StartTimeout(Duration),
    #[error("the server's tool listing cannot be read: {0}")]
    Listing(String),
    #[error("the server lists no tools: there is nothing to scan")]
    NoTools,
    #[error("tools[{index}]: {message}")]
    UnknownTool { index: usize, message: String },
    #[error("arguments: {0}")]
    Arguments(String),
    #[error("{0}")]
    Verify(String),
    #[error("cannot write {path}: {error}")]
    Write { path: String, error: String },
    #[error("the scan was cancelled; the server was stopped")]
    Cancelled,
}
