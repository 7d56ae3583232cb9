//! The fields of `fault_run_mcp_chaos_scenario`, declared once ([`crate::fields`]): the tool's schema
//! properties, the book's table and the reader ([`super::mcp_chaos_input`]) all come from these declarations.
//! Bounds the operator sets at start (`--max-scenario-rps`, `--max-scenario-duration`) are checked against
//! [`crate::impact::Limits`] as the fields are read.

use serde_json::Value;

use super::scenario_fields::{check_duration, check_seed};
use crate::{
    fields::{Field, Unit},
    impact::CEILING_SCENARIO_RPS,
    lenient::Number,
    mcp_proxy::plan::Gates,
};

/// Logical calls one run may make, every session's: the bound of `repeat` and of the calls in all.
pub const MAX_CALLS: u64 = 100_000;
/// Entries of `calls`.
const MAX_LISTED_CALLS: usize = 1000;

/// Client sessions of a run against a `server.command`, each with its own proxy and server process (a
/// macro, so that the help can say it).
macro_rules! most_command_clients {
    () => {
        32
    };
}

/// The client sessions a run against a `server.command` may have.
pub const COMMAND_CLIENTS: Number = {
    const MOST: u32 = most_command_clients!();
    Number::from_to(1.0, MOST as f64).whole()
};

/// Logical calls in flight at once per client.
pub const CALLS_IN_FLIGHT: Number = Number::from_to(1.0, 256.0).whole();

/// A text that a process can be given: no NUL byte.
fn check_no_nul(text: &str) -> Result<(), String> {
    if text.contains('\0') {
        Err("contains a NUL byte (\\u0000), which no program argument can hold".into())
    } else {
        Ok(())
    }
}

fn check_plan(value: &Value) -> Result<(), String> {
    match value {
        Value::Object(_) | Value::Array(_) | Value::String(_) | Value::Null => Ok(()),
        other => Err(format!("expected an object or YAML text, got {other}")),
    }
}

fn check_arguments(value: &Value) -> Result<(), String> {
    match value {
        Value::Object(_) | Value::Null => Ok(()),
        other => Err(format!("expected an object, got {other}")),
    }
}

/// The gates as [`Gates`] reads them; an error names the member.
fn check_gates(value: &Value) -> Result<(), String> {
    serde_path_to_error::deserialize::<_, Gates>(value.clone())
        .map(drop)
        .map_err(|e| match e.path().to_string().as_str() {
            "." => e.inner().to_string(),
            path => format!("{path}: {}", e.inner()),
        })
}

/// The JSON Schema of [`Gates`], inline.
fn gates_schema() -> Value {
    let mut schema = schemars::schema_for!(Gates).to_value();
    if let Value::Object(members) = &mut schema {
        members.remove("$schema");
        members.remove("title");
    }
    schema
}

