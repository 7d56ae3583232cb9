//! The scan's inputs, declared once ([`crate::fields`]): the tool's schema, `fault mcp-scan`'s flags, the
//! book's table and the one reader come from these declarations.

use std::{path::PathBuf, time::Duration};

use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::json;

use crate::{
    fields::{Field, FieldError, FieldInput, Unit},
    lenient::Number,
    mcp_chaos::{ServerUnderTest, ServerUrl},
    mcp_proxy::stdio::ServerCommand,
};

use super::Phase;

fn check_command_word(text: &str) -> Result<(), String> {
    if text.contains('\0') {
        Err("holds a NUL byte".into())
    } else {
        Ok(())
    }
}

fn check_tool_name(text: &str) -> Result<(), String> {
    if text.is_empty() || text.len() > 128 {
        Err(format!("'{text}' is not a tool name (1 to 128 characters)"))
    } else {
        Ok(())
    }
}

fn check_phase(text: &str) -> Result<(), String> {
    Phase::parse(text).map(drop)
}

fn check_object(value: &serde_json::Value) -> Result<(), String> {
    match value {
        serde_json::Value::Object(_) => Ok(()),
        other => Err(format!("expected an object, got {other}")),
    }
}

fn check_arguments(value: &serde_json::Value) -> Result<(), String> {
    match value {
        serde_json::Value::Object(tools) => match tools.iter().find(|(_, a)| !a.is_object()) {
            Some((tool, _)) => Err(format!(
                "the arguments of `{tool}` are not an object; give {{\"tool\": {{\"field\": value}}}}"
            )),
            None => Ok(()),
        },
        other => Err(format!(
            "expected an object of tool names to their arguments, got {other}"
        )),
    }
}

pub const COMMAND: Field = Field::texts(
    "command",
    "The MCP server's command and its arguments, started over stdio (on the command line: after `--`); or \
     give `url`",
    "words of the command",
    check_command_word,
)
.optional("none: `url` names the server");
pub const URL: Field = Field::text(
    "url",
    "The Streamable HTTP URL of a running MCP server; or give `command`",
)
.optional("none: `command` starts the server");
pub const HEADERS: Field = Field::text_map(
    "headers",
    "Headers sent on every request to `url` (e.g. Authorization), name → value; their values are never \
     written down",
)
.flag("header")
.optional("none");
pub const TOOLS: Field = Field::texts(
    "tools",
    "The tools to scan (all the server lists when none)",
    "tool names",
    check_tool_name,
)
.flag("tool")
.optional("every listed tool");
pub const PHASES: Field = Field::texts(
    "phases",
    "The phases to run: hygiene, baseline, saturation, contract, faults",
    "phase names",
    check_phase,
)
.flag("phase")
.optional("all of them");
pub const ALLOW_WRITES: Field = Field::switch(
    "allow_writes",
    "Also call the tools whose annotations do not say read-only (each is called many times, with valid \
     and invalid input: point the scan at a server whose state can be thrown away)",
);
pub const ARGUMENTS: Field = Field::json(
    "arguments",
    "Valid arguments of tools, by tool name, for the baseline and saturation calls and as the base the \
     contract cases alter (a tool left out gets arguments built from its input schema)",
    ("an object of tool names to argument objects", &["object"]),
    check_arguments,
)
.optional("built from each tool's input schema");
pub const SAMPLES: Field = Field::number(
    "samples",
    "Calls of each tool in the baseline, one at a time",
    Number::from_to(1.0, 10_000.0).whole(),
    Unit::None,
)
.default("20");
pub const MAX_IN_FLIGHT: Field = Field::number(
    "max_in_flight",
    "The most calls of one tool in flight at once in the saturation phase (the steps double from 1)",
    Number::from_to(1.0, 256.0).whole(),
    Unit::None,
)
.default("16");
pub const CALL_TIMEOUT: Field = Field::millis(
    "call_timeout",
    "How long one call may take before it counts as a hang (and is cancelled)",
    Number::above_zero(600_000.0, " (ms)"),
)
.default("10000");
pub const SCAN_TIMEOUT: Field = Field::number(
    "scan_timeout",
    "How long the whole scan may take; past it the scan stops, ends the server and reports what it \
     measured",
    Number::above_zero(86_400.0, " (s)"),
    Unit::Seconds,
)
.default("300");
pub const MAX_TOOLS: Field = Field::number(
    "max_tools",
    "The most tools scanned; a server listing more has the rest named in the report as left out",
    Number::from_to(1.0, 10_000.0).whole(),
    Unit::None,
)
.default("200");
pub const FAULT_CALLS: Field = Field::number(
    "fault_calls",
    "Logical calls of each tool in the faults phase, where the proxy loses 30 % of the replies (the server \
     runs the call, its answer is replaced by an error) and each call is retried up to twice (the scan's \
     budget, not the server's)",
    Number::from_to(1.0, 10_000.0).whole(),
    Unit::None,
)
.default("10");
pub const VERIFY_TOOL: Field = Field::text(
    "tool",
    "A read-only tool of the server whose answer counts the effects of its writes",
)
.required("\"orders_count\"");
pub const VERIFY_ARGUMENTS: Field = Field::json(
    "arguments",
    "Its arguments",
    ("an object", &["object"]),
    check_object,
)
.optional("{}");
pub const VERIFY_COUNT: Field = Field::text(
    "count",
    "The dotted path of the count in its structuredContent (or the JSON of its text): a number, or a list \
     whose length counts",
)
.optional("the whole answer is the count");
const VERIFY_FIELDS: &[Field] = &[VERIFY_TOOL, VERIFY_ARGUMENTS, VERIFY_COUNT];
pub const VERIFY: Field = Field::object(
    "verify",
    "How the faults phase reads the server's state before and after each write whose reply was lost, so \
     that a duplicate effect is confirmed by the server itself (writes are called only with `allow_writes`)",
    VERIFY_FIELDS,
)
.optional("duplicate effects are not checked");
pub const VERIFY_COMMAND: Field = Field::text(
    "verify_command",
    "Instead of `verify`: a shell command (run with /bin/sh -c) printing the count of the server's effects, \
     or a JSON list or object (with `verify_count`)",
)
.optional("none");
pub const VERIFY_COMMAND_COUNT: Field = Field::text(
    "verify_count",
    "The dotted path of the count in `verify_command`'s JSON output",
)
.optional("the whole output is the count");
pub const POLICY: Field = Field::text(
    "policy",
    "A policy file (YAML or JSON) setting the dimensions' weights, the thresholds and the evidence each \
     score needs",
)
.optional("the built-in policy");
pub const PREVIOUS: Field = Field::text(
    "previous",
    "The result (JSON) of an earlier scan of the same server: the guide then says what was fixed, what \
     is new and what is unchanged",
)
.optional("none");
pub const GUIDE: Field = Field::text(
    "guide",
    "Where to write the fix guide for a coding agent (markdown, AGENTS.md form)",
)
.optional("not written");
pub const RESULT: Field =
    Field::text("result", "Where to write the result (versioned JSON)").optional("not written");
