//! MCP tools of the scenario family: `fault_run_*_impact_scenario`.
//!
//! Inputs are read leniently from the raw arguments (numbers may come as numeric strings, an empty string
//! means "use the default", as in the guide's payload templates) and validated here, so every bad value comes
//! back as a tool error naming the field and what it accepts. The schema types below document the contract.

use std::{collections::BTreeMap, str::FromStr, sync::Arc, time::Duration};

use rmcp::{
    RoleServer,
    model::{CallToolResult, JsonObject, ProgressNotificationParam},
    schemars::JsonSchema,
    service::RequestContext,
    tool, tool_router,
};
use serde::Deserialize;
use serde_json::Value;

use super::{FaultServer, output_schema, text_and_structured, tool_error};
use crate::{
    load::{self, Target},
    proxy::{
        BandwidthSpec, BandwidthUnit, BlackholeSpec, Direction, FaultCommon, FaultSpec,
        HttpErrorSpec, JitterSpec, LatencySpec, PacketLossSpec, Side,
    },
    report::{Report, Slo},
    scenario::{self, Limits, ScenarioSpec},
};

// ---------------------------------------------------------------------------------------------
// Schemas (documentation of the accepted input; parsing is done by `Fields` below).

/// A number, or a string holding one (e.g. 3 or "3").
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum NumberLike {
    Number(f64),
    Text(String),
}

/// One SLO row: `objective`% of requests must succeed within `threshold_ms`.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct SloInput {
    /// Percent of requests, 0 < objective ≤ 100 (e.g. 99).
    objective: NumberLike,
    /// Threshold in milliseconds, > 0 (e.g. 350).
    threshold_ms: NumberLike,
}

/// Fields every impact scenario takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct CommonInput {
    /// Absolute http:// or https:// URL of the endpoint to send load to (the service under test).
    url: String,
    /// HTTP method. Default "GET".
    method: Option<String>,
    /// Request body sent with every request. Default "" (no body).
    body: Option<String>,
    /// Extra request headers, name → value. Default none.
    headers: Option<BTreeMap<String, String>>,
    /// How long to send load, e.g. "10s", "500ms", "1m" (a bare number means seconds). Default "10s"; more
    /// than 0 and at most "10m".
    duration: Option<String>,
    /// Virtual clients, each with its own kept-alive connections. Default 1; 1..=1000.
    num_clients: Option<NumberLike>,
    /// Requests per second started by each client on schedule (open model). Default 3; 1..=10000, and
    /// num_clients × rps ≤ 100000.
    rps: Option<NumberLike>,
    /// Client timeout per request, in seconds (fractions allowed). Default 10; more than 0 and at most 300.
    timeout: Option<NumberLike>,
    /// Proxy mappings "LISTEN_PORT=HOST:PORT" (e.g. "34000=127.0.0.1:8080", or "34000=https://api.host" to
    /// speak TLS to the upstream): the fault runs on these proxies, which your service must call its upstream
    /// through, and the load goes to `url`. Default none: a proxy is put in front of `url` itself (http and
    /// https alike; TLS, SNI and Host stay the service's).
    proxies: Option<Vec<String>>,
    /// SLOs to judge the run by. Default [{objective: 99, threshold_ms: 350}, {objective: 95,
    /// threshold_ms: 200}].
    slos: Option<Vec<SloInput>>,
    /// Seed for the fault's randomness, for repeatable runs. Default: random.
    seed: Option<NumberLike>,
    /// Run the same load without the fault first and add a with/without comparison (p50, p95, p99, errors).
    /// Default false.
    baseline: Option<bool>,
}

