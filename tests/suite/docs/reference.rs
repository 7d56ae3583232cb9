//! The reference tables of the docs are rendered from the registries (the tools, the TCP faults and their
//! declared fields, the declared fields of the scenario tools, the import graph of `src/`), between
//! `<!-- generated: NAME -->` and `<!-- end generated: NAME -->` in README.md and docs/. This test fails when a table there differs from
//! what the code declares; with `FAULT_UPDATE_DOCS=1` it writes them instead.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use fault::fields::{Field, Kind, Presence};
use fault::proxy::faults::{self, EachFault, TcpFaultSpec};

/// How a generated block is rendered.
type Render = fn() -> String;

/// The generated blocks: each one's name and how it is rendered.
const BLOCKS: &[(&str, Render)] = &[
    ("tools", tools),
    ("tool-inputs", tool_inputs),
    ("impact-tools", impact_tools),
    ("impact-common-fields", impact_common_fields),
    ("chaos-fields", chaos_fields),
    ("scan-fields", scan_fields),
    ("scan-policy", scan_policy),
    ("gates", gates),
    ("agent-options", agent_options),
    ("tcp-faults", tcp_faults),
    ("tcp-fault-fields", tcp_fault_fields),
    ("placement-fields", placement_fields),
    ("mcp-faults", mcp_faults),
    ("floors", floors),
];

/// A table cell: `|` escaped, lines joined.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The first sentence of a description.
fn first_sentence(text: &str) -> &str {
    match text.find(". ") {
        Some(end) => &text[..=end],
        None => text,
    }
}

fn tools() -> String {
    let mut out = String::from("| tool | what it does |\n|---|---|\n");
    for tool in fault::mcp::FaultServer::tools() {
        let description = tool.description.as_deref().unwrap_or_default();
        out += &format!(
            "| `{}` | {} |\n",
            tool.name,
            cell(first_sentence(description))
        );
    }
    out
}

/// The fields of the tools that run no scenario, from their input schemas: name (in bold when required), JSON
/// type, bounds and description.
fn tool_inputs() -> String {
    use serde_json::Value;
    let mut out = String::from("| tool | field | takes | what it is |\n|---|---|---|---|\n");
    for tool in fault::mcp::FaultServer::tools_without_scenario() {
        let schema = &tool.input_schema;
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or_else(|| panic!("{}: an input schema without properties", tool.name));
        for (name, property) in properties {
            let shown = if required.contains(&name.as_str()) {
                format!("**`{name}`**")
            } else {
                format!("`{name}`")
            };
            out += &format!(
                "| `{}` | {shown} | {} | {} |\n",
                tool.name,
                cell(&schema_takes(schema, property)),
                cell(property["description"].as_str().unwrap_or_default())
            );
        }
    }
    out
}

/// What a property's schema takes, in words: its types (`null` left out: absent means the default) and bounds.
fn schema_takes(root: &rmcp::model::JsonObject, property: &serde_json::Value) -> String {
    let mut words = vec![schema_types(root, property).join(" or ")];
    if let Some(max) = property["maxLength"].as_u64() {
        words.push(format!("at most {max} characters"));
    }
    match (property["minimum"].as_f64(), property["maximum"].as_f64()) {
        (Some(min), Some(max)) => words.push(format!("{min} to {max}")),
        (Some(min), None) => words.push(format!("at least {min}")),
        (None, Some(max)) => words.push(format!("at most {max}")),
        (None, None) => {}
    }
    words.join(", ")
}

/// The JSON types a schema takes, through its alternatives and references (`#/$defs/…`), `null` left out.
fn schema_types(root: &rmcp::model::JsonObject, schema: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap_or_default();
        let definition = root
            .get("$defs")
            .and_then(|definitions| definitions.get(name))
            .unwrap_or_else(|| panic!("{reference} is not among the schema's $defs"));
        return schema_types(root, definition);
    }
    let named = |name: &str| match name {
        "array" => format!(
            "array of {}",
            schema_types(root, &schema["items"]).join(" or ")
        ),
        other => other.to_owned(),
    };
    match &schema["type"] {
        Value::String(one) if one != "null" => vec![named(one)],
        Value::Array(many) => many
            .iter()
            .filter_map(Value::as_str)
            .filter(|name| *name != "null")
            .map(named)
            .collect(),
        _ => ["anyOf", "oneOf"]
            .iter()
            .filter_map(|key| schema[*key].as_array())
            .flatten()
            .flat_map(|alternative| schema_types(root, alternative))
            .collect(),
    }
}