pub const JUNIT: Field = Field::text(
    "junit",
    "Where to write a JUnit XML file, one test case per check (GitHub and GitLab read it)",
)
.optional("not written");

/// Every field of the scan, in the order the book lists them.
pub const FIELDS: &[Field] = &[
    COMMAND,
    URL,
    HEADERS,
    TOOLS,
    PHASES,
    ALLOW_WRITES,
    ARGUMENTS,
    SAMPLES,
    MAX_IN_FLIGHT,
    CALL_TIMEOUT,
    SCAN_TIMEOUT,
    MAX_TOOLS,
    FAULT_CALLS,
    VERIFY,
    VERIFY_COMMAND,
    VERIFY_COMMAND_COUNT,
    POLICY,
    PREVIOUS,
    GUIDE,
    RESULT,
    JUNIT,
];

/// A scan, read and checked.
#[derive(Debug, Clone)]
pub struct ScanSpec {
    pub server: ServerUnderTest,
    pub tools: Vec<String>,
    pub phases: Vec<Phase>,
    pub allow_writes: bool,
    pub arguments: serde_json::Map<String, serde_json::Value>,
    pub samples: u64,
    pub max_in_flight: u64,
    pub call_timeout: Duration,
    pub scan_timeout: Duration,
    pub max_tools: usize,
    pub fault_calls: u64,
    pub verify: Option<super::faults::Verify>,
    pub policy: Option<PathBuf>,
    pub previous: Option<PathBuf>,
    pub guide: Option<PathBuf>,
    pub result: Option<PathBuf>,
    pub junit: Option<PathBuf>,
}

