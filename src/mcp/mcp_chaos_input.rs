//! Input of `fault_run_mcp_chaos_scenario`: a serde struct that is also the tool's JSON Schema, with
//! lenient field types ([`crate::lenient`]); `validate` turns it into a [`ChaosSpec`] or an error naming the
//! field and what it accepts.

use std::{collections::BTreeMap, path::PathBuf, sync::Arc, time::Duration};

use rmcp::{model::JsonObject, schemars::JsonSchema};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::impact_input::{InputError, bad, duration, read, report_page, whole, within};
use crate::lenient::{Lenient, Seed, Strings};
use crate::{
    impact::Limits,
    mcp_chaos::{ChaosSpec, ServerUnderTest, ServerUrl},
    mcp_load::{CallLoad, CallPace, CallPolicy, PlannedCall},
    mcp_proxy::{
        plan::{self, Gates, Plan},
        stdio::ServerCommand,
    },
    mcp_wire::{endpoint::parse_endpoint, http_session::header_map},
    report::chart::page_file::PageFile,
};

/// Logical calls one run may make.
const MAX_CALLS: u64 = 100_000;
/// Client sessions of one run against a URL.
const MAX_CLIENTS: u64 = 256;
/// Sessions of one scenario (pass^k).
const MAX_SESSIONS: u64 = 20;
/// Against a command each client has its own proxy and server process.
const MAX_COMMAND_CLIENTS: u64 = 32;

/// The MCP server under test: a `command` started over stdio behind `fault mcp-proxy` (one per client), or
/// the `url` of a running Streamable HTTP server, called directly, or through `fault mcp-proxy --upstream`
/// when there is a plan with faults or a baseline.
#[derive(Debug, Deserialize, JsonSchema)]
struct ServerInput {
    /// The server's executable, e.g. "python" or "/abs/path/server" (looked up on PATH). This or `url`.
    #[serde(default)]
    command: Lenient<String>,
    /// Instead of `command`: the MCP endpoint of a running server, e.g. "http://127.0.0.1:8000/mcp".
    #[serde(default)]
    url: Lenient<String>,
    /// With `url`: headers sent on every request, e.g. {"Authorization": "Bearer ..."}. Default none.
    #[serde(default)]
    headers: BTreeMap<String, Lenient<String>>,
    /// Its arguments, e.g. ["server.py"]. Default none.
    #[serde(default)]
    args: Strings,
    /// Environment variables added for it. Default none.
    #[serde(default)]
    env: BTreeMap<String, Lenient<String>>,
    /// Absolute working directory. Default: the directory fault runs in.
    #[serde(default)]
    cwd: Lenient<String>,
}

/// One tool call to make.
#[derive(Debug, Deserialize, JsonSchema)]
struct CallInput {
    /// The tool's name. Required.
    #[serde(default)]
    tool: Lenient<String>,
    /// Its arguments. Default {}.
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    /// A task id: calls sharing it form one task in each repetition (for tool calls per task and blast
    /// radius). Default: each call is a task of its own.
    #[serde(default)]
    task: Lenient<String>,
}

