//! MCP tools of the code family.

use rmcp::handler::server::router::tool::ToolRouter;

use super::FaultServer;

impl FaultServer {
    pub(super) fn code_router() -> ToolRouter<Self> {
        ToolRouter::new()
    }
}