pub const SERVER_COMMAND: Field = Field::parsed(
    "command",
    "The server's executable, e.g. \"python\" or \"/abs/path/server\" (looked up on PATH), started over stdio \
     behind `fault mcp-proxy`, one per client; this or `url`",
    "text",
    check_no_nul,
)
.numbers_too()
.optional("none: `url` gives the server");
pub const SERVER_URL: Field = Field::text(
    "url",
    "Instead of `command`: the MCP endpoint of a running Streamable HTTP server, e.g. \
     \"http://127.0.0.1:8000/mcp\", called directly, or, when there is a plan with faults or a `baseline`, \
     through one `fault mcp-proxy` HTTP front shared by every client",
)
.numbers_too()
.optional("none: `command` gives the server");
pub const SERVER_HEADERS: Field = Field::text_map(
    "headers",
    "With `url`: headers sent on every request, e.g. {\"Authorization\": \"Bearer ...\"} (the report names \
     them, never their values)",
)
.optional("none");
pub const SERVER_ARGS: Field = Field::texts(
    "args",
    "With `command`: its arguments, e.g. [\"server.py\"]",
    "arguments",
    check_no_nul,
)
.optional("none");
pub const SERVER_ENV: Field = Field::text_map(
    "env",
    "With `command`: environment variables added to the ones it inherits",
)
.optional("none");
pub const SERVER_CWD: Field = Field::parsed(
    "cwd",
    "With `command`: its working directory, an absolute path",
    "text",
    check_no_nul,
)
.numbers_too()
.optional("the directory fault runs in");
pub const SERVER_START_TIMEOUT: Field = Field::number(
    "start_timeout",
    "Seconds the server gets to answer `initialize`, and then each page of `tools/list`, before the run ends \
     saying what it wrote",
    Number::from_to(1.0, 600.0).whole(),
    Unit::Seconds,
)
.default("30");
const SERVER_FIELDS: &[Field] = &[
    SERVER_COMMAND,
    SERVER_URL,
    SERVER_HEADERS,
    SERVER_ARGS,
    SERVER_ENV,
    SERVER_CWD,
    SERVER_START_TIMEOUT,
];
pub const SERVER: Field = Field::object(
    "server",
    "The MCP server under test: a `command` started over stdio, or the `url` of a running Streamable HTTP \
     server; a server that does not start is reported with what it said: the error of its start, the first \
     line it wrote on stdout that is not a JSON-RPC message (a banner), and the tail of its stderr",
    SERVER_FIELDS,
)
.required("{\"command\": \"python\", \"args\": [\"server.py\"]}");

pub const PLAN: Field = Field::json(
    "plan",
    "The fault plan, as `fault mcp-proxy --plan` reads it: an object {seed, faults: [{type, tools, ...}]} or \
     the same as YAML text (the mcp-chaos, mcptest and mcp-chaos-monkey formats load too)",
    ("an object or YAML text", &["object", "string", "null"]),
    check_plan,
)
.optional("no faults");
pub const SEED: Field = Field::json(
    "seed",
    "Seed of every fault decision, over the plan's `seed` (a JSON integer or a string of digits)",
    ("a whole number from 0 to 2^64 - 1", &["integer", "string"]),
    check_seed,
)
.optional("the plan's, else 0");

pub const CALL_TOOL: Field = Field::text("tool", "The tool's name")
    .numbers_too()
    .required("\"echo\"");
pub const CALL_ARGUMENTS: Field = Field::json(
    "arguments",
    "Its arguments",
    ("an object", &["object", "null"]),
    check_arguments,
)
.optional("{}");
pub const CALL_TASK: Field = Field::text(
    "task",
    "A task id: calls sharing it form one task in each repetition (for tool calls per task and blast radius)",
)
.numbers_too()
.optional("each call is a task of its own");
const CALL_FIELDS: &[Field] = &[CALL_TOOL, CALL_ARGUMENTS, CALL_TASK];
pub const CALLS: Field = Field::objects(
    "calls",
    "The calls to make, in order; a tool the server does not list is refused before any call, naming it and \
     the listed ones (unless the plan alters the listing, e.g. `drop_tool`: then that is the scenario)",
    CALL_FIELDS,
    (1, MAX_LISTED_CALLS),
)
.required("[{\"tool\": \"echo\", \"arguments\": {\"text\": \"hi\"}}]");

pub const REPEAT: Field = Field::number(
    "repeat",
    "Run the calls list this many times, not with `duration`; the calls of the run in all (every session's) \
     are held to the same bound",
    Number::from_to(1.0, MAX_CALLS as f64).whole(),
    Unit::None,
)
.default("1");
pub const DURATION: Field = Field::parsed(
    "duration",
    "Instead of `repeat`: an open-model load: each client starts calls at `rps`, cycling through `calls`, for \
     this long, e.g. \"30s\" (a bare number means seconds), whether or not earlier calls have returned; at \
     most the server's --max-scenario-duration",
    "a duration, more than 0",
    check_duration,
)
.numbers_too()
.optional("none: `repeat` paces the calls");
pub const RPS: Field = Field::number(
    "rps",
    "With `duration`: logical calls each client starts per second; num_clients × rps at most the server's \
     --max-scenario-rps",
    Number::from_to(0.001, CEILING_SCENARIO_RPS as f64),
    Unit::None,
)
.default("10");
pub const RATE: Field = Field {
    name: "rate",
    help: "The older name of `rps`: the same field (give one of the two)",
    ..RPS
};
pub const NUM_CLIENTS: Field = Field::number(
    "num_clients",
    concat!(
        "Client sessions, each with its own handshake, all on one clock and phased evenly over an interval (so \
         they start calls at a steady num_clients × rps, not in bursts); at most ",
        most_command_clients!(),
        " with `server.command`, where each client gets its own proxy and server process"
    ),
    Number::from_to(1.0, 256.0).whole(),
    Unit::None,
)
.default("1");
pub const CONCURRENCY: Field = Field::number(
    "concurrency",
    "Logical calls in flight at once per client; on an open-model load a call due while all are busy is not \
     started and counted (`not_started`, and with its timeout in the latency figures), never silently \
     dropped or delayed",
    CALLS_IN_FLIGHT,
    Unit::None,
)
.optional("the fewest with `repeat` (one call after another), the most with `duration`");

