//! `fault mcp-proxy`: its arguments and entry point.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use clap::Args;

use super::engine::Observer;
use super::http::{self, HttpProxyError, HttpProxyOptions};
use super::plan::{Gates, Mode, Plan, PlanError};
use super::recording::ReportObserver;
use super::stdio::{
    self, ClientSide, RelayError, RelayOptions, ServerCommand, ServerStderr, ServerTarget,
};
use crate::mcp_wire::endpoint::{Endpoint, EndpointError, EndpointOptions};
use crate::report::chaos::ChaosReport;

/// Arguments of `fault mcp-proxy [--plan FILE] [--seed N] [--events FILE] [--report FILE] [--strict]
/// (-- COMMAND [ARGS…] | --upstream URL [--listen ADDR] [--upstream-fault FLAGS]… [--upstream-ca PATH])`.
#[derive(Debug, Args)]
pub struct McpProxyArgs {
    /// The real MCP server's Streamable HTTP endpoint (`http://` or `https://`, e.g. `http://127.0.0.1:8000/mcp`):
    /// the proxy serves HTTP on `--listen` and forwards there, instead of running a stdio server command.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub upstream: Option<String>,

    /// A TCP fault on the connection to `--upstream`, written as `fault run` flags in one value (repeatable),
    /// e.g. `--upstream-fault "--with-latency --latency-mean 50"` or `--upstream-fault=--with-reset`.
    #[arg(
        long,
        value_name = "FLAGS",
        requires = "upstream",
        allow_hyphen_values = true,
        value_parser = parse_upstream_faults
    )]
    pub upstream_fault: Vec<UpstreamFaults>,

    /// An extra PEM CA file trusted for an `https://` `--upstream` (besides the system roots), e.g. the CA of
    /// a self-signed server.
    #[arg(long, value_name = "PATH", requires = "upstream")]
    pub upstream_ca: Option<PathBuf>,

    /// Serve Streamable HTTP here (with `--upstream`): `PORT` (on 127.0.0.1) or `ADDR:PORT`. Clients use the
    /// upstream's path on this address; port 0 picks a free port (printed on stderr). Without it, the proxy
    /// speaks stdio to its client and HTTP to the upstream.
    #[arg(long, value_name = "ADDR", requires = "upstream", value_parser = parse_listen)]
    pub listen: Option<std::net::SocketAddr>,

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

    /// Write the MCP chaos report here (markdown; JSON when FILE ends in `.json`; one self-contained HTML page
    /// with the charts when it ends in `.html`) when the session ends (the client closes, the server exits,
    /// or SIGTERM/SIGINT), and whenever the proxy gets SIGUSR1.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    #[command(flatten)]
    pub metrics: crate::proxy::measure::MetricsArg,

    /// Gates the session must meet (over the plan's `gates:`): the report says PASSED or FAILED for each,
    /// and the proxy exits non-zero when one fails.
    #[command(flatten)]
    pub gates: Gates,

    /// Fail closed: when the proxy cannot apply a fault, answer the client with a JSON-RPC error instead of
    /// passing the original message on.
    #[arg(long)]
    pub strict: bool,

    /// Print pass^k over the JSON reports (`--report FILE.json`) of k sessions of the same plan, then exit:
    /// how many sessions handled every failure well, and pass^1 … pass^k.
    #[arg(long, value_name = "REPORT_JSON", num_args = 1..)]
    pub pass_k: Vec<PathBuf>,

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
    Metrics(#[from] crate::metrics::MetricsError),
    #[error(transparent)]
    Relay(#[from] RelayError),
    #[error(transparent)]
    Http(#[from] HttpProxyError),
    #[error("{}", upstream_flag(.0))]
    Upstream(#[from] EndpointError),
    #[error("--report: {0}")]
    ReportPath(crate::files::FileError),
    #[error("cannot write --report {path}: {source}")]
    Report {
        path: String,
        source: std::io::Error,
    },
    #[error("gates {0}")]
    GatesFailed(String),
    #[error("--pass-k {path}: {reason}")]
    PassK { path: String, reason: String },
}

/// The most a session's JSON report may weigh for `--pass-k`.
const MAX_REPORT_BYTES: u64 = 64 << 20;

/// pass^k over the sessions whose JSON reports are at `paths`, as markdown.
fn pass_k(paths: &[PathBuf]) -> Result<String, McpProxyError> {
    let reports = paths
        .iter()
        .map(|path| {
            let refused = |reason: String| McpProxyError::PassK {
                path: path.display().to_string(),
                reason,
            };
            let text = crate::files::read_text(path, MAX_REPORT_BYTES)
                .map_err(|e| refused(e.to_string()))?;
            serde_json::from_str::<ChaosReport>(&text)
                .map_err(|e| refused(format!("not a JSON chaos report (--report FILE.json): {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let judgements: Vec<_> = reports.iter().map(|r| &r.run.judgement).collect();
    Ok(crate::report::chaos::render_sessions(
        &crate::report::chaos::sessions::sessions(&judgements),
    ))
}

/// Runs `fault mcp-proxy`.
pub async fn run(args: McpProxyArgs) -> Result<(), McpProxyError> {
    if !args.pass_k.is_empty() {
        print!("{}", pass_k(&args.pass_k)?); // stdout-ok: --pass-k's output, not an MCP session
        return Ok(());
    }
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
    plan.gates = plan.gates.overridden_by(&args.gates);
    if args.print_plan {
        print!("{}", plan.to_yaml()); // stdout-ok: --print-plan's output, not an MCP session
        return Ok(());
    }
    // Where the report goes is checked (and the file created) now, not when a whole session has been run.
    if let Some(path) = &args.report {
        crate::files::create_output(path).map_err(McpProxyError::ReportPath)?;
    }
    let metrics = match args.metrics.metrics {
        Some(addr) => Some(crate::metrics::bind(addr).await?),
        None => None,
    };
    let command = if let Some(upstream) = &args.upstream {
        vec![upstream.clone()]
    } else if args.command.is_empty() {
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
    if args.listen.is_none() {
        stdio::check_stdio_plan(&plan)?;
    }
    // Gates are judged on the report's figures, so they record the session even without --report.
    let recorder = (args.report.is_some() || !plan.gates.is_empty() || metrics.is_some())
        .then(|| Arc::new(Mutex::new(ReportObserver::new(&plan, &command))));
    let stop_metrics = tokio_util::sync::CancellationToken::new();
    let _stop_metrics = stop_metrics.clone().drop_guard();
    if let (Some(listener), Some(recorder)) = (metrics, &recorder) {
        if let Ok(addr) = listener.local_addr() {
            tracing::info!("mcp-proxy: metrics on http://{addr}/metrics");
        }
        let recorder = recorder.clone();
        crate::metrics::serve(
            listener,
            Arc::new(move || super::recording::metrics_page(&recorder)),
            stop_metrics,
        );
    }
    let on_signal = match (&args.report, &recorder) {
        (Some(path), Some(recorder)) => report_on_signal(path.clone(), recorder.clone()),
        _ => None,
    };
    let observer: Option<Observer> = recorder.clone().map(|r| r as Observer);
    let upstream = match &args.upstream {
        Some(url) => Some(
            Endpoint::new(
                url,
                &EndpointOptions {
                    extra_ca: args.upstream_ca.clone(),
                    faults: args
                        .upstream_fault
                        .iter()
                        .flat_map(|f| f.0.iter().cloned())
                        .collect(),
                    seed: plan.seed,
                },
            )
            .await?,
        ),
        None => None,
    };
    let (listen, events) = (args.listen, args.events.clone());
    let relay = async move {
        match (upstream, listen) {
            (Some(upstream), Some(listen)) => http::run(HttpProxyOptions {
                plan,
                upstream,
                listen,
                events,
                observer,
            })
            .await
            .map_err(McpProxyError::from),
            (upstream, _) => stdio::run(RelayOptions {
                plan,
                server: match upstream {
                    Some(endpoint) => ServerTarget::Http(Box::new(endpoint)),
                    None => ServerTarget::Command(
                        ServerCommand::from_line(&command).ok_or(RelayError::NoCommand)?,
                    ),
                },
                client: ClientSide::ProcessStdio,
                server_stderr: ServerStderr::Inherit,
                events,
                observer,
            })
            .await
            .map_err(McpProxyError::from),
        }
    };
    // SIGTERM and SIGINT end the session as a closed client would: the relay is dropped (the server's
    // process group is ended with it), the HTTP front stops, and the report is written.
    let relayed = tokio::select! {
        relayed = relay => relayed,
        () = crate::serve::terminated() => Ok(()),
    };
    if let Some(task) = on_signal {
        task.abort();
    }
    if let (Some(path), Some(recorder)) = (&args.report, &recorder) {
        write_report(path, recorder).map_err(|source| McpProxyError::Report {
            path: path.display().to_string(),
            source,
        })?;
    }
    relayed?;
    let gates = recorder.and_then(|r| r.lock().unwrap_or_else(|p| p.into_inner()).report().gates);
    match gates {
        Some(gates) if !gates.passed => Err(McpProxyError::GatesFailed(gates.summary())),
        Some(gates) => {
            tracing::info!("mcp-proxy: gates {}", gates.summary());
            Ok(())
        }
        None => Ok(()),
    }
}

/// An endpoint error with the flag its input came from.
fn upstream_flag(error: &EndpointError) -> String {
    match error {
        EndpointError::Url { .. } => format!("--upstream {error}"),
        EndpointError::Tls(_) => format!("--upstream-ca: {error}"),
        EndpointError::Faults(_) => format!("--upstream-fault: {error}"),
    }
}

/// The TCP faults of one `--upstream-fault` value.
#[derive(Debug, Clone)]
pub struct UpstreamFaults(pub Vec<crate::proxy::TcpFault>);

fn parse_upstream_faults(value: &str) -> Result<UpstreamFaults, String> {
    crate::proxy::cli::parse_fault_flags(value).map(UpstreamFaults)
}

/// `PORT` (loopback) or `ADDR:PORT`.
fn parse_listen(value: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = value.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    value
        .parse()
        .map_err(|_| format!("`{value}` is neither a port nor an ADDR:PORT (e.g. 127.0.0.1:8808)"))
}

fn write_report(path: &Path, recorder: &Mutex<ReportObserver>) -> std::io::Result<()> {
    recorder
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .write(path)
}

/// Writes the report on each SIGUSR1, so a long session can be looked at while it runs.
fn report_on_signal(
    path: PathBuf,
    recorder: Arc<Mutex<ReportObserver>>,
) -> Option<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut signals = match signal(SignalKind::user_defined1()) {
        Ok(signals) => signals,
        Err(e) => {
            tracing::warn!(
                "mcp-proxy: cannot listen for SIGUSR1 (the report is written at exit): {e}"
            );
            return None;
        }
    };
    Some(tokio::spawn(async move {
        while signals.recv().await.is_some() {
            match write_report(&path, &recorder) {
                Ok(()) => tracing::info!("mcp-proxy: report written to {}", path.display()),
                Err(e) => {
                    tracing::warn!("mcp-proxy: cannot write the report {}: {e}", path.display())
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_faults_take_fault_run_flags() {
        let faults =
            parse_upstream_faults("--with-latency --latency-mean 50 --with-reset").unwrap();
        let kinds: Vec<&str> = faults.0.iter().map(|f| f.kind()).collect();
        assert_eq!(kinds, ["latency", "reset"]);
        let error = parse_upstream_faults("--latency-mean 50").unwrap_err();
        assert!(error.contains("add --with-latency"), "{error}");
        let error = parse_upstream_faults("").unwrap_err();
        assert!(error.contains("enables no fault"), "{error}");
        let error = parse_upstream_faults("--with-latency --latency-mean fast").unwrap_err();
        assert!(error.contains("fast"), "{error}");
    }

    #[test]
    fn listen_takes_a_port_on_loopback_or_an_address() {
        assert_eq!(
            parse_listen("8808").unwrap(),
            "127.0.0.1:8808".parse().unwrap()
        );
        assert_eq!(
            parse_listen("0.0.0.0:9000").unwrap(),
            "0.0.0.0:9000".parse().unwrap()
        );
        let error = parse_listen("localhost").unwrap_err();
        assert!(
            error.contains("`localhost` is neither a port nor an ADDR:PORT"),
            "{error}"
        );
    }
}