/// A field in a sentence: its name (in bold when required), what it takes and its default.
fn field_words(field: &Field) -> String {
    let name = match field.presence {
        Presence::Required { .. } => format!("**`{}`**", field.name),
        _ => format!("`{}`", field.name),
    };
    format!("{name} ({}; {})", field.accepts(), field.default_text())
}

/// Calls `each` with every registered fault, as a type.
fn for_each_fault(mut each: impl FnMut(&FaultFacts)) {
    struct Collect(Vec<FaultFacts>);
    impl EachFault for Collect {
        fn fault<S: TcpFaultSpec>(&mut self) {
            self.0.push(FaultFacts {
                kind: S::KIND,
                title: S::TITLE,
                model: S::MODEL,
                acted: S::ACTED,
                placeable: S::PLACEABLE.is_some(),
                own: S::FIELDS.to_vec(),
                all: faults::fields::<S>(),
            });
        }
    }
    let mut all = Collect(Vec::new());
    faults::for_each(&mut all);
    all.0.iter().for_each(&mut each);
}

/// What the tables say of one fault.
struct FaultFacts {
    kind: &'static str,
    title: &'static str,
    model: &'static str,
    acted: &'static str,
    placeable: bool,
    own: Vec<Field>,
    all: Vec<Field>,
}

impl FaultFacts {
    fn default_of(&self, name: &str) -> Option<&'static str> {
        self.all
            .iter()
            .find(|field| field.name == name)
            .and_then(Field::example)
    }
}

fn impact_tools() -> String {
    let mut out = String::from(
        "| tool | the fault's fields (required in **bold**) | where it acts by default | example (fault fields) |\n\
         |---|---|---|---|\n",
    );
    for_each_fault(|fault| {
        let fields: Vec<String> = fault
            .own
            .iter()
            .filter(|field| field.has_flag())
            .map(field_words)
            .collect();
        let fields = if fields.is_empty() {
            "–".to_owned()
        } else {
            fields.join(", ")
        };
        let place = if fault.placeable {
            format!(
                "side {} / direction {}",
                fault.default_of("side").unwrap_or_default(),
                fault.default_of("direction").unwrap_or_default()
            )
        } else {
            "the response flow".to_owned()
        };
        let example: serde_json::Map<String, serde_json::Value> = fault
            .own
            .iter()
            .filter(|field| field.has_flag())
            .filter_map(|field| {
                let value = field.schema().get("examples")?.get(0)?.clone();
                Some((field.name.to_owned(), value))
            })
            .take(2)
            .collect();
        out += &format!(
            "| `fault_run_{}_impact_scenario` | {} | {place} | `{}` |\n",
            fault.kind,
            cell(&fields),
            serde_json::Value::Object(example)
        );
    });
    out
}

fn impact_common_fields() -> String {
    let mut out = String::from("| field | what it takes |\n|---|---|\n");
    for field in fault::mcp::scenario_fields::COMMON_FIELDS {
        field_rows(&mut out, field, "");
    }
    out
}

/// `fault_run_mcp_chaos_scenario`'s fields.
fn chaos_fields() -> String {
    let mut out = String::from("| field | what it takes |\n|---|---|\n");
    for field in fault::mcp::chaos_fields::FIELDS {
        field_rows(&mut out, field, "");
    }
    out
}

/// `fault_scan_mcp_server`'s fields and `fault mcp-scan`'s flags, from the same declarations.
fn scan_fields() -> String {
    let mut out = String::from("| field | flag | what it takes |\n|---|---|---|\n");
    for field in fault::scan::spec::FIELDS {
        let flag = if field.name == "command" {
            "after `--`".to_owned()
        } else {
            format!("`--{}`", field.long(""))
        };
        out += &format!(
            "| `{}` | {flag} | {} |\n",
            field.name,
            cell(&field.description())
        );
    }
    out
}

/// The keys of a scan policy file.
fn scan_policy() -> String {
    let mut out = String::from("| key | what it takes |\n|---|---|\n");
    for field in fault::scan::policy::FIELDS {
        field_rows(&mut out, field, "");
    }
    out
}

/// The gates of an MCP chaos run: each one's plan key, `fault mcp-proxy` flag and meaning, from `Gates`, whose
/// one declaration also gives the plan's reader and the scenario tool's schema.
fn gates() -> String {
    use clap::Args;
    let mut out = String::from("| gate (plan key) | flag | passes when |\n|---|---|---|\n");
    let command = fault::mcp_proxy::plan::Gates::augment_args(clap::Command::new("gates"));
    for arg in command.get_arguments() {
        let long = arg.get_long().unwrap_or_default();
        let flag = match arg.get_value_names() {
            Some([value, ..]) if arg.get_action().takes_values() => format!("`--{long} {value}`"),
            _ => format!("`--{long}`"),
        };
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        let meaning = help.strip_prefix("Gate: ").unwrap_or(&help);
        out += &format!("| `{}` | {flag} | {} |\n", arg.get_id(), cell(meaning));
    }
    out
}

