//! `fault mcp-proxy`: its arguments and entry point.

use std::path::PathBuf;

use clap::Args;

use super::plan::{Mode, Plan, PlanError};
use super::relay::{self, RelayError, RelayOptions};

/// Arguments of `fault mcp-proxy [--plan FILE] [--seed N] [--events FILE] [--strict] -- COMMAND [ARGS…]`.
#[derive(Debug, Args)]
pub struct McpProxyArgs {
    /// Fault plan, YAML or JSON (`seed`, `faults: [...]`); the mcp-chaos, mcptest and mcp-chaos-monkey
    /// formats load too. Without a plan every message passes untouched.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,

    /// Seed of every decision (overrides the plan's `seed`).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Write one JSON line per tool call here (decision, roll, outcomes, latency, cancellation).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,

    /// Fail closed: when the proxy cannot apply a fault, answer the client with a JSON-RPC error instead of
    /// passing the original message on.
    #[arg(long)]
    pub strict: bool,

    /// Print the normalised plan (YAML) and exit.
    #[arg(long)]
    pub print_plan: bool,

    /// The real MCP server's command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum McpProxyError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Relay(#[from] RelayError),
}

/// Runs `fault mcp-proxy`.
pub async fn run(args: McpProxyArgs) -> Result<(), McpProxyError> {
    let mut plan = match &args.plan {
        Some(path) => Plan::load(path)?,
        None => Plan::default(),
    };
    if let Some(seed) = args.seed {
        plan.seed = seed;
    }
    if args.strict {
        plan.mode = Mode::Strict;
    }
    if args.print_plan {
        print!("{}", plan.to_yaml()); // stdout-ok: --print-plan's output, not an MCP session
        return Ok(());
    }
    let command = if args.command.is_empty() {
        plan.command.clone()
    } else {
        args.command
    };
    tracing::info!(
        "mcp-proxy: {} fault(s), seed {}, server `{}`",
        plan.faults.len(),
        plan.seed,
        command.join(" ")
    );
    relay::run(RelayOptions {
        plan,
        command,
        events: args.events,
    })
    .await?;
    Ok(())
}
