//! The tool families: each router declared with what is true of its tools beyond their schemas, so the server
//! reads a tool's facts from where it is routed, never from a list of names.

use std::collections::HashMap;

use rmcp::handler::server::router::tool::ToolRouter;

use super::FaultServer;

/// What is true of every tool of a family.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ToolFacts {
    /// Runs for up to minutes: called as a task when the request declares the MCP Tasks extension.
    pub long_running: bool,
    /// Answers with a scenario report, which has an MCP App view (`_meta.ui` in `tools/list`).
    pub report: bool,
    /// Binds ports and measures latency: runs only while it holds the scenario slot, one such call at a time.
    pub slot: bool,
}

impl ToolFacts {
    /// Answers within the call: reading code, asking a model.
    pub const QUICK: Self = Self {
        long_running: false,
        report: false,
        slot: false,
    };
    /// Long, but measures nothing: indexing a tree through a remote embeddings API.
    pub const LONG: Self = Self {
        long_running: true,
        ..Self::QUICK
    };
    /// A scenario: long, measured, reported with a view.
    pub const SCENARIO: Self = Self {
        long_running: true,
        report: true,
        slot: true,
    };
    /// A measurement without a view: long and measured.
    pub const MEASUREMENT: Self = Self {
        long_running: true,
        report: false,
        slot: true,
    };
}

/// A family's router and its tools' facts.
pub(super) struct Family {
    pub router: ToolRouter<FaultServer>,
    pub facts: ToolFacts,
}

impl Family {
    pub fn new(router: ToolRouter<FaultServer>, facts: ToolFacts) -> Self {
        Self { router, facts }
    }
}

/// Every tool's facts, by tool name, from the families.
pub(super) fn facts_by_tool(families: &[Family]) -> HashMap<String, ToolFacts> {
    families
        .iter()
        .flat_map(|family| {
            family
                .router
                .list_all()
                .into_iter()
                .map(|tool| (tool.name.into_owned(), family.facts))
        })
        .collect()
}