/// Where a TCP fault acts: side "server" is the proxy's upstream end, "client" the end facing the caller;
/// direction "ingress" is bytes arriving at that end, "egress" bytes leaving it. server+ingress and
/// client+egress act on responses, server+egress and client+ingress on requests.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct PlacementInput {
    /// "ingress", "egress" or "both".
    direction: Option<String>,
    /// "server" or "client".
    side: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct LatencyInput {
    #[serde(flatten)]
    common: CommonInput,
    #[serde(flatten)]
    placement: PlacementInput,
    /// Mean latency to add, in milliseconds; more than 0 and at most 60000.
    latency: NumberLike,
    /// Standard deviation around the mean, in milliseconds; 0..=60000. Default 0.
    deviation: Option<NumberLike>,
    /// Add the latency to every read/write on the connection instead of once per message. Default false.
    per_read_write_op: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct JitterInput {
    #[serde(flatten)]
    common: CommonInput,
    #[serde(flatten)]
    placement: PlacementInput,
    /// Largest extra delay, in milliseconds; more than 0 and at most 60000.
    amplitude: NumberLike,
    /// Delay spikes per second, in Hz; more than 0 and at most 1000.
    frequency: NumberLike,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct PacketLossInput {
    #[serde(flatten)]
    common: CommonInput,
    #[serde(flatten)]
    placement: PlacementInput,
    /// Share of TCP segments lost (then retransmitted late, as TCP would): a fraction 0..=0.99 or a
    /// percentage string such as "5%". Default 0.05.
    loss_rate: Option<NumberLike>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct BandwidthInput {
    #[serde(flatten)]
    common: CommonInput,
    #[serde(flatten)]
    placement: PlacementInput,
    /// Bandwidth cap in `unit`, a whole number ≥ 1.
    rate: NumberLike,
    /// Unit of `rate`: "bps" (bytes per second), "kbps", "mbps" or "gbps" (thousand, million, billion bytes
    /// per second). Default "bps".
    unit: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct BlackholeInput {
    #[serde(flatten)]
    common: CommonInput,
    #[serde(flatten)]
    placement: PlacementInput,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct HttpErrorInput {
    #[serde(flatten)]
    common: CommonInput,
    /// HTTP status code returned instead of the upstream's response; 400..=599. Default 503.
    status_code: Option<NumberLike>,
    /// Body of the injected response. Default "".
    error_body: Option<String>,
    /// Share of responses replaced, 0..=1. Default 1.
    probability: Option<NumberLike>,
}

fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_type::<T>()
}

// ---------------------------------------------------------------------------------------------
// Lenient field reading with messages that name the field.

#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub(crate) struct InputError {
    field: String,
    message: String,
}

fn bad(field: &str, message: impl Into<String>) -> InputError {
    InputError {
        field: field.to_owned(),
        message: message.into(),
    }
}

struct Fields<'a>(&'a JsonObject);

impl Fields<'_> {
    /// The value of `name`, or `None` when absent, null or an empty string (the guide's placeholders).
    fn get(&self, name: &str) -> Option<&Value> {
        match self.0.get(name) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.trim().is_empty() => None,
            Some(v) => Some(v),
        }
    }

    fn string(&self, name: &str) -> Result<Option<String>, InputError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(bad(name, format!("expected a string, got {other}"))),
        }
    }

    /// Like `string` but keeps an empty string as given (for bodies).
    fn raw_string(&self, name: &str) -> Result<Option<String>, InputError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(bad(name, format!("expected a string, got {other}"))),
        }
    }

    fn number(&self, name: &str) -> Result<Option<f64>, InputError> {
        let value = match self.get(name) {
            None => return Ok(None),
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
            Some(_) => None,
        };
        match value {
            Some(v) if v.is_finite() => Ok(Some(v)),
            _ => Err(bad(
                name,
                format!(
                    "expected a number (or a string holding one), got {}",
                    self.0.get(name).cloned().unwrap_or(Value::Null)
                ),
            )),
        }
    }

    /// A number within `min..=max`, `default` when absent.
    fn ranged(&self, name: &str, default: f64, min: f64, max: f64) -> Result<f64, InputError> {
        let value = self.number(name)?.unwrap_or(default);
        if value < min || value > max {
            return Err(bad(
                name,
                format!("{value} is out of range; accepted: {min} to {max}"),
            ));
        }
        Ok(value)
    }

    fn required_number(&self, name: &str, what: &str) -> Result<f64, InputError> {
        self.number(name)?
            .ok_or_else(|| bad(name, format!("is required: {what}")))
    }

    /// A whole number within `min..=max`, `default` when absent.
    fn integer(&self, name: &str, default: u64, min: u64, max: u64) -> Result<u64, InputError> {
        let value = self.ranged(name, default as f64, min as f64, max as f64)?;
        if value.fract() != 0.0 {
            return Err(bad(name, format!("{value} must be a whole number")));
        }
        Ok(value as u64)
    }

    fn boolean(&self, name: &str) -> Result<Option<bool>, InputError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(other) => Err(bad(name, format!("expected true or false, got {other}"))),
        }
    }

    fn choice<T: FromStr>(&self, name: &str, default: T, accepted: &str) -> Result<T, InputError> {
        match self.string(name)? {
            None => Ok(default),
            Some(text) => text
                .trim()
                .parse::<T>()
                .map_err(|_| bad(name, format!("must be one of {accepted}; got '{text}'"))),
        }
    }
}