/// How the driving client behaves.
#[derive(Debug, Default, Deserialize, JsonSchema)]
struct ClientInput {
    /// Give up on a call this many ms after it was due (a retry: after its backoff), however late it was
    /// sent: send `notifications/cancelled` and count a timeout. Default 10000; 1..=600000.
    #[serde(default)]
    timeout_ms: Lenient<f64>,
    /// Further attempts after an error, an isError result, a timeout or a malformed answer. Default 0; 0..=10.
    #[serde(default)]
    retries: Lenient<f64>,
    /// Wait before each retry, in ms. Default 0; 0..=60000.
    #[serde(default)]
    backoff_ms: Lenient<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct McpChaosInput {
    server: ServerInput,
    /// The fault plan, as `fault mcp-proxy --plan` reads it: an object {seed, faults: [{type, tools, ...}]}
    /// or the same as YAML text (the mcp-chaos, mcptest and mcp-chaos-monkey formats load too). Default: no
    /// faults.
    #[serde(default)]
    #[schemars(schema_with = "plan_schema")]
    plan: Option<Value>,
    /// Seed of every fault decision (overrides the plan's `seed`): a whole number from 0 to 2^64 - 1, as a
    /// JSON integer or a string of digits. Default: the plan's, else 0.
    #[serde(default)]
    seed: Seed,
    /// The calls to make, in order: [{tool, arguments, task}]. 1 to 1000 entries.
    calls: Vec<CallInput>,
    /// Run the calls list this many times. Default 1; at most 100000 calls in all. Not with `duration`.
    #[serde(default)]
    repeat: Lenient<f64>,
    /// Instead of `repeat`: an open-model load: each client starts calls at `rps`, cycling through `calls`,
    /// for this long, e.g. "30s" (at most the server's --max-scenario-duration), whether or not earlier
    /// calls have returned.
    #[serde(default)]
    duration: Lenient<String>,
    /// Logical calls each client starts per second with `duration`. Default 10; more than 0, and
    /// num_clients × rps at most the server's --max-scenario-rps.
    #[serde(default)]
    rps: Lenient<f64>,
    /// The older name of `rps`: the same field (give one of the two).
    #[serde(default)]
    rate: Lenient<f64>,
    /// Client sessions, each with its own handshake (a `server.command` gets one proxy and server process
    /// per client), all on the same schedule. Default 1; 1..=256 (1..=32 with `server.command`).
    #[serde(default)]
    num_clients: Lenient<f64>,
    /// Logical calls in flight at once per client. With `repeat`, default 1 (calls one after another); with
    /// `duration`, default 256, and a call due while all are busy is not started (and counted). 1..=256.
    #[serde(default)]
    concurrency: Lenient<f64>,
    /// The client policy: {timeout_ms, retries, backoff_ms}.
    #[serde(default)]
    client: Option<ClientInput>,
    /// Call the tools as tasks: the client declares the MCP Tasks extension (io.modelcontextprotocol/tasks)
    /// and follows a call the server answers with a task, polling tasks/get at its pollIntervalMs (50 ms to
    /// 10 s), to its end: the call's outcome is the task's (completed, failed, cancelled, lost), its latency
    /// runs to the task's end, and at the timeout the task is cancelled with tasks/cancel. Calls answered
    /// without a task are taken as they are. Default false.
    #[serde(default)]
    as_tasks: Lenient<bool>,
    /// Run the same calls without faults first and add a with/without table. Default false.
    #[serde(default)]
    baseline: Lenient<bool>,
    /// Run the scenario this many times, each a session of the same plan with its own proxy and server,
    /// for pass^k: the share of sessions that handled every failure well. Default 1; 1..=20. (`repeat`
    /// repeats the calls list inside one session.)
    #[serde(default)]
    sessions: Lenient<f64>,
    /// Budgets the run must meet, over the plan's `gates`: {max_detection_ms, max_recovery_ms,
    /// require_clean_timeout, max_runaways, duplicate_writes}. The report says PASSED or FAILED for each.
    /// Default none.
    #[serde(default)]
    gates: Option<Gates>,
    /// Also write the report as one self-contained HTML page (the report, its charts, the figures as JSON;
    /// opens from disk with no network) to this path, e.g. "/tmp/chaos.html". Checked before the run: its
    /// directory must exist and be writable. Default: no file.
    #[serde(default)]
    report_path: Lenient<String>,
}

impl McpChaosInput {
    fn validate(self, limits: &Limits) -> Result<ChaosSpec, InputError> {
        let server = self.server.validate()?;
        let mut plan = plan(self.plan)?;
        if let Some(seed) = self.seed.0 {
            plan.seed = seed;
        }
        if let Some(gates) = &self.gates {
            plan.gates = plan.gates.overridden_by(gates);
        }
        if self.calls.is_empty() || self.calls.len() > 1000 {
            return Err(bad(
                "calls",
                "give between 1 and 1000 calls, e.g. [{\"tool\": \"echo\", \"arguments\": {\"text\": \"hi\"}}]",
            ));
        }
        let calls =
            self.calls
                .into_iter()
                .enumerate()
                .map(|(i, call)| {
                    let tool = call.tool.0.ok_or_else(|| {
                        bad(format!("calls[{i}].tool"), "is required: a tool name")
                    })?;
                    Ok(PlannedCall {
                        tool,
                        arguments: Value::Object(call.arguments.unwrap_or_default()),
                        task: call.task.0,
                    })
                })
                .collect::<Result<Vec<_>, InputError>>()?;
        let (rps_field, rps) = match (self.rps.0, self.rate.0) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "rate",
                    "is the older name of `rps`, which is given too: give one of the two",
                ));
            }
            (None, Some(rate)) => ("rate", Some(rate)),
            (rps, None) => ("rps", rps),
        };
        let pace = match (self.duration.0, self.repeat.0) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "repeat",
                    "give either `repeat` or `duration` (with `rps`), not both",
                ));
            }
            (Some(text), None) => CallPace::Rate {
                duration: duration(Some(text), limits)?,
                rate: within(rps_field, rps, 10.0, 0.001, limits.max_total_rps as f64)?,
            },
            (None, repeat) => {
                if rps.is_some() {
                    return Err(bad(rps_field, "only goes with `duration`"));
                }
                CallPace::Repeat(whole("repeat", repeat, 1, 1, MAX_CALLS)?)
            }
        };
        let most_clients = match &server {
            ServerUnderTest::Command(_) => MAX_COMMAND_CLIENTS,
            ServerUnderTest::Url(_) => MAX_CLIENTS,
        };
        let num_clients = whole("num_clients", self.num_clients.0, 1, 1, most_clients)? as u32;
        if let CallPace::Rate { rate, .. } = pace {
            let total = rate * f64::from(num_clients);
            if total > limits.max_total_rps as f64 {
                return Err(bad(
                    "rps",
                    format!(
                        "num_clients × rps = {total} calls/s is over this server's cap of {} \
                         (--max-scenario-rps)",
                        limits.max_total_rps
                    ),
                ));
            }
        }
        let default_concurrency = match pace {
            CallPace::Repeat(_) => 1,
            CallPace::Rate { .. } => 256,
        };
        let concurrency = whole(
            "concurrency",
            self.concurrency.0,
            default_concurrency,
            1,
            256,
        )? as u32;
        let client = self.client.unwrap_or_default();
        let timeout_ms = whole("client.timeout_ms", client.timeout_ms.0, 10_000, 1, 600_000)?;
        let retries = whole("client.retries", client.retries.0, 0, 0, 10)? as u32;
        let backoff_ms = whole("client.backoff_ms", client.backoff_ms.0, 0, 0, 60_000)?;
        let spec = ChaosSpec {
            server,
            plan,
            load: CallLoad {
                calls,
                pace,
                num_clients,
                concurrency,
                policy: CallPolicy {
                    timeout: Duration::from_millis(timeout_ms),
                    retries,
                    backoff: Duration::from_millis(backoff_ms),
                },
                as_tasks: self.as_tasks.0.unwrap_or(false),
            },
            baseline: self.baseline.0.unwrap_or(false),
            sessions: whole("sessions", self.sessions.0, 1, 1, MAX_SESSIONS)? as u32,
        };
        let all_calls = spec.planned_calls() * u64::from(spec.sessions);
        if all_calls > MAX_CALLS {
            return Err(bad(
                "repeat",
                format!(
                    "{all_calls} calls in all (every session's); accepted: at most {MAX_CALLS}"
                ),
            ));
        }
        Ok(spec)
    }
}

