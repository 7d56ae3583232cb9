//! The MCP surface of `fault agent tool`: tool inputs, descriptions and result shaping; domain work lives in the
//! other modules. One file per tool family, each a router declared with its tools' facts ([`family`]);
//! [`handler`] answers the requests, [`arguments`] reads a call's arguments against its schema first.

mod advice;
mod arguments;
mod capacity;
pub mod chaos_fields;
mod code;
mod family;
mod handler;
mod impact;
mod impact_input;
mod index;
mod instructions;
mod mcp_chaos;
mod mcp_chaos_input;
mod scan;
mod scenario;
pub mod scenario_fields;

use std::{collections::HashMap, sync::Arc};

use rmcp::handler::server::router::tool::ToolRouter;
use serde_json::Value;

use crate::{
    index::{IndexSettings, StoreSettings},
    llm::LlmSettings,
    serve::{ServeError, Transport, TransportArgs, serve_on, tasks::Tasks},
};
// The result shaping every tool family uses.
pub(crate) use crate::serve::{
    json_and_structured, output_schema, text_and_structured, tool_error,
};
use family::{Family, ToolFacts};
use scenario::{with_chart, with_view};

/// Longest snippet the LLM tools take, in characters: one function or excerpt, not a whole tree.
pub(crate) const MAX_SNIPPET_CHARS: u32 = 200_000;
/// Longest function name, in characters.
pub(crate) const MAX_NAME_CHARS: u32 = 1_000;
/// Longest path, in characters (Linux's PATH_MAX).
pub(crate) const MAX_PATH_CHARS: u32 = 4_096;

/// What the agent's tools are built with: the models, where new indexes are kept, and scenario bounds.
#[derive(Debug, Clone, Default)]
pub struct AgentSettings {
    pub llm: LlmSettings,
    pub store: StoreSettings,
    /// How the source index batches its work.
    pub index: IndexSettings,
    /// The operator's bounds on impact scenarios: load caps and where proxies may listen.
    pub scenario: crate::impact::Limits,
}

/// The `fault agent tool` MCP server.
#[derive(Clone)]
pub struct FaultServer {
    settings: Arc<AgentSettings>,
    tool_router: ToolRouter<Self>,
    /// One scenario at a time: they bind ports and measure latency.
    scenario_slot: scenario::ScenarioSlot,
    /// What is true of each tool, by name, from its family.
    facts: Arc<HashMap<String, ToolFacts>>,
    /// The calls run as tasks, one store for every session of this process.
    tasks: Tasks,
}

impl FaultServer {
    pub fn new(settings: AgentSettings) -> Self {
        let families = Self::families();
        let facts = Arc::new(family::facts_by_tool(&families));
        let mut tool_router = families
            .into_iter()
            .fold(ToolRouter::new(), |all, family| all + family.router);
        for route in tool_router.map.values_mut() {
            let mut schema = Value::Object((*route.attr.input_schema).clone());
            arguments::close_objects(&mut schema);
            if let Value::Object(schema) = schema {
                route.attr.input_schema = Arc::new(schema);
            }
        }
        Self {
            settings: Arc::new(settings),
            tool_router,
            scenario_slot: scenario::ScenarioSlot::default(),
            facts,
            tasks: Tasks::default(),
        }
    }

    /// The tools, one router per family, each with what is true of its tools.
    fn families() -> [Family; 7] {
        [
            Family::new(Self::code_router(), ToolFacts::QUICK),
            Family::new(Self::index_router(), ToolFacts::LONG),
            Family::new(Self::advice_router(), ToolFacts::QUICK),
            Family::new(Self::impact_router(), ToolFacts::SCENARIO),
            Family::new(Self::capacity_router(), ToolFacts::SCENARIO),
            Family::new(Self::mcp_chaos_router(), ToolFacts::SCENARIO),
            Family::new(Self::scan_router(), ToolFacts::MEASUREMENT),
        ]
    }

    /// What is true of tool `name` (a name no family routes: nothing).
    fn facts(&self, name: &str) -> ToolFacts {
        self.facts.get(name).copied().unwrap_or_default()
    }

    /// Every tool as `tools/list` gives it to a client without MCP Apps, family by family.
    pub fn tools() -> Vec<rmcp::model::Tool> {
        let server = Self::new(AgentSettings::default());
        Self::tool_names()
            .iter()
            .filter_map(|name| server.tool_router.get(name).cloned())
            .collect()
    }

    /// The tools that run no scenario (code, index, advice), as [`Self::tools`] gives them: their input is
    /// their schema alone, from which the book's table of their fields is rendered.
    pub fn tools_without_scenario() -> Vec<rmcp::model::Tool> {
        let facts = family::facts_by_tool(&Self::families());
        Self::tools()
            .into_iter()
            .filter(|tool| facts.get(tool.name.as_ref()).is_some_and(|f| !f.slot))
            .collect()
    }

    /// The names of every tool, family by family.
    pub fn tool_names() -> Vec<String> {
        Self::families()
            .iter()
            .flat_map(|family| family.router.list_all())
            .map(|tool| tool.name.into_owned())
            .collect()
    }

    pub fn settings(&self) -> &AgentSettings {
        &self.settings
    }
}

/// Serves the fault tools on the transport of `transport`: stdin/stdout until the client closes stdin, or
/// Streamable HTTP until SIGINT/SIGTERM.
pub async fn serve(settings: AgentSettings, transport: &TransportArgs) -> Result<(), ServeError> {
    if transport.transport == Transport::Stdio && transport.http_only_flag_given().is_none() {
        tracing::info!(
            version = env!("CARGO_PKG_VERSION"),
            "fault agent tool: serving MCP on stdio"
        );
    }
    crate::index::store::vectors::set_cache_ceiling(settings.store.vector_cache_bytes);
    serve_on("fault agent tool", transport, FaultServer::new(settings)).await
}
