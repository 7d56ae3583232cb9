//! MCP tools of the scenario family.

use rmcp::handler::server::router::tool::ToolRouter;

use super::FaultServer;

impl FaultServer {
    pub(super) fn scenario_router() -> ToolRouter<Self> {
        ToolRouter::new()
    }
}