pub const CLIENT_TIMEOUT: Field = Field::millis(
    "timeout_ms",
    "Give up on a call this long after it was due (a retry: after its backoff), however late it was sent: \
     send `notifications/cancelled` and count a timeout",
    Number::from_to(1.0, 600_000.0).whole(),
)
.default("10000");
pub const CLIENT_RETRIES: Field = Field::number(
    "retries",
    "Further attempts after an error, an isError result, a timeout or a malformed answer",
    Number::from_to(0.0, 10.0).whole(),
    Unit::None,
)
.default("0");
pub const CLIENT_BACKOFF: Field = Field::millis(
    "backoff_ms",
    "Wait before each retry",
    Number::from_to(0.0, 60_000.0).whole(),
)
.default("0");
pub const CLIENT_FIELDS: &[Field] = &[CLIENT_TIMEOUT, CLIENT_RETRIES, CLIENT_BACKOFF];
pub const CLIENT: Field = Field::object("client", "How the driving client behaves", CLIENT_FIELDS)
    .optional("each member's default");

pub const AS_TASKS: Field = Field::switch(
    "as_tasks",
    "Call the tools as tasks: the client declares the MCP Tasks extension (io.modelcontextprotocol/tasks) and \
     follows a call the server answers with a task, polling tasks/get at its pollIntervalMs (50 ms to 10 s), \
     to its end: the call's outcome is the task's (completed, failed, cancelled, lost), its latency runs to \
     the task's end, and at the timeout the task is cancelled with tasks/cancel; calls answered without a task \
     are taken as they are",
);
pub const BASELINE: Field = Field::switch(
    "baseline",
    "Run the same calls without faults first and add a with/without table",
);
pub const SESSIONS: Field = Field::number(
    "sessions",
    "Run the scenario this many times, each a session of the same plan with its own proxy and server, for \
     pass^k: the share of sessions that handled every failure well (`repeat` repeats the calls list inside \
     one session)",
    Number::from_to(1.0, 20.0).whole(),
    Unit::None,
)
.default("1");
pub const GATES: Field = Field::of_type(
    "gates",
    "Budgets the run must meet, over the plan's `gates`: the report opens with Gates: PASSED or Gates: FAILED \
     and the gate that broke",
    ("an object of budgets, as a plan's `gates`", gates_schema),
    check_gates,
)
.optional("none");
pub const REPORT_PATH: Field = Field::text(
    "report_path",
    "Also write the report as one self-contained HTML page (the report, its charts, the figures as JSON; opens \
     from disk with no network) to this path, e.g. \"/tmp/chaos.html\"; checked before the run: its directory \
     must exist and be writable",
)
.numbers_too()
.optional("no file");

/// Every field of the tool, in the order it lists them.
pub const FIELDS: &[Field] = &[
    SERVER,
    PLAN,
    SEED,
    CALLS,
    REPEAT,
    DURATION,
    RPS,
    RATE,
    NUM_CLIENTS,
    CONCURRENCY,
    CLIENT,
    AS_TASKS,
    BASELINE,
    SESSIONS,
    GATES,
    REPORT_PATH,
];
