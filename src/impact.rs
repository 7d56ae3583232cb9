//! An impact scenario: start the proxy with the fault, send the load, build the report, stop everything.
//!
//! Topology: with `proxies` the faults run on those listeners (the service under test calls its upstream
//! through them) and the load goes to the URL. Without, a proxy on 127.0.0.1 (port chosen by the system)
//! relays raw TCP to the URL's host and the load generator dials it while keeping the URL's host for TLS, SNI
//! and `Host`, so `http://` and `https://` work alike. A fault that reads HTTP (HTTP error) cannot see inside
//! TLS: for it the proxy speaks TLS to an `https://` URL itself and the load generator sends it clear-text
//! HTTP with the URL's `Host`.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use crate::{
    load::{self, LoadError, LoadPlan, LoadProgress, LoadReport, Pace, Target},
    proxy::{self, FaultCommon, Mapping, ProxyConfig, ProxyError, ProxyHandle, TcpFault, Upstream},
    report::impact::{
        self as report, CallInfo, FaultInfo, LatencySlo, Report, ReportInput, StrategyInfo,
    },
};

/// Input bounds; the tool errors quote them. The load caps and the listen policy are the operator's
/// (`fault agent tool --max-scenario-rps / --max-scenario-duration / --allow-public-proxies`); the rest are
/// what the load generator supports.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_duration: Duration,
    pub max_clients: u32,
    pub max_rps_per_client: u32,
    pub max_total_rps: u64,
    pub max_timeout: Duration,
    /// Whether `proxies` may listen on an address other than loopback (a relay reachable from the network).
    pub allow_public_proxies: bool,
}

/// Default operator cap on total requests per second across clients (`--max-scenario-rps`).
pub const DEFAULT_MAX_SCENARIO_RPS: u64 = 1000;
/// Default operator cap on a scenario's load duration (`--max-scenario-duration`).
pub const DEFAULT_MAX_SCENARIO_DURATION: Duration = Duration::from_secs(120);
/// What the flags may raise the caps to: the load generator's own bounds.
pub const CEILING_SCENARIO_RPS: u64 = 100_000;
pub const CEILING_SCENARIO_DURATION: Duration = Duration::from_secs(3600);

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_duration: DEFAULT_MAX_SCENARIO_DURATION,
            max_clients: 1000,
            max_rps_per_client: 10_000,
            max_total_rps: DEFAULT_MAX_SCENARIO_RPS,
            max_timeout: Duration::from_secs(300),
            allow_public_proxies: false,
        }
    }
}

/// Where a fault acts, in words: "server side, ingress = the response flow".
fn describe_placement(common: &FaultCommon) -> String {
    let flow = match common.side.flows(common.direction) {
        [proxy::Flow::Response] => "the response flow",
        [proxy::Flow::Request] => "the request flow",
        _ => "both flows",
    };
    format!("{} side, {} = {flow}", common.side, common.direction)
}

/// A validated scenario request.
#[derive(Debug, Clone)]
pub struct ImpactSpec {
    pub target: Target,
    pub num_clients: u32,
    pub rps: u32,
    pub duration: Duration,
    pub timeout: Duration,
    /// Empty: a proxy is put in front of the URL itself.
    pub proxies: Vec<Mapping>,
    pub fault: TcpFault,
    pub slos: Vec<LatencySlo>,
    pub seed: Option<u64>,
    pub baseline: bool,
}

impl ImpactSpec {
    /// Requests over the whole scenario (both runs when there is a baseline).
    pub fn planned_requests(&self) -> u64 {
        let one = self.load_plan(None).planned_requests().unwrap_or(0);
        if self.baseline { one * 2 } else { one }
    }

    /// Whether the proxy in front of an `https://` URL speaks TLS to it, so that the fault sees clear-text HTTP:
    /// in the direct topology, for a fault that reads HTTP. Both runs (baseline too) use the same path.
    fn proxy_originates_tls(&self) -> bool {
        self.proxies.is_empty() && self.target.is_tls() && self.fault.reads_http()
    }

    fn load_plan(&self, connect_to: Option<SocketAddr>) -> LoadPlan {
        LoadPlan {
            target: self.target.clone(),
            connect_to,
            proxy_originates_tls: self.proxy_originates_tls(),
            num_clients: self.num_clients,
            pace: Pace::Open { rps: self.rps },
            duration: self.duration,
            timeout: self.timeout,
            max_in_flight: None,
        }
    }
}

/// A mapping as the scenario tools accept it (`"34000=127.0.0.1:8080"`).
pub fn parse_mapping(text: &str) -> Result<Mapping, proxy::ParseError> {
    text.parse::<Mapping>()
}

