//! `fault run`: the proxy on the command line. `RunArgs` converts into the same [`ProxyConfig`]
//! the scenario tools use.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use super::config::ProxyConfig;
use super::faults::FaultFlags;
use super::mapping::Mapping;
use super::measure::{self, MeasureArgs, ProxyRun};
use super::{ProxyError, ProxyStats};
use crate::report::chart::page_file::{PageFile, PageFileError};

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

    #[command(flatten)]
    pub measure: MeasureArgs,

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
    #[error("--{flag}: {source}")]
    Output {
        flag: &'static str,
        #[source]
        source: PageFileError,
    },
    #[error(transparent)]
    Metrics(#[from] crate::metrics::MetricsError),
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

/// Where the report goes, one file per flag given: checked (and created) at start.
struct Outputs {
    report: Option<PageFile>,
    html: Option<PageFile>,
    result: Option<PageFile>,
}

impl Outputs {
    fn create(args: &MeasureArgs) -> Result<Self, RunError> {
        let open = |flag: &'static str, path: &Option<PathBuf>| {
            path.as_deref()
                .map(PageFile::create)
                .transpose()
                .map_err(|source| RunError::Output { flag, source })
        };
        Ok(Self {
            report: open("report", &args.report)?,
            html: open("html", &args.html)?,
            result: open("result", &args.result)?,
        })
    }

    /// Writes `report` to each file, saying where (or why not) on stderr.
    fn write(self, report: &crate::report::impact::Report, stderr: &mut impl Write) {
        let files = [
            ("report", self.report),
            ("html", self.html),
            ("result", self.result),
        ];
        for (flag, file) in files {
            let Some(file) = file else { continue };
            let text = match flag {
                "html" => page_text(report),
                "result" => result_text(report),
                _ => report_text(file.path(), report),
            };
            match text.and_then(|text| file.write(&text).map_err(|e| e.to_string())) {
                Ok(path) => {
                    let _ = writeln!(stderr, "fault: --{flag} written to {}", path.display());
                }
                Err(e) => {
                    let _ = writeln!(stderr, "fault: --{flag} was not written: {e}");
                }
            }
        }
    }
}

pub async fn run(args: RunArgs) -> Result<(), RunError> {
    // Checked at start even when no upstream is https yet, so that a bad path is not found only later.
    if let Some(path) = &args.upstream_ca {
        crate::tls::extra_ca_certificates(path).map_err(RunError::UpstreamCa)?;
    }
    let config = ProxyConfig::from(&args);
    let faults: Vec<String> = config.faults.iter().map(describe).collect();
    let mut fault_windows = Vec::with_capacity(faults.len());
    for spec in &config.faults {
        // Checked against --duration here, so that the error names the fault's own flag.
        let windows = spec
            .windows(args.duration)
            .map_err(|source| RunError::Schedule {
                flag: super::placement::SCHED.long(spec.kind()),
                source,
            })?
            .unwrap_or_else(|| vec![(Duration::ZERO, None)]);
        fault_windows.push(windows);
    }
    // Where the report goes, and the metrics address, are checked now, not when the session has been run.
    let outputs = Outputs::create(&args.measure)?;
    let metrics = match args.measure.metrics {
        Some(addr) => Some(crate::metrics::bind(addr).await?),
        None => None,
    };
    let setup = args.measure.measures().then(|| {
        let run_s = args.duration.map_or(f64::MAX, |d| d.as_secs_f64());
        let merged =
            crate::report::impact::phases::merge_windows(fault_windows.iter().flatten().map(
                |(start, end)| crate::report::impact::ActiveWindow {
                    from_s: start.as_secs_f64(),
                    until_s: end.map_or(run_s, |end| end.as_secs_f64()),
                },
            ));
        super::ExchangeSetup {
            groups: args.measure.groups.clone(),
            cuts: crate::report::impact::phases::phase_cuts(&merged, run_s)
                .into_iter()
                .map(Duration::from_secs_f64)
                .collect(),
        }
    });
    let handle = super::start_with(config, setup).await?;
    let started = tokio::time::Instant::now();
    let stop_metrics = tokio_util::sync::CancellationToken::new();
    let mut stderr = std::io::stderr();
    let metrics_task = metrics.map(|listener| {
        if let Ok(addr) = listener.local_addr() {
            let _ = writeln!(stderr, "fault: metrics on http://{addr}/metrics");
        }
        let view = handle.view();
        crate::metrics::serve(
            listener,
            std::sync::Arc::new(move || measure::metrics_page(&view)),
            stop_metrics.clone(),
        )
    });
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
            _ = terminated() => break,
            _ = tick.tick(), if live => {
                let _ = write!(stderr, "\r\x1b[2K{}", status_line(&handle.stats()));
                let _ = stderr.flush();
            }
        }
    }
    let ran = args.duration.unwrap_or_else(|| started.elapsed());
    let view = handle.view();
    let mappings: Vec<String> = handle.mappings().iter().map(ToString::to_string).collect();
    handle.stop().await;
    stop_metrics.cancel();
    if let Some(task) = metrics_task {
        let _ = task.await;
    }
    let final_stats = view.stats();
    if live {
        let _ = writeln!(stderr);
    }
    let _ = writeln!(stderr, "fault: stopped; {}", status_line(&final_stats));
    if let Some(recorder) = view.exchanges() {
        let specs: Vec<_> = view
            .faults_active()
            .into_iter()
            .map(|(spec, _)| spec)
            .collect();
        let run = ProxyRun {
            mappings: &mappings,
            faults: specs
                .into_iter()
                .zip(fault_windows)
                .zip(final_stats.applied_by_fault.iter().copied())
                .map(|((spec, windows), applied)| (spec, windows, applied))
                .collect(),
            duration: ran,
            stats: &final_stats,
        };
        let report = measure::report(&args.measure, recorder, &run);
        let _ = writeln!(
            stderr,
            "fault: {} HTTP/1 exchanges measured ({} errors), status {:?}",
            report.run.requests, report.run.errors, report.status
        );
        outputs.write(&report, &mut stderr);
    }
    Ok(())
}

/// SIGTERM (how a container is stopped) ends the run as Ctrl-C does, so that the report is written.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            term.recv().await;
            return;
        }
    }
    std::future::pending::<()>().await
}

/// The report as `--report`'s file holds it: the result JSON for `.json`, the HTML page for `.html`, else
/// markdown.
fn report_text(
    path: &std::path::Path,
    report: &crate::report::impact::Report,
) -> Result<String, String> {
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match extension.as_deref() {
        Some("json") => result_text(report),
        Some("html" | "htm") => page_text(report),
        _ => Ok(crate::report::impact::render(report)),
    }
}

fn page_text(report: &crate::report::impact::Report) -> Result<String, String> {
    crate::report::chart::page::impact_page(report).map_err(|e| e.to_string())
}

fn result_text(report: &crate::report::impact::Report) -> Result<String, String> {
    serde_json::to_string_pretty(report)
        .map(|json| json + "\n")
        .map_err(|e| e.to_string())
}
