//! Command line: global logging flags, `run` (the fault proxy), `agent [OPTIONS] tool [--transport stdio|http]`
//! (the MCP server) and `report merge` (results of one scenario added up).

use std::{path::PathBuf, process::ExitCode, time::Duration};

use clap::{Args, Parser, Subcommand, ValueEnum};
use url::Url;

use crate::{
    impact,
    index::{self, IndexSettings, StoreChoice, StoreSettings, store::qdrant::ClusterLayout},
    llm::{self, LlmSettings, Provider},
    mcp::AgentSettings,
    serve::TransportArgs,
};

/// The whole of `fault`'s `main` after its allocator set-up: parse the command line, start logging and the
/// runtime, run the command. It lives in the library so that the code of every command is generated once, with
/// the rest of the library (a binary crate generates again each generic and async body it reaches).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = crate::logging::init(cli.log_file.as_deref(), &cli.log_level) {
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
    if let Command::McpScan(args) = cli.command {
        let code = runtime.block_on(crate::scan::cli::run(*args));
        runtime.shutdown_timeout(std::time::Duration::from_millis(200));
        return code;
    }
    let outcome = runtime.block_on(async move {
        match cli.command {
            Command::McpScan(_) => Ok(()),
            Command::Run(args) => crate::proxy::cli::run(*args)
                .await
                .map_err(|e| e.to_string()),
            Command::McpProxy(args) => crate::mcp_proxy::run(*args)
                .await
                .map_err(|e| e.to_string()),
            Command::McpTestServer(args) => crate::mcp_test_server::serve(args)
                .await
                .map_err(|e| e.to_string()),
            Command::Report(report) => match report.command {
                ReportSubcommand::Merge(args) => {
                    crate::report::merge::run(&args).map_err(|e| e.to_string())
                }
            },
            Command::Agent(agent) => match agent.command {
                AgentSubcommand::Tool(tool) => {
                    let options = agent.options.resolve_env().map_err(|e| e.to_string())?;
                    tracing::info!(options = ?options.redacted(), "fault agent tool: options");
                    crate::mcp::serve(options.settings(), &tool.transport)
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

/// Reliability tools for coding assistants, and a fault-injecting TCP proxy.
#[derive(Debug, Parser)]
#[command(name = "fault", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Write logs to this file instead of stderr (stdout is never used for logs).
    #[arg(long, env = "FAULT_LOG_FILE", global = true, value_name = "PATH")]
    pub log_file: Option<PathBuf>,

    /// Log filter: a level (error, warn, info, debug, trace) or a tracing directive such as `fault=debug`.
    #[arg(
        long,
        env = "FAULT_LOG_LEVEL",
        global = true,
        value_name = "FILTER",
        default_value = "info"
    )]
    pub log_level: String,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the fault-injecting TCP proxy until --duration elapses or Ctrl-C.
    Run(Box<crate::proxy::cli::RunArgs>),
    /// AI agent tools for coding assistants.
    Agent(Box<AgentCommand>),
    /// Chaos for MCP tool calls: run COMMAND as the real stdio MCP server and relay to it, injecting the
    /// faults of --plan (latency, hang, timeout, error, rate_limit, schema_drift, ...).
    ///
    /// In an MCP client config, swap `"command": "python", "args": ["server.py"]` for
    /// `"command": "fault", "args": ["mcp-proxy", "--plan", "/abs/plan.yaml", "--", "python", "server.py"]`.
    McpProxy(Box<crate::mcp_proxy::McpProxyArgs>),
    /// Serve MCP tools with known failure modes (errors, stalls, flaky answers, tasks, planted defects): a known
    /// target for MCP clients, proxies and `fault mcp-proxy`. Its instructions at `initialize` list every tool.
    McpTestServer(crate::mcp_test_server::TestServerArgs),
    /// Scan an MCP server (COMMAND after `--`, or --url): hygiene of its schemas, baseline latency,
    /// saturation, and its contract probed with invalid input; prints a scored verdict and writes a fix guide
    /// (--guide), the result (--result) and JUnit (--junit). Exit 0 pass, 1 fail or no verdict, 2 could not run.
    McpScan(Box<crate::scan::cli::ScanArgs>),
    /// Scenario results: `merge` adds up results of one impact scenario from several runs or machines.
    Report(ReportCommand),
}

#[derive(Debug, Args)]
pub struct ReportCommand {
    #[command(subcommand)]
    pub command: ReportSubcommand,
}

#[derive(Debug, Subcommand)]
pub enum ReportSubcommand {
    /// Merge impact results (JSON) of the same scenario exactly: histograms added, counts summed, SLOs, phases
    /// and recovery judged again on the merged data. Prints the merged result (JSON) on stdout.
    Merge(crate::report::merge::MergeArgs),
}

#[derive(Debug, Args)]
pub struct AgentCommand {
    #[command(flatten)]
    pub options: AgentOptions,

    #[command(subcommand)]
    pub command: AgentSubcommand,
}

#[derive(Debug, Subcommand)]
pub enum AgentSubcommand {
    #[command(about = TOOL_ABOUT, long_about = tool_long_about())]
    Tool(ToolArgs),
}

const TOOL_ABOUT: &str = "Serve the fault tools over MCP on stdin/stdout (start it from an MCP client such as \
Cursor or Claude), or over Streamable HTTP with --transport http";

/// The long help of `fault agent tool`, naming every tool the server routes. Listing them builds every tool's
/// schema, milliseconds at each start of any command; only `--help` shows this text, so the list is built then.
fn tool_long_about() -> String {
    let asked = std::env::args_os().any(|arg| arg == "--help" || arg == "help");
    let tools = if asked {
        crate::mcp::FaultServer::tool_names().join(", ")
    } else {
        "every fault tool".to_owned()
    };
    format!(
        "{TOOL_ABOUT}.\n\nTools: {tools}. No API key, network or database is needed to start; the LLM tools read \
their key (OPENAI_API_KEY, OPENROUTER_API_KEY, or FAULT_LLM_API_KEY for a custom base URL) when they are \
called.\n\nWith `--transport http` the same tools are served over Streamable HTTP (default \
http://127.0.0.1:8000/mcp) for clients configured with a URL."
    )
}

/// Options of `fault agent tool`.
#[derive(Debug, Clone, Args)]
pub struct ToolArgs {
    #[command(flatten)]
    pub transport: TransportArgs,
}

/// The LLM provider behind the LLM and indexing tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LlmClient {
    /// OpenAI (key: OPENAI_API_KEY), or any OpenAI-compatible server given with --llm-base-url (key:
    /// FAULT_LLM_API_KEY, optional).
    #[value(name = "openai", alias = "open-ai")]
    OpenAi,
    /// OpenRouter (key: OPENROUTER_API_KEY).
    #[value(name = "open-router", alias = "openrouter")]
    OpenRouter,
    /// Ollama (host: --llm-base-url, else OLLAMA_HOST, else http://localhost:11434).
    #[value(name = "ollama")]
    Ollama,
}

/// Where the source index is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum VectorStoreKind {
    /// The Qdrant server at --qdrant-url, or at http://localhost:6334 when one answers there; else embedded.
    #[default]
    Auto,
    /// An embedded store on disk, in the per-user data directory.
    Embedded,
    /// A Qdrant server (--qdrant-url, default http://localhost:6334).
    Qdrant,
}

