//! The fields every impact scenario takes, declared once ([`crate::fields`]): the tools' schema properties,
//! the book's table and the one reader all come from these declarations. Bounds the operator sets at start
//! (`--max-scenario-rps`, `--max-scenario-duration`) are checked against [`crate::impact::Limits`] as the
//! fields are read.

use std::time::Duration;

use crate::{
    fields::{Field, FieldInput, Unit, parses_as},
    lenient::Number,
    proxy::Mapping,
};

/// Requests a traffic mix holds at most.
pub const MAX_REQUESTS: usize = 20;
/// Stages a ramp holds at most.
pub const MAX_STAGES: usize = 20;
/// SLOs a scenario is judged by at most.
pub const MAX_SLOS: usize = 10;

/// A duration as the scenario fields take it: "10s", "500ms", "1m", or a number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    match text.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && (0.0..=1e9).contains(&secs) => {
            Ok(Duration::from_secs_f64(secs))
        }
        Ok(_) => Err(format!("'{text}' is not a valid number of seconds")),
        Err(_) => humantime::parse_duration(text.trim()).map_err(|e| {
            format!("'{text}' is not a duration ({e}); use e.g. \"10s\", \"500ms\", \"1m\"")
        }),
    }
}

pub(crate) fn check_duration(text: &str) -> Result<(), String> {
    parse_duration(text).map(drop)
}

fn check_mapping(text: &str) -> Result<(), String> {
    parses_as::<Mapping>(text)
}

fn check_status(text: &str) -> Result<(), String> {
    match text.trim().parse::<u16>() {
        Ok(status) if (100..=599).contains(&status) => Ok(()),
        _ => Err(format!(
            "'{text}' is not an HTTP status; accepted: 100 to 599"
        )),
    }
}

pub(crate) fn check_seed(value: &serde_json::Value) -> Result<(), String> {
    crate::seeded::seed_from_json(value)
        .map(drop)
        .map_err(|e| e.to_string())
}

pub const URL: Field = Field::text(
    "url",
    "Absolute http:// or https:// URL of the endpoint to send load to (the service under test), for a \
     load of one request; or give `requests`",
)
.optional("none: `requests` gives the traffic");
pub const METHOD: Field = Field::text("method", "HTTP method of `url`'s requests").default("GET");
pub const BODY: Field =
    Field::text("body", "Request body sent with each of `url`'s requests").default("");
pub const HEADERS: Field =
    Field::text_map("headers", "Extra headers of `url`'s requests, name → value").optional("none");

/// What counts as a request's success.
pub const EXPECT_STATUS: Field = Field::texts(
    "status",
    "The HTTP statuses that count as success (e.g. [200, 201])",
    "statuses, 100 to 599",
    check_status,
)
.optional("any status below 400");
pub const EXPECT_BODY: Field = Field::text(
    "body_contains",
    "Text the response body must hold to count as success (its first MiB is searched)",
)
.optional("any body");
const EXPECT_FIELDS: &[Field] = &[EXPECT_STATUS, EXPECT_BODY];

pub const REQUEST_NAME: Field = Field::text(
    "name",
    "The request's name in the report and in SLOs (`slos[].request`); unique in the mix",
)
.required("\"checkout\"");
pub const REQUEST_METHOD: Field = Field::text("method", "HTTP method").default("GET");
pub const REQUEST_URL: Field = Field::text(
    "url",
    "Absolute http:// or https:// URL; every request of a mix goes to the same scheme, host and port",
)
.required("\"http://127.0.0.1:8080/checkout\"");
pub const REQUEST_HEADERS: Field =
    Field::text_map("headers", "Extra request headers, name → value").optional("none");