fn read_duration(fields: &Fields, limits: &Limits) -> Result<Duration, InputError> {
    let name = "duration";
    let seconds = |secs: f64| {
        (secs.is_finite() && (0.0..=1e9).contains(&secs)).then(|| Duration::from_secs_f64(secs))
    };
    let duration = match fields.get(name) {
        None => Duration::from_secs(10),
        Some(Value::Number(n)) => n
            .as_f64()
            .and_then(seconds)
            .ok_or_else(|| bad(name, format!("{n} is not a valid number of seconds")))?,
        Some(Value::String(text)) => {
            let trimmed = text.trim();
            match trimmed.parse::<f64>() {
                Ok(secs) => seconds(secs).ok_or_else(|| {
                    bad(name, format!("'{text}' is not a valid number of seconds"))
                })?,
                Err(_) => humantime::parse_duration(trimmed).map_err(|e| {
                    bad(
                        name,
                        format!(
                            "'{text}' is not a duration ({e}); use e.g. \"10s\", \"500ms\", \"1m\""
                        ),
                    )
                })?,
            }
        }
        Some(other) => {
            return Err(bad(
                name,
                format!("expected a duration string such as \"10s\", got {other}"),
            ));
        }
    };
    if duration.is_zero() || duration > limits.max_duration {
        return Err(bad(
            name,
            format!(
                "{} is out of range; accepted: more than 0s and at most {}",
                humantime::format_duration(duration),
                humantime::format_duration(limits.max_duration)
            ),
        ));
    }
    Ok(duration)
}

fn parse_slos(fields: &Fields) -> Result<Vec<Slo>, InputError> {
    let Some(value) = fields.get("slos") else {
        return Ok(Slo::defaults());
    };
    let Value::Array(rows) = value else {
        return Err(bad(
            "slos",
            "expected a list of {objective, threshold_ms} objects",
        ));
    };
    if rows.is_empty() || rows.len() > 10 {
        return Err(bad(
            "slos",
            "give between 1 and 10 SLOs (or omit the field for the defaults)",
        ));
    }
    rows.iter()
        .enumerate()
        .map(|(i, row)| {
            let field = format!("slos[{i}]");
            let Value::Object(object) = row else {
                return Err(bad(&field, "expected an object {objective, threshold_ms}"));
            };
            let row = Fields(object);
            let nested = |e: InputError| bad(&format!("{field}.{}", e.field), e.message);
            let objective = row
                .required_number("objective", "a percent such as 99")
                .map_err(nested)?;
            let threshold_ms = row
                .required_number("threshold_ms", "milliseconds such as 350")
                .map_err(nested)?;
            if objective <= 0.0 || objective > 100.0 {
                return Err(bad(
                    &format!("{field}.objective"),
                    format!("{objective} is out of range; accepted: more than 0 and at most 100 (percent)"),
                ));
            }
            if threshold_ms <= 0.0 || threshold_ms > 3_600_000.0 {
                return Err(bad(
                    &format!("{field}.threshold_ms"),
                    format!("{threshold_ms} is out of range; accepted: more than 0 and at most 3600000"),
                ));
            }
            Ok(Slo {
                objective,
                threshold_ms,
            })
        })
        .collect()
}

