//! Input of `fault_run_mcp_chaos_scenario`: its fields, declared in [`super::chaos_fields`], read by their
//! declarations into a [`ChaosSpec`], or an error naming the field and what it accepts.

use std::{collections::BTreeMap, path::PathBuf, sync::Arc, time::Duration};

use rmcp::model::JsonObject;
use serde_json::Value;

use super::chaos_fields::{self as fields, CALLS_IN_FLIGHT, COMMAND_CLIENTS, MAX_CALLS};
use super::impact_input::{InputError, bad, duration, report_page};
use crate::{
    fields::{Field, FieldInput},
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

/// The scenario the fields of `input` describe (all but `report_path`).
fn read_spec(input: &FieldInput, limits: &Limits) -> Result<ChaosSpec, InputError> {
    let Some(server_input) = input.object(&fields::SERVER)? else {
        return Err(input.refuse(&fields::SERVER, "is required").into());
    };
    let server = read_server(&server_input)?;
    let start_timeout = Duration::from_secs(server_input.whole(&fields::SERVER_START_TIMEOUT)?);
    let mut plan = read_plan(input.json(&fields::PLAN)?)?;
    if let Some(seed) = input.json(&fields::SEED)? {
        plan.seed = crate::seeded::seed_from_json(&seed).map_err(|e| bad("seed", e.to_string()))?;
    }
    if let Some(gates) = input.json(&fields::GATES)? {
        let gates: Gates =
            serde_json::from_value(gates).map_err(|e| bad("gates", e.to_string()))?;
        plan.gates = plan.gates.overridden_by(&gates);
    }
    let calls = input
        .objects(&fields::CALLS)?
        .iter()
        .map(|call| {
            Ok(PlannedCall {
                tool: call.text(&fields::CALL_TOOL)?,
                arguments: call
                    .json(&fields::CALL_ARGUMENTS)?
                    .unwrap_or_else(|| Value::Object(Default::default())),
                task: call.optional_text(&fields::CALL_TASK)?,
            })
        })
        .collect::<Result<Vec<_>, InputError>>()?;
    let rps_field = match (input.has(&fields::RPS), input.has(&fields::RATE)) {
        (true, true) => {
            return Err(bad(
                "rate",
                "is the older name of `rps`, which is given too: give one of the two",
            ));
        }
        (false, true) => &fields::RATE,
        _ => &fields::RPS,
    };
    let pace = if input.has(&fields::DURATION) {
        if input.has(&fields::REPEAT) {
            return Err(bad(
                "repeat",
                "give either `repeat` or `duration` (with `rps`), not both",
            ));
        }
        CallPace::Rate {
            duration: duration(Some(input.text(&fields::DURATION)?), limits)?,
            rate: input.number(rps_field)?,
        }
    } else {
        if input.has(rps_field) {
            return Err(bad(rps_field.name, "only goes with `duration`"));
        }
        CallPace::Repeat(input.whole(&fields::REPEAT)?)
    };
    let num_clients = input.whole(&fields::NUM_CLIENTS)?;
    if let ServerUnderTest::Command(_) = server {
        COMMAND_CLIENTS
            .check(num_clients as f64)
            .map_err(|message| input.refuse(&fields::NUM_CLIENTS, message))?;
    }
    // Within its field's bound: the cast is exact.
    let num_clients = num_clients as u32;
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
    let concurrency = match input.optional_whole(&fields::CONCURRENCY)? {
        Some(concurrency) => concurrency,
        // One call after another with `repeat`; on an open-model load as many as it takes, so that a call is
        // left unstarted only at the bound.
        None => {
            (match pace {
                CallPace::Repeat(_) => CALLS_IN_FLIGHT.low().0,
                CallPace::Rate { .. } => CALLS_IN_FLIGHT.high(),
            }) as u64
        }
    } as u32;
    let client = input.object(&fields::CLIENT)?.unwrap_or_else(|| {
        FieldInput::from_arguments(fields::CLIENT_FIELDS, &serde_json::Map::new())
    });
    let spec = ChaosSpec {
        server,
        plan,
        load: CallLoad {
            calls,
            pace,
            num_clients,
            concurrency,
            policy: CallPolicy {
                timeout: client.millis(&fields::CLIENT_TIMEOUT)?,
                retries: client.whole(&fields::CLIENT_RETRIES)? as u32,
                backoff: client.millis(&fields::CLIENT_BACKOFF)?,
            },
            as_tasks: input.switch(&fields::AS_TASKS)?,
        },
        baseline: input.switch(&fields::BASELINE)?,
        sessions: input.whole(&fields::SESSIONS)? as u32,
        start_timeout,
    };
    let all_calls = spec.planned_calls() * u64::from(spec.sessions);
    if all_calls > MAX_CALLS {
        return Err(bad(
            "repeat",
            format!("{all_calls} calls in all (every session's); accepted: at most {MAX_CALLS}"),
        ));
    }
    Ok(spec)
}

/// A name → text field, sorted by name, each text trimmed.
fn text_map(input: &FieldInput, field: &Field) -> Result<BTreeMap<String, String>, InputError> {
    Ok(input
        .text_map(field)?
        .into_iter()
        .map(|(name, text)| (name, text.trim().to_owned()))
        .collect())
}

/// The server under test: a command, or a URL.
fn read_server(server: &FieldInput) -> Result<ServerUnderTest, InputError> {
    let (has_command, has_url) = (
        server.has(&fields::SERVER_COMMAND),
        server.has(&fields::SERVER_URL),
    );
    if has_command && has_url {
        return Err(bad(
            "server.url",
            "give either `command` (a stdio server) or `url` (a Streamable HTTP server), not both",
        ));
    }
    if has_url {
        for field in [fields::SERVER_ARGS, fields::SERVER_ENV, fields::SERVER_CWD] {
            if server.has(&field) {
                return Err(server
                    .refuse(&field, "only goes with `server.command`, not `server.url`")
                    .into());
            }
        }
        let url = server.text(&fields::SERVER_URL)?;
        parse_endpoint(&url).map_err(|e| bad("server.url", e.to_string()))?;
        let headers = text_map(server, &fields::SERVER_HEADERS)?;
        let headers = header_map(headers.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .map_err(|e| bad("server.headers", e))?;
        return Ok(ServerUnderTest::Url(ServerUrl { url, headers }));
    }
    if !has_command {
        return Err(bad(
            "server.command",
            "is required: the server's executable, e.g. \"python\" (or give `server.url`)",
        ));
    }
    if server.has(&fields::SERVER_HEADERS) {
        return Err(bad("server.headers", "only goes with `server.url`"));
    }
    let program = server.text(&fields::SERVER_COMMAND)?;
    let args = server.texts(&fields::SERVER_ARGS)?;
    let env = text_map(server, &fields::SERVER_ENV)?;
    // A NUL byte cannot be passed to a process: say where it is rather than what the OS says.
    for (name, value) in &env {
        if name.contains('\0') || value.contains('\0') {
            return Err(bad(
                format!("server.env.{name}"),
                "contains a NUL byte (\\u0000), which no program argument can hold",
            ));
        }
    }
    let cwd = match server.optional_text(&fields::SERVER_CWD)? {
        None => None,
        Some(cwd) => {
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
        program,
        args,
        env: env.into_iter().collect(),
        cwd,
    }))
}

/// The plan as given (an object, or YAML text), loaded as the proxy loads `--plan`.
fn read_plan(plan: Option<Value>) -> Result<Plan, InputError> {
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
    let input = FieldInput::from_arguments(fields::FIELDS, args);
    let spec = read_spec(&input, limits)?;
    let report_path = input.optional_text(&fields::REPORT_PATH)?;
    // Last, once everything else is accepted: it creates the file.
    Ok((spec, report_page(report_path)?))
}

/// The tool's input schema.
pub(super) fn chaos_input_schema() -> Arc<JsonObject> {
    match crate::fields::object_schema(fields::FIELDS) {
        Value::Object(schema) => Arc::new(schema),
        _ => Arc::default(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn spec(arguments: Value) -> Result<ChaosSpec, String> {
        let Value::Object(arguments) = arguments else {
            panic!("arguments are an object");
        };
        chaos_spec(&arguments, &Limits::default())
            .map(|(spec, _)| spec)
            .map_err(|e| e.to_string())
    }

    const SERVER: &str = "python";

    #[test]
    fn defaults_come_from_the_declarations() {
        let repeated = spec(json!({
            "server": {"command": SERVER, "args": "server.py", "env": {"B": " 2 ", "A": 1}},
            "calls": [{"tool": " echo "}], "client": {"retries": "2"},
        }))
        .unwrap();
        let ServerUnderTest::Command(command) = &repeated.server else {
            panic!("a command");
        };
        assert_eq!(command.args, ["server.py"]);
        assert_eq!(
            command.env,
            [("A".to_owned(), "1".to_owned()), ("B".into(), "2".into())]
        );
        assert_eq!(repeated.load.calls[0].tool, "echo");
        assert_eq!(repeated.load.calls[0].arguments, json!({}));
        assert!(matches!(repeated.load.pace, CallPace::Repeat(1)));
        assert_eq!(
            (repeated.load.num_clients, repeated.load.concurrency),
            (1, 1)
        );
        assert_eq!(repeated.load.policy.timeout, Duration::from_secs(10));
        assert_eq!(repeated.load.policy.retries, 2);
        assert_eq!(repeated.sessions, 1);
        assert_eq!(repeated.start_timeout, Duration::from_secs(30));
        let open = spec(json!({
            "server": {"url": "http://127.0.0.1:9/mcp"}, "calls": [{"tool": "echo"}], "duration": 2,
        }))
        .unwrap();
        assert!(matches!(open.load.pace, CallPace::Rate { rate: 10.0, .. }));
        assert_eq!(open.load.concurrency, 256);
        let patient = spec(json!({
            "server": {"command": SERVER, "start_timeout": "90"}, "calls": [{"tool": "echo"}],
        }))
        .unwrap();
        assert_eq!(patient.start_timeout, Duration::from_secs(90));
    }

    #[test]
    fn bounds_and_conflicts_are_refused_naming_the_field() {
        let calls = json!([{"tool": "echo"}]);
        for (arguments, expected) in [
            (
                json!({"server": {"command": SERVER}, "calls": calls, "num_clients": 33}),
                "num_clients: 33 is out of range; accepted: 1 to 32",
            ),
            (
                json!({"server": {"url": "http://127.0.0.1:9/mcp"}, "calls": calls, "num_clients": 257}),
                "num_clients: 257 is out of range; accepted: 1 to 256",
            ),
            (
                json!({"server": {"command": SERVER}, "calls": calls, "client": {"retries": 11}}),
                "client.retries: 11 is out of range; accepted: 0 to 10",
            ),
            (
                json!({"server": {"command": SERVER}, "calls": calls, "client": {"timeout": 5}}),
                "client: unknown field 'timeout'; did you mean 'timeout_ms'?",
            ),
            (
                json!({"server": {"command": SERVER}, "calls": [{"tol": "echo"}]}),
                "calls[0]: unknown field 'tol'; did you mean 'tool'?",
            ),
            (
                json!({"server": {"command": SERVER}, "calls": [{"arguments": {}}]}),
                "calls[0].tool: is required",
            ),
            (
                json!({"server": {"command": SERVER}, "calls": []}),
                "calls: 0 items; give 1 to 1000",
            ),
            (
                json!({"server": {"command": SERVER}, "calls": calls, "rate": 5}),
                "rate: only goes with `duration`",
            ),
            (
                json!({"server": {"command": SERVER}, "calls": calls, "repeat": 60000, "sessions": 2}),
                "repeat: 120000 calls in all (every session's); accepted: at most 100000",
            ),
            (
                json!({"server": {"command": SERVER, "start_timeout": 0}, "calls": calls}),
                "server.start_timeout: 0 is out of range; accepted: 1 to 600",
            ),
            (
                json!({"server": {"command": SERVER, "cwd": "rel"}, "calls": calls}),
                "server.cwd: 'rel' is not an absolute path",
            ),
            (
                json!({"server": {"command": SERVER, "args": ["a\u{0}"]}, "calls": calls}),
                "server.args[0]: contains a NUL byte",
            ),
            (
                json!({"server": {"url": "http://127.0.0.1:9/mcp", "env": {"A": "1"}}, "calls": calls}),
                "server.env: only goes with `server.command`",
            ),
            (
                json!({"server": {"command": SERVER}, "calls": calls, "plan": 5}),
                "plan: expected an object or YAML text, got 5",
            ),
            (
                json!({"server": {"command": SERVER}, "calls": calls, "gates": {"max_runaways": "x"}}),
                "gates: max_runaways: invalid type",
            ),
        ] {
            let message = spec(arguments).unwrap_err();
            assert!(message.starts_with(expected), "{expected}: {message}");
        }
    }

    #[test]
    fn the_schema_holds_each_declared_bound_and_default() {
        let schema = chaos_input_schema();
        let properties = &schema["properties"];
        assert_eq!(schema["required"], json!(["server", "calls"]));
        assert_eq!(properties["calls"]["maxItems"], 1000);
        assert_eq!(properties["repeat"]["maximum"], MAX_CALLS);
        assert_eq!(
            properties["client"]["properties"]["timeout_ms"]["default"],
            10_000
        );
        assert_eq!(
            properties["server"]["properties"]["command"]["type"],
            json!(["string", "number"])
        );
        assert_eq!(
            properties["gates"]["properties"]["max_runaways"]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(properties["gates"]["additionalProperties"], false);
    }
}
