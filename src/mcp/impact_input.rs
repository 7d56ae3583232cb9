//! Inputs of the impact-scenario tools: the fields every scenario takes, where a TCP fault acts, and the
//! fault's own fields, which are its spec ([`TcpFaultSpec`]). Serde structs with lenient field types
//! ([`crate::lenient`]), so a bad value is a tool error naming the field and what it accepts; the same structs
//! give the tools' JSON Schema.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use rmcp::{handler::server::common::schema_for_type, model::JsonObject, schemars::JsonSchema};
use serde::{Deserialize, de::DeserializeOwned};

use serde_json::{Value, json};

use crate::{
    fields::{Field, FieldInput, Presence, closest},
    impact::{self, ImpactSpec, Limits},
    lenient::{Lenient, Number, Seed, Strings, blank_as_default, blank_as_none},
    load::{self, Target},
    proxy::{
        TcpFault,
        faults::{self, EachFault, TcpFaultSpec},
    },
    report::{
        chart::page_file::PageFile,
        impact::{DEFAULT_RECOVERY_SECONDS, LatencySlo},
    },
};

#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub(crate) struct InputError {
    field: String,
    message: String,
}

pub(super) fn bad(field: impl Into<String>, message: impl Into<String>) -> InputError {
    InputError {
        field: field.into(),
        message: message.into(),
    }
}

/// `value` of `field` when `accepted` takes it (`default` when absent).
fn checked(
    field: &str,
    value: Option<f64>,
    default: f64,
    accepted: Number,
) -> Result<f64, InputError> {
    accepted
        .check_given(value)
        .map_err(|message| bad(field, message))
        .map(|value| value.unwrap_or(default))
}

/// `value` of `field` when within `min..=max` (`default` when absent).
pub(super) fn within(
    field: &str,
    value: Option<f64>,
    default: f64,
    min: f64,
    max: f64,
) -> Result<f64, InputError> {
    checked(field, value, default, Number::from_to(min, max))
}

/// A whole number of `field` within `min..=max` (`default` when absent).
pub(super) fn whole(
    field: &str,
    value: Option<f64>,
    default: u64,
    min: u64,
    max: u64,
) -> Result<u64, InputError> {
    let accepted = Number::from_to(min as f64, max as f64).whole();
    // Whole and within `min..=max`: the cast is exact.
    checked(field, value, default as f64, accepted).map(|value| value as u64)
}

/// One SLO row: `objective`% of requests must succeed within `threshold_ms`.
#[derive(Debug, Deserialize, JsonSchema)]
struct SloInput {
    /// Percent of requests, 0 < objective ≤ 100 (e.g. 99).
    objective: Lenient<f64>,
    /// Threshold in milliseconds, > 0 (e.g. 350).
    threshold_ms: Lenient<f64>,
}

impl SloInput {
    fn validate(self, field: &str) -> Result<LatencySlo, InputError> {
        let objective = Number::above_zero(100.0, " (percent)").required("a percent such as 99");
        let threshold = Number::above_zero(3_600_000.0, "").required("milliseconds such as 350");
        Ok(LatencySlo {
            objective: checked(
                &format!("{field}.objective"),
                self.objective.0,
                0.0,
                objective,
            )?,
            threshold_ms: checked(
                &format!("{field}.threshold_ms"),
                self.threshold_ms.0,
                0.0,
                threshold,
            )?,
            request: None,
        })
    }
}

