//! Inputs of the impact-scenario tools: the fields every scenario takes (declared in
//! [`super::scenario_fields`]), where a TCP fault acts, and the fault's own fields, which are its spec
//! ([`TcpFaultSpec`]). Every field is read by its declaration, so a bad value is a tool error naming the field
//! and what it accepts, and the tools' JSON Schema comes from the same declarations.

use std::{sync::Arc, time::Duration};

use rmcp::model::JsonObject;
use serde::de::DeserializeOwned;

use serde_json::{Value, json};

use super::scenario_fields as fields;
use crate::{
    fields::{Field, FieldError, FieldInput, Presence, closest},
    impact::{self, Engine, ImpactSpec, Limits},
    lenient::Number,
    load::{
        self, Expect, Mix, MixRequest, Pace, Rate, Target,
        feed::{Feed, FeedError, FeedOrder, Template},
        locust::{LocustPlan, Workers},
        mix::RequestTemplate,
    },
    proxy::{
        TcpFault,
        faults::{self, EachFault, TcpFaultSpec},
    },
    report::{chart::page_file::PageFile, impact::LatencySlo},
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

/// A scenario tool's `report_path`: the HTML page's file, created before the run (an error names the field).
pub(super) fn report_page(path: Option<String>) -> Result<Option<PageFile>, InputError> {
    output_file("report_path", path)
}

/// The file of `field` (a path, or none), created before the run (an error names the field).
fn output_file(field: &str, path: Option<String>) -> Result<Option<PageFile>, InputError> {
    path.map(|path| {
        PageFile::create(std::path::Path::new(&path)).map_err(|e| bad(field, e.to_string()))
    })
    .transpose()
}

/// The files a scenario writes when asked: its HTML page (`report_path`) and its result (`result_path`), each
/// created before the run, so a path that cannot be written is refused before any load is sent.
#[derive(Debug, Default)]
pub(crate) struct RunFiles {
    pub page: Option<PageFile>,
    pub result: Option<PageFile>,
}

impl RunFiles {
    /// Removes the files: the run ended without a report.
    pub fn discard(self) {
        self.page
            .into_iter()
            .chain(self.result)
            .for_each(PageFile::discard);
    }
}

impl From<FieldError> for InputError {
    fn from(e: FieldError) -> Self {
        bad(e.field, e.message)
    }
}

/// The request of `url`, `method`, `body` and `headers` (or of one item of `requests`, `at` its path), parsed;
/// an error names the field it is about.
fn target(
    at: &str,
    (url, method, body): (&str, &str, &str),
    headers: &[(String, String)],
) -> Result<Target, InputError> {
    Target::parse(url, method, headers, body).map_err(|e| {
        let text = e.to_string();
        match e {
            load::LoadError::Method(_) => {
                bad(format!("{at}method"), text.replacen("method: ", "", 1))
            }
            load::LoadError::Header { .. } => {
                bad(format!("{at}headers"), text.replacen("headers: ", "", 1))
            }
            _ => bad(format!("{at}url"), text.replacen("url: ", "", 1)),
        }
    })
}

/// A request as the tool's arguments write it: where its fields are (`""` or `"requests[1]."`), its name,
/// method, url, body and headers, weight and expectation.
struct Written {
    at: String,
    name: String,
    method: String,
    url: String,
    body: String,
    headers: Vec<(String, String)>,
    weight: f64,
    expect: Expect,
}

/// The requests as written: `requests`, or the one request of `url`.
fn written(input: &FieldInput) -> Result<Vec<Written>, InputError> {
    let items = input.objects(&fields::REQUESTS)?;
    if items.is_empty() {
        let Some(url) = Some(input.text(&fields::URL)?).filter(|url| !url.is_empty()) else {
            return Err(bad(
                "url",
                "is required: an absolute http:// or https:// URL (or give `requests`, a traffic mix)",
            ));
        };
        return Ok(vec![Written {
            at: String::new(),
            name: String::new(),
            method: input.text(&fields::METHOD)?,
            url,
            body: input.text(&fields::BODY)?,
            headers: input.text_map(&fields::HEADERS)?,
            weight: 1.0,
            expect: Expect::default(),
        }]);
    }
    if let Some(single) = [fields::URL, fields::METHOD, fields::BODY, fields::HEADERS]
        .iter()
        .find(|field| input.has(field))
    {
        return Err(bad(
            single.name,
            format!(
                "is for a load of one request, and `requests` is given: give either `url` (with `method`, \
                 `body`, `headers`) or `requests`, not both; move `{}` into the requests",
                single.name
            ),
        ));
    }
    let mut requests: Vec<Written> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = format!("requests[{index}].");
        let name = item.text(&fields::REQUEST_NAME)?.trim().to_owned();
        if name.is_empty() {
            return Err(bad(
                format!("{at}name"),
                "is required: a name such as \"checkout\"",
            ));
        }
        if let Some(first) = requests.iter().position(|r| r.name == name) {
            return Err(bad(
                format!("{at}name"),
                format!("'{name}' is already the name of requests[{first}]; names must be unique"),
            ));
        }
        let expect = match item.object(&fields::REQUEST_EXPECT)? {
            None => Expect::default(),
            Some(expect) => Expect {
                statuses: expect
                    .texts(&fields::EXPECT_STATUS)?
                    .iter()
                    .filter_map(|status| status.parse().ok())
                    .collect(),
                body_contains: Some(expect.text(&fields::EXPECT_BODY)?)
                    .filter(|text| !text.is_empty())
                    .map(bytes::Bytes::from),
            },
        };
        requests.push(Written {
            at,
            name,
            method: item.text(&fields::REQUEST_METHOD)?,
            url: item.text(&fields::REQUEST_URL)?,
            body: item.text(&fields::REQUEST_BODY)?,
            headers: item.text_map(&fields::REQUEST_HEADERS)?,
            weight: item.number(&fields::REQUEST_WEIGHT)?,
            expect,
        });
    }
    Ok(requests)
}

