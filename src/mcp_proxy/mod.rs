//! `fault mcp-proxy`: chaos for the MCP tool-call plane. A stdio MCP server that starts the real server as a
//! child and relays newline-delimited JSON-RPC both ways, injecting the faults of a plan into chosen calls:
//! latency, hangs, timeouts, errors, rate limits, malformed lines, dropped or refused connections, schema
//! drift, truncation, registry drift. Decisions are seeded per (fault, tool, call ordinal), the client's
//! cancellations end injected waits, and every call can be recorded as a JSON line.
//!
//! - [`stdio`]: the stdio relay (client side, server side, the core and its table of calls in flight);
//!   [`bridge`]: its server when that is a Streamable HTTP endpoint;
//! - [`http`]: the Streamable HTTP front (`--upstream URL --listen ADDR`); both reach an HTTP server through
//!   [`crate::mcp_wire`];
//! - [`engine`]: what both fronts share per call (decision, composed faults, rewrite, event);
//! - [`plan`], [`trigger`]: the plan file (and the peer tools' formats) and when a fault applies; `gates`: the
//!   plan's gates as the budgets the chaos report judges;
//! - [`faults`]: one file per fault, registered in one list;
//! - [`decide`]: deterministic decisions (keyed by [`crate::seeded`]); [`learned`]: what the answers taught (tasks' tools,
//!   tools' questions); [`events`]: the events file.

pub mod bridge;
pub mod cli;
pub mod decide;
pub mod engine;
pub mod events;
pub mod faults;
mod gates;
pub mod http;
pub mod learned;
pub mod plan;
pub mod recording;
pub mod stdio;
pub mod trigger;

pub use cli::{McpProxyArgs, run};