/// Options of `fault agent`; accepted before and after `tool`.
#[derive(Debug, Clone, Args)]
pub struct AgentOptions {
    /// LLM provider: openai, open-router or ollama.
    #[arg(
        long,
        env = "FAULT_AGENT_CLIENT",
        global = true,
        value_enum,
        default_value = "openai"
    )]
    pub llm_client: LlmClient,

    /// Chat model used by the scoring and suggestion tools.
    #[arg(
        long,
        env = "FAULT_AGENT_PROMPT_REASONING_MODEL",
        global = true,
        default_value = llm::DEFAULT_CHAT_MODEL
    )]
    pub llm_prompt_reasoning_model: String,

    /// Embedding model used by the source index.
    #[arg(
        long,
        env = "FAULT_AGENT_EMBED_MODEL",
        global = true,
        default_value = llm::DEFAULT_EMBED_MODEL
    )]
    pub llm_embed_model: String,

    /// Dimension of the embedding model's vectors.
    #[arg(long, env = "FAULT_AGENT_EMBED_MODEL_DIMENSION", global = true, default_value_t = llm::DEFAULT_EMBED_DIMENSION,
          value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub llm_embed_model_dim: u32,

    /// Chunks sent in one embeddings request and stored in one batch: lower it for a provider that limits the
    /// inputs of a request, or so that an interrupted index has less to embed again.
    #[arg(long, env = "FAULT_AGENT_EMBED_BATCH_SIZE", global = true, value_name = "N",
          default_value_t = index::DEFAULT_EMBED_BATCH_SIZE,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(index::MAX_EMBED_BATCH_SIZE)))]
    pub llm_embed_batch_size: u32,

    /// Base URL of the chat API (an OpenAI-compatible server, or the Ollama host).
    #[arg(long, env = "FAULT_AGENT_LLM_BASE_URL", global = true, value_parser = parse_http_url)]
    pub llm_base_url: Option<Url>,

    /// Base URL of the embeddings API; defaults to --llm-base-url.
    #[arg(long, env = "FAULT_AGENT_EMBED_BASE_URL", global = true, value_parser = parse_http_url)]
    pub llm_embed_base_url: Option<Url>,

    /// Qdrant gRPC URL, e.g. http://localhost:6334 (also read from QDRANT_URL); several nodes of a cluster
    /// separated by commas, asked in turn while one cannot be reached.
    #[arg(long, env = "FAULT_QDRANT_URL", global = true, value_parser = parse_http_url,
          value_delimiter = ',', value_name = "URL[,URL...]")]
    pub qdrant_url: Vec<Url>,

    /// Shards of a new Qdrant collection (its `shard_number`); Qdrant's default otherwise. For a cluster.
    #[arg(long, env = "FAULT_QDRANT_SHARDS", global = true, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub qdrant_shards: Option<u32>,

    /// Copies of each shard of a new Qdrant collection, on different nodes (`replication_factor`; default 1).
    #[arg(long, env = "FAULT_QDRANT_REPLICATION_FACTOR", global = true, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub qdrant_replication_factor: Option<u32>,

    /// Copies that must apply a write before Qdrant acknowledges it (`write_consistency_factor`; default 1); at
    /// most the replication factor.
    #[arg(long, env = "FAULT_QDRANT_WRITE_CONSISTENCY", global = true, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub qdrant_write_consistency: Option<u32>,

    /// How long one request to Qdrant may take before the index call ends with an error naming the node,
    /// e.g. 60s, 2m.
    #[arg(long, env = "FAULT_QDRANT_TIMEOUT", global = true, value_name = "DURATION",
          default_value = "60s", value_parser = parse_qdrant_timeout)]
    pub qdrant_timeout: Duration,

    /// Vector store for the source index: auto, embedded or qdrant.
    #[arg(
        long,
        env = "FAULT_VECTOR_STORE",
        global = true,
        value_enum,
        default_value = "auto"
    )]
    pub vector_store: VectorStoreKind,

    /// Ceiling, in MiB, of the embedded store's in-memory vector copies of all projects together: the least
    /// recently searched projects are released to stay under it, and a project larger than it is searched
    /// from disk. 0 keeps no copy.
    #[arg(
        long,
        env = "FAULT_VECTOR_CACHE_MIB",
        global = true,
        default_value_t = DEFAULT_VECTOR_CACHE_MIB,
        value_parser = clap::value_parser!(u64).range(0..=1024 * 1024)
    )]
    pub vector_cache_mib: u64,

    /// Let impact scenarios' `proxies` listen on addresses other than loopback (reachable from the network,
    /// relaying to any host this machine reaches). Off: loopback only.
    #[arg(long, global = true)]
    pub allow_public_proxies: bool,

    /// Cap on an impact scenario's total load, num_clients × rps, in requests per second.
    #[arg(long, env = "FAULT_MAX_SCENARIO_RPS", global = true, value_name = "RPS",
          default_value_t = impact::DEFAULT_MAX_SCENARIO_RPS,
          value_parser = clap::value_parser!(u64).range(1..=impact::CEILING_SCENARIO_RPS))]
    pub max_scenario_rps: u64,

    /// Cap on an impact or MCP chaos scenario's load duration, e.g. 2m, 30s (at most 1h).
    #[arg(long, env = "FAULT_MAX_SCENARIO_DURATION", global = true, value_name = "DURATION",
          default_value = "2m", value_parser = parse_scenario_duration)]
    pub max_scenario_duration: Duration,
}