pub const REQUEST_BODY: Field = Field::text("body", "Request body").default("");
pub const REQUEST_WEIGHT: Field = Field::number(
    "weight",
    "Its share of the calls, relative to the other requests' weights (each call picks a request by \
     weight, from the scenario's seed)",
    Number::from_to(0.0, 1_000_000.0),
    Unit::None,
)
.default("1");
pub const REQUEST_EXPECT: Field = Field::object(
    "expect",
    "What counts as this request's success beyond a status below 400",
    EXPECT_FIELDS,
)
.optional("a status below 400");
const REQUEST_FIELDS: &[Field] = &[
    REQUEST_NAME,
    REQUEST_METHOD,
    REQUEST_URL,
    REQUEST_HEADERS,
    REQUEST_BODY,
    REQUEST_WEIGHT,
    REQUEST_EXPECT,
];
pub const REQUESTS: Field = Field::objects(
    "requests",
    "The traffic mix: the requests to send, each call picking one by weight (instead of `url`, \
     `method`, `body` and `headers`); the report gives each its own row",
    REQUEST_FIELDS,
    (1, MAX_REQUESTS),
)
.optional("the one request `url` describes");

pub const STAGE_DURATION: Field = Field::parsed(
    "duration",
    "How long the stage lasts, e.g. \"10s\" or a number of seconds",
    "a duration such as \"10s\", more than 0",
    check_duration,
)
.numbers_too()
.required("\"10s\"");
pub const STAGE_RPS: Field = Field::number(
    "rps",
    "The rate (requests per second over all clients) the stage reaches at its end, moving linearly from \
     the previous stage's (0 before the first)",
    Number::from_to(0.0, 100_000.0),
    Unit::None,
)
.required("200");
const STAGE_FIELDS: &[Field] = &[STAGE_DURATION, STAGE_RPS];
pub const STAGES: Field = Field::objects(
    "stages",
    "A ramp: the arrival rate over all clients moves linearly within each stage from the previous \
     stage's rate to its own (instead of `duration` and `rps`; the run lasts the stages' total, each \
     stage's rate at most the server's --max-scenario-rps)",
    STAGE_FIELDS,
    (1, MAX_STAGES),
)
.optional("a constant rate: `rps` per client for `duration`");

fn check_order(text: &str) -> Result<(), String> {
    crate::load::feed::FeedOrder::parse(text)
        .map(drop)
        .map_err(|_| {
            format!(
                "'{text}' is not an order; accepted: {}",
                crate::load::feed::FeedOrder::NAMES.join(" or ")
            )
        })
}

pub const FEED_FILE: Field = Field::text(
    "file",
    "A CSV file with a header row, or JSON lines (one object per line), read once before the run (64 MiB \
     at most)",
)
.required("\"/tmp/users.csv\"");
pub const FEED_ORDER: Field = Field::parsed(
    "order",
    "Which row each call takes: `sequential` (row k for call k, wrapping) or `random` (a row drawn from \
     the scenario's seed and the call's number)",
    "sequential or random",
    check_order,
)
.default("sequential");
const FEED_FIELDS: &[Field] = &[FEED_FILE, FEED_ORDER];
pub const FEED: Field = Field::object(
    "feed",
    "Data whose columns fill `{{name}}` placeholders in the requests' url, header values and body (without \
     a feed, `{{` is plain text)",
    FEED_FIELDS,
)
.optional("none");

pub const DURATION: Field = Field::parsed(
    "duration",
    "How long to send load, e.g. \"10s\", \"500ms\", \"1m\" (a bare number means seconds), at most the \
     server's --max-scenario-duration (default 2m)",
    "a duration, more than 0",
    check_duration,
)
.numbers_too()
.default("10s");
pub const NUM_CLIENTS: Field = Field::number(
    "num_clients",
    "Virtual clients, each with its own kept-alive connections",
    Number::from_to(1.0, 1000.0).whole(),
    Unit::None,
)
.default("1");
pub const RPS: Field = Field::number(
    "rps",
    "Requests per second each client starts on schedule (open model); num_clients × rps at most the \
     server's --max-scenario-rps (default 1000)",
    Number::from_to(1.0, 10_000.0).whole(),
    Unit::None,
)
.default("3");
pub const TIMEOUT: Field = Field::number(
    "timeout",
    "Client timeout per request, in seconds (fractions allowed)",
    Number::above_zero(300.0, ""),
    Unit::Seconds,
)
.default("10");
pub const PROXIES: Field = Field::texts(
    "proxies",
    "Proxy mappings \"LISTEN_PORT=HOST:PORT\" (e.g. \"34000=127.0.0.1:8080\", or \
     \"34000=https://api.host\" to speak TLS to the upstream): the faults run on these proxies, which \
     your service must call its upstream through, and the load goes to the service",
    "mappings \"LISTEN_PORT=HOST:PORT\"",
    check_mapping,
)
.optional("a proxy in front of the service itself (http and https alike; TLS, SNI and Host stay the service's)");