fn parse_headers(fields: &Fields) -> Result<Vec<(String, String)>, InputError> {
    match fields.get("headers") {
        None => Ok(Vec::new()),
        Some(Value::Object(map)) => Ok(map
            .iter()
            .map(|(name, value)| match value {
                Value::String(s) => (name.clone(), s.clone()),
                other => (name.clone(), other.to_string()),
            })
            .collect()),
        Some(other) => Err(bad(
            "headers",
            format!("expected an object of header name → value, got {other}"),
        )),
    }
}

fn parse_proxies(fields: &Fields) -> Result<Vec<String>, InputError> {
    match fields.get("proxies") {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter(|(_, item)| !matches!(item, Value::String(s) if s.trim().is_empty()))
            .map(|(i, item)| match item {
                Value::String(s) => Ok(s.trim().to_owned()),
                other => Err(bad(
                    &format!("proxies[{i}]"),
                    format!("expected a mapping string \"PORT=HOST:PORT\", got {other}"),
                )),
            })
            .collect(),
        Some(Value::String(s)) => Ok(vec![s.trim().to_owned()]),
        Some(other) => Err(bad(
            "proxies",
            format!("expected a list of mappings such as [\"34000=127.0.0.1:8080\"], got {other}"),
        )),
    }
}

fn parse_placement(fields: &Fields, direction: Direction) -> Result<FaultCommon, InputError> {
    Ok(FaultCommon {
        direction: fields.choice("direction", direction, "ingress, egress, both")?,
        side: fields.choice("side", Side::Server, "server, client")?,
        ..FaultCommon::default()
    })
}

fn ms(value: f64) -> Duration {
    Duration::from_secs_f64(value / 1000.0)
}

