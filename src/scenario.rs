//! An impact scenario: start the proxy with the fault, send the load, build the report, stop everything.
//!
//! Topology: with `proxies` the faults run on those listeners (the service under test calls its upstream
//! through them) and the load goes to the URL. Without, a proxy on 127.0.0.1 (port chosen by the system)
//! relays raw TCP to the URL's host and the load generator dials it while keeping the URL's host for TLS, SNI
//! and `Host`, so `http://` and `https://` work alike.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use crate::{
    load::{self, LoadError, LoadPlan, LoadReport, Pace, Progress, Target},
    proxy::{
        self, BandwidthSpec, BlackholeSpec, FaultCommon, FaultSpec, JitterSpec, LatencySpec,
        Mapping, PacketLossSpec, ProxyConfig, ProxyError, ProxyHandle, Upstream,
        faults::http_error::HttpErrorSpec,
    },
    report::{self, CallInfo, FaultInfo, Report, ReportInput, Slo, StrategyInfo},
};

pub use crate::proxy::{BandwidthUnit, Direction, Side};

/// Input bounds; the tool errors quote them.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_duration: Duration,
    pub max_clients: u32,
    pub max_rps_per_client: u32,
    pub max_total_rps: u64,
    pub max_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_duration: Duration::from_secs(600),
            max_clients: 1000,
            max_rps_per_client: 10_000,
            max_total_rps: 100_000,
            max_timeout: Duration::from_secs(300),
        }
    }
}

/// Which end and which bytes of a connection a TCP fault acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub direction: Direction,
    pub side: Side,
}

impl Placement {
    pub fn new(direction: Direction, side: Side) -> Self {
        Self { direction, side }
    }

    fn common(self) -> FaultCommon {
        FaultCommon {
            side: self.side,
            direction: self.direction,
            ..FaultCommon::default()
        }
    }

    fn describe(self) -> String {
        let flow = match self.side.flows(self.direction) {
            [proxy::Flow::Response] => "the response flow",
            [proxy::Flow::Request] => "the request flow",
            _ => "both flows",
        };
        format!("{} side, {} = {flow}", self.side, self.direction)
    }
}

/// The fault of a scenario with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultChoice {
    Latency {
        placement: Placement,
        latency_ms: f64,
        deviation_ms: f64,
        per_read_write_op: bool,
    },
    Jitter {
        placement: Placement,
        amplitude_ms: f64,
        frequency_hz: f64,
    },
    PacketLoss {
        placement: Placement,
        /// Share of segments lost, 0..1.
        loss_rate: f64,
    },
    Bandwidth {
        placement: Placement,
        rate: u64,
        unit: BandwidthUnit,
    },
    Blackhole {
        placement: Placement,
    },
    HttpError {
        status_code: u16,
        error_body: String,
        probability: f64,
    },
}

impl FaultChoice {
    fn kind(&self) -> &'static str {
        match self {
            FaultChoice::Latency { .. } => "latency",
            FaultChoice::Jitter { .. } => "jitter",
            FaultChoice::PacketLoss { .. } => "packet_loss",
            FaultChoice::Bandwidth { .. } => "bandwidth",
            FaultChoice::Blackhole { .. } => "blackhole",
            FaultChoice::HttpError { .. } => "http_error",
        }
    }

    fn placement(&self) -> Placement {
        match self {
            FaultChoice::Latency { placement, .. }
            | FaultChoice::Jitter { placement, .. }
            | FaultChoice::PacketLoss { placement, .. }
            | FaultChoice::Bandwidth { placement, .. }
            | FaultChoice::Blackhole { placement } => *placement,
            // Responses are what it replaces.
            FaultChoice::HttpError { .. } => Placement::new(Direction::Ingress, Side::Server),
        }
    }

    fn spec(&self) -> FaultSpec {
        let common = self.placement().common();
        match self {
            FaultChoice::Latency {
                latency_ms,
                deviation_ms,
                per_read_write_op,
                ..
            } => FaultSpec::Latency(LatencySpec {
                common,
                mean: Duration::from_secs_f64(latency_ms / 1000.0),
                stddev: Duration::from_secs_f64(deviation_ms / 1000.0),
                per_read_write: *per_read_write_op,
                ..LatencySpec::default()
            }),
            FaultChoice::Jitter {
                amplitude_ms,
                frequency_hz,
                ..
            } => FaultSpec::Jitter(JitterSpec {
                common,
                amplitude: Duration::from_secs_f64(amplitude_ms / 1000.0),
                frequency: *frequency_hz,
            }),
            FaultChoice::PacketLoss { loss_rate, .. } => FaultSpec::PacketLoss(PacketLossSpec {
                common,
                rate: *loss_rate,
                ..PacketLossSpec::default()
            }),
            FaultChoice::Bandwidth { rate, unit, .. } => FaultSpec::Bandwidth(BandwidthSpec {
                common,
                rate: *rate,
                unit: *unit,
            }),
            FaultChoice::Blackhole { .. } => FaultSpec::Blackhole(BlackholeSpec { common }),
            FaultChoice::HttpError {
                status_code,
                error_body,
                probability,
            } => FaultSpec::HttpError(HttpErrorSpec {
                common,
                status_code: *status_code,
                body: error_body.clone(),
                probability: *probability,
            }),
        }
    }

    fn describe(&self) -> String {
        match self {
            FaultChoice::Latency {
                latency_ms,
                deviation_ms,
                per_read_write_op,
                ..
            } => format!(
                "Latency: mean {latency_ms:.2}ms, deviation {deviation_ms:.2}ms, {}",
                if *per_read_write_op {
                    "on every read/write"
                } else {
                    "once per message"
                }
            ),
            FaultChoice::Jitter {
                amplitude_ms,
                frequency_hz,
                ..
            } => format!("Jitter: amplitude {amplitude_ms:.2}ms, frequency {frequency_hz:.2}Hz"),
            FaultChoice::PacketLoss { loss_rate, .. } => format!(
                "Packet loss: {:.1}% of segments lost and retransmitted late (first retransmission after 200ms, doubling)",
                loss_rate * 100.0
            ),
            FaultChoice::Bandwidth { rate, unit, .. } => format!(
                "Bandwidth: {rate} {unit} ({} bytes per second, shared by all connections)",
                rate.saturating_mul(unit.bytes_per_unit())
            ),
            FaultChoice::Blackhole { .. } => {
                "Blackhole: bytes swallowed, connections left open".to_owned()
            }
            FaultChoice::HttpError {
                status_code,
                error_body,
                probability,
            } => format!(
                "HTTP error: responses replaced by {status_code} with a {}-byte body, probability {probability:.2}",
                error_body.len()
            ),
        }
    }
}