/// Default of `--vector-cache-mib`.
pub const DEFAULT_VECTOR_CACHE_MIB: u64 =
    crate::index::store::vectors::DEFAULT_CACHE_CEILING / (1024 * 1024);

impl AgentOptions {
    /// Fills what clap cannot express: `QDRANT_URL` as a second variable for the Qdrant URL.
    pub fn resolve_env(mut self) -> Result<Self, String> {
        if self.qdrant_url.is_empty()
            && let Ok(raw) = std::env::var("QDRANT_URL")
            && !raw.trim().is_empty()
        {
            self.qdrant_url = raw
                .split(',')
                .map(|url| parse_http_url(url.trim()).map_err(|e| format!("QDRANT_URL: {e}")))
                .collect::<Result<_, _>>()?;
        }
        // Checked here rather than in clap's parser, whose error would echo the query (it may carry a key).
        let named_urls = [
            ("--llm-base-url", self.llm_base_url.as_ref()),
            ("--llm-embed-base-url", self.llm_embed_base_url.as_ref()),
        ]
        .into_iter()
        .chain(
            self.qdrant_url
                .iter()
                .map(|url| ("--qdrant-url", Some(url))),
        );
        for (option, url) in named_urls {
            if let Some(url) = url
                && (url.query().is_some() || url.fragment().is_some())
            {
                return Err(format!(
                    "{option}: '{}' was given with a query string or fragment (not shown); a base URL is a \
                     scheme, host, port and path (e.g. http://localhost:8080/v1), to which each request \
                     appends its own path",
                    crate::redact::redacted(url)
                ));
            }
        }
        let replication = self.qdrant_replication_factor.unwrap_or(1);
        if let Some(consistency) = self.qdrant_write_consistency
            && consistency > replication
        {
            return Err(format!(
                "--qdrant-write-consistency {consistency} is more than the {replication} copies of each shard \
                 (--qdrant-replication-factor): no write could be acknowledged; raise the replication factor or \
                 lower the write consistency"
            ));
        }
        Ok(self)
    }