/// Reads the common fields and builds the spec around `fault`.
fn parse_spec(args: &JsonObject, fault: FaultSpec) -> Result<ScenarioSpec, InputError> {
    let fields = Fields(args);
    let limits = Limits::default();
    let url = fields
        .string("url")?
        .ok_or_else(|| bad("url", "is required: an absolute http:// or https:// URL"))?;
    let method = fields.string("method")?.unwrap_or_else(|| "GET".into());
    let body = fields.raw_string("body")?.unwrap_or_default();
    let headers = parse_headers(&fields)?;
    let target = Target::parse(&url, &method, &headers, &body).map_err(|e| {
        let text = e.to_string();
        match e {
            load::LoadError::Method(_) => bad("method", text.replacen("method: ", "", 1)),
            load::LoadError::Header { .. } => bad("headers", text.replacen("headers: ", "", 1)),
            _ => bad("url", text.replacen("url: ", "", 1)),
        }
    })?;
    let duration = read_duration(&fields, &limits)?;
    let num_clients = fields.integer("num_clients", 1, 1, u64::from(limits.max_clients))? as u32;
    let rps = fields.integer("rps", 3, 1, u64::from(limits.max_rps_per_client))? as u32;
    let total_rate = u64::from(num_clients) * u64::from(rps);
    if total_rate > limits.max_total_rps {
        return Err(bad(
            "rps",
            format!(
                "num_clients × rps = {total_rate} requests per second; accepted: at most {}",
                limits.max_total_rps
            ),
        ));
    }
    let timeout_s = fields.ranged("timeout", 10.0, 0.001, limits.max_timeout.as_secs_f64())?;
    let seed = match fields.number("seed")? {
        None => None,
        Some(s) if s >= 0.0 && s.fract() == 0.0 && s <= u64::MAX as f64 => Some(s as u64),
        Some(s) => {
            return Err(bad(
                "seed",
                format!("{s} is not accepted; use a whole number ≥ 0"),
            ));
        }
    };
    let proxies = parse_proxies(&fields)?
        .into_iter()
        .enumerate()
        .map(|(i, text)| {
            scenario::parse_mapping(&text)
                .map_err(|e| bad(&format!("proxies[{i}]"), format!("{e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ScenarioSpec {
        target,
        num_clients,
        rps,
        duration,
        timeout: Duration::from_secs_f64(timeout_s),
        proxies,
        fault,
        slos: parse_slos(&fields)?,
        seed,
        baseline: fields.boolean("baseline")?.unwrap_or(false),
    })
}

fn positive_ms(fields: &Fields, name: &str, what: &str) -> Result<f64, InputError> {
    let value = fields.required_number(name, what)?;
    if value <= 0.0 || value > 60_000.0 {
        return Err(bad(
            name,
            format!("{value} is out of range; accepted: more than 0 and at most 60000 (ms)"),
        ));
    }
    Ok(value)
}

fn latency_spec(args: &JsonObject) -> Result<ScenarioSpec, InputError> {
    let fields = Fields(args);
    let fault = FaultSpec::Latency(LatencySpec {
        mean: ms(positive_ms(
            &fields,
            "latency",
            "mean latency in milliseconds, e.g. 300",
        )?),
        stddev: ms(fields.ranged("deviation", 0.0, 0.0, 60_000.0)?),
        per_read_write: fields.boolean("per_read_write_op")?.unwrap_or(false),
        common: parse_placement(&fields, Direction::Ingress)?,
        ..LatencySpec::default()
    });
    parse_spec(args, fault)
}

fn jitter_spec(args: &JsonObject) -> Result<ScenarioSpec, InputError> {
    let fields = Fields(args);
    let amplitude_ms = positive_ms(&fields, "amplitude", "largest extra delay in ms, e.g. 150")?;
    let frequency_hz = fields.required_number("frequency", "in Hz, e.g. 5")?;
    if frequency_hz <= 0.0 || frequency_hz > 1000.0 {
        return Err(bad(
            "frequency",
            format!("{frequency_hz} is out of range; accepted: more than 0 and at most 1000 (Hz)"),
        ));
    }
    let fault = FaultSpec::Jitter(JitterSpec {
        common: parse_placement(&fields, Direction::Ingress)?,
        amplitude: ms(amplitude_ms),
        frequency: frequency_hz,
    });
    parse_spec(args, fault)
}

fn packet_loss_spec(args: &JsonObject) -> Result<ScenarioSpec, InputError> {
    let fields = Fields(args);
    let loss_rate = match fields.get("loss_rate") {
        None => 0.05,
        Some(Value::String(text)) if text.trim().ends_with('%') => {
            crate::proxy::config::parse_rate(text).map_err(|e| bad("loss_rate", e.to_string()))?
        }
        Some(_) => fields.ranged("loss_rate", 0.05, 0.0, 0.99)?,
    };
    let fault = FaultSpec::PacketLoss(PacketLossSpec {
        common: parse_placement(&fields, Direction::Egress)?,
        rate: loss_rate,
        ..PacketLossSpec::default()
    });
    parse_spec(args, fault)
}

fn bandwidth_spec(args: &JsonObject) -> Result<ScenarioSpec, InputError> {
    let fields = Fields(args);
    let rate = fields.required_number("rate", "a bandwidth such as 1024 (with unit \"bps\")")?;
    if rate < 1.0 || rate.fract() != 0.0 || rate > 1e12 {
        return Err(bad(
            "rate",
            format!(
                "{rate} is not accepted; use a whole number from 1 to 1000000000000 (in `unit`)"
            ),
        ));
    }
    let unit: BandwidthUnit = fields.choice("unit", BandwidthUnit::Bps, "bps, kbps, mbps, gbps")?;
    let fault = FaultSpec::Bandwidth(BandwidthSpec {
        common: parse_placement(&fields, Direction::Ingress)?,
        rate: rate as u64,
        unit,
    });
    parse_spec(args, fault)
}

fn blackhole_spec(args: &JsonObject) -> Result<ScenarioSpec, InputError> {
    let fields = Fields(args);
    let fault = FaultSpec::Blackhole(BlackholeSpec {
        common: parse_placement(&fields, Direction::Egress)?,
    });
    parse_spec(args, fault)
}

fn http_error_spec(args: &JsonObject) -> Result<ScenarioSpec, InputError> {
    let fields = Fields(args);
    let fault = FaultSpec::HttpError(HttpErrorSpec {
        common: FaultCommon::default(),
        status_code: fields.integer("status_code", 503, 400, 599)? as u16,
        body: fields.raw_string("error_body")?.unwrap_or_default(),
        probability: fields.ranged("probability", 1.0, 0.0, 1.0)?,
    });
    parse_spec(args, fault)
}

// ---------------------------------------------------------------------------------------------
// Tools.

/// How long a new scenario waits for a cancelled one to finish stopping (its proxies closing).
const STOPPING_WAIT: Duration = Duration::from_secs(5);

/// One impact scenario at a time. A second one is refused, unless the running one was cancelled: it is
/// then only closing connections and freeing ports, and the new one waits for that.
#[derive(Clone)]
pub(super) struct ScenarioSlot {
    permit: Arc<tokio::sync::Semaphore>,
    /// Cancellation of the scenario that holds the permit (the last one that took it).
    holder: Arc<std::sync::Mutex<Option<tokio_util::sync::CancellationToken>>>,
}

impl Default for ScenarioSlot {
    fn default() -> Self {
        Self {
            permit: Arc::new(tokio::sync::Semaphore::new(1)),
            holder: Arc::default(),
        }
    }
}

impl ScenarioSlot {
    /// The slot for a scenario cancelled by `cancel`, or `None` when another scenario is running.
    async fn take(
        &self,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let holder = || self.holder.lock().unwrap_or_else(|p| p.into_inner());
        let permit = match self.permit.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let stopping = holder().as_ref().is_some_and(|c| c.is_cancelled());
                if !stopping {
                    return None;
                }
                tokio::time::timeout(STOPPING_WAIT, self.permit.clone().acquire_owned())
                    .await
                    .ok()?
                    .ok()?
            }
        };
        *holder() = Some(cancel.clone());
        Some(permit)
    }
}

impl FaultServer {
    /// Validates, takes the scenario slot, runs, and shapes the report; progress each second if asked.
    async fn run_scenario(
        &self,
        spec: Result<ScenarioSpec, InputError>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let spec = match spec {
            Ok(spec) => spec,
            Err(e) => return Ok(tool_error(e)),
        };
        let Some(_slot) = self.scenario_slot.take(&context.ct).await else {
            return Ok(tool_error(
                "another impact scenario is running; they run one at a time (they bind ports and measure \
                 latency). Try again when it has finished.",
            ));
        };
        let progress = Arc::new(load::LoadProgress::default());
        let ticker = context.meta.get_progress_token().map(|token| {
            let peer = context.peer.clone();
            let progress = progress.clone();
            let total = spec.planned_requests();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                tick.tick().await;
                loop {
                    tick.tick().await;
                    let done = progress
                        .completed
                        .load(std::sync::atomic::Ordering::Relaxed);
                    let errors = progress.errors.load(std::sync::atomic::Ordering::Relaxed);
                    let note = ProgressNotificationParam::new(token.clone(), done as f64)
                        .with_total(total as f64)
                        .with_message(format!("{done} of {total} requests done, {errors} errors"));
                    if peer.notify_progress(note).await.is_err() {
                        break;
                    }
                }
            })
        });
        let outcome = scenario::run(&spec, &context.ct, progress).await;
        if let Some(ticker) = ticker {
            ticker.abort();
        }
        match outcome {
            Ok(report) => Ok(text_and_structured(crate::report::render(&report), &report)),
            Err(e) => Ok(tool_error(e)),
        }
    }
}

