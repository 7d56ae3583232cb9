//! The integration tests, one binary so the library is linked once. Each folder is one area; `support/` starts
//! real servers on 127.0.0.1 and drives the built `fault` binary over MCP.

mod support;

mod advice;
mod code;
mod docs;
mod index;
mod llm;
mod load;
mod mcp;
mod mcp_chaos;
mod mcp_proxy;
mod proxy;
mod report;
mod scenario;
mod structure;