impl ServerInput {
    fn validate(self) -> Result<ServerUnderTest, InputError> {
        let command = match (self.command.0, self.url.0) {
            (Some(_), Some(_)) => {
                return Err(bad(
                    "server.url",
                    "give either `command` (a stdio server) or `url` (a Streamable HTTP server), not both",
                ));
            }
            (None, Some(url)) => {
                for (field, given) in [
                    ("server.args", !self.args.0.is_empty()),
                    ("server.env", !self.env.is_empty()),
                    ("server.cwd", self.cwd.0.is_some()),
                ] {
                    if given {
                        return Err(bad(
                            field,
                            "only goes with `server.command`, not `server.url`",
                        ));
                    }
                }
                parse_endpoint(&url).map_err(|e| bad("server.url", e.to_string()))?;
                let headers = header_map(
                    self.headers
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.0.as_deref().unwrap_or(""))),
                )
                .map_err(|e| bad("server.headers", e))?;
                return Ok(ServerUnderTest::Url(ServerUrl { url, headers }));
            }
            (Some(command), None) => command,
            (None, None) => {
                return Err(bad(
                    "server.command",
                    "is required: the server's executable, e.g. \"python\" (or give `server.url`)",
                ));
            }
        };
        if !self.headers.is_empty() {
            return Err(bad("server.headers", "only goes with `server.url`"));
        }
        // A NUL byte cannot be passed to a process: say where it is rather than what the OS says.
        let nul = |field: String, text: &str| {
            if text.contains('\0') {
                Err(bad(
                    field,
                    "contains a NUL byte (\\u0000), which no program argument can hold",
                ))
            } else {
                Ok(())
            }
        };
        nul("server.command".into(), &command)?;
        for (i, arg) in self.args.0.iter().enumerate() {
            nul(format!("server.args[{i}]"), arg)?;
        }
        for (name, value) in &self.env {
            nul(format!("server.env.{name}"), name)?;
            nul(
                format!("server.env.{name}"),
                value.0.as_deref().unwrap_or(""),
            )?;
        }
        let cwd = match self.cwd.0 {
            None => None,
            Some(cwd) => {
                nul("server.cwd".into(), &cwd)?;
                let path = PathBuf::from(&cwd);
                if !path.is_absolute() || !path.is_dir() {
                    return Err(bad(
                        "server.cwd",
                        format!("'{cwd}' is not an absolute path to a directory"),
                    ));
                }
                Some(path)
            }
        };
        Ok(ServerUnderTest::Command(ServerCommand {
            program: command,
            args: self.args.0,
            env: self
                .env
                .into_iter()
                .map(|(k, v)| (k, v.0.unwrap_or_default()))
                .collect(),
            cwd,
        }))
    }
}