/// Fields every impact scenario takes.
#[derive(Debug, Deserialize, JsonSchema)]
struct CommonInput {
    /// Absolute http:// or https:// URL of the endpoint to send load to (the service under test).
    url: Lenient<String>,
    /// HTTP method. Default "GET".
    #[serde(default)]
    method: Lenient<String>,
    /// Request body sent with every request. Default "" (no body).
    #[serde(default)]
    body: Option<String>,
    /// Extra request headers, name → value. Default none.
    #[serde(default, deserialize_with = "blank_as_default")]
    headers: BTreeMap<String, Lenient<String>>,
    /// How long to send load, e.g. "10s", "500ms", "1m" (a bare number means seconds). Default "10s"; more
    /// than 0 and at most the server's cap (default "2m", raised with --max-scenario-duration).
    #[serde(default)]
    duration: Lenient<String>,
    /// Virtual clients, each with its own kept-alive connections. Default 1; 1..=1000.
    #[serde(default)]
    num_clients: Lenient<f64>,
    /// Requests per second started by each client on schedule (open model). Default 3; 1..=10000, and
    /// num_clients × rps at most the server's cap (default 1000, raised with --max-scenario-rps).
    #[serde(default)]
    rps: Lenient<f64>,
    /// Client timeout per request, in seconds (fractions allowed). Default 10; more than 0 and at most 300.
    #[serde(default)]
    timeout: Lenient<f64>,
    /// Proxy mappings "LISTEN_PORT=HOST:PORT" (e.g. "34000=127.0.0.1:8080", or "34000=https://api.host" to
    /// speak TLS to the upstream): the fault runs on these proxies, which your service must call its upstream
    /// through, and the load goes to `url`. Default none: a proxy is put in front of `url` itself (http and
    /// https alike; TLS, SNI and Host stay the service's).
    #[serde(default)]
    proxies: Strings,
    /// SLOs to judge the run by. Default [{objective: 99, threshold_ms: 350}, {objective: 95,
    /// threshold_ms: 200}].
    #[serde(default, deserialize_with = "blank_as_none")]
    slos: Option<Vec<SloInput>>,
    /// Seed for the fault's randomness, for repeatable runs: a whole number from 0 to 2^64 - 1, as a JSON
    /// integer or a string of digits. Default: random.
    #[serde(default)]
    seed: Seed,
    /// Run the same load without the fault first and add a with/without comparison (p50, p95, p99, errors).
    /// Default false.
    #[serde(default)]
    baseline: Lenient<bool>,
    /// Seconds in a row that must hold every SLO, with errors back to the share before the fault's window, for
    /// the service to count as recovered (time to recover, in the report's phases). Default 3; 1..=60.
    #[serde(default)]
    recovery_seconds: Lenient<f64>,
    /// Also write the report as one self-contained HTML page (the report, its charts, the figures as JSON;
    /// opens from disk with no network) to this path, e.g. "/tmp/impact.html". Checked before the run: its
    /// directory must exist and be writable. Default: no file.
    #[serde(default)]
    report_path: Lenient<String>,
}

/// A scenario tool's `report_path`: the HTML page's file, created before the run (an error names the field).
pub(super) fn report_page(path: Option<String>) -> Result<Option<PageFile>, InputError> {
    path.map(|path| {
        PageFile::create(std::path::Path::new(&path)).map_err(|e| bad("report_path", e.to_string()))
    })
    .transpose()
}

