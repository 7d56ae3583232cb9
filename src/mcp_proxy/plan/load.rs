//! Reading a plan: its file or text, bounded, then each top-level key normalised into a [`Plan`].

use std::path::Path;

use serde_json::Value;

use super::error::{InvalidPlan, PlanError, PlanTextError};
use super::gates::gates_of;
use super::suite::{agents_of, keep_injected};
use super::text::{self, key_line};
use super::{MAX_FAULTS, MAX_PLAN_BYTES, Plan, Syntax, entry, format};
use crate::seeded::seed_from_json;

impl Plan {
    /// Reads and normalises the plan at `path` (JSON when it ends in `.json`, else YAML), through the one
    /// reader of user files: what is not a regular file of at most [`MAX_PLAN_BYTES`] is refused at once.
    pub fn load(path: &Path) -> Result<Plan, PlanError> {
        let text = crate::files::read_text(path, MAX_PLAN_BYTES).map_err(PlanError::Read)?;
        let syntax = if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        {
            Syntax::Json
        } else {
            Syntax::Yaml
        };
        Plan::parse(&text, syntax).map_err(|error| PlanError::of_text(path.to_owned(), error))
    }

    /// The plan written in `text`, bounded before it is parsed.
    pub fn parse(text: &str, syntax: Syntax) -> Result<Plan, PlanTextError> {
        let root = read_value(text, syntax)?;
        Ok(Plan::from_value(root, text)?)
    }

    /// Normalises a parsed plan; `source` is the file's text, to give line numbers.
    pub fn from_value(root: Value, source: &str) -> Result<Plan, InvalidPlan> {
        let mut plan = Plan::default();
        let bad = |key: &str, message: &'static str| InvalidPlan::BadValue {
            message,
            line: key_line(source, key),
        };
        let mut policy = None;
        let mut plan_format = None;
        // An mcptest suite's `inject:` names, by agent.
        let mut injected: Option<Vec<(usize, String)>> = None;
        let items = match root {
            Value::Null => Vec::new(),
            Value::Array(items) => items,
            Value::Object(top) => {
                plan_format = format::plan_format(&top).map_err(|()| {
                    bad(
                        "format",
                        "format must be fault, mcp-chaos, smartai, mcp-chaos-monkey or mcptest",
                    )
                })?;
                let mut items = Vec::new();
                for (key, value) in top {
                    match key.as_str() {
                        "version" | "format" => {}
                        "seed" => {
                            plan.seed = seed_from_json(&value).map_err(|error| InvalidPlan::Seed {
                                error,
                                line: key_line(source, "seed"),
                            })?
                        }
                        "mode" => {
                            plan.mode = serde_json::from_value(value)
                                .map_err(|_| bad("mode", "mode must be fail_safe or strict"))?
                        }
                        "policy" => {
                            policy = Some(serde_json::from_value(value).map_err(|_| {
                                bad(
                                    "policy",
                                    "policy must be `first` (the first fault that fires on a call applies), \
                                     `all` (every fault that fires applies, in plan order) or `first_match` \
                                     (the first fault whose trigger selects the call decides alone)",
                                )
                            })?)
                        }
                        "upstream" | "server" => plan.command = command_of(&key, &value, source)?,
                        "gates" => {
                            let gates = gates_of("gates", value, source)?;
                            plan.gates = plan.gates.overridden_by(&gates);
                        }
                        "agents" => {
                            let suite = agents_of(value, source)?;
                            plan.gates = plan.gates.strictest(&suite.gates);
                            // A suite whose agents inject nothing by name keeps every fault.
                            injected = (!suite.injected.is_empty()).then_some(suite.injected);
                        }
                        "faults" => {
                            items = match value {
                                Value::Array(items) => items,
                                Value::Null => Vec::new(),
                                _ => return Err(bad("faults", "faults must be a list")),
                            }
                        }
                        other => {
                            return Err(InvalidPlan::UnknownKey {
                                key: other.to_owned(),
                                line: key_line(source, other),
                            });
                        }
                    }
                }
                items
            }
            _ => return Err(InvalidPlan::NotAPlan),
        };
        if items.len() > MAX_FAULTS {
            return Err(InvalidPlan::TooManyFaults { count: items.len() });
        }
        let mut formats = Vec::with_capacity(items.len());
        for (index, item) in items.into_iter().enumerate() {
            let Value::Object(map) = item else {
                return Err(InvalidPlan::NotAMapping { index });
            };
            let format = plan_format.unwrap_or_else(|| format::entry_format(&map));
            formats.push(format);
            if let Some(fault) =
                entry::planned_fault(map, format, source).map_err(|error| InvalidPlan::Fault {
                    index,
                    error: Box::new(error),
                })?
            {
                plan.faults.push(fault);
            }
        }
        plan.policy = policy.unwrap_or_else(|| format::default_policy(&formats));
        if let Some(injected) = injected {
            keep_injected(&mut plan, &injected, source)?;
        }
        Ok(plan)
    }

    /// The normalised plan, as YAML.
    pub fn to_yaml(&self) -> String {
        serde_yaml_ng::to_string(self).unwrap_or_else(|e| format!("# cannot print the plan: {e}\n"))
    }
}

