//! `fault mcp-test-server`: an MCP server (stdio or Streamable HTTP) whose tools fail, stall and answer on demand, so that
//! `fault mcp-proxy`, MCP clients and gateways can be tested against known behaviour.
//!
//! One file per tool family, each a router the server adds together (its tools and their descriptions are in
//! the family's file; the instructions and `--tools` read them from the router). [`handler`] answers the
//! requests, [`command`] is the command line; `arguments` reads tool arguments strictly; `roll` is the
//! deterministic roll of `flaky`.

mod arguments;
mod command;
mod data;
pub mod defects;
mod failure;
mod handler;
mod orders;
mod roll;
mod streaming;
mod tasks;

use std::sync::{Arc, atomic::AtomicU64};

use rmcp::{
    handler::server::router::tool::ToolRouter,
    model::{CallToolResult, JsonObject},
};
use schemars::JsonSchema;

pub use command::{TestServerArgs, serve};
pub use failure::ErrorCategory;

use arguments::{ArgumentError, Arguments};

/// The code a handler ends with when the client cancels (LSP's RequestCancelled). rmcp sends no response for
/// a cancelled request, as MCP asks, so no client sees it; it only ends the handler.
const CANCELLED_CODE: i32 = -32800;

/// The `fault mcp-test-server` MCP server.
#[derive(Clone)]
pub struct TestServer {
    tool_router: ToolRouter<Self>,
    log_calls: bool,
    /// Orders `create_order` created, shared by every session of the server.
    orders: Arc<AtomicU64>,
    /// The calls run as tasks, one store for every session of the server.
    tasks: crate::serve::tasks::Tasks,
    /// The planted defects (none when the defect tools are not listed).
    defects: defects::DefectState,
}

impl TestServer {
    /// The server; `defects`: list the defect tools, with these planted.
    pub fn new(log_calls: bool, planted: Option<defects::Defects>) -> Self {
        let mut tool_router = Self::failure_router()
            + Self::data_router()
            + Self::orders_router()
            + Self::streaming_router()
            + Self::tasks_router();
        if planted.is_some() {
            tool_router += Self::defects_router();
        }
        Self {
            tool_router,
            log_calls,
            orders: Arc::new(AtomicU64::new(0)),
            tasks: crate::serve::tasks::Tasks::new(tasks::limits()),
            defects: defects::DefectState::new(planted.unwrap_or_default()),
        }
    }
}

/// The input schema of a tool whose arguments are read by [`Arguments`] and documented by `T`.
fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_type::<T>()
}

/// Reads a call's arguments with `read`, refusing unknown ones.
fn read_arguments<T>(
    raw: JsonObject,
    read: impl FnOnce(&mut Arguments) -> Result<T, ArgumentError>,
) -> Result<T, ArgumentError> {
    let mut arguments = Arguments::new(raw);
    let value = read(&mut arguments)?;
    arguments.finish()?;
    Ok(value)
}

/// A refusal of a call's arguments: an `isError` result naming the field (input validation is an execution
/// error in MCP, not a protocol error).
fn invalid_arguments(error: ArgumentError) -> CallToolResult {
    crate::serve::tool_error(format!("invalid arguments: {error}"))
}
