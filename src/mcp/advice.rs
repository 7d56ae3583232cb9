//! MCP tools of the advice family.

use rmcp::handler::server::router::tool::ToolRouter;

use super::FaultServer;

impl FaultServer {
    pub(super) fn advice_router() -> ToolRouter<Self> {
        ToolRouter::new()
    }
}
