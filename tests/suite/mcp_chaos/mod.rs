//! Chaos on MCP servers: the chaos scenario, its judgements and load, `fault mcp-scan` and `fault mcp-test-server`.

mod judgements;
mod load;
mod robustness;
mod scan;
pub mod scenario;
pub mod test_server;
mod test_server_tasks;
