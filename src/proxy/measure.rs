//! `fault run`'s measuring flags, declared once as [`Field`]s (their flags, variables and help generated from
//! them): `--report`, `--html`, `--result`, `--slo`, `--group`, `--recovery-seconds`, `--metrics`. With any of
//! them the proxy times every exchange that passes ([`super::exchanges`]) and, at exit, writes the impact
//! report built by the one builder ([`crate::report::impact::build`]) from those samples.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Arg, ArgAction, ArgMatches, Command};

use super::exchanges::{ExchangeRecorder, GroupPattern, StreamTally, check_group};
use crate::fields::{Field, FieldInput};
use crate::report::impact::{
    self, ActiveWindow, CallInfo, FaultInfo, LatencySlo, ProxyFigures, Report, ReportInput,
    RequestInfo, StrategyInfo,
};

use impact::PASSTHROUGH_METHOD;

pub const REPORT: Field = Field::text(
    "report",
    "When the run ends, write the impact report of the HTTP/1 traffic that passed (per request group, phases \
     and the faults' windows, time to recover, SLOs) to this file: markdown; the result JSON when it ends in \
     .json, the HTML page when it ends in .html; its directory must exist",
)
.flag("report")
.optional("no report");
pub const HTML: Field = Field::text(
    "html",
    "Also write the report as one self-contained HTML page to this file; its directory must exist",
)
.flag("html")
.optional("no page");
pub const RESULT: Field = Field::text(
    "result",
    "Also write the versioned result JSON (what `fault report merge` adds up across proxies) to this file; \
     its directory must exist",
)
.flag("result")
.optional("no result");
pub const SLO: Field = Field::parsed(
    "slo",
    "An SLO the report judges, repeatable: OBJECTIVE%@THRESHOLDms, optionally followed by a request group \
     (\"99%@350ms\", \"95%@200ms GET /orders/{id}\")",
    "OBJECTIVE%@THRESHOLDms [GROUP]",
    check_slo,
)
.flag("slo")
.optional("99% within 350 ms and 95% within 200 ms, of all traffic");
pub const GROUP: Field = Field::parsed(
    "group",
    "A path pattern folding the paths it matches into one row of the report, repeatable: each `{name}` \
     segment stands for any one segment (\"/orders/{id}\")",
    "a path starting with '/', placeholders as whole segments",
    check_group,
)
.flag("group")
.optional("each method and path its own row");
pub const RECOVERY_SECONDS: Field = impact::RECOVERY_SECONDS.flag("recovery-seconds");
pub const METRICS: Field = Field::parsed(
    "metrics",
    "Serve Prometheus metrics on http://ADDR/metrics while running (exchanges, connections, faults applied, \
     bytes, exchange latency, the windows active now)",
    "an address HOST:PORT (a bare port listens on 127.0.0.1)",
    check_metrics_address,
)
.flag("metrics")
.optional("no metrics");

/// Every measuring flag, in `fault run --help`'s order.
pub const FIELDS: &[Field] = &[REPORT, HTML, RESULT, SLO, GROUP, RECOVERY_SECONDS, METRICS];
/// The flags given more than once.
const REPEATABLE: &[Field] = &[SLO, GROUP];
const HEADING: &str = "Measuring";

/// A metrics address as `--metrics` takes it: `HOST:PORT`, or a bare port on 127.0.0.1.
pub fn metrics_address(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse::<SocketAddr>().map_err(|_| {
        format!("'{text}' is not an address; expected HOST:PORT such as 127.0.0.1:9464, or a port")
    })
}

fn check_metrics_address(text: &str) -> Result<(), String> {
    metrics_address(text).map(drop)
}

/// An SLO as `--slo` takes it.
pub fn parse_slo(text: &str) -> Result<LatencySlo, String> {
    let text = text.trim();
    let wrong =
        || format!("'{text}' is not an SLO; expected OBJECTIVE%@THRESHOLDms, e.g. 99%@350ms");
    let (objective, rest) = text.split_once('@').ok_or_else(wrong)?;
    let objective: f64 = objective
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| wrong())?;
    let (threshold, request) = match rest.trim().split_once(char::is_whitespace) {
        Some((threshold, request)) => (threshold, Some(request.trim().to_owned())),
        None => (rest.trim(), None),
    };
    let threshold_ms: f64 = threshold
        .trim_end_matches("ms")
        .parse()
        .map_err(|_| wrong())?;
    if !(objective > 0.0 && objective <= 100.0) {
        return Err(format!(
            "'{text}': the objective must be above 0 and at most 100 (percent)"
        ));
    }
    if !(threshold_ms > 0.0 && threshold_ms <= 3_600_000.0) {
        return Err(format!(
            "'{text}': the threshold must be above 0 and at most 3600000 ms"
        ));
    }
    Ok(LatencySlo {
        objective,
        threshold_ms,
        request,
    })
}

