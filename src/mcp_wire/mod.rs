//! MCP on the wire, shared by everything here that relays it or speaks it as a client (`fault mcp-proxy`'s
//! fronts, the chaos scenario's driver): JSON-RPC envelopes and the messages we write ([`jsonrpc`]),
//! newline-delimited messages read with a bound ([`lines`]), server-sent events ([`sse`]), the HTTP connection to a server's endpoint with TLS and TCP faults
//! ([`endpoint`]), one Streamable HTTP client session ([`http_session`]), one MCP client over a byte
//! stream or HTTP ([`client`]) and how it opens its session ([`handshake`]), and the MCP Tasks extension:
//! its vocabulary ([`tasks`]) and a client's following of a task to its end ([`task_client`]).

/// The MCP protocol revision we speak as a client: the `protocolVersion` of our `initialize` (over
/// Streamable HTTP, [`http_session`] then sends the revision the server answered in `mcp-protocol-version`).
pub const PROTOCOL_VERSION: &str = "2025-06-18";

pub mod client;
pub mod endpoint;
pub mod handshake;
pub mod http_session;
pub mod jsonrpc;
pub mod lines;
pub mod sse;
pub mod task_client;
pub mod tasks;

#[cfg(test)]
mod tests {
    #[test]
    fn our_protocol_version_is_one_the_mcp_sdk_knows() {
        assert!(
            rmcp::model::ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .any(|known| known.as_str() == super::PROTOCOL_VERSION)
        );
    }
}