/// The options of `fault agent` and the global logging flags: each one's flag, environment variable, default,
/// accepted values and meaning, from their clap declarations (`Cli`, `AgentOptions`).
fn agent_options() -> String {
    use clap::{Args, CommandFactory};
    let mut out = String::from("| flag | env | default | accepts | |\n|---|---|---|---|---|\n");
    let globals = fault::cli::Cli::command();
    let agent = fault::cli::AgentOptions::augment_args(clap::Command::new("agent"));
    let logging = globals
        .get_arguments()
        .filter(|arg| arg.get_env().is_some())
        .map(|arg| (&globals, arg));
    for (command, arg) in logging.chain(agent.get_arguments().map(|arg| (&agent, arg))) {
        let long = arg.get_long().unwrap_or_default();
        let switch = matches!(arg.get_action(), clap::ArgAction::SetTrue);
        // A value name of its own; clap's derive otherwise names the value after the field, which says nothing.
        let flag = match arg.get_value_names() {
            Some([value, ..]) if *value != arg.get_id().as_str().to_ascii_uppercase() => {
                format!("`--{long} {value}`")
            }
            _ => format!("`--{long}`"),
        };
        let env = arg
            .get_env()
            .map(|env| format!("`{}`", env.to_string_lossy()))
            .unwrap_or_else(|| "–".to_owned());
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|value| format!("`{}`", value.to_string_lossy()))
            .collect();
        let default = match (switch, defaults.is_empty()) {
            (true, _) => "off".to_owned(),
            (false, true) => "–".to_owned(),
            (false, false) => defaults.join(", "),
        };
        let choices: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|value| !value.is_hide_set())
            .map(|value| format!("`{}`", value.get_name()))
            .collect();
        let accepts = if !choices.is_empty() && !switch {
            choices.join(", ")
        } else {
            integer_range(command, arg).unwrap_or_else(|| "–".to_owned())
        };
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        out += &format!(
            "| {flag} | {env} | {default} | {accepts} | {} |\n",
            cell(&help)
        );
    }
    out
}

/// The integers an option accepts, asked of its command's own parser: `1–256`, `0 or more`; `None` for an
/// option whose value is not an integer.
fn integer_range(command: &clap::Command, arg: &clap::Arg) -> Option<String> {
    let long = format!("--{}", arg.get_long()?);
    let parses = |raw: &str| {
        command
            .clone()
            .try_get_matches_from([command.get_name(), long.as_str(), raw])
            .is_ok()
    };
    let accepts = |n: u64| parses(&n.to_string());
    if !arg.get_action().takes_values() || !accepts(1) || parses("1.5") {
        return None;
    }
    let low = if accepts(0) { 0 } else { 1 };
    let (mut high, mut refused) = (1u64, 1u64 << 53);
    if accepts(refused) {
        return Some(format!("{low} or more"));
    }
    while refused - high > 1 {
        let mid = high + (refused - high) / 2;
        if accepts(mid) {
            high = mid;
        } else {
            refused = mid;
        }
    }
    Some(format!("{low}–{high}"))
}

/// The row of `field` (named with `prefix`, e.g. `requests[].`), then those of its members.
fn field_rows(out: &mut String, field: &Field, prefix: &str) {
    let name = match field.presence {
        Presence::Required { .. } => format!("**`{prefix}{}`**", field.name),
        _ => format!("`{prefix}{}`", field.name),
    };
    *out += &format!("| {name} | {} |\n", cell(&field.description()));
    let inner = match field.kind {
        Kind::Objects { .. } => format!("{prefix}{}[].", field.name),
        _ => format!("{prefix}{}.", field.name),
    };
    for member in field.members() {
        field_rows(out, member, &inner);
    }
}

/// A flag with its value name: `--latency-mean MS`.
fn flag_words(field: &Field, kind: &str) -> String {
    let value = match field.kind {
        Kind::Number { unit, .. } => match unit.short() {
            "" => "N".to_owned(),
            "ms" => "MS".to_owned(),
            "s" => "SECS".to_owned(),
            other => other.to_ascii_uppercase(),
        },
        Kind::Switch => return format!("`--{}`", field.long(kind)),
        _ => "TEXT".to_owned(),
    };
    format!("`--{} {value}`", field.long(kind))
}