/// `plan`'s schema: an object or YAML text, typed as strict clients require of every property.
fn plan_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["object", "string", "null"]})
}

/// The plan as given (an object, or YAML text), loaded as the proxy loads `--plan`.
fn plan(plan: Option<Value>) -> Result<Plan, InputError> {
    let (root, text) = match plan {
        None | Some(Value::Null) => (Value::Null, String::new()),
        Some(Value::String(text)) => {
            let root = plan::read_value(&text, plan::Syntax::Yaml)
                .map_err(|e| bad("plan", e.to_string()))?;
            (root, text)
        }
        Some(root @ (Value::Object(_) | Value::Array(_))) => {
            let text =
                serde_json::to_string_pretty(&root).map_err(|e| bad("plan", e.to_string()))?;
            (root, text)
        }
        Some(other) => {
            return Err(bad(
                "plan",
                format!("expected an object or YAML text, got {other}"),
            ));
        }
    };
    Plan::from_value(root, &text).map_err(|e| bad("plan", e.to_string()))
}

/// The scenario of a tool call.
pub(super) fn chaos_spec(
    args: &JsonObject,
    limits: &Limits,
) -> Result<(ChaosSpec, Option<PageFile>), InputError> {
    let mut input = read::<McpChaosInput>(args)?;
    let report_path = input.report_path.0.take();
    let spec = input.validate(limits)?;
    // Last, once everything else is accepted: it creates the file.
    Ok((spec, report_page(report_path)?))
}

/// The tool's input schema.
pub(super) fn chaos_input_schema() -> Arc<JsonObject> {
    rmcp::handler::server::common::schema_for_type::<McpChaosInput>()
}