/// A feed's refusal as a tool error: its message starts with the field it is about.
fn feed_error(e: FeedError) -> InputError {
    let text = e.to_string();
    match text.split_once(": ") {
        Some((field, message)) => bad(field, message),
        None => bad("feed", text),
    }
}

/// `written`'s url, header values and body as templates filled from `feed`'s rows; `None` when none of them
/// names a column.
fn template(written: &Written, feed: &Feed) -> Result<Option<Arc<RequestTemplate>>, InputError> {
    let parse = |field: &str, text: &str| {
        Template::parse(format!("{}{field}", written.at), text).map_err(feed_error)
    };
    let url = parse("url", &written.url)?;
    let body = parse("body", &written.body)?;
    let headers = written
        .headers
        .iter()
        .map(|(name, value)| Ok((name.clone(), parse(&format!("headers.{name}"), value)?)))
        .collect::<Result<Vec<_>, InputError>>()?;
    if url.is_literal() && body.is_literal() && headers.iter().all(|(_, t)| t.is_literal()) {
        return Ok(None);
    }
    Ok(Some(Arc::new(RequestTemplate {
        method: written.method.clone(),
        url: feed.bind(&url).map_err(feed_error)?,
        body: feed.bind(&body).map_err(feed_error)?,
        headers: headers
            .iter()
            .map(|(name, value)| {
                Ok((
                    name.clone(),
                    feed.bind_header_value(value).map_err(feed_error)?,
                ))
            })
            .collect::<Result<_, InputError>>()?,
    })))
}

/// The traffic: `requests`, or the one request of `url`, every request to the first one's service; with
/// `feed`, their placeholders filled from its rows.
fn read_mix(input: &FieldInput, seed: u64) -> Result<Mix, InputError> {
    let written = written(input)?;
    let feed = match input.object(&fields::FEED)? {
        None => None,
        Some(feed) => {
            let path = feed.text(&fields::FEED_FILE)?;
            let order = FeedOrder::parse(&feed.text(&fields::FEED_ORDER)?).map_err(feed_error)?;
            Some(Arc::new(
                Feed::load(std::path::Path::new(&path), order, seed).map_err(feed_error)?,
            ))
        }
    };
    let mut requests: Vec<MixRequest> = Vec::with_capacity(written.len());
    for request in &written {
        let at = &request.at;
        let target = target(
            at,
            (&request.url, &request.method, &request.body),
            &request.headers,
        )?;
        if let Some(first) = requests.first() {
            let service = |t: &Target| (t.url.scheme().to_owned(), t.host().to_owned(), t.port());
            if service(&first.target) != service(&target) {
                return Err(bad(
                    format!("{at}url"),
                    format!(
                        "goes to {}://{}:{}, and requests[0] to {}://{}:{}: every request of a mix goes to \
                         one service (scheme, host and port)",
                        target.url.scheme(),
                        target.host(),
                        target.port(),
                        first.target.url.scheme(),
                        first.target.host(),
                        first.target.port()
                    ),
                ));
            }
        }
        let template = match &feed {
            Some(feed) => template(request, feed)?,
            None => None,
        };
        requests.push(MixRequest {
            name: if request.name.is_empty() {
                target.label()
            } else {
                request.name.clone()
            },
            target,
            weight: request.weight,
            expect: request.expect.clone(),
            template,
        });
    }
    let mix = Mix::new(requests, seed).map_err(|e| bad("requests", e.to_string()))?;
    Ok(match feed {
        Some(feed) => mix.with_feed(feed),
        None => mix,
    })
}

