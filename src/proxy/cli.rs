//! `fault run`: the proxy on the command line. `RunArgs` converts into the same [`ProxyConfig`]
//! the scenario tools use.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use super::config::ProxyConfig;
use super::faults::FaultFlags;
use super::mapping::Mapping;
use super::{ProxyError, ProxyStats};
use crate::report::{
    chart::page_file::{PageFile, PageFileError},
    proxy::{ProxyCounters, ProxyFaultInfo, ProxyReport, ProxySampler, ProxyWindow},
};

/// A run length such as 30s, 5m, 1h30m.
fn parse_run_duration(raw: &str) -> Result<Duration, String> {
    humantime::parse_duration(raw.trim())
        .map_err(|e| format!("'{raw}' is not a duration ({e}); expected e.g. 30s, 5m, 1h30m"))
}

/// The faults of `fault run` flags written in one value, as other commands take them (e.g. `fault mcp-proxy
/// --upstream-fault "--with-latency --latency-mean 50"`): `fault run`'s own parser, without its environment
/// variables (they configure `fault run`, not this value).
pub fn parse_fault_flags(flags: &str) -> Result<Vec<super::TcpFault>, String> {
    use clap::{CommandFactory, FromArgMatches};

    #[derive(clap::Parser)]
    #[command(name = "fault run", no_binary_name = true)]
    struct Flags {
        #[command(flatten)]
        faults: FaultFlags,
    }
    let command = Flags::command().mut_args(|arg| arg.env(None));
    let matches = command
        .try_get_matches_from(flags.split_whitespace())
        .map_err(|e| format!("`{flags}`: {}", e.render().to_string().trim()))?;
    let specs = Flags::from_arg_matches(&matches)
        .map_err(|e| format!("`{flags}`: {e}"))?
        .faults
        .specs();
    if specs.is_empty() {
        return Err(format!(
            "`{flags}` enables no fault (e.g. --with-latency --latency-mean 50, --with-reset)"
        ));
    }
    Ok(specs)
}

/// Run the fault-injecting TCP proxy.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Example: fault run --with-latency --latency-mean 300 --proxy \"34000=https://jsonplaceholder.typicode.com\""
)]
pub struct RunArgs {
    /// A mapping LISTEN=UPSTREAM, repeatable: 34000=127.0.0.1:8080, 0.0.0.0:34000=db:5432,
    /// 34000=https://api.example.com (a bare port listens on 127.0.0.1).
    #[arg(
        long = "proxy",
        env = "FAULT_PROXY",
        value_delimiter = ',',
        required = true,
        value_name = "LISTEN=UPSTREAM"
    )]
    pub proxies: Vec<Mapping>,

    /// Stop after this long (e.g. 30s, 5m); without it, run until Ctrl-C.
    #[arg(long, env = "FAULT_DURATION", value_parser = parse_run_duration)]
    pub duration: Option<Duration>,

    /// Seed for every random decision, for reproducible runs.
    #[arg(long, env = "FAULT_SEED")]
    pub seed: Option<u64>,

    /// Extra PEM CA file trusted for https:// upstreams (besides the system roots).
    #[arg(long, env = "FAULT_PROXY_EXTRA_CA", value_name = "PATH")]
    pub upstream_ca: Option<PathBuf>,

    /// Write the session's report here when it ends: connections, bytes and fault applications per second
    /// (markdown; JSON when FILE ends in `.json`; one self-contained HTML page with the charts when it ends in
    /// `.html`). Checked, and the file created, at start.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    #[command(flatten)]
    pub faults: FaultFlags,
}

impl From<&RunArgs> for ProxyConfig {
    fn from(a: &RunArgs) -> Self {
        ProxyConfig {
            mappings: a.proxies.clone(),
            faults: a.faults.specs(),
            seed: a.seed,
            run_duration: a.duration,
            extra_ca: a.upstream_ca.clone(),
            connect_timeout: None,
            count_requests: false,
        }
    }
}