    /// These options with every URL redacted (no credentials, no query), for the start-up log.
    pub fn redacted(&self) -> Self {
        let mut shown = self.clone();
        for url in [&mut shown.llm_base_url, &mut shown.llm_embed_base_url]
            .into_iter()
            .flatten()
            .chain(shown.qdrant_url.iter_mut())
        {
            *url = crate::redact::redacted_url(url);
        }
        shown
    }

    /// The settings the agent's tools are built with: the one place the flags map onto them.
    pub fn settings(&self) -> AgentSettings {
        AgentSettings {
            llm: LlmSettings {
                provider: match self.llm_client {
                    LlmClient::OpenAi => Provider::OpenAi,
                    LlmClient::OpenRouter => Provider::OpenRouter,
                    LlmClient::Ollama => Provider::Ollama,
                },
                chat_model: self.llm_prompt_reasoning_model.clone(),
                embed_model: self.llm_embed_model.clone(),
                embed_dimension: self.llm_embed_model_dim,
                base_url: self.llm_base_url.clone(),
                embed_base_url: self.llm_embed_base_url.clone(),
            },
            store: StoreSettings {
                choice: match self.vector_store {
                    VectorStoreKind::Auto => StoreChoice::Auto,
                    VectorStoreKind::Embedded => StoreChoice::Embedded,
                    VectorStoreKind::Qdrant => StoreChoice::Qdrant,
                },
                qdrant_urls: self.qdrant_url.clone(),
                qdrant_layout: ClusterLayout {
                    shards: self.qdrant_shards,
                    replication_factor: self.qdrant_replication_factor,
                    write_consistency: self.qdrant_write_consistency,
                },
                qdrant_timeout: self.qdrant_timeout,
                vector_cache_bytes: self.vector_cache_mib * 1024 * 1024,
            },
            index: IndexSettings {
                batch_size: self.llm_embed_batch_size as usize,
                ..IndexSettings::default()
            },
            scenario: impact::Limits {
                max_total_rps: self.max_scenario_rps,
                max_duration: self.max_scenario_duration,
                allow_public_proxies: self.allow_public_proxies,
                ..impact::Limits::default()
            },
        }
    }
}

/// A duration such as "2m" or "30s", more than 0 and at most the load generator's ceiling.
fn parse_scenario_duration(raw: &str) -> Result<Duration, String> {
    parse_duration_up_to(raw, impact::CEILING_SCENARIO_DURATION)
}

fn parse_qdrant_timeout(raw: &str) -> Result<Duration, String> {
    parse_duration_up_to(raw, Duration::from_secs(3600))
}

/// A duration written as humantime reads it (30s, 2m), more than zero and at most `ceiling`.
fn parse_duration_up_to(raw: &str, ceiling: Duration) -> Result<Duration, String> {
    let duration = humantime::parse_duration(raw.trim())
        .map_err(|e| format!("'{raw}' is not a duration ({e}); use e.g. 30s, 2m, 10m"))?;
    if duration.is_zero() || duration > ceiling {
        return Err(format!(
            "'{raw}' is out of range; accepted: more than 0s and at most {}",
            humantime::format_duration(ceiling)
        ));
    }
    Ok(duration)
}

/// An `http://` or `https://` base URL given by a user (an LLM provider, Qdrant).
pub fn parse_http_url(raw: &str) -> Result<Url, String> {
    let url = Url::parse(raw.trim()).map_err(|e| {
        format!("'{raw}' is not a valid URL ({e}); expected e.g. http://localhost:11434")
    })?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(format!(
            "'{raw}' has scheme '{other}'; expected http or https"
        )),
    }
}