impl CommonInput {
    /// The scenario around `faults`; `sched_field` names the `sched` field of the fault at an index.
    fn validate(
        self,
        faults: Vec<TcpFault>,
        sched_field: impl Fn(usize) -> String,
        limits: &Limits,
    ) -> Result<ImpactSpec, InputError> {
        let url = self
            .url
            .0
            .ok_or_else(|| bad("url", "is required: an absolute http:// or https:// URL"))?;
        let method = self.method.0.unwrap_or_else(|| "GET".into());
        let headers: Vec<(String, String)> = self
            .headers
            .into_iter()
            .map(|(name, value)| (name, value.0.unwrap_or_default()))
            .collect();
        let target = Target::parse(&url, &method, &headers, &self.body.unwrap_or_default())
            .map_err(|e| {
                let text = e.to_string();
                match e {
                    load::LoadError::Method(_) => bad("method", text.replacen("method: ", "", 1)),
                    load::LoadError::Header { .. } => {
                        bad("headers", text.replacen("headers: ", "", 1))
                    }
                    _ => bad("url", text.replacen("url: ", "", 1)),
                }
            })?;
        let duration = duration(self.duration.0, limits)?;
        let num_clients = whole(
            "num_clients",
            self.num_clients.0,
            1,
            1,
            limits.max_clients.into(),
        )? as u32;
        let rps = whole("rps", self.rps.0, 3, 1, limits.max_rps_per_client.into())? as u32;
        let total_rate = u64::from(num_clients) * u64::from(rps);
        if total_rate > limits.max_total_rps {
            return Err(bad(
                "rps",
                format!(
                    "num_clients × rps = {total_rate} requests per second; accepted: at most {} (the \
                     server's cap; `fault agent tool --max-scenario-rps N` raises it)",
                    limits.max_total_rps
                ),
            ));
        }
        let timeout = within(
            "timeout",
            self.timeout.0,
            10.0,
            0.001,
            limits.max_timeout.as_secs_f64(),
        )?;
        let proxies = self
            .proxies
            .0
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let field = format!("proxies[{i}]");
                let mapping =
                    impact::parse_mapping(text).map_err(|e| bad(&field, e.to_string()))?;
                if !mapping.listen.ip().is_loopback() && !limits.allow_public_proxies {
                    return Err(bad(
                        field,
                        format!(
                            "listen address {} is not loopback; scenario proxies listen on 127.0.0.1 or \
                             ::1 only (e.g. \"34000=127.0.0.1:8080\"), unless the server is started with \
                             `fault agent tool --allow-public-proxies`",
                            mapping.listen.ip()
                        ),
                    ));
                }
                Ok(mapping)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let slos = match self.slos {
            None => LatencySlo::defaults(),
            Some(rows) if rows.is_empty() || rows.len() > 10 => {
                return Err(bad(
                    "slos",
                    "give between 1 and 10 SLOs (or omit the field for the defaults)",
                ));
            }
            Some(rows) => rows
                .into_iter()
                .enumerate()
                .map(|(i, row)| row.validate(&format!("slos[{i}]")))
                .collect::<Result<_, _>>()?,
        };
        let recovery_seconds = whole(
            "recovery_seconds",
            self.recovery_seconds.0,
            DEFAULT_RECOVERY_SECONDS.into(),
            1,
            60,
        )? as u32;
        let spec = ImpactSpec {
            target,
            num_clients,
            rps,
            duration,
            timeout: Duration::from_secs_f64(timeout),
            proxies,
            faults,
            slos,
            seed: self.seed.0,
            baseline: self.baseline.0.unwrap_or(false),
            recovery_seconds,
        };
        // Each window must fit the run: checked now, against `duration`, before anything starts.
        spec.fault_windows()
            .map_err(|(index, e)| bad(sched_field(index), e.to_string()))?;
        Ok(spec)
    }
}

/// A duration string ("10s", "500ms") or a number of seconds; default 10 s.
pub(super) fn duration(text: Option<String>, limits: &Limits) -> Result<Duration, InputError> {
    let duration = match text {
        None => Duration::from_secs(10),
        Some(text) => match text.parse::<f64>() {
            Ok(secs) if secs.is_finite() && (0.0..=1e9).contains(&secs) => {
                Duration::from_secs_f64(secs)
            }
            Ok(_) => {
                return Err(bad(
                    "duration",
                    format!("'{text}' is not a valid number of seconds"),
                ));
            }
            Err(_) => humantime::parse_duration(&text).map_err(|e| {
                bad(
                    "duration",
                    format!(
                        "'{text}' is not a duration ({e}); use e.g. \"10s\", \"500ms\", \"1m\""
                    ),
                )
            })?,
        },
    };
    if duration.is_zero() || duration > limits.max_duration {
        return Err(bad(
            "duration",
            format!(
                "{} is out of range; accepted: more than 0s and at most {} (the server's cap; \
                 `fault agent tool --max-scenario-duration` raises it)",
                humantime::format_duration(duration),
                humantime::format_duration(limits.max_duration)
            ),
        ));
    }
    Ok(duration)
}