fn tcp_faults() -> String {
    let mut out = String::from(
        "| fault | flags (each also `FAULT_<FLAG>`, e.g. `FAULT_LATENCY_MEAN`) | model | \"fault acted N times\": N counts |\n\
         |---|---|---|---|\n",
    );
    for_each_fault(|fault| {
        let mut flags = vec![format!("`--with-{}`", fault.kind.replace('_', "-"))];
        flags.extend(
            fault
                .own
                .iter()
                .filter(|field| field.has_flag())
                .map(|field| flag_words(field, fault.kind)),
        );
        if fault.placeable {
            flags.push(format!(
                "and the placement flags `--{}-side`, `-direction`, `-probability`, `-sched`",
                fault.kind.replace('_', "-")
            ));
        } else {
            flags.push(format!("and `--{}-sched`", fault.kind.replace('_', "-")));
        }
        out += &format!(
            "| {} | {} | {} | {} |\n",
            fault.title.to_lowercase(),
            cell(&flags.join(" ")),
            cell(fault.model),
            cell(fault.acted)
        );
    });
    out
}

fn tcp_fault_fields() -> String {
    let mut out = String::from(
        "| fault | tool field | flag | takes | default | what it is |\n|---|---|---|---|---|---|\n",
    );
    for_each_fault(|fault| {
        for field in &fault.own {
            let flag = if field.has_flag() {
                format!("`--{}`", field.long(fault.kind))
            } else {
                "–".to_owned()
            };
            out += &format!(
                "| {} | `{}` | {flag} | {} | {} | {} |\n",
                fault.kind,
                field.name,
                cell(&field.accepts()),
                cell(&field.default_text()),
                cell(field.help)
            );
        }
    });
    out
}

fn placement_fields() -> String {
    let mut out = String::from(
        "| tool field | flag | takes | default | what it is |\n|---|---|---|---|---|\n",
    );
    let mut directions = BTreeMap::<&str, Vec<&str>>::new();
    let mut shared: Option<Vec<Field>> = None;
    for_each_fault(|fault| {
        if !fault.placeable {
            return;
        }
        if let Some(direction) = fault.default_of("direction") {
            directions.entry(direction).or_default().push(fault.kind);
        }
        shared.get_or_insert_with(|| fault.all[fault.own.len()..].to_vec());
    });
    for field in shared.unwrap_or_default() {
        let default = if field.name == "direction" {
            directions
                .iter()
                .map(|(direction, kinds)| format!("{direction} ({})", kinds.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        } else {
            field.default_text()
        };
        out += &format!(
            "| `{}` | `--<fault>-{}` | {} | {} | {} |\n",
            field.name,
            field.name.replace('_', "-"),
            cell(&field.accepts()),
            cell(&default),
            cell(field.help)
        );
    }
    out
}

fn mcp_faults() -> String {
    let mut out = String::from(
        "| type (other names) | keys (besides the trigger's) | on the wire |\n|---|---|---|\n",
    );
    for fault in fault::mcp_proxy::faults::REGISTRY {
        let mut names: Vec<String> = (fault.aliases)().iter().map(|a| format!("`{a}`")).collect();
        // The peers' names for it that are not ours, each with the formats that write it.
        let mut peers = BTreeMap::<&str, Vec<&str>>::new();
        for peer in (fault.peer_types)() {
            if peer.name != fault.name && !(fault.aliases)().contains(&peer.name) {
                peers.entry(peer.name).or_default().push(peer.format.key());
            }
        }
        names.extend(
            peers
                .iter()
                .map(|(name, formats)| format!("`{name}` ({})", formats.join(", "))),
        );
        let names = if names.is_empty() {
            String::new()
        } else {
            format!(" ({})", names.join(", "))
        };
        let keys: Vec<String> = fault.keys().iter().map(|k| format!("`{k}`")).collect();
        out += &format!(
            "| `{}`{names} | {} | {} |\n",
            fault.name,
            if keys.is_empty() {
                "–".to_owned()
            } else {
                keys.join(", ")
            },
            cell((fault.wire)())
        );
    }
    out
}

/// The rooms of `src/` (a top-level file or folder) and the rooms each one names through `crate::`.
fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut rooms = BTreeMap::<String, BTreeSet<String>>::new();
    let mut files = Vec::new();
    collect_rust_files(&src, &mut files);
    let room_of = |path: &Path| -> String {
        let relative = path.strip_prefix(&src).expect("under src");
        let first = relative.components().next().expect("a component");
        let name = first.as_os_str().to_string_lossy();
        name.trim_end_matches(".rs").to_owned()
    };
    for file in &files {
        rooms.entry(room_of(file)).or_default();
    }
    let names: BTreeSet<String> = rooms.keys().cloned().collect();
    for file in &files {
        let room = room_of(file);
        let text = std::fs::read_to_string(file).expect("a source file");
        // Test modules may reach anywhere, and comments only point: the code a build ships counts.
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        let text: String = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let text = text.as_str();
        let mut rest = text;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if names.contains(&name) && name != room {
                rooms.entry(room.clone()).or_default().insert(name);
            }
        }
        // `use crate::{a, b::c}` names several rooms in one group.
        for group in text.split("use crate::{").skip(1) {
            let group = group.split("};").next().unwrap_or_default();
            for part in group.split([',', '\n', '{', '}']) {
                let name = part.trim().split("::").next().unwrap_or_default();
                if names.contains(name) && name != room {
                    rooms
                        .entry(room.clone())
                        .or_default()
                        .insert(name.to_owned());
                }
            }
        }
    }
    rooms
}