pub const SLO_OBJECTIVE: Field = Field::number(
    "objective",
    "Percent of requests that must succeed within the threshold (e.g. 99)",
    Number::above_zero(100.0, " (percent)"),
    Unit::None,
)
.required("99");
pub const SLO_THRESHOLD: Field = Field::millis(
    "threshold_ms",
    "Latency threshold (e.g. 350)",
    Number::above_zero(3_600_000.0, ""),
)
.required("350");
pub const SLO_REQUEST: Field = Field::text(
    "request",
    "The request of the mix (`requests[].name`) the SLO judges",
)
.optional("all traffic");
const SLO_FIELDS: &[Field] = &[SLO_OBJECTIVE, SLO_THRESHOLD, SLO_REQUEST];
pub const SLOS: Field = Field::objects(
    "slos",
    "SLOs to judge the run by",
    SLO_FIELDS,
    (1, MAX_SLOS),
)
.optional("99% within 350 ms and 95% within 200 ms, of all traffic");

pub const SEED: Field = Field::json(
    "seed",
    "Seed for the faults' randomness, the mix's picks and a feed's random order, for repeatable runs (a \
     JSON integer or a string of digits)",
    (
        "a whole number from 0 to 2^64 - 1",
        &["integer", "string"],
    ),
    check_seed,
)
.optional("random");
pub const BASELINE: Field = Field::switch(
    "baseline",
    "Run the same load without the faults first and add a with/without comparison (p50, p95, p99, errors)",
);
pub const RECOVERY_SECONDS: Field = crate::report::impact::RECOVERY_SECONDS;
pub const REPORT_PATH: Field = Field::text(
    "report_path",
    "Also write the report as one self-contained HTML page (the report, its charts, the figures as JSON; \
     opens from disk with no network) to this path, e.g. \"/tmp/impact.html\"; its directory must exist and \
     be writable",
)
.optional("no file");

pub const RESULT_PATH: Field = Field::text(
    "result_path",
    "Also write the result (structuredContent, with its histograms in HdrHistogram's encoding) as JSON to \
     this path, e.g. \"/tmp/run-a.json\", for `fault report merge`; its directory must exist and be writable",
)
.optional("no file");

fn check_engine(text: &str) -> Result<(), String> {
    match text {
        "fault" | "locust" => Ok(()),
        _ => Err(format!(
            "'{text}' is not a load engine; accepted: fault (its own open-model generator) or locust"
        )),
    }
}

fn check_address(text: &str) -> Result<(), String> {
    parses_as::<std::net::IpAddr>(text)
}