/// A validated scenario request.
#[derive(Debug, Clone)]
pub struct ScenarioSpec {
    pub target: Target,
    pub num_clients: u32,
    pub rps: u32,
    pub duration: Duration,
    pub timeout: Duration,
    /// Empty: a proxy is put in front of the URL itself.
    pub proxies: Vec<Mapping>,
    pub fault: FaultChoice,
    pub slos: Vec<Slo>,
    pub seed: Option<u64>,
    pub baseline: bool,
}

impl ScenarioSpec {
    /// Requests over the whole scenario (both runs when there is a baseline).
    pub fn planned_requests(&self) -> u64 {
        let one = self.load_plan(None).planned_requests().unwrap_or(0);
        if self.baseline { one * 2 } else { one }
    }

    fn load_plan(&self, connect_to: Option<SocketAddr>) -> LoadPlan {
        LoadPlan {
            target: self.target.clone(),
            connect_to,
            num_clients: self.num_clients,
            pace: Pace::Open { rps: self.rps },
            duration: self.duration,
            timeout: self.timeout,
        }
    }
}

/// A mapping as the scenario tools accept it (`"34000=127.0.0.1:8080"`).
pub fn parse_mapping(text: &str) -> Result<Mapping, proxy::ParseError> {
    text.parse::<Mapping>()
}

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
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
    spec: &ScenarioSpec,
    cancel: &CancellationToken,
    progress: Arc<Progress>,
) -> Result<Report, ScenarioError> {
    let service = spec.target.resolve().await?;
    spec.target.check_reachable(service).await?;

    let baseline = if spec.baseline {
        Some(run_once(spec, Vec::new(), cancel, progress.clone()).await?)
    } else {
        None
    };
    let faulted = run_once(spec, vec![spec.fault.spec()], cancel, progress).await?;

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
            active_from_percent: 0.0,
            active_until_percent: 100.0,
            applied_on: format!(
                "{} ({})",
                faulted
                    .mappings
                    .iter()
                    .map(|m| format!("proxy {} → {}", m.listen, m.upstream))
                    .collect::<Vec<_>>()
                    .join(", "),
                spec.fault.placement().describe()
            ),
        }],
        slos: spec.slos.clone(),
    };
    let mut report = report::build(input, &faulted.load, baseline.as_ref().map(|b| &b.load));
    report.proxy = Some(faulted.proxy_figures);
    Ok(report)
}

struct RunOutcome {
    load: LoadReport,
    mappings: Vec<Mapping>,
    proxy_figures: report::ProxyFigures,
}

/// One load run through proxies carrying `faults` (none for the baseline).
async fn run_once(
    spec: &ScenarioSpec,
    faults: Vec<FaultSpec>,
    cancel: &CancellationToken,
    progress: Arc<Progress>,
) -> Result<RunOutcome, ScenarioError> {
    let direct = spec.proxies.is_empty();
    let mappings = if direct {
        vec![Mapping {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            // Raw TCP: TLS, when there is any, stays end to end between the load generator and the service.
            upstream: Upstream {
                host: spec.target.host().to_owned(),
                port: spec.target.port(),
                tls: false,
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
        Err(ScenarioError::Load(LoadError::Cancelled)) => Err(ScenarioError::Cancelled),
        other => other,
    }
}

async fn finish(
    handle: ProxyHandle,
    result: Result<LoadReport, LoadError>,
) -> Result<RunOutcome, ScenarioError> {
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