/// The pace and how long the load runs: `stages`, or `rps` per client for `duration`.
fn read_pace(
    input: &FieldInput,
    num_clients: u32,
    limits: &Limits,
) -> Result<(Pace, Duration), InputError> {
    let cap = |what: String| {
        format!(
            "{what}; accepted: at most {} (the server's cap; `fault agent tool --max-scenario-rps N` raises it)",
            limits.max_total_rps
        )
    };
    let stages = input.objects(&fields::STAGES)?;
    if stages.is_empty() {
        let duration = duration(Some(input.text(&fields::DURATION)?), limits)?;
        let rps = input.whole(&fields::RPS)? as u32;
        let total_rate = u64::from(num_clients) * u64::from(rps);
        if total_rate > limits.max_total_rps {
            return Err(bad(
                "rps",
                cap(format!(
                    "num_clients × rps = {total_rate} requests per second"
                )),
            ));
        }
        return Ok((Pace::Open { rps }, duration));
    }
    if let Some(given) = [fields::DURATION, fields::RPS]
        .iter()
        .find(|field| input.has(field))
    {
        return Err(bad(
            given.name,
            "is for a constant rate, and `stages` is given: give either `duration` and `rps`, or `stages` \
             (each with its own duration and rps)",
        ));
    }
    let mut steps = Vec::with_capacity(stages.len());
    for (index, stage) in stages.iter().enumerate() {
        let length = stage
            .parsed::<String>(&fields::STAGE_DURATION)
            .map(|text| fields::parse_duration(&text))?
            .map_err(|e| bad(format!("stages[{index}].duration"), e))?;
        if length.is_zero() {
            return Err(bad(
                format!("stages[{index}].duration"),
                "is 0: a stage lasts more than 0s",
            ));
        }
        let rps = stage.number(&fields::STAGE_RPS)?;
        if rps > limits.max_total_rps as f64 {
            return Err(bad(
                format!("stages[{index}].rps"),
                cap(format!("{rps} requests per second")),
            ));
        }
        steps.push((length, rps));
    }
    let total: Duration = steps.iter().map(|(length, _)| *length).sum();
    if total > limits.max_duration {
        return Err(bad(
            "stages",
            format!(
                "the stages last {} in all; accepted: at most {} (the server's cap; `fault agent tool \
                 --max-scenario-duration` raises it)",
                humantime::format_duration(total),
                humantime::format_duration(limits.max_duration)
            ),
        ));
    }
    let rate = Rate::stages(&steps);
    if rate.planned() == 0 {
        return Err(bad(
            "stages",
            "every stage's rps is 0: the ramp would send no request",
        ));
    }
    Ok((Pace::Shaped(Arc::new(rate)), total))
}

/// `args` with `load.workers` given as a bare number N read as `{"local": N}`.
fn workers_as_object(args: &JsonObject) -> std::borrow::Cow<'_, JsonObject> {
    match args.get("load").and_then(|load| load.get("workers")) {
        Some(Value::Number(count)) => {
            let mut args = args.clone();
            let count = Value::Number(count.clone());
            if let Some(Value::Object(load)) = args.get_mut("load") {
                load.insert("workers".into(), json!({ "local": count }));
            }
            std::borrow::Cow::Owned(args)
        }
        _ => std::borrow::Cow::Borrowed(args),
    }
}