/// `T` read from the tool's arguments; a value of the wrong shape is an error naming its field.
pub(super) fn read<T: DeserializeOwned>(args: &JsonObject) -> Result<T, InputError> {
    let value = serde_json::Value::Object(args.clone());
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.inner().to_string();
        // serde names a missing field only in its message: name it as the field, like every other error.
        match message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'))
        {
            Some(field) if path == "." => bad(field, "is required"),
            Some(field) => bad(format!("{path}.{field}"), "is required"),
            None => bad(path, message),
        }
    })
}

/// The scenario of a call of fault `S`'s tool: the fault's fields first (read by the fault's own reader, as
/// `fault run` reads its flags), then the common fields.
pub(super) fn impact_spec<S: TcpFaultSpec>(
    args: &JsonObject,
    limits: &Limits,
) -> Result<(ImpactSpec, Option<PageFile>), InputError> {
    let input = FieldInput::from_arguments(&faults::fields::<S>(), args);
    let fault: TcpFault = faults::read_fault::<S>(&input).map_err(|e| bad(e.field, e.message))?;
    let mut common = read::<CommonInput>(args)?;
    let report_path = common.report_path.0.take();
    let spec = common.validate(vec![fault], |_| "sched".to_owned(), limits)?;
    // Last, once everything else is accepted: it creates the file.
    Ok((spec, report_page(report_path)?))
}

/// Faults the compound tool takes at most.
pub(super) const MAX_FAULTS: usize = 10;

/// The kinds of every registered TCP fault, in registration order.
fn kinds() -> Vec<&'static str> {
    struct Kinds(Vec<&'static str>);
    impl EachFault for Kinds {
        fn fault<S: TcpFaultSpec>(&mut self) {
            self.0.push(S::KIND);
        }
    }
    let mut kinds = Kinds(Vec::new());
    faults::for_each(&mut kinds);
    kinds.0
}

/// Reads one item of `faults` with the reader of the fault its `type` names.
struct ReadItem<'a> {
    kind: &'a str,
    item: &'a JsonObject,
    read: Option<Result<TcpFault, crate::fields::FieldError>>,
}

impl EachFault for ReadItem<'_> {
    fn fault<S: TcpFaultSpec>(&mut self) {
        if self.read.is_none() && S::KIND == self.kind {
            let input = FieldInput::from_arguments(&faults::fields::<S>(), self.item);
            self.read = Some(faults::read_fault::<S>(&input));
        }
    }
}

/// The scenario of a call of the compound tool: each item of `faults` read by the reader of its `type` (the
/// fault's own fields and where and when it acts, as its own tool reads them), then the common fields.
pub(super) fn compound_spec(
    args: &JsonObject,
    limits: &Limits,
) -> Result<(ImpactSpec, Option<PageFile>), InputError> {
    let items = match args.get("faults") {
        Some(Value::Array(items)) if (1..=MAX_FAULTS).contains(&items.len()) => items,
        Some(Value::Array(items)) => {
            return Err(bad(
                "faults",
                format!(
                    "{} faults; give between 1 and {MAX_FAULTS}, e.g. [{{\"type\": \"latency\", \"latency\": 300}}]",
                    items.len()
                ),
            ));
        }
        _ => {
            return Err(bad(
                "faults",
                "is required: a list of faults, each an object whose `type` is one of the TCP faults, e.g. \
                 [{\"type\": \"latency\", \"latency\": 300, \"sched\": \"start:2s,duration:3s\"}]",
            ));
        }
    };
    let known = kinds();
    let mut faults = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = format!("faults[{index}]");
        let Value::Object(item) = item else {
            return Err(bad(
                at,
                "expected an object with `type` (the fault) and its fields",
            ));
        };
        let kind = match item.get("type") {
            Some(Value::String(kind)) if !kind.trim().is_empty() => kind.trim(),
            _ => {
                return Err(bad(
                    format!("{at}.type"),
                    format!("is required: one of {}", known.join(", ")),
                ));
            }
        };
        let mut reader = ReadItem {
            kind,
            item,
            read: None,
        };
        faults::for_each(&mut reader);
        let Some(read) = reader.read else {
            let hint = closest(kind, known.iter().copied())
                .map(|name| format!("; did you mean '{name}'?"))
                .unwrap_or_default();
            return Err(bad(
                format!("{at}.type"),
                format!("unknown fault '{kind}'{hint} (one of {})", known.join(", ")),
            ));
        };
        faults.push(read.map_err(|e| bad(format!("{at}.{}", e.field), e.message))?);
    }
    let mut common = read::<CommonInput>(args)?;
    let report_path = common.report_path.0.take();
    let spec = common.validate(faults, |index| format!("faults[{index}].sched"), limits)?;
    Ok((spec, report_page(report_path)?))
}

