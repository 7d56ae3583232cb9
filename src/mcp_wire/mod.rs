//! MCP on the wire, shared by everything here that relays it or speaks it as a client (`fault mcp-proxy`'s
//! fronts, the chaos scenario's driver): JSON-RPC envelopes and the messages we write ([`jsonrpc`]),
//! newline-delimited messages read with a bound ([`lines`]), server-sent events ([`sse`]), the HTTP connection to a server's endpoint with TLS and TCP faults
//! ([`endpoint`]), one Streamable HTTP client session ([`http_session`]) and one MCP client over a byte
//! stream or HTTP ([`client`]).

pub mod client;
pub mod endpoint;
pub mod http_session;
pub mod jsonrpc;
pub mod lines;
pub mod sse;