impl ScanSpec {
    /// The scan `input` describes; every refusal names its field.
    pub fn read(input: &FieldInput) -> Result<Self, FieldError> {
        let command = input.texts(&COMMAND)?;
        let url = input.optional_text(&URL)?;
        let headers = input.text_map(&HEADERS)?;
        let server = match (command.is_empty(), url) {
            (false, Some(_)) => {
                return Err(input.refuse(&URL, "give `command` or `url`, not both"));
            }
            (true, None) => {
                return Err(input.refuse(
                    &COMMAND,
                    "is required unless `url` is given: the server's command and its arguments, e.g. \
                     [\"python\", \"server.py\"]",
                ));
            }
            (false, None) => {
                if !headers.is_empty() {
                    return Err(
                        input.refuse(&HEADERS, "are sent to `url` only; the server is a command")
                    );
                }
                ServerUnderTest::Command(
                    ServerCommand::from_line(&command)
                        .ok_or_else(|| input.refuse(&COMMAND, "is empty"))?,
                )
            }
            (true, Some(url)) => {
                let parsed = url::Url::parse(url.trim())
                    .map_err(|e| input.refuse(&URL, format!("'{url}' is not a URL ({e})")))?;
                if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
                    return Err(
                        input.refuse(&URL, format!("'{url}' is not an http:// or https:// URL"))
                    );
                }
                let mut map = HeaderMap::new();
                for (name, value) in headers {
                    let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                        input.refuse(&HEADERS, format!("'{name}' is not a header name"))
                    })?;
                    let value = HeaderValue::from_str(&value).map_err(|_| {
                        input.refuse(
                            &HEADERS,
                            format!("the value of '{name}' is not a header value"),
                        )
                    })?;
                    map.insert(header, value);
                }
                ServerUnderTest::Url(ServerUrl {
                    url: parsed.to_string(),
                    headers: map,
                })
            }
        };
        let phases = match input.texts(&PHASES)? {
            names if names.is_empty() => Phase::ALL.to_vec(),
            names => {
                let mut phases: Vec<Phase> = names
                    .iter()
                    .filter_map(|name| Phase::parse(name).ok())
                    .collect();
                phases.sort();
                phases.dedup();
                phases
            }
        };
        let arguments = match input.json(&ARGUMENTS)? {
            Some(serde_json::Value::Object(map)) => map,
            _ => Default::default(),
        };
        let verify = match (
            input.object(&VERIFY)?,
            input.optional_text(&VERIFY_COMMAND)?,
        ) {
            (Some(_), Some(_)) => {
                return Err(input.refuse(
                    &VERIFY_COMMAND,
                    "give `verify` or `verify_command`, not both",
                ));
            }
            (Some(verify), None) => Some(super::faults::Verify::Tool {
                tool: verify.text(&VERIFY_TOOL)?,
                arguments: verify
                    .json(&VERIFY_ARGUMENTS)?
                    .unwrap_or_else(|| serde_json::json!({})),
                count: verify.optional_text(&VERIFY_COUNT)?,
            }),
            (None, Some(command)) => Some(super::faults::Verify::Command {
                command,
                count: input.optional_text(&VERIFY_COMMAND_COUNT)?,
            }),
            (None, None) => None,
        };
        if verify.is_some() && !input.switch(&ALLOW_WRITES)? {
            return Err(input.refuse(
                &ALLOW_WRITES,
                "must be true with `verify` or `verify_command`: they count the effects of writes, which the \
                 scan calls only with `allow_writes`",
            ));
        }
        let path = |field: &Field| -> Result<Option<PathBuf>, FieldError> {
            Ok(input.optional_text(field)?.map(PathBuf::from))
        };
        Ok(Self {
            server,
            tools: input.texts(&TOOLS)?,
            phases,
            allow_writes: input.switch(&ALLOW_WRITES)?,
            arguments,
            samples: input.whole(&SAMPLES)?,
            max_in_flight: input.whole(&MAX_IN_FLIGHT)?,
            call_timeout: input.millis(&CALL_TIMEOUT)?,
            scan_timeout: Duration::from_secs_f64(input.number(&SCAN_TIMEOUT)?),
            max_tools: input.whole(&MAX_TOOLS)? as usize,
            fault_calls: input.whole(&FAULT_CALLS)?,
            verify,
            policy: path(&POLICY)?,
            previous: path(&PREVIOUS)?,
            guide: path(&GUIDE)?,
            result: path(&RESULT)?,
            junit: path(&JUNIT)?,
        })
    }

    /// The `fault mcp-scan` command line that runs `phase` on `tool` alone, quoted for a POSIX shell.
    pub fn reproduce(&self, tool: &str, phase: Phase) -> String {
        let quote = |word: &str| {
            shlex::try_quote(word).map_or_else(|_| word.to_owned(), |quoted| quoted.into_owned())
        };
        let mut line = vec![
            "fault mcp-scan".to_owned(),
            format!("--tool {}", quote(tool)),
            format!("--phase {}", phase.name()),
        ];
        if let Some(given) = self.arguments.get(tool) {
            line.push(format!(
                "--arguments {}",
                quote(&json!({ tool: given }).to_string())
            ));
        }
        match &self.server {
            ServerUnderTest::Command(command) => {
                line.push("--".to_owned());
                line.push(quote(&command.program));
                line.extend(command.args.iter().map(|a| quote(a)));
            }
            ServerUnderTest::Url(server) => {
                line.push(format!("--url {}", quote(&server.url)));
                line.extend(server.headers.keys().map(|k| format!("--header '{k}: …'")));
            }
        }
        line.join(" ")
    }

    /// Whether the scan runs `phase`.
    pub fn runs(&self, phase: Phase) -> bool {
        self.phases.contains(&phase)
    }
}
