//! Each TCP fault's fields are declared once and read by one reader, whatever the face: its `fault run` flag
//! and its impact tool's field accept and refuse the same values, with the same default. The values tried
//! are made from each field's own declaration, so a new fault is covered without a line here.

use clap::Parser;
use fault::fields::{Field, FieldInput, Kind, Presence};
use fault::proxy::TcpFault;
use fault::proxy::faults::{self, EachFault, TcpFaultSpec};
use serde_json::{Map, Value};

/// Values to try on a field: inside and outside its range, of the wrong kind, blank.
fn probes(field: &Field) -> Vec<String> {
    let mut values = vec![String::new(), " ".into(), "abc".into(), "-1".into()];
    match field.kind {
        Kind::Number { accepted, .. } => {
            let (low, _) = accepted.low();
            let high = accepted.high();
            for x in [
                low - 1.0,
                low,
                low + 0.5,
                (low + high) / 2.0,
                high,
                high + 1.0,
            ] {
                values.push(x.to_string());
            }
            values.extend(["NaN".into(), "inf".into(), "1e30".into(), "0x10".into()]);
        }
        Kind::Switch => values.extend(["true", "false", "TRUE", "yes", "1"].map(String::from)),
        Kind::Text => values.push("hello".into()),
        Kind::Parsed { .. } => {
            values.extend(field.example().map(String::from));
            values.extend(field.example().map(str::to_ascii_uppercase));
            values.extend(["0.5", "5%", "start:1s,duration:2s", "start:10%"].map(String::from));
        }
        // Lists and objects have no flag: the faults declare none.
        Kind::Ignored
        | Kind::Objects { .. }
        | Kind::Object { .. }
        | Kind::TextMap
        | Kind::Json { .. }
        | Kind::Typed { .. }
        | Kind::Texts { .. } => {}
    }
    values
}

/// The fault `S` its tool reads from `arguments` (the tool's reader: the server calls the same).
fn tool_face<S: TcpFaultSpec>(arguments: &Map<String, Value>) -> Result<TcpFault, String> {
    let input = FieldInput::from_arguments(&faults::fields::<S>(), arguments);
    faults::read_fault::<S>(&input).map_err(|e| e.message)
}

/// The fault `S` that `fault run` reads from `flags`, or its error.
fn flag_face<S: TcpFaultSpec>(flags: &[String]) -> Result<TcpFault, String> {
    let mut argv = vec!["fault".to_owned(), "run".into(), "--proxy".into()];
    argv.push("0=127.0.0.1:9".into());
    argv.push(format!("--with-{}", S::KIND.replace('_', "-")));
    argv.extend(flags.iter().cloned());
    let cli = fault::cli::Cli::try_parse_from(&argv).map_err(|e| e.to_string())?;
    let fault::cli::Command::Run(run) = cli.command else {
        return Err("not a run".into());
    };
    let mut faults = run.faults.specs();
    assert_eq!(faults.len(), 1, "{argv:?}");
    Ok(faults.remove(0))
}

/// Compares the two faces of every field of every fault, collecting what differs.
struct BothFaces {
    differences: Vec<String>,
    tried: usize,
}

impl EachFault for BothFaces {
    fn fault<S: TcpFaultSpec>(&mut self) {
        let fields = faults::fields::<S>();
        // Every other required field at its example, so that one field changes at a time.
        let required: Vec<(&Field, &str)> = fields
            .iter()
            .filter_map(|field| match field.presence {
                Presence::Required { example } => Some((field, example)),
                _ => None,
            })
            .collect();
        for field in fields.iter().filter(|field| field.has_flag()) {
            let mut cases: Vec<Option<String>> = probes(field).into_iter().map(Some).collect();
            cases.push(None);
            for probe in cases {
                let mut arguments = Map::new();
                let mut flags = Vec::new();
                for (other, example) in &required {
                    if other.name != field.name {
                        arguments.insert(other.name.into(), Value::from(*example));
                        flags.push(format!("--{}={example}", other.long(S::KIND)));
                    }
                }
                if let Some(probe) = &probe {
                    flags.push(format!("--{}={probe}", field.long(S::KIND)));
                    arguments.insert(field.name.into(), Value::from(probe.as_str()));
                }
                self.tried += 1;
                let tool = tool_face::<S>(&arguments);
                let flag = flag_face::<S>(&flags);
                // A number the tool gets as a JSON number reads as its text does.
                if let Some(number) = probe.as_deref().and_then(|p| p.parse::<f64>().ok())
                    && number.is_finite()
                    && !matches!(field.kind, Kind::Text)
                {
                    arguments.insert(field.name.into(), serde_json::json!(number));
                    let as_number = tool_face::<S>(&arguments);
                    if as_number.is_ok() != tool.is_ok() {
                        self.differences.push(format!(
                            "{} {} = {number}: as a JSON number {as_number:?}, as text {tool:?}",
                            S::KIND,
                            field.name
                        ));
                    }
                }
                let same = match (&tool, &flag) {
                    (Ok(a), Ok(b)) => a == b,
                    // The flag's error carries the reader's own message.
                    (Err(tool), Err(flag)) => flag.contains(tool.as_str()),
                    _ => false,
                };
                if !same {
                    self.differences.push(format!(
                        "{} {} (--{}) = {probe:?}:\n  tool: {tool:?}\n  flag: {flag:?}",
                        S::KIND,
                        field.name,
                        field.long(S::KIND)
                    ));
                }
            }
        }
    }
}

#[test]
fn each_fault_field_accepts_and_refuses_alike_as_a_flag_and_as_a_tool_field() {
    let mut faces = BothFaces {
        differences: Vec::new(),
        tried: 0,
    };
    faults::for_each(&mut faces);
    assert!(faces.tried > 300, "only {} cases", faces.tried);
    assert!(
        faces.differences.is_empty(),
        "{} of {} cases differ:\n{}",
        faces.differences.len(),
        faces.tried,
        faces.differences.join("\n")
    );
}

/// The tool's schema of each field says the default both faces apply.
struct SchemaDefaults(Vec<String>);

impl EachFault for SchemaDefaults {
    fn fault<S: TcpFaultSpec>(&mut self) {
        for field in faults::fields::<S>() {
            let schema = field.schema();
            if let Presence::Default(value) = field.presence {
                let said = &schema["default"];
                let same = said.as_str() == Some(value)
                    || said.as_f64().is_some_and(|x| value.parse::<f64>() == Ok(x))
                    || said
                        .as_bool()
                        .is_some_and(|b| value.parse::<bool>() == Ok(b));
                if !same {
                    self.0
                        .push(format!("{} {}: {said} for {value}", S::KIND, field.name));
                }
            }
            if matches!(field.presence, Presence::Required { .. })
                && schema.get("default").is_some()
            {
                self.0.push(format!(
                    "{} {}: a required field with a default",
                    S::KIND,
                    field.name
                ));
            }
        }
    }
}

#[test]
fn the_schema_states_the_default_the_faces_apply() {
    let mut defaults = SchemaDefaults(Vec::new());
    faults::for_each(&mut defaults);
    assert!(defaults.0.is_empty(), "{:#?}", defaults.0);
}