/// What sends the load: `load`, fault's own generator when absent. With Locust, the fields of fault's own
/// generator are refused (the users are Locust's), and so is what it cannot carry.
fn read_engine(input: &FieldInput, limits: &Limits) -> Result<Engine, InputError> {
    let Some(load) = input.object(&fields::LOAD)? else {
        return Ok(Engine::Own);
    };
    if load.text(&fields::LOAD_ENGINE)? != "locust" {
        return Ok(Engine::Own);
    }
    if let Some(given) = [
        fields::NUM_CLIENTS,
        fields::RPS,
        fields::STAGES,
        fields::FEED,
    ]
    .iter()
    .find(|field| input.has(field))
    {
        return Err(bad(
            given.name,
            "is for fault's own generator, and `load.engine` is locust: Locust's load is its users \
             (`load.users`, `load.spawn_rate`) for `duration`; a feed belongs in the locustfile",
        ));
    }
    let locustfile = Some(load.text(&fields::LOAD_LOCUSTFILE)?)
        .filter(|path| !path.trim().is_empty())
        .map(std::path::PathBuf::from);
    if let Some(path) = &locustfile {
        load::locust::check_locustfile(path).map_err(|e| bad("load.locustfile", e))?;
    }
    let workers = match load.object(&fields::LOAD_WORKERS)? {
        None => Workers::Local(1),
        Some(workers) => match workers.optional_whole(&fields::WORKERS_EXTERNAL)? {
            Some(_) if workers.has(&fields::WORKERS_LOCAL) => {
                return Err(bad(
                    "load.workers",
                    "gives both `local` and `external`: fault either starts its workers here or waits for \
                     workers started elsewhere",
                ));
            }
            Some(count) => Workers::External(count as u32),
            None => Workers::Local(workers.whole(&fields::WORKERS_LOCAL)? as u32),
        },
    };
    let workers_wait = fields::parse_duration(&load.parsed::<String>(&fields::LOAD_WORKERS_WAIT)?)
        .map_err(|e| bad("load.workers_wait", e))?;
    if workers_wait.is_zero() {
        return Err(bad(
            "load.workers_wait",
            "is 0: give the workers time to come, e.g. \"60s\"",
        ));
    }
    let host: std::net::IpAddr = load.parsed(&fields::LOAD_MASTER_HOST)?;
    if !host.is_loopback() && !limits.allow_public_proxies {
        return Err(bad(
            "load.master_host",
            format!(
                "{host} is not loopback; Locust's master listens on 127.0.0.1 or ::1 only, unless the server \
                 is started with `fault agent tool --allow-public-proxies`"
            ),
        ));
    }
    let port = load.whole(&fields::LOAD_MASTER_PORT)? as u16;
    let csv_prefix = Some(load.text(&fields::LOAD_CSV)?)
        .filter(|prefix| !prefix.trim().is_empty())
        .map(std::path::PathBuf::from);
    Ok(Engine::Locust(LocustPlan {
        locustfile,
        users: load.whole(&fields::LOAD_USERS)? as u32,
        spawn_rate: load.number(&fields::LOAD_SPAWN_RATE)?,
        workers,
        workers_wait,
        master: std::net::SocketAddr::new(host, port),
        csv_prefix,
    }))
}

/// The SLOs (the defaults when none is given), each naming a request of `mix` or none.
fn read_slos(
    input: &FieldInput,
    mix: &Mix,
    engine: &Engine,
) -> Result<Vec<LatencySlo>, InputError> {
    let rows = input.objects(&fields::SLOS)?;
    if rows.is_empty() {
        return Ok(LatencySlo::defaults());
    }
    // A locustfile names its own requests: they are known only once Locust reports them.
    let open_names = matches!(engine, Engine::Locust(plan) if plan.locustfile.is_some());
    let names: Vec<&str> = mix.requests().iter().map(|r| r.name.as_str()).collect();
    rows.iter()
        .enumerate()
        .map(|(index, row)| {
            let request = Some(row.text(&fields::SLO_REQUEST)?.trim().to_owned())
                .filter(|name| !name.is_empty());
            if let Some(name) = &request
                && !open_names
                && !names.contains(&name.as_str())
            {
                let hint = closest(name, names.iter().copied())
                    .map(|close| format!(" (did you mean '{close}'?)"))
                    .unwrap_or_default();
                return Err(bad(
                    format!("slos[{index}].request"),
                    format!(
                        "'{name}' names no request of the mix{hint}; the requests are {}",
                        names.join(", ")
                    ),
                ));
            }
            Ok(LatencySlo {
                objective: row.number(&fields::SLO_OBJECTIVE)?,
                threshold_ms: row.number(&fields::SLO_THRESHOLD)?,
                request,
            })
        })
        .collect()
}

/// Where the metrics page listens, checked free now so an address in use is refused before anything starts.
fn read_metrics(
    input: &FieldInput,
    limits: &Limits,
) -> Result<Option<std::net::SocketAddr>, InputError> {
    let Some(text) = input.optional_parsed::<String>(&fields::METRICS)? else {
        return Ok(None);
    };
    let addr = fields::parse_metrics_address(&text).map_err(|e| bad("metrics", e))?;
    if !addr.ip().is_loopback() && !limits.allow_public_proxies {
        return Err(bad(
            "metrics",
            format!(
                "{addr} is not loopback; the metrics page listens on 127.0.0.1 or ::1 only, unless the server is \
                 started with `fault agent tool --allow-public-proxies`"
            ),
        ));
    }
    std::net::TcpListener::bind(addr)
        .map_err(|e| bad("metrics", format!("cannot listen on {addr}: {e}")))?;
    Ok(Some(addr))
}