pub const LOAD_ENGINE: Field = Field::parsed(
    "engine",
    "What sends the load: `fault`, its own open-model generator (the other load fields), or `locust`, \
     Locust's master and workers (closed model: users, not an arrival rate; the latencies are Locust's)",
    "fault or locust",
    check_engine,
)
.default("fault");
pub const LOAD_LOCUSTFILE: Field = Field::text(
    "locustfile",
    "The locustfile Locust runs (its users' paths go to `url`'s service, through the scenario's proxies)",
)
.optional("one written from the scenario's traffic mix, a weighted task per request");
pub const LOAD_USERS: Field = Field::number(
    "users",
    "Locust users over all workers",
    Number::from_to(1.0, 10_000.0).whole(),
    Unit::None,
)
.default("10");
pub const LOAD_SPAWN_RATE: Field = Field::number(
    "spawn_rate",
    "Users Locust starts per second until all run",
    Number::above_zero(10_000.0, ""),
    Unit::None,
)
.default("10");
pub const WORKERS_LOCAL: Field = Field::number(
    "local",
    "Workers fault starts on this machine",
    Number::from_to(1.0, 64.0).whole(),
    Unit::None,
)
.default("1");
pub const WORKERS_EXTERNAL: Field = Field::number(
    "external",
    "Workers started elsewhere (`locust --worker --master-host HOST --master-port PORT -f -`, the command \
     printed in the progress) that fault waits for instead of starting any",
    Number::from_to(1.0, 1000.0).whole(),
    Unit::None,
)
.optional("none: fault starts `local` workers");
const WORKERS_FIELDS: &[Field] = &[WORKERS_LOCAL, WORKERS_EXTERNAL];
pub const LOAD_WORKERS: Field = Field::object(
    "workers",
    "Locust's workers: `{\"local\": N}` started here, or `{\"external\": N}` started elsewhere (a bare \
     number N means `{\"local\": N}`)",
    WORKERS_FIELDS,
)
.optional("one local worker");
pub const LOAD_WORKERS_WAIT: Field = Field::parsed(
    "workers_wait",
    "How long the workers may take to come; past it the run is refused, saying how many came",
    "a duration such as \"60s\"",
    check_duration,
)
.numbers_too()
.default("60s");
pub const LOAD_MASTER_HOST: Field = Field::parsed(
    "master_host",
    "The address Locust's master listens on for its workers (not loopback: workers on other machines, \
     allowed only when the server is started with `fault agent tool --allow-public-proxies`)",
    "an IP address",
    check_address,
)
.default("127.0.0.1");
pub const LOAD_MASTER_PORT: Field = Field::number(
    "master_port",
    "The port Locust's master listens on for its workers; it must be free",
    Number::from_to(1.0, 65_535.0).whole(),
    Unit::None,
)
.default("5557");
pub const LOAD_CSV: Field = Field::text(
    "csv",
    "Also keep Locust's own CSV statistics under this prefix (Locust's `--csv PREFIX`)",
)
.optional("none");
const LOAD_FIELDS: &[Field] = &[
    LOAD_ENGINE,
    LOAD_LOCUSTFILE,
    LOAD_USERS,
    LOAD_SPAWN_RATE,
    LOAD_WORKERS,
    LOAD_WORKERS_WAIT,
    LOAD_MASTER_HOST,
    LOAD_MASTER_PORT,
    LOAD_CSV,
];
pub const LOAD: Field = Field::object(
    "load",
    "The load engine: fault's own generator, or Locust (master and workers) sending the traffic through the \
     scenario's proxies, its per-request results turned into the same report",
    LOAD_FIELDS,
)
.optional("fault's own open-model generator");

/// An address a metrics page may listen on: "HOST:PORT", or a bare port (on 127.0.0.1).
pub fn parse_metrics_address(text: &str) -> Result<std::net::SocketAddr, String> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| {
        format!(
            "'{text}' is not an address; accepted: HOST:PORT such as \"127.0.0.1:9464\", or a port"
        )
    })
}

fn check_metrics_address(text: &str) -> Result<(), String> {
    parse_metrics_address(text).map(drop)
}

pub const METRICS: Field = Field::parsed(
    "metrics",
    "Serve the scenario proxies' Prometheus metrics on http://ADDR/metrics while it runs (exchanges, \
     connections, faults applied, bytes, the windows active now), as `fault run --metrics` does; on loopback \
     unless the server allows public proxies",
    "an address HOST:PORT, or a port (on 127.0.0.1)",
    check_metrics_address,
)
.numbers_too()
.optional("no metrics");

/// Every field of every impact scenario, in the order the tools list them.
pub const COMMON_FIELDS: &[Field] = &[
    URL,
    METHOD,
    BODY,
    HEADERS,
    REQUESTS,
    FEED,
    STAGES,
    DURATION,
    NUM_CLIENTS,
    RPS,
    TIMEOUT,
    PROXIES,
    SLOS,
    SEED,
    BASELINE,
    RECOVERY_SECONDS,
    REPORT_PATH,
    RESULT_PATH,
    METRICS,
    LOAD,
];

/// The scenario fields of a tool's arguments, read by their declarations.
pub fn input(arguments: &rmcp::model::JsonObject) -> FieldInput {
    FieldInput::from_arguments(COMMON_FIELDS, arguments)
}
