//! Our MCP server (`fault agent tool`) as a client meets it: over stdio and HTTP, its errors, bad input and tasks.

mod errors;
mod examples;
pub mod http;
mod robustness;
mod server;
mod stdio;
pub mod tasks;