/// The schema of one item of the compound tool's `faults`: `type` naming fault `S`, then its fields (its own
/// and where it acts), each generated from its declaration; closed to any other field.
fn item_schema<S: TcpFaultSpec>() -> Value {
    let fields = faults::fields::<S>();
    let mut properties = serde_json::Map::new();
    properties.insert(
        "type".into(),
        json!({"type": "string", "const": S::KIND, "description": format!("The fault: {}.", S::TITLE)}),
    );
    for field in &fields {
        properties.insert(field.name.to_owned(), field.schema());
    }
    let required: Vec<&str> = std::iter::once("type")
        .chain(required_names(&fields))
        .collect();
    json!({
        "type": "object",
        "title": S::KIND,
        "description": S::MODEL,
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn required_names(fields: &[Field]) -> impl Iterator<Item = &'static str> + '_ {
    fields
        .iter()
        .filter(|field| matches!(field.presence, Presence::Required { .. }))
        .map(|field| field.name)
}

/// The input schema of the compound tool: the common fields, then `faults`, a list whose items are one of the
/// registered faults, told apart by `type`.
pub(super) fn compound_schema() -> Arc<JsonObject> {
    struct Items(Vec<Value>);
    impl EachFault for Items {
        fn fault<S: TcpFaultSpec>(&mut self) {
            self.0.push(item_schema::<S>());
        }
    }
    let mut items = Items(Vec::new());
    faults::for_each(&mut items);
    let mut schema = (*schema_for_type::<CommonInput>()).clone();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            "faults".into(),
            json!({
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_FAULTS,
                "description": format!(
                    "The faults, all on the same proxies, each an object whose `type` names it ({}) with that \
                     fault's own fields and `sched`, its own window(s) (without: the whole run). 1 to {MAX_FAULTS}.",
                    kinds().join(", ")
                ),
                "items": {"oneOf": items.0},
            }),
        );
    }
    match schema.get_mut("required") {
        Some(Value::Array(names)) => names.push("faults".into()),
        _ => drop(schema.insert("required".into(), json!(["faults"]))),
    }
    Arc::new(schema)
}

/// The input schema of fault `S`'s tool: the common fields, then the fault's (its own and where it acts),
/// each generated from its declaration.
pub(super) fn input_schema<S: TcpFaultSpec>() -> Arc<JsonObject> {
    let mut schema = (*schema_for_type::<CommonInput>()).clone();
    let fields = faults::fields::<S>();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for field in &fields {
            properties.insert(field.name.to_owned(), field.schema());
        }
    }
    let required = required_names(&fields).map(Value::from);
    match schema.get_mut("required") {
        Some(Value::Array(names)) => names.extend(required),
        _ => drop(schema.insert("required".into(), Value::Array(required.collect()))),
    }
    Arc::new(schema)
}
