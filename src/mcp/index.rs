//! MCP tools of the index family.

use rmcp::handler::server::router::tool::ToolRouter;

use super::FaultServer;

impl FaultServer {
    pub(super) fn index_router() -> ToolRouter<Self> {
        ToolRouter::new()
    }
}
