//! An impact scenario: start the proxy with the faults, send the load, build the report, stop everything.
//! While the load runs, the proxy's counters are read at each second and phase boundary, so that the report
//! sets what went upstream against the load's requests (retry amplification).
//!
//! Topology: with `proxies` the faults run on those listeners (the service under test calls its upstream
//! through them) and the load goes to the URL. Without, a proxy on 127.0.0.1 (port chosen by the system)
//! relays raw TCP to the URL's host and the load generator dials it while keeping the URL's host for TLS, SNI
//! and `Host`, so `http://` and `https://` work alike. A fault that reads HTTP (HTTP error) cannot see inside
//! TLS: for it the proxy speaks TLS to an `https://` URL itself and the load generator sends it clear-text
//! HTTP with the URL's `Host`.

mod upstream_tally;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use self::upstream_tally::Tally;
use crate::{
    load::{
        self, LoadError, LoadPlan, LoadProgress, LoadReport, Mix, Pace, Target,
        locust::{self, LocustError, LocustPlan},
    },
    proxy::{
        self, FaultCommon, Mapping, ProxyConfig, ProxyError, ProxyHandle, ProxyStats,
        ScheduleError, TcpFault, Upstream,
    },
    report::impact::{
        self as report, ActiveWindow, CallInfo, FaultInfo, LatencySlo, Report, ReportInput,
        RequestInfo, StageInfo, StrategyInfo, UpstreamCounts,
        phases::{merge_windows, phase_cuts},
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
    /// The requests to send: one, or a mix picked by weight, all to one service.
    pub mix: Mix,
    pub num_clients: u32,
    /// The open model's pace: `rps` per client, or a rate over all clients that ramps through stages.
    pub pace: Pace,
    /// How long the load runs (the stages' total with stages).
    pub duration: Duration,
    pub timeout: Duration,
    /// Empty: a proxy is put in front of the URL itself.
    pub proxies: Vec<Mapping>,
    /// The faults, all on the same proxies, each in its own windows.
    pub faults: Vec<TcpFault>,
    pub slos: Vec<LatencySlo>,
    pub seed: Option<u64>,
    pub baseline: bool,
    /// N of time to recover: seconds in a row that must hold every SLO.
    pub recovery_seconds: u32,
    /// What sends the load.
    pub engine: Engine,
    /// Where the scenario's proxies serve their Prometheus metrics while it runs; `None`: nowhere.
    pub metrics: Option<SocketAddr>,
}

/// What sends a scenario's load.
#[derive(Debug, Clone, PartialEq)]
pub enum Engine {
    /// fault's own open-model generator ([`crate::load`]).
    Own,
    /// Locust's master and workers ([`crate::load::locust`]), with its per-request results.
    Locust(LocustPlan),
}

impl ImpactSpec {
    /// The request whose host the load goes to (every request of the mix goes there).
    pub fn target(&self) -> &Target {
        &self.mix.first().target
    }

    /// The load shape, as the report states it.
    pub fn strategy(&self) -> StrategyInfo {
        let (rps, stages) = match &self.pace {
            Pace::Shaped(rate) => (
                0,
                rate.stages_in_order()
                    .map(|(from_s, duration_s, from_rps, to_rps)| StageInfo {
                        from_s,
                        duration_s,
                        from_rps,
                        to_rps,
                    })
                    .collect(),
            ),
            Pace::Open { rps } => (*rps, Vec::new()),
            Pace::Saturate => (0, Vec::new()),
        };
        if let Engine::Locust(plan) = &self.engine {
            return StrategyInfo {
                duration_s: self.duration.as_secs_f64(),
                num_clients: plan.users,
                rps: 0,
                stages: Vec::new(),
            };
        }
        StrategyInfo {
            duration_s: self.duration.as_secs_f64(),
            num_clients: self.num_clients,
            rps,
            stages,
        }
    }

    /// Requests over the whole scenario (both runs when there is a baseline).
    pub fn planned_requests(&self) -> u64 {
        if let Engine::Locust(_) = self.engine {
            // A closed model plans no count: its users send as fast as the answers come.
            return 0;
        }
        let one = self.load_plan(None).planned_requests().unwrap_or(0);
        if self.baseline { one * 2 } else { one }
    }

    /// Whether the proxy in front of an `https://` URL speaks TLS to it, so that the fault sees clear-text HTTP:
    /// in the direct topology, for a fault that reads HTTP. Both runs (baseline too) use the same path.
    fn proxy_originates_tls(&self) -> bool {
        self.proxies.is_empty()
            && self.target().is_tls()
            && self.faults.iter().any(TcpFault::reads_http)
    }

    /// When each fault is active, in seconds from the start of the run (the whole run without a schedule); an
    /// error names the fault (its index) whose schedule does not fit the run.
    pub fn fault_windows(&self) -> Result<Vec<Vec<ActiveWindow>>, (usize, ScheduleError)> {
        let run = self.duration.as_secs_f64();
        self.faults
            .iter()
            .enumerate()
            .map(|(index, fault)| {
                let windows = fault
                    .windows(Some(self.duration))
                    .map_err(|e| (index, e))?
                    .unwrap_or_else(|| vec![(Duration::ZERO, None)]);
                Ok(windows
                    .into_iter()
                    .map(|(start, end)| ActiveWindow {
                        from_s: start.as_secs_f64(),
                        until_s: end.map_or(run, |end| end.as_secs_f64().min(run)),
                    })
                    .collect())
            })
            .collect()
    }

    fn load_plan(&self, connect_to: Option<SocketAddr>) -> LoadPlan {
        LoadPlan {
            mix: self.mix.clone(),
            connect_to,
            proxy_originates_tls: self.proxy_originates_tls(),
            num_clients: self.num_clients,
            pace: self.pace.clone(),
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
    #[error("sched of the {kind} fault: {source}")]
    Schedule {
        kind: &'static str,
        #[source]
        source: ScheduleError,
    },
    #[error("{0}")]
    Load(#[from] LoadError),
    #[error("{0}")]
    Locust(#[from] LocustError),
    #[error("metrics: {0}")]
    Metrics(#[from] crate::metrics::MetricsError),
    #[error("the scenario was cancelled; load and proxies were stopped")]
    Cancelled,
}

/// The scenario's metrics page: the counters of whichever run's proxies are up (the baseline's, then the
/// faulted run's), served until the scenario ends.
struct MetricsPage {
    current: Arc<std::sync::Mutex<Option<proxy::ProxyView>>>,
    stop: CancellationToken,
}

impl MetricsPage {
    async fn start(addr: SocketAddr) -> Result<Self, ImpactError> {
        let listener = crate::metrics::bind(addr).await?;
        let current: Arc<std::sync::Mutex<Option<proxy::ProxyView>>> = Arc::default();
        let stop = CancellationToken::new();
        let shown = current.clone();
        crate::metrics::serve(
            listener,
            Arc::new(move || {
                let view = shown.lock().unwrap_or_else(|p| p.into_inner()).clone();
                view.map(|view| proxy::measure::metrics_page(&view))
                    .unwrap_or_default()
            }),
            stop.clone(),
        );
        Ok(Self { current, stop })
    }

    /// Shows the counters of `view`'s proxies from now on.
    fn show(&self, view: proxy::ProxyView) {
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(view);
    }
}

impl Drop for MetricsPage {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Runs the scenario: an optional baseline without the faults, then the run with them, then the report.
/// Proxies are stopped (ports freed) on every path, including cancellation.
pub async fn run(
    spec: &ImpactSpec,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<Report, ImpactError> {
    let windows = spec
        .fault_windows()
        .map_err(|(index, source)| ImpactError::Schedule {
            kind: spec.faults[index].kind(),
            source,
        })?;
    let service = spec.target().resolve(spec.timeout).await?;
    spec.target().check_reachable(service).await?;
    // Locust, its locustfile and its master's port are checked before anything starts.
    let locust = match &spec.engine {
        Engine::Own => None,
        Engine::Locust(plan) => Some(Arc::new(
            locust::prepare(plan, &spec.mix, spec.timeout).await?,
        )),
    };

    let metrics = match spec.metrics {
        Some(addr) => Some(MetricsPage::start(addr).await?),
        None => None,
    };
    let run_s = spec.duration.as_secs_f64();
    let cuts: Vec<Duration> = phase_cuts(&merge_windows(windows.iter().flatten().copied()), run_s)
        .into_iter()
        .map(Duration::from_secs_f64)
        .collect();
    let baseline = if spec.baseline {
        Some(
            run_once(
                spec,
                Vec::new(),
                &[],
                (locust.clone(), metrics.as_ref()),
                cancel,
                progress.clone(),
            )
            .await?,
        )
    } else {
        None
    };
    let faulted = run_once(
        spec,
        spec.faults.clone(),
        &cuts,
        (locust, metrics.as_ref()),
        cancel,
        progress,
    )
    .await?;
    let proxies = faulted
        .mappings
        .iter()
        .map(|m| format!("proxy {} → {}", m.listen, m.upstream))
        .collect::<Vec<_>>()
        .join(", ");
    let faults = spec
        .faults
        .iter()
        .zip(windows)
        .enumerate()
        .map(|(index, (fault, windows))| FaultInfo {
            kind: fault.kind().to_owned(),
            description: fault.describe(),
            sched: fault.common().schedule.as_ref().map(ToString::to_string),
            windows,
            applied_on: format!("{proxies} ({})", describe_placement(fault.common())),
            applications: faulted.stats.applied_by_fault.get(index).copied(),
        })
        .collect();
    let input = ReportInput {
        call: CallInfo {
            url: spec.target().url.to_string(),
            method: spec.target().method.to_string(),
            timeout_ms: spec.timeout.as_millis() as u64,
            headers: spec
                .target()
                .headers
                .iter()
                .map(|(name, _)| name.to_string())
                .collect(),
            has_body: !spec.target().body.is_empty(),
        },
        requests: spec
            .mix
            .requests()
            .iter()
            .map(|request| RequestInfo {
                name: request.name.clone(),
                method: request.target.method.to_string(),
                url: request.target.url.to_string(),
                weight: request.weight,
                expect: request.expect.describe(),
                headers: request
                    .target
                    .headers
                    .iter()
                    .map(|(name, _)| name.to_string())
                    .collect(),
                has_body: !request.target.body.is_empty(),
            })
            .collect(),
        strategy: spec.strategy(),
        faults,
        slos: spec.slos.clone(),
        recovery_seconds: spec.recovery_seconds,
        upstream: Some(faulted.upstream),
    };
    let report = report::build(input, &faulted.load, baseline.as_ref().map(|b| &b.load));
    let report = match &faulted.engine {
        Some(engine) => report.with_engine(engine_info(engine)),
        None => report,
    };
    let stats = &faulted.stats;
    Ok(report.with_proxy(report::ProxyFigures {
        connections: stats.connections_total,
        upstream_failures: stats.upstream_failures,
        bytes_to_upstream: stats.bytes_to_upstream,
        bytes_to_client: stats.bytes_to_client,
        fault_applications: stats.faults_applied.values().sum(),
        other_streams: None,
    }))
}

/// The report's account of an external engine.
fn engine_info(figures: &locust::EngineFigures) -> report::EngineInfo {
    let total: u64 = figures.workers.iter().map(|w| w.requests).sum();
    report::EngineInfo {
        engine: figures.engine.clone(),
        version: figures.version.clone(),
        users: figures.users,
        spawn_rate: figures.spawn_rate,
        workers: figures
            .workers
            .iter()
            .map(|w| report::WorkerInfo {
                id: w.id.clone(),
                requests: w.requests,
                percent: crate::report::percent(w.requests, total),
            })
            .collect(),
        note: "the latencies are Locust's (from its request events: start time and response time); Locust's \
               model is closed (its users wait for each answer before the next request), not an arrival rate, \
               so a slower service gets fewer requests rather than queued ones"
            .into(),
    }
}

struct RunOutcome {
    load: LoadReport,
    /// What an external engine said of the run.
    engine: Option<locust::EngineFigures>,
    mappings: Vec<Mapping>,
    /// The proxy's counters at the end of the run.
    stats: ProxyStats,
    /// What the proxies sent upstream, per second and per phase.
    upstream: UpstreamCounts,
}

/// One load run through proxies carrying `faults` (none for the baseline), its requests grouped into phases
/// cut at `cuts`.
async fn run_once(
    spec: &ImpactSpec,
    faults: Vec<TcpFault>,
    cuts: &[Duration],
    (locust, metrics): (Option<Arc<locust::Prepared>>, Option<&MetricsPage>),
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<RunOutcome, ImpactError> {
    // Locust starts first: the proxies (and their faults' clock) start once its workers have come, just
    // before its test starts.
    let mut launched = match locust {
        Some(prepared) => {
            let mut launched = locust::Launched::start(prepared.clone(), spec.duration)?;
            if let locust::Workers::External(count) = prepared.plan().workers {
                progress.set_note(format!(
                    "waiting for {count} Locust workers: start each with `{}`",
                    prepared.worker_command()
                ));
            }
            launched.ready(cancel).await.map_err(|e| match e {
                LocustError::Cancelled => ImpactError::Cancelled,
                e => e.into(),
            })?;
            progress.set_note(String::new());
            Some(launched)
        }
        None => None,
    };
    let direct = spec.proxies.is_empty();
    let mappings = if direct {
        vec![Mapping {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            // Raw TCP: TLS, when there is any, stays end to end between the load generator and the service,
            // unless the fault must read HTTP.
            upstream: Upstream {
                host: spec.target().host().to_owned(),
                port: spec.target().port(),
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
        // Both runs count the requests sent upstream, so that they relay alike.
        count_requests: true,
        ..ProxyConfig::default()
    })
    .await?;
    if let Some(metrics) = metrics {
        metrics.show(handle.view());
    }
    let connect_to = if direct {
        handle.local_addrs().first().copied()
    } else {
        None
    };
    let plan = spec.load_plan(connect_to);
    let peak = plan.rate().map_or(1.0, |rate| rate.peak());
    let mut tally = Tally::new(spec.duration, cuts, peak);
    if let Some(launched) = launched.take() {
        let result = run_locust(
            spec,
            launched,
            (&handle, connect_to),
            cuts,
            &mut tally,
            cancel,
            &progress,
        )
        .await;
        let stats = handle.stats();
        let mappings = handle.mappings().to_vec();
        handle.stop().await;
        let (load, engine) = match result {
            Ok(done) => done,
            Err(LocustError::Cancelled) => return Err(ImpactError::Cancelled),
            Err(e) => return Err(e.into()),
        };
        let upstream = tally.counts(&load, &stats);
        return Ok(RunOutcome {
            load,
            engine: Some(engine),
            mappings,
            stats,
            upstream,
        });
    }
    let (started, start) = tokio::sync::oneshot::channel();
    let result = {
        let load = load::run_in_phases(&plan, cuts, started, cancel, progress);
        let watch = tally.watch(&handle, start);
        tokio::pin!(load, watch);
        tokio::select! {
            result = &mut load => result,
            () = &mut watch => (&mut load).await,
        }
    };
    let stats = handle.stats();
    let mappings = handle.mappings().to_vec();
    handle.stop().await;
    let load = match result {
        Ok(load) => load,
        Err(LoadError::Cancelled) => return Err(ImpactError::Cancelled),
        Err(e) => return Err(e.into()),
    };
    let upstream = tally.counts(&load, &stats);
    Ok(RunOutcome {
        load,
        engine: None,
        mappings,
        stats,
        upstream,
    })
}

/// Locust's test on the proxies of `handle` (the first one's address when it stands in front of the
/// service, else the service itself), the proxy's counters read at each boundary meanwhile.
async fn run_locust(
    spec: &ImpactSpec,
    mut launched: locust::Launched,
    (handle, connect_to): (&ProxyHandle, Option<SocketAddr>),
    cuts: &[Duration],
    tally: &mut Tally,
    cancel: &CancellationToken,
    progress: &LoadProgress,
) -> Result<(LoadReport, locust::EngineFigures), LocustError> {
    let host = match connect_to {
        Some(addr) => format!("http://{addr}"),
        None => {
            let url = &spec.target().url;
            format!("{}://{}", url.scheme(), url.authority())
        }
    };
    let (start_tx, start) = tokio::sync::oneshot::channel();
    let begun = launched.go(&host, cancel).await?;
    let _ = start_tx.send(begun.0);
    let finish = launched.finish(begun, cuts, cancel, progress);
    let watch = tally.watch(handle, start);
    tokio::pin!(finish, watch);
    tokio::select! {
        result = &mut finish => result,
        () = &mut watch => (&mut finish).await,
    }
}