impl From<RunArgs> for ProxyConfig {
    fn from(a: RunArgs) -> Self {
        ProxyConfig::from(&a)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    #[error("--upstream-ca: {0}")]
    UpstreamCa(#[source] crate::tls::TlsSetupError),
    #[error("--report: {0}")]
    Report(#[source] PageFileError),
    #[error("--{flag}: {source}")]
    Schedule {
        flag: String,
        #[source]
        source: super::ScheduleError,
    },
}

/// The fault's description with where, how often and when it applies.
fn describe(spec: &super::TcpFault) -> String {
    let c = spec.common();
    let window = match &c.schedule {
        Some(s) => format!(", schedule {s}"),
        None => String::new(),
    };
    format!(
        "{}; {} {}, probability {}{window}",
        spec.describe(),
        c.side,
        c.direction,
        c.probability
    )
}

fn status_line(s: &ProxyStats) -> String {
    let faults: Vec<String> = s
        .faults_applied
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!(
        "conns {} open / {} total | up {} B | down {} B | faults {}",
        s.connections_active,
        s.connections_total,
        s.bytes_to_upstream,
        s.bytes_to_client,
        if faults.is_empty() {
            "-".into()
        } else {
            faults.join(" ")
        }
    )
}

pub async fn run(args: RunArgs) -> Result<(), RunError> {
    // Checked at start even when no upstream is https yet, so that a bad path is not found only later.
    if let Some(path) = &args.upstream_ca {
        crate::tls::extra_ca_certificates(path).map_err(RunError::UpstreamCa)?;
    }
    let config = ProxyConfig::from(&args);
    let faults: Vec<String> = config.faults.iter().map(describe).collect();
    let mut fault_windows = Vec::with_capacity(faults.len());
    for (spec, description) in config.faults.iter().zip(&faults) {
        // Checked against --duration here, so that the error names the fault's own flag.
        let windows = spec
            .windows(args.duration)
            .map_err(|source| RunError::Schedule {
                flag: super::placement::SCHED.long(spec.kind()),
                source,
            })?
            .unwrap_or_else(|| vec![(Duration::ZERO, None)]);
        fault_windows.push(ProxyFaultInfo {
            description: description.clone(),
            windows: windows
                .into_iter()
                .map(|(start, end)| ProxyWindow {
                    active_from_s: start.as_secs_f64(),
                    active_until_s: end.map(|end| end.as_secs_f64()),
                })
                .collect(),
        });
    }
    // Where the report goes is checked (and the file created) now, not when the session has been run.
    let report_file = match &args.report {
        Some(path) => Some(PageFile::create(path).map_err(RunError::Report)?),
        None => None,
    };
    let handle = super::start(config).await?;
    let mut stderr = std::io::stderr();
    for mapping in handle.mappings() {
        let _ = writeln!(stderr, "fault: proxying {mapping}");
    }
    for f in &faults {
        let _ = writeln!(stderr, "fault: fault {f}");
    }
    if faults.is_empty() {
        let _ = writeln!(stderr, "fault: no fault enabled (pass-through)");
    }
    let live = stderr.is_terminal();
    let deadline = async {
        match args.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let mut second = tokio::time::interval(Duration::from_secs(1));
    second.tick().await;
    let mut sampler = ProxySampler::default();
    loop {
        tokio::select! {
            _ = &mut deadline => break,
            r = tokio::signal::ctrl_c() => {
                if let Err(e) = r {
                    tracing::warn!("cannot listen for Ctrl-C: {e}");
                    std::future::pending::<()>().await;
                }
                break;
            }
            _ = second.tick(), if report_file.is_some() => sampler.sample(&counters(&handle.stats())),
            _ = tick.tick(), if live => {
                let _ = write!(stderr, "\r\x1b[2K{}", status_line(&handle.stats()));
                let _ = stderr.flush();
            }
        }
    }
    let final_stats = handle.stats();
    let mappings: Vec<String> = handle.mappings().iter().map(ToString::to_string).collect();
    handle.stop().await;
    if live {
        let _ = writeln!(stderr);
    }
    let _ = writeln!(stderr, "fault: stopped; {}", status_line(&final_stats));
    if let Some(file) = report_file {
        let report = sampler.report(&counters(&final_stats), mappings, fault_windows);
        let written = report_text(file.path(), &report)
            .and_then(|text| file.write(&text).map_err(|e| e.to_string()));
        match written {
            Ok(path) => {
                let _ = writeln!(stderr, "fault: report written to {}", path.display());
            }
            Err(e) => {
                let _ = writeln!(stderr, "fault: the report was not written: {e}");
            }
        }
    }
    Ok(())
}

/// The counters the report reads, from the proxy's statistics.
fn counters(stats: &ProxyStats) -> ProxyCounters {
    ProxyCounters {
        connections_total: stats.connections_total,
        upstream_failures: stats.upstream_failures,
        bytes_to_upstream: stats.bytes_to_upstream,
        bytes_to_client: stats.bytes_to_client,
        faults_applied: stats.faults_applied.clone(),
    }
}

/// `report` as the file at `path` holds it: JSON for `.json`, the HTML page for `.html`, else markdown.
fn report_text(path: &std::path::Path, report: &ProxyReport) -> Result<String, String> {
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match extension.as_deref() {
        Some("json") => serde_json::to_string_pretty(report).map_err(|e| e.to_string()),
        Some("html" | "htm") => {
            crate::report::chart::page::proxy_page(report).map_err(|e| e.to_string())
        }
        _ => Ok(crate::report::proxy::render(report)),
    }
}