/// A plan's text as a JSON value for [`Plan::from_value`]: refused at once over [`MAX_PLAN_BYTES`] or
/// [`MAX_NESTING`], and when a number is not finite (YAML's `.nan`, `.inf`), naming the fault, key and line.
pub fn read_value(text: &str, syntax: Syntax) -> Result<Value, PlanTextError> {
    text::read(text, syntax)
}

/// The server command of an `upstream:`/`server:` entry: a list, or a string split as a POSIX shell splits it
/// (quotes and backslashes), as SmartAI's mcp-chaos does.
fn command_of(key: &str, value: &Value, source: &str) -> Result<Vec<String>, InvalidPlan> {
    let command = value.get("command").unwrap_or(value);
    match command {
        Value::String(s) => shlex::split(s).ok_or_else(|| InvalidPlan::OpenQuote {
            key: key.to_owned(),
            line: key_line(source, key),
        }),
        Value::Array(parts) => parts
            .iter()
            .map(|p| p.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| InvalidPlan::BadCommandList {
                key: key.to_owned(),
                line: key_line(source, key),
            }),
        _ => Err(InvalidPlan::NoCommand {
            key: key.to_owned(),
            line: key_line(source, key),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp_proxy::faults::McpFault;

    fn yaml(text: &str) -> Result<Plan, String> {
        Plan::from_value(serde_yaml_ng::from_str(text).unwrap(), text).map_err(|e| e.to_string())
    }

    #[test]
    fn unknown_key_names_key_and_line() {
        let err = yaml("seed: 1\nfaults:\n  - type: latency\n    ms: 10\n    jitterr_ms: 5\n")
            .unwrap_err();
        assert!(
            err.contains("line 5") && err.contains("`jitterr_ms`"),
            "{err}"
        );
        let err = yaml("seed: 1\nfault:\n  - type: latency\n").unwrap_err();
        assert!(err.contains("line 2") && err.contains("`fault`"), "{err}");
    }

    #[test]
    fn peer_formats_normalise() {
        let plan = yaml(
            "faults:\n  - kind: slow:300\n    target: {tool: search}\n  - kind: recover-after:2\n  - type: rate-limit\n    retryAfterSeconds: 7\n  - type: error_injection\n    rate: 0.5\n  - type: latency\n    added_ms: 250\n    jitter_ms: 10\n",
        )
        .unwrap();
        assert_eq!(plan.faults.len(), 5);
        assert_eq!(plan.faults[0].trigger.tools, vec!["search".to_string()]);
        assert!(matches!(&plan.faults[0].spec, McpFault::Latency(l) if l.ms == 300));
        assert!(matches!(&plan.faults[1].spec, McpFault::RecoverAfter(r) if r.failures == 2));
        assert!(
            matches!(&plan.faults[2].spec, McpFault::RateLimit(r) if r.retry_after_seconds == 7)
        );
        assert_eq!(plan.faults[3].trigger.probability, 0.5);
        assert!(
            matches!(&plan.faults[4].spec, McpFault::Latency(l) if l.ms == 250 && l.jitter_ms == 10)
        );
    }

    #[test]
    fn a_plan_over_a_cap_is_refused_at_once_naming_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.yaml");
        std::fs::write(&path, "x: [".repeat(2_500_000)).unwrap();
        let started = std::time::Instant::now();
        let error = Plan::load(&path).unwrap_err().to_string();
        assert!(started.elapsed() < std::time::Duration::from_millis(100));
        assert!(error.contains("over the 262144 byte limit"), "{error}");
        // Under the size cap, the nesting: 256 KiB of `x: [` is refused before the parser runs.
        let text = "x: [".repeat(65_000);
        let started = std::time::Instant::now();
        let error = Plan::parse(&text, Syntax::Yaml).unwrap_err().to_string();
        assert!(started.elapsed() < std::time::Duration::from_millis(100));
        assert_eq!(
            error,
            "nests deeper than 32 levels (line 1), the cap on a plan's nesting"
        );
        let text = format!("faults:\n{}", "  - type: empty\n".repeat(MAX_FAULTS + 1));
        let error = yaml(&text).unwrap_err();
        assert_eq!(error, "1001 faults, over 1000, the cap on a plan's faults");
        assert_eq!(
            Plan::parse(&"x".repeat(MAX_PLAN_BYTES as usize + 1), Syntax::Yaml)
                .unwrap_err()
                .to_string(),
            "is over 262144 bytes, the cap on a plan's size"
        );
    }

    #[test]
    fn a_number_that_is_not_one_names_the_fault_the_key_and_the_line() {
        let parse = |text: &str, syntax| Plan::parse(text, syntax).unwrap_err().to_string();
        let text = "seed: 1\nfaults:\n  - type: latency\n    ms: 5\n    probability: 0.5\n  - type: flaky\n    probability: .nan\n";
        assert_eq!(
            parse(text, Syntax::Yaml),
            "faults[1]: line 7: flaky: probability must be a number, got .nan"
        );
        let text = "faults:\n  - type: partial_result\n    keep_ratio: -.Inf\n";
        assert_eq!(
            parse(text, Syntax::Yaml),
            "faults[0]: line 3: partial_result: keep_ratio must be a number, got -.inf"
        );
        let text =
            "faults:\n  - type: error\n    message: x\n  - type: error\n    probability: \"NaN\"\n";
        assert_eq!(
            parse(text, Syntax::Yaml),
            "faults[1]: line 5: error: probability: invalid type: string \"NaN\", expected f64"
        );
        let text = "{\"faults\": [\n  {\"type\": \"error\",\n   \"code\": \"NaN\"}]}";
        assert_eq!(
            parse(text, Syntax::Json),
            "faults[0]: line 3: error: code: invalid type: string \"NaN\", expected i64"
        );
        assert_eq!(
            parse("seed: .nan\n", Syntax::Yaml),
            "line 1: seed must be a number, got .nan"
        );
    }

    #[test]
    fn the_seed_is_exact_over_u64_and_a_bad_one_is_refused_naming_seed() {
        let seed = |written: &str| {
            let text = format!("seed: {written}\nfaults: []\n");
            Plan::parse(&text, Syntax::Yaml)
                .map(|plan| plan.seed)
                .map_err(|e| e.to_string())
        };
        assert_eq!(seed("18446744073709551615"), Ok(u64::MAX));
        // Above 2^53, where a float would round it to ...992.
        assert_eq!(seed("\"9007199254740993\""), Ok(9_007_199_254_740_993));
        let whole = "a whole number written in digits (a JSON integer or a string of digits)";
        let range = "a whole number from 0 to 18446744073709551615 (2^64 - 1)";
        assert_eq!(
            seed("1.5"),
            Err(format!(
                "line 1: seed: 1.5 is not a seed; accepted: {whole}"
            ))
        );
        assert_eq!(
            seed("-1"),
            Err(format!("line 1: seed: -1 is not a seed; accepted: {range}"))
        );
        let error = seed("18446744073709551616").unwrap_err();
        assert!(
            error.starts_with("line 1: seed: ") && error.ends_with(range),
            "{error}"
        );
        let error = Plan::parse(
            "{\"seed\": 18446744073709551616, \"faults\": []}",
            Syntax::Json,
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("line 1: seed: ") && error.ends_with(range),
            "{error}"
        );
    }

    #[test]
    fn a_command_string_is_split_as_a_shell_splits_it() {
        let plan = yaml(
            "server:\n  command: 'python -c \"import app; app.run()\" --dir /tmp/my\\ dir'\nfaults: []\n",
        )
        .unwrap();
        assert_eq!(
            plan.command,
            [
                "python",
                "-c",
                "import app; app.run()",
                "--dir",
                "/tmp/my dir"
            ]
        );
        let error = yaml("upstream:\n  command: 'python \"server.py'\n").unwrap_err();
        assert_eq!(
            error,
            "line 1: upstream.command leaves a quote or a backslash open (it is split as a shell splits a \
             command line)"
        );
    }

    #[test]
    fn a_peers_target_names_one_tool_and_smartais_tool_is_a_glob() {
        let plan = yaml(
            "faults:\n  - target: get_*\n    type: rate-limit\n  - kind: hang\n    target: {tool: \"a?\"}\n  - tool: get_*\n    type: empty\n",
        )
        .unwrap();
        let matches = |index: usize, tool: &str| {
            plan.faults[index]
                .trigger
                .compile()
                .unwrap()
                .matches_tool(tool)
        };
        assert!(matches(0, "get_*") && !matches(0, "get_item"));
        assert!(matches(1, "a?") && !matches(1, "ab"));
        assert!(matches(2, "get_item"));
    }

    #[test]
    fn bad_values_name_the_field() {
        let err = yaml("faults:\n  - type: partial_result\n    keep_ratio: 2\n").unwrap_err();
        assert!(err.contains("keep_ratio"), "{err}");
        let err = yaml("faults:\n  - type: latency\n").unwrap_err();
        assert!(err.contains("missing field `ms`"), "{err}");
    }
}