#[tool_router(router = scenario_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(
        description = "Evaluate an endpoint's reliability while latency is added on a TCP path. Puts a \
fault-injecting proxy on the path to `url` (or runs the `proxies` you map in front of its upstream), sends \
open-model load (num_clients × rps requests per second for duration), and returns a markdown report (latency \
percentiles, errors by outcome, SLO verdicts, per-second sparkline); structuredContent holds every figure. \
Defaults: side server, direction ingress (responses).",
        input_schema = input_schema::<LatencyInput>(),
        output_schema = output_schema::<Report>()
    )]
    async fn fault_run_latency_impact_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run_scenario(latency_spec(&arguments), context).await
    }

    #[tool(
        description = "Evaluate an endpoint's reliability during jitter (random extra delays up to `amplitude` \
ms, `frequency` spikes per second) on a TCP path. Same topology, load and report as the latency scenario. \
Defaults: side server, direction ingress.",
        input_schema = input_schema::<JitterInput>(),
        output_schema = output_schema::<Report>()
    )]
    async fn fault_run_jitter_impact_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run_scenario(jitter_spec(&arguments), context).await
    }

    #[tool(
        description = "Evaluate an endpoint's reliability during packet loss on a TCP path (lost segments are \
retransmitted late, as TCP would, so bytes arrive intact but slower). Same topology, load and report as the \
latency scenario. Defaults: side server, direction egress, loss_rate 0.05.",
        input_schema = input_schema::<PacketLossInput>(),
        output_schema = output_schema::<Report>()
    )]
    async fn fault_run_packet_loss_impact_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run_scenario(packet_loss_spec(&arguments), context)
            .await
    }

    #[tool(
        description = "Evaluate an endpoint's reliability when a TCP path's bandwidth is capped to `rate` `unit` \
(bytes per second, shared by all connections). Same topology, load and report as the latency scenario. \
Defaults: side server, direction ingress (the response flow, where bodies travel), unit bps.",
        input_schema = input_schema::<BandwidthInput>(),
        output_schema = output_schema::<Report>()
    )]
    async fn fault_run_bandwidth_impact_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run_scenario(bandwidth_spec(&arguments), context).await
    }

    #[tool(
        description = "Evaluate an endpoint's reliability during a blackhole: bytes on a TCP path are swallowed \
and connections stay open, so callers wait until their timeout. Same topology, load and report as the latency \
scenario. Defaults: side server, direction egress.",
        input_schema = input_schema::<BlackholeInput>(),
        output_schema = output_schema::<Report>()
    )]
    async fn fault_run_blackhole_impact_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run_scenario(blackhole_spec(&arguments), context).await
    }

    #[tool(
        description = "Evaluate an endpoint's reliability when its upstream answers with HTTP errors: the proxy \
replaces HTTP/1.1 responses with `status_code` and `error_body`, with `probability`, keeping keep-alive framing \
intact. Acts on the response flow. Same topology, load and report as the latency scenario.",
        input_schema = input_schema::<HttpErrorInput>(),
        output_schema = output_schema::<Report>()
    )]
    async fn fault_run_http_error_impact_scenario(
        &self,
        arguments: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run_scenario(http_error_spec(&arguments), context)
            .await
    }
}