#[derive(Debug, thiserror::Error)]
pub enum ImpactError {
    #[error("proxies: {0}")]
    Proxy(#[from] ProxyError),
    #[error("{0}")]
    Load(#[from] LoadError),
    #[error("the scenario was cancelled; load and proxies were stopped")]
    Cancelled,
}

/// Runs the scenario: an optional baseline without the fault, then the run with it, then the report.
/// Proxies are stopped (ports freed) on every path, including cancellation.
pub async fn run(
    spec: &ImpactSpec,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<Report, ImpactError> {
    let service = spec.target.resolve(spec.timeout).await?;
    spec.target.check_reachable(service).await?;

    let baseline = if spec.baseline {
        Some(run_once(spec, Vec::new(), cancel, progress.clone()).await?)
    } else {
        None
    };
    let faulted = run_once(spec, vec![spec.fault.clone()], cancel, progress).await?;
    let (active_from_percent, active_until_percent) = active_percent(spec);

    let input = ReportInput {
        call: CallInfo {
            url: spec.target.url.to_string(),
            method: spec.target.method.to_string(),
            timeout_ms: spec.timeout.as_millis() as u64,
            headers: spec
                .target
                .headers
                .iter()
                .map(|(name, _)| name.to_string())
                .collect(),
            has_body: !spec.target.body.is_empty(),
        },
        strategy: StrategyInfo {
            duration_s: spec.duration.as_secs_f64(),
            num_clients: spec.num_clients,
            rps: spec.rps,
        },
        faults: vec![FaultInfo {
            kind: spec.fault.kind().to_owned(),
            description: spec.fault.describe(),
            active_from_percent,
            active_until_percent,
            applied_on: format!(
                "{} ({})",
                faulted
                    .mappings
                    .iter()
                    .map(|m| format!("proxy {} → {}", m.listen, m.upstream))
                    .collect::<Vec<_>>()
                    .join(", "),
                describe_placement(spec.fault.common())
            ),
        }],
        slos: spec.slos.clone(),
    };
    let report = report::build(input, &faulted.load, baseline.as_ref().map(|b| &b.load));
    Ok(report.with_proxy(faulted.proxy_figures))
}

/// The share of the faulted run (start, end, in percent) during which the fault was active: its schedule's
/// first window (the proxy started it with the same run duration), else the whole run.
fn active_percent(spec: &ImpactSpec) -> (f64, f64) {
    let run = spec.duration.as_secs_f64();
    let first = spec.fault.windows(Some(spec.duration)).map(|windows| windows?.first().copied());
    match first {
        Ok(Some((start, end))) if run > 0.0 => {
            let share = |d: Duration| (d.as_secs_f64() / run * 100.0).clamp(0.0, 100.0);
            (share(start), end.map_or(100.0, share))
        }
        _ => (0.0, 100.0),
    }
}

struct RunOutcome {
    load: LoadReport,
    mappings: Vec<Mapping>,
    proxy_figures: report::ProxyFigures,
}

/// One load run through proxies carrying `faults` (none for the baseline).
async fn run_once(
    spec: &ImpactSpec,
    faults: Vec<TcpFault>,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<RunOutcome, ImpactError> {
    let direct = spec.proxies.is_empty();
    let mappings = if direct {
        vec![Mapping {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            // Raw TCP: TLS, when there is any, stays end to end between the load generator and the service,
            // unless the fault must read HTTP.
            upstream: Upstream {
                host: spec.target.host().to_owned(),
                port: spec.target.port(),
                tls: spec.proxy_originates_tls(),
            },
        }]
    } else {
        spec.proxies.clone()
    };
    let handle = proxy::start(ProxyConfig {
        mappings,
        faults,
        seed: spec.seed,
        run_duration: Some(spec.duration),
        ..ProxyConfig::default()
    })
    .await?;
    let connect_to = if direct {
        handle.local_addrs().first().copied()
    } else {
        None
    };
    let plan = spec.load_plan(connect_to);
    let result = load::run(&plan, cancel, progress).await;
    let outcome = finish(handle, result).await;
    match outcome {
        Err(ImpactError::Load(LoadError::Cancelled)) => Err(ImpactError::Cancelled),
        other => other,
    }
}

async fn finish(
    handle: ProxyHandle,
    result: Result<LoadReport, LoadError>,
) -> Result<RunOutcome, ImpactError> {
    let stats = handle.stats();
    let mappings = handle.mappings().to_vec();
    handle.stop().await;
    let load = result?;
    Ok(RunOutcome {
        load,
        mappings,
        proxy_figures: report::ProxyFigures {
            connections: stats.connections_total,
            upstream_failures: stats.upstream_failures,
            bytes_to_upstream: stats.bytes_to_upstream,
            bytes_to_client: stats.bytes_to_client,
            fault_applications: stats.faults_applied.values().sum(),
        },
    })
}