fn collect_rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src is readable")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

fn floors() -> String {
    let graph = import_graph();
    let mut floor = BTreeMap::<String, usize>::new();
    // Each room's floor is one above the highest room it imports; a room in a circle never gets one.
    for _ in 0..graph.len() {
        for (room, imports) in &graph {
            let below: Option<Vec<usize>> = imports.iter().map(|i| floor.get(i).copied()).collect();
            if let Some(below) = below {
                floor.insert(room.clone(), below.iter().max().map_or(0, |m| m + 1));
            }
        }
    }
    let circled: Vec<&String> = graph
        .keys()
        .filter(|room| !floor.contains_key(*room))
        .collect();
    assert!(
        circled.is_empty(),
        "rooms of src/ that import each other (directly or around a circle): {circled:?}"
    );
    let top = floor.values().max().copied().unwrap_or_default();
    let levels: Vec<String> = (0..=top)
        .map(|level| {
            floor
                .iter()
                .filter(|(_, f)| **f == level)
                .map(|(room, _)| format!("`{room}`"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect();
    format!(
        "Floors of `src/`, from the ground up: each room imports only rooms on floors below it, and no two \
         rooms import each other ({} rooms, {} imports between them):\n\n{}\n",
        graph.len(),
        graph.values().map(BTreeSet::len).sum::<usize>(),
        levels
            .iter()
            .enumerate()
            .map(|(i, rooms)| format!("{}. {rooms}", i + 1))
            .collect::<Vec<_>>()
            .join("\n")
    )
}

/// The markdown files that may hold generated blocks.
fn doc_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let docs = root.join("docs");
    let mut stack = vec![docs];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.filter_map(Result::ok).map(|e| e.path()) {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `text` with each generated block filled in; the names of the blocks it holds.
fn fill(text: &str, rendered: &BTreeMap<&str, String>) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("<!-- generated: ") {
        let after = &rest[at..];
        let Some(name_end) = after.find(" -->") else {
            break;
        };
        let name = &after["<!-- generated: ".len()..name_end];
        let end_marker = format!("<!-- end generated: {name} -->");
        let Some(end) = after.find(&end_marker) else {
            panic!("`<!-- generated: {name} -->` has no `{end_marker}`");
        };
        let Some(body) = rendered.get(name) else {
            panic!("no generated block is called {name}");
        };
        out += &rest[..at];
        out += &format!("<!-- generated: {name} -->\n{body}{end_marker}");
        found.push(name.to_owned());
        rest = &after[end + end_marker.len()..];
    }
    out += rest;
    (out, found)
}

#[test]
fn the_reference_tables_are_what_the_registries_declare() {
    let rendered: BTreeMap<&str, String> = BLOCKS
        .iter()
        .map(|(name, render)| (*name, render()))
        .collect();
    let update = std::env::var_os("FAULT_UPDATE_DOCS").is_some();
    let mut seen = BTreeSet::new();
    let mut stale = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(&file).expect("a docs file");
        let (filled, found) = fill(&text, &rendered);
        seen.extend(found.clone());
        if filled != text {
            if update {
                std::fs::write(&file, filled).expect("docs written");
            } else {
                stale.push(format!("{} ({})", file.display(), found.join(", ")));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "generated tables out of date in {stale:?}: run `FAULT_UPDATE_DOCS=1 cargo test --test suite \
         docs::reference` and commit the result"
    );
    let missing: Vec<&&str> = rendered
        .keys()
        .filter(|name| !seen.contains(**name))
        .collect();
    assert!(
        missing.is_empty(),
        "generated blocks found in no docs file: {missing:?}"
    );
}
