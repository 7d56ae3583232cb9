//! MCP chaos scenarios: what faults in the tool-call plane did to a client, as numbers.
//!
//! - [`record`]: one record per tool call (what the client received, judged against the tool's own
//!   `outputSchema`), the unit every figure is computed from;
//! - [`report`], [`markdown`]: the report's data (per tool and overall: outcomes, availability, correctness,
//!   latency with and without injection, client behaviour, tasks) and its markdown;
//! - [`head_of_line`]: whether calls of a fast tool waited behind calls of a slower one;
//! - [`session`]: records of a live `fault mcp-proxy --report` session, fed by the relay;
//! - [`client`], [`http_client`], [`scenario`]: `fault_run_mcp_chaos_scenario`, which starts a server behind
//!   `fault mcp-proxy` (or calls one at a URL over Streamable HTTP) and drives calls at it with a client policy
//!   (timeout and cancel, retries, backoff), from one client or many on an open-model schedule.

pub mod client;
pub mod http_client;
pub mod http_proxy;
pub mod scenario;
