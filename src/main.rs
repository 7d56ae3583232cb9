use std::process::ExitCode;

use clap::Parser;
use fault::cli::{AgentSubcommand, Cli, Command};

fn main() -> ExitCode {
    // Syntax trees are built on two threads and freed on a third, which mimalloc does faster than glibc's
    // malloc (src/code/allocator.rs). SAFETY: the first thing the process does, on its only thread: no
    // tree-sitter object exists yet.
    unsafe { fault::code::allocator::use_mimalloc_for_syntax_trees() };
    let cli = Cli::parse();
    if let Err(e) = fault::logging::init(cli.log_file.as_deref(), &cli.log_level) {
        eprintln!("fault: {e}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fault: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        match cli.command {
            Command::Run(args) => fault::proxy::cli::run(*args)
                .await
                .map_err(|e| e.to_string()),
            Command::McpProxy(args) => fault::mcp_proxy::run(*args)
                .await
                .map_err(|e| e.to_string()),
            Command::McpTestServer(args) => fault::mcp_test_server::serve(args)
                .await
                .map_err(|e| e.to_string()),
            Command::Agent(agent) => match agent.command {
                AgentSubcommand::Tool(tool) => {
                    let options = agent.options.resolve_env().map_err(|e| e.to_string())?;
                    tracing::info!(options = ?options.redacted(), "fault agent tool: options");
                    fault::mcp::serve(options.settings(), &tool.transport)
                        .await
                        .map_err(|e| e.to_string())
                }
            },
        }
    });
    // Background tasks (e.g. a blocked stdin reader) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("fault: {e}");
            ExitCode::FAILURE
        }
    }
}