fn check_slo(text: &str) -> Result<(), String> {
    parse_slo(text).map(drop)
}

/// The measuring flags, read.
#[derive(Debug, Clone, Default)]
pub struct MeasureArgs {
    pub report: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub result: Option<PathBuf>,
    pub slos: Vec<LatencySlo>,
    pub groups: Vec<GroupPattern>,
    pub recovery_seconds: u32,
    pub metrics: Option<SocketAddr>,
}

impl MeasureArgs {
    /// Whether the proxy must time its exchanges.
    pub fn measures(&self) -> bool {
        self.report.is_some()
            || self.html.is_some()
            || self.result.is_some()
            || self.metrics.is_some()
    }

    /// The SLOs the report judges: the given ones, or the guide's two.
    pub fn slos(&self) -> Vec<LatencySlo> {
        if self.slos.is_empty() {
            LatencySlo::defaults()
        } else {
            self.slos.clone()
        }
    }
}

fn id(field: &Field) -> String {
    field.long("").replace('-', "_")
}

fn refuse(message: String) -> clap::Error {
    clap::Error::raw(
        clap::error::ErrorKind::ValueValidation,
        format!("{message}\n"),
    )
}

impl clap::Args for MeasureArgs {
    fn augment_args(command: Command) -> Command {
        let heading = command.get_next_help_heading().map(str::to_owned);
        let mut command = command.next_help_heading(HEADING);
        for field in FIELDS {
            let mut arg: Arg = field.arg("", "");
            if REPEATABLE.iter().any(|r| r.name == field.name) {
                arg = arg.action(ArgAction::Append);
            }
            command = command.arg(arg);
        }
        match heading {
            Some(heading) => command.next_help_heading(heading),
            None => command.next_help_heading(None::<&str>),
        }
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl clap::FromArgMatches for MeasureArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let single: Vec<Field> = FIELDS
            .iter()
            .filter(|f| !REPEATABLE.iter().any(|r| r.name == f.name))
            .copied()
            .collect();
        let input = FieldInput::from_matches(&single, "", matches);
        let path = |field: &Field| -> Result<Option<PathBuf>, clap::Error> {
            input
                .has(field)
                .then(|| input.text(field).map(PathBuf::from))
                .transpose()
                .map_err(|e| refuse(e.to_string()))
        };
        let many = |field: &Field| -> Vec<String> {
            matches
                .try_get_many::<String>(&id(field))
                .ok()
                .flatten()
                .map(|values| values.filter(|v| !v.trim().is_empty()).cloned().collect())
                .unwrap_or_default()
        };
        let slos = many(&SLO)
            .iter()
            .map(|text| parse_slo(text).map_err(|e| refuse(format!("--slo: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let groups = many(&GROUP)
            .iter()
            .map(|text| {
                text.parse::<GroupPattern>()
                    .map_err(|e| refuse(format!("--group: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let recovery_seconds = input
            .whole(&RECOVERY_SECONDS)
            .map_err(|e| refuse(e.to_string()))? as u32;
        let metrics = if input.has(&METRICS) {
            let text = input.text(&METRICS).map_err(|e| refuse(e.to_string()))?;
            Some(metrics_address(&text).map_err(|e| refuse(format!("--metrics: {e}")))?)
        } else {
            None
        };
        Ok(Self {
            report: path(&REPORT)?,
            html: path(&HTML)?,
            result: path(&RESULT)?,
            slos,
            groups,
            recovery_seconds,
            metrics,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// `--metrics` alone, for the commands that serve metrics without measuring exchanges (`fault mcp-proxy`):
/// the same declared field as `fault run`'s.
#[derive(Debug, Clone, Default)]
pub struct MetricsArg {
    pub metrics: Option<SocketAddr>,
}

impl clap::Args for MetricsArg {
    fn augment_args(command: Command) -> Command {
        command.arg(METRICS.arg("", ""))
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl clap::FromArgMatches for MetricsArg {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let input = FieldInput::from_matches(&[METRICS], "", matches);
        let metrics = if input.has(&METRICS) {
            let text = input.text(&METRICS).map_err(|e| refuse(e.to_string()))?;
            Some(metrics_address(&text).map_err(|e| refuse(format!("--metrics: {e}")))?)
        } else {
            None
        };
        Ok(Self { metrics })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// A fault of the run, its windows from the start (an open end: until the run's end) and how often it acted.
pub type RunFault<'a> = (&'a super::TcpFault, Vec<super::Window>, u64);

/// What a proxy run knows besides its samples.
pub struct ProxyRun<'a> {
    pub mappings: &'a [String],
    /// The faults, their descriptions, their windows from the start (an open end: until the run's end) and
    /// how often each acted.
    pub faults: Vec<RunFault<'a>>,
    /// The run's `--duration`, or how long it ran.
    pub duration: Duration,
    pub stats: &'a super::ProxyStats,
}

/// The report of what passed through the proxy: the impact report's builder over its exchanges.
pub fn report(args: &MeasureArgs, recorder: &ExchangeRecorder, run: &ProxyRun<'_>) -> Report {
    let run_s = run.duration.as_secs_f64();
    let proxies = run
        .mappings
        .iter()
        .map(|m| format!("proxy {m}"))
        .collect::<Vec<_>>()
        .join(", ");
    let faults: Vec<FaultInfo> = run
        .faults
        .iter()
        .map(|(spec, windows, applied)| FaultInfo {
            kind: spec.kind().to_owned(),
            description: spec.describe(),
            sched: spec.common().schedule.as_ref().map(ToString::to_string),
            windows: windows
                .iter()
                .filter(|(start, _)| start.as_secs_f64() < run_s)
                .map(|(start, end)| ActiveWindow {
                    from_s: start.as_secs_f64(),
                    until_s: end.map_or(run_s, |end| end.as_secs_f64().min(run_s)),
                })
                .collect(),
            applied_on: format!(
                "{proxies} ({} side, {})",
                spec.common().side,
                spec.common().direction
            ),
            applications: Some(*applied),
        })
        .collect();
    let load = recorder.load_report(run.duration, run.stats.connections_total);
    let input = ReportInput {
        call: CallInfo {
            url: "any HTTP/1 traffic through fault run".into(),
            method: PASSTHROUGH_METHOD.into(),
            timeout_ms: 0,
            headers: Vec::new(),
            has_body: false,
        },
        requests: load
            .per_request
            .iter()
            .map(|group| RequestInfo::observed(&group.name))
            .collect(),
        strategy: StrategyInfo {
            duration_s: run_s,
            // One proxy; `fault report merge` adds proxies up.
            num_clients: 1,
            rps: 0,
            stages: Vec::new(),
        },
        faults,
        slos: args.slos(),
        recovery_seconds: args.recovery_seconds,
        upstream: None,
    };
    let mut report = impact::build(input, &load, None);
    report.title = "Fault Proxy Report".into();
    let (_, streams) = recorder.snapshot();
    let figures = proxy_figures(run.stats, &streams);
    if report.faults.is_empty() {
        report.proxy = Some(figures);
        report
    } else {
        report.with_proxy(figures)
    }
}

fn proxy_figures(stats: &super::ProxyStats, streams: &StreamTally) -> ProxyFigures {
    ProxyFigures {
        connections: stats.connections_total,
        upstream_failures: stats.upstream_failures,
        bytes_to_upstream: stats.bytes_to_upstream,
        bytes_to_client: stats.bytes_to_client,
        fault_applications: stats.faults_applied.values().sum(),
        other_streams: (streams.connections > 0).then(|| {
            impact::StreamFigures::of(
                streams.connections,
                (streams.bytes_to_upstream, streams.bytes_to_client),
                &streams.duration_us,
            )
        }),
    }
}

/// The proxy's metrics page: a view of its counters and of the exchanges it timed.
pub fn metrics_page(view: &super::ProxyView) -> String {
    use crate::metrics::Exposition;
    let stats = view.stats();
    let mut page = Exposition::default();
    page.family(
        "fault_connections_total",
        "counter",
        "Client connections the proxy accepted.",
    );
    page.sample(
        "fault_connections_total",
        &[],
        stats.connections_total as f64,
    );
    page.family(
        "fault_connections_open",
        "gauge",
        "Client connections open now.",
    );
    page.sample(
        "fault_connections_open",
        &[],
        stats.connections_active as f64,
    );
    page.family(
        "fault_upstream_failures_total",
        "counter",
        "Connections closed because their upstream could not be reached.",
    );
    page.sample(
        "fault_upstream_failures_total",
        &[],
        stats.upstream_failures as f64,
    );
    page.family(
        "fault_bytes_total",
        "counter",
        "Bytes the proxy wrote, by flow: to the upstream (requests) or to the client (responses).",
    );
    page.sample(
        "fault_bytes_total",
        &[("flow", "to_upstream")],
        stats.bytes_to_upstream as f64,
    );
    page.sample(
        "fault_bytes_total",
        &[("flow", "to_client")],
        stats.bytes_to_client as f64,
    );
    let faults = view.faults_active();
    page.family(
        "fault_faults_applied_total",
        "counter",
        "Times each configured fault acted (chunks delayed, dropped, replaced or closed on).",
    );
    let placed: Vec<(String, String, String, String)> = faults
        .iter()
        .enumerate()
        .map(|(index, (spec, _))| {
            let common = spec.common();
            (
                spec.kind().to_owned(),
                index.to_string(),
                common.side.to_string(),
                common.direction.to_string(),
            )
        })
        .collect();
    for ((kind, index, side, direction), applied) in placed.iter().zip(&stats.applied_by_fault) {
        let labels = [
            ("fault", kind.as_str()),
            ("position", index.as_str()),
            ("side", side.as_str()),
            ("direction", direction.as_str()),
        ];
        page.sample("fault_faults_applied_total", &labels, *applied as f64);
    }
    page.family(
        "fault_fault_window_active",
        "gauge",
        "1 while the fault is inside one of its windows, else 0.",
    );
    for ((kind, index, side, direction), (_, active)) in placed.iter().zip(&faults) {
        let labels = [
            ("fault", kind.as_str()),
            ("position", index.as_str()),
            ("side", side.as_str()),
            ("direction", direction.as_str()),
        ];
        page.sample(
            "fault_fault_window_active",
            &labels,
            f64::from(u8::from(*active)),
        );
    }
    if let Some(recorder) = view.exchanges() {
        let (groups, streams) = recorder.snapshot();
        page.family(
            "fault_exchanges_total",
            "counter",
            "HTTP/1 exchanges that passed, by request group and outcome (success: status below 400; http_error: 400 or more; transport_error: no whole response).",
        );
        for group in &groups {
            let s = &group.samples;
            for (outcome, count) in [
                ("success", s.success),
                ("http_error", s.http_error_count()),
                ("transport_error", s.transport_errors),
            ] {
                page.sample(
                    "fault_exchanges_total",
                    &[("group", &group.name), ("outcome", outcome)],
                    count as f64,
                );
            }
        }
        page.family(
            "fault_exchange_duration_seconds",
            "histogram",
            "From an exchange's first request byte read to its last response byte written.",
        );
        for group in &groups {
            page.histogram_us(
                "fault_exchange_duration_seconds",
                &[("group", &group.name)],
                &group.samples.all_us,
                group.samples.sum_us,
            );
        }
        page.family(
            "fault_exchange_fault_delay_seconds",
            "histogram",
            "Of each exchange's duration, the part the faults added.",
        );
        for group in &groups {
            let sum: u128 = group
                .samples
                .queueing_us
                .iter_recorded()
                .map(|v| u128::from(v.value_iterated_to()) * u128::from(v.count_at_value()))
                .sum();
            page.histogram_us(
                "fault_exchange_fault_delay_seconds",
                &[("group", &group.name)],
                &group.samples.queueing_us,
                sum,
            );
        }
        page.family(
            "fault_streams_total",
            "counter",
            "Connections whose traffic was not HTTP/1, counted apart.",
        );
        page.sample("fault_streams_total", &[], streams.connections as f64);
        page.family(
            "fault_stream_bytes_total",
            "counter",
            "Bytes of the connections that were not HTTP/1, by flow.",
        );
        page.sample(
            "fault_stream_bytes_total",
            &[("flow", "to_upstream")],
            streams.bytes_to_upstream as f64,
        );
        page.sample(
            "fault_stream_bytes_total",
            &[("flow", "to_client")],
            streams.bytes_to_client as f64,
        );
    }
    page.into_text()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_slo_reads_its_objective_threshold_and_group() {
        let slo = parse_slo("95%@200ms GET /orders/{id}").unwrap();
        assert_eq!((slo.objective, slo.threshold_ms), (95.0, 200.0));
        assert_eq!(slo.request.as_deref(), Some("GET /orders/{id}"));
        assert_eq!(parse_slo("99@350").unwrap().request, None);
        assert!(parse_slo("99%").unwrap_err().contains("not an SLO"));
        assert!(parse_slo("0%@5ms").unwrap_err().contains("objective"));
    }

    #[test]
    fn a_metrics_address_is_an_address_or_a_port() {
        assert_eq!(
            metrics_address("9464").unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert!(metrics_address("0.0.0.0:9").is_ok());
        assert!(
            metrics_address("localhost:x")
                .unwrap_err()
                .contains("not an address")
        );
    }
}
