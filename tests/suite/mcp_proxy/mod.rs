//! `fault mcp-proxy` end to end: its faults over stdio and Streamable HTTP, on the wire, as real clients see them.

mod determinism;
pub mod faults;
pub mod http;
mod http_session;
mod http_upstream;
mod lies;
mod peers;
mod python;
mod tasks;
mod wire;