/// The scenario around `faults`, read from the common fields of `args`; `sched_field` names the `sched` field
/// of the fault at an index. The HTML page's file, when asked for, is created last, once all else is accepted.
fn read_common(
    args: &JsonObject,
    faults: Vec<TcpFault>,
    sched_field: impl Fn(usize) -> String,
    limits: &Limits,
) -> Result<(ImpactSpec, RunFiles), InputError> {
    let args = workers_as_object(args);
    let input = fields::input(&args);
    let engine = read_engine(&input, limits)?;
    let seed = input
        .json(&fields::SEED)?
        .map(|value| crate::seeded::seed_from_json(&value))
        .transpose()
        .map_err(|e| bad("seed", e.to_string()))?;
    let mix = read_mix(&input, seed.unwrap_or_else(rand::random))?;
    let num_clients = input.whole(&fields::NUM_CLIENTS)? as u32;
    let (pace, duration) = read_pace(&input, num_clients, limits)?;
    if matches!(engine, Engine::Locust(_))
        && !input.has(&fields::PROXIES)
        && mix.first().target.is_tls()
    {
        return Err(bad(
            "url",
            "is https://, and Locust's users would reach it through fault's proxy on 127.0.0.1, whose address \
             the service's certificate does not name: with `load.engine` locust, give `proxies` (the faults \
             on the service's upstream) or an http:// URL",
        ));
    }
    let timeout = Duration::from_secs_f64(input.number(&fields::TIMEOUT)?);
    let proxies = input
        .texts(&fields::PROXIES)?
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let field = format!("proxies[{i}]");
            let mapping = impact::parse_mapping(text).map_err(|e| bad(&field, e.to_string()))?;
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
    let slos = read_slos(&input, &mix, &engine)?;
    let metrics = read_metrics(&input, limits)?;
    let spec = ImpactSpec {
        mix,
        num_clients,
        pace,
        duration,
        timeout,
        proxies,
        faults,
        slos,
        seed,
        baseline: input.switch(&fields::BASELINE)?,
        recovery_seconds: input.whole(&fields::RECOVERY_SECONDS)? as u32,
        engine,
        metrics,
    };
    // Each window must fit the run: checked now, against `duration`, before anything starts.
    spec.fault_windows()
        .map_err(|(index, e)| bad(sched_field(index), e.to_string()))?;
    let path = |field| -> Result<Option<String>, InputError> {
        Ok(Some(input.text(field)?).filter(|path| !path.is_empty()))
    };
    let (page, result) = (path(&fields::REPORT_PATH)?, path(&fields::RESULT_PATH)?);
    let page = output_file("report_path", page)?;
    let result = match output_file("result_path", result) {
        Ok(result) => result,
        Err(e) => {
            page.into_iter().for_each(PageFile::discard);
            return Err(e);
        }
    };
    Ok((spec, RunFiles { page, result }))
}

/// A duration string ("10s", "500ms") or a number of seconds (default 10 s), more than 0 and within the
/// server's cap.
pub(super) fn duration(text: Option<String>, limits: &Limits) -> Result<Duration, InputError> {
    let duration = match text.filter(|text| !text.trim().is_empty()) {
        None => Duration::from_secs(10),
        Some(text) => fields::parse_duration(&text).map_err(|e| bad("duration", e))?,
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
) -> Result<(ImpactSpec, RunFiles), InputError> {
    let input = FieldInput::from_arguments(&faults::fields::<S>(), args);
    let fault: TcpFault = faults::read_fault::<S>(&input).map_err(|e| bad(e.field, e.message))?;
    read_common(args, vec![fault], |_| "sched".to_owned(), limits)
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
) -> Result<(ImpactSpec, RunFiles), InputError> {
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
    read_common(
        args,
        faults,
        |index| format!("faults[{index}].sched"),
        limits,
    )
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

/// The schema of the fields every scenario takes, closed to any other field.
fn common_schema() -> JsonObject {
    match crate::fields::object_schema(fields::COMMON_FIELDS) {
        Value::Object(schema) => schema,
        _ => JsonObject::new(),
    }
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
    let mut schema = common_schema();
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
                "items": {"anyOf": items.0},
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
    let mut schema = common_schema();
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
