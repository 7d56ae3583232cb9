//! `fault`: reliability tools for coding assistants.
//!
//! The binary's `agent tool` command serves these over MCP on stdio; `run` exposes the
//! fault-injecting proxy on the command line. Each module is one concern (see docs/src/architecture.md).

pub mod advice;
pub mod capacity;
pub mod cli;
pub mod code;
pub mod fields;
pub mod files;
pub mod http1;
pub mod impact;
pub mod index;
pub mod lenient;
pub mod llm;
pub mod load;
pub mod logging;
pub mod mcp;
pub mod mcp_chaos;
pub mod mcp_load;
pub mod mcp_proxy;
pub mod mcp_test_server;
pub mod mcp_wire;
pub mod metrics;
pub mod proxy;
pub mod redact;
pub mod report;
pub mod scan;
pub mod seeded;
pub mod serve;
pub mod timer;
pub mod tls;
