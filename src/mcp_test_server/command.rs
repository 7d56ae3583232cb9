//! The command `fault mcp-test-server`: its options, and serving the tools it lists.

use clap::Args;

use super::{TestServer, defects};
use crate::serve::{Transport, TransportArgs};

/// Options of `fault mcp-test-server`.
#[derive(Debug, Clone, Args)]
pub struct TestServerArgs {
    #[command(flatten)]
    pub transport: TransportArgs,

    /// Log every tool call (tool, arguments, outcome, duration) at info level to stderr (or --log-file).
    #[arg(long)]
    pub log_calls: bool,

    /// Also list the defect tools (set_volume, lookup_user, export_report, search_docs, get_price), with these
    /// defects planted: `all`, `none`, or names from lenient-range, null-crash, holds-others, saturates,
    /// wrong-output, separated by commas.
    #[arg(long, value_name = "DEFECTS")]
    pub defects: Option<defects::Defects>,

    /// List only these tools (names separated by commas), e.g. to show a scanner the defect tools alone.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub tools: Vec<String>,
}

/// Serves the test tools on stdin/stdout until the client closes stdin, or over Streamable HTTP until
/// SIGINT/SIGTERM.
pub async fn serve(args: TestServerArgs) -> Result<(), crate::serve::ServeError> {
    if args.transport.transport == Transport::Stdio
        && args.transport.http_only_flag_given().is_none()
    {
        tracing::info!(
            version = env!("CARGO_PKG_VERSION"),
            ?args,
            "fault mcp-test-server: serving MCP on stdio"
        );
    }
    let mut server = TestServer::new(args.log_calls, args.defects);
    if !args.tools.is_empty() {
        let listed: Vec<String> = server
            .tool_router
            .map
            .keys()
            .map(|k| k.to_string())
            .collect();
        if let Some(unknown) = args.tools.iter().find(|t| !listed.contains(t)) {
            let listed: Vec<&str> = listed.iter().map(String::as_str).collect();
            return Err(crate::serve::ServeError::Start(format!(
                "--tools: {}",
                crate::fields::unknown_field(unknown, &listed)
            )));
        }
        server
            .tool_router
            .map
            .retain(|name, _| args.tools.iter().any(|t| t == name));
    }
    crate::serve::serve_on("fault mcp-test-server", &args.transport, server).await
}
