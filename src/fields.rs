//! Input fields declared once. A [`Field`] names a value and says what it accepts, its default and its help;
//! every face is generated from it: a tool's JSON Schema property ([`Field::schema`]), a command-line flag
//! ([`Field::arg`]), a row of the reference ([`Field::accepts`], [`Field::default_text`]), and the one reader
//! both faces go through ([`FieldInput`]). A value one face accepts, the other accepts too, with the same
//! default; a face may only rename a field (upstream's `--latency-stddev` for the tool's `deviation`).

use std::{collections::BTreeMap, fmt::Display, str::FromStr, time::Duration};

use serde_json::{Map, Value, json};

use crate::lenient::{Number, is_blank};

/// What a field's numbers count, for help, messages and the command line's value names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    None,
    Milliseconds,
    Seconds,
    Hertz,
    Bytes,
    Segments,
}

impl Unit {
    /// The unit as the reference writes it after a number ("ms"), empty for none.
    pub fn short(self) -> &'static str {
        match self {
            Unit::None => "",
            Unit::Milliseconds => "ms",
            Unit::Seconds => "s",
            Unit::Hertz => "Hz",
            Unit::Bytes => "bytes",
            Unit::Segments => "segments",
        }
    }

    /// The value name of a flag in this unit (`--latency-mean <MS>`).
    fn value_name(self) -> &'static str {
        match self {
            Unit::None => "N",
            Unit::Milliseconds => "MS",
            Unit::Seconds => "SECS",
            Unit::Hertz => "HZ",
            Unit::Bytes => "BYTES",
            Unit::Segments => "SEGMENTS",
        }
    }
}

/// What a field holds.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A number (a JSON number, or a string holding one), in `unit`, within `accepted`.
    Number { accepted: Number, unit: Unit },
    /// true or false (a JSON boolean or the word); on the command line a switch.
    Switch,
    /// Any text.
    Text,
    /// Text that `check` reads (a choice, a schedule, a share written "5%"): `takes` says what in words; with
    /// `numbers`, a JSON number stands for its text.
    Parsed {
        check: fn(&str) -> Result<(), String>,
        takes: &'static str,
        numbers: bool,
    },
    /// Any value, accepted and ignored: a field a published payload sends that means nothing here (the help
    /// says why). A tool's face only: no flag, nothing read.
    Ignored,
    /// A list of `min` to `max` objects, each with the members `fields` declare (an undeclared one is
    /// refused). A tool's face only, read with [`FieldInput::objects`].
    Objects {
        fields: &'static [Field],
        min: usize,
        max: usize,
    },
    /// One object with the members `fields` declare. A tool's face only, read with [`FieldInput::object`].
    Object { fields: &'static [Field] },
    /// Names to texts (HTTP headers). A tool's face only, read with [`FieldInput::text_map`].
    TextMap,
    /// A JSON value `check` reads whole (a seed, exact over `u64` as a JSON integer or a string of digits);
    /// `takes` says what in words, `types` are its JSON Schema types. A tool's face only, read with
    /// [`FieldInput::json`].
    Json {
        check: fn(&Value) -> Result<(), String>,
        takes: &'static str,
        types: &'static [&'static str],
    },
    /// A list of texts (one text stands for a list of one), each read by `check`; `takes` says what one
    /// is. A tool's face only, read with [`FieldInput::texts`].
    Texts {
        check: fn(&str) -> Result<(), String>,
        takes: &'static str,
    },
}

/// Whether a field must be given and what its absence means.
#[derive(Debug, Clone, Copy)]
pub enum Presence {
    /// It must be given; the example is a value it takes, in the face's own text.
    Required { example: &'static str },
    /// Absent, it holds this value (written as a face would write it).
    Default(&'static str),
    /// Absent, it holds nothing, which means what the text says ("no byte limit").
    Optional(&'static str),
}

/// One input field, declared once (see the module's documentation).
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// The name a tool and a plan know it by.
    pub name: &'static str,
    /// The command line's name for it, when not `<prefix>-<name>` (keeps upstream's flag names).
    pub flag: Option<&'static str>,
    /// What it is, one sentence without a final period.
    pub help: &'static str,
    pub kind: Kind,
    pub presence: Presence,
}

/// `T` read from `text`, for a [`Kind::Parsed`] check.
pub fn parses_as<T>(text: &str) -> Result<(), String>
where
    T: FromStr,
    T::Err: Display,
{
    text.parse::<T>().map(drop).map_err(|e| e.to_string())
}

impl Field {
    /// A number in `unit` within `accepted`, optional until said otherwise.
    pub const fn number(
        name: &'static str,
        help: &'static str,
        accepted: Number,
        unit: Unit,
    ) -> Self {
        Self::new(name, help, Kind::Number { accepted, unit })
    }

    /// A number of milliseconds within `accepted`.
    pub const fn millis(name: &'static str, help: &'static str, accepted: Number) -> Self {
        Self::number(name, help, accepted, Unit::Milliseconds)
    }

    /// true or false, false when absent.
    pub const fn switch(name: &'static str, help: &'static str) -> Self {
        Self::new(name, help, Kind::Switch).default("false")
    }

    /// Any text.
    pub const fn text(name: &'static str, help: &'static str) -> Self {
        Self::new(name, help, Kind::Text)
    }

    /// Text `check` reads; `takes` says what it takes, e.g. "uniform, normal, pareto or pareto-normal".
    pub const fn parsed(
        name: &'static str,
        help: &'static str,
        takes: &'static str,
        check: fn(&str) -> Result<(), String>,
    ) -> Self {
        Self::new(
            name,
            help,
            Kind::Parsed {
                check,
                takes,
                numbers: false,
            },
        )
    }

    /// A field accepted and ignored; `help` says why it is accepted.
    pub const fn ignored(name: &'static str, help: &'static str) -> Self {
        Self::new(name, help, Kind::Ignored)
    }

    /// A list of `min` to `max` objects whose members are `fields`.
    pub const fn objects(
        name: &'static str,
        help: &'static str,
        fields: &'static [Field],
        (min, max): (usize, usize),
    ) -> Self {
        Self::new(name, help, Kind::Objects { fields, min, max })
    }

    /// One object whose members are `fields`.
    pub const fn object(name: &'static str, help: &'static str, fields: &'static [Field]) -> Self {
        Self::new(name, help, Kind::Object { fields })
    }

    /// A JSON value `check` reads whole; `takes` says what, `types` are its JSON Schema types.
    pub const fn json(
        name: &'static str,
        help: &'static str,
        (takes, types): (&'static str, &'static [&'static str]),
        check: fn(&Value) -> Result<(), String>,
    ) -> Self {
        Self::new(
            name,
            help,
            Kind::Json {
                check,
                takes,
                types,
            },
        )
    }

    /// Names to texts.
    pub const fn text_map(name: &'static str, help: &'static str) -> Self {
        Self::new(name, help, Kind::TextMap)
    }

    /// A list of texts `check` reads; `takes` says what one is.
    pub const fn texts(
        name: &'static str,
        help: &'static str,
        takes: &'static str,
        check: fn(&str) -> Result<(), String>,
    ) -> Self {
        Self::new(name, help, Kind::Texts { check, takes })
    }

    /// Whether the command line has a flag for it (an ignored field and a list of objects have none; a list
    /// of texts and a name → text map have a flag given once per item; a JSON value and an object take JSON
    /// text).
    pub fn has_flag(&self) -> bool {
        matches!(
            self.kind,
            Kind::Number { .. }
                | Kind::Switch
                | Kind::Text
                | Kind::Parsed { .. }
                | Kind::Texts { .. }
                | Kind::TextMap
                | Kind::Json { .. }
                | Kind::Object { .. }
        )
    }

    /// The members of an object or of a list of objects; none for any other kind.
    pub fn members(&self) -> &'static [Field] {
        match self.kind {
            Kind::Objects { fields, .. } | Kind::Object { fields } => fields,
            _ => &[],
        }
    }

    const fn new(name: &'static str, help: &'static str, kind: Kind) -> Self {
        Self {
            name,
            flag: None,
            help,
            kind,
            presence: Presence::Optional("none"),
        }
    }

    /// The command line names it `flag` (without the dashes).
    pub const fn flag(self, flag: &'static str) -> Self {
        Self {
            flag: Some(flag),
            ..self
        }
    }

    /// It must be given, e.g. with `example`.
    pub const fn required(self, example: &'static str) -> Self {
        Self {
            presence: Presence::Required { example },
            ..self
        }
    }

    /// Absent, it holds `value`.
    pub const fn default(self, value: &'static str) -> Self {
        Self {
            presence: Presence::Default(value),
            ..self
        }
    }

    /// Absent, it holds nothing, meaning `absent` ("no byte limit").
    pub const fn optional(self, absent: &'static str) -> Self {
        Self {
            presence: Presence::Optional(absent),
            ..self
        }
    }

    /// A parsed field also takes a JSON number for its text (a share written 0.05 or "5%").
    pub const fn numbers_too(self) -> Self {
        match self.kind {
            Kind::Parsed { check, takes, .. } => Self {
                kind: Kind::Parsed {
                    check,
                    takes,
                    numbers: true,
                },
                ..self
            },
            _ => self,
        }
    }

    /// Its flag's long name, for a field of the command-line group `prefix` (a fault's kind).
    pub fn long(&self, prefix: &str) -> String {
        match self.flag {
            Some(flag) => flag.to_owned(),
            None if prefix.is_empty() => self.name.replace('_', "-"),
            None => format!("{prefix}-{}", self.name).replace('_', "-"),
        }
    }

    /// What it accepts, in words: "ms, more than 0 and at most 3600000", "one of …", "true or false".
    pub fn accepts(&self) -> String {
        match self.kind {
            Kind::Number { accepted, unit } => {
                let whole = if accepted.is_whole() {
                    "a whole number"
                } else {
                    "a number"
                };
                let unit = match unit {
                    Unit::None => String::new(),
                    unit => format!(" of {}", unit.short()),
                };
                format!("{whole}{unit}, {}", accepted.range_text())
            }
            Kind::Switch => "true or false".into(),
            Kind::Text => "text".into(),
            Kind::Parsed { takes, .. } => takes.into(),
            Kind::Ignored => "any value, ignored".into(),
            Kind::Objects { fields, min, max } => format!(
                "a list of {min} to {max} objects with {}",
                member_names(fields)
            ),
            Kind::Object { fields } => format!("an object with {}", member_names(fields)),
            Kind::TextMap => "an object of names to texts".into(),
            Kind::Json { takes, .. } => takes.into(),
            Kind::Texts { takes, .. } => format!("a list of {takes}"),
        }
    }

    /// Its default in words: "required", "default 0", "default: no byte limit".
    pub fn default_text(&self) -> String {
        if let Kind::Ignored = self.kind {
            return "accepted and ignored".into();
        }
        match self.presence {
            Presence::Required { .. } => "required".into(),
            Presence::Default("") => "default \"\"".into(),
            Presence::Default(value) => format!("default {value}"),
            Presence::Optional(absent) => format!("default: {absent}"),
        }
    }

    /// A value it takes, as a face writes it: the required field's example, else its default, else none.
    pub fn example(&self) -> Option<&'static str> {
        match self.presence {
            Presence::Required { example } => Some(example),
            Presence::Default(value) => Some(value),
            Presence::Optional(_) => None,
        }
    }

    /// The tool's description of it: help, what it accepts, its default.
    pub fn description(&self) -> String {
        format!(
            "{}: {}; {}.",
            self.help,
            self.accepts(),
            self.default_text()
        )
    }

    /// Its JSON Schema property.
    pub fn schema(&self) -> Value {
        let description = self.description();
        match self.kind {
            // Typed as the payloads that send it do (a scalar), which strict clients require of a property.
            Kind::Ignored => {
                return json!({
                    "type": ["string", "number", "boolean", "null"],
                    "description": description,
                });
            }
            Kind::Objects { fields, min, max } => {
                return json!({
                    "type": "array",
                    "description": description,
                    "minItems": min,
                    "maxItems": max,
                    "items": object_schema(fields),
                });
            }
            Kind::Object { fields } => {
                let mut schema = object_schema(fields);
                schema["description"] = description.into();
                return schema;
            }
            Kind::TextMap => {
                return json!({
                    "type": "object",
                    "description": description,
                    "additionalProperties": {"type": "string"},
                });
            }
            Kind::Texts { .. } => {
                return json!({
                    "type": ["array", "string"],
                    "description": description,
                    "items": {"type": "string"},
                });
            }
            _ => {}
        }
        let types: &[&str] = match self.kind {
            Kind::Json { types, .. } => types,
            Kind::Number { .. } => &["number", "string"],
            Kind::Switch => &["boolean", "string"],
            Kind::Parsed { numbers: true, .. } => &["string", "number"],
            _ => &["string"],
        };
        let mut schema = Map::new();
        schema.insert("type".into(), json!(types));
        schema.insert("description".into(), description.into());
        if let Kind::Number { accepted, .. } = self.kind {
            let (low, above) = accepted.low();
            schema.insert(
                if above { "exclusiveMinimum" } else { "minimum" }.into(),
                number(low),
            );
            schema.insert("maximum".into(), number(accepted.high()));
        }
        if let Presence::Default(value) = self.presence {
            schema.insert("default".into(), self.typed(value));
        }
        if let Some(example) = self.example() {
            schema.insert("examples".into(), json!([self.typed(example)]));
        }
        Value::Object(schema)
    }

    /// `text` as the JSON value a tool would send for this field (a number as a number).
    fn typed(&self, text: &str) -> Value {
        match self.kind {
            Kind::Number { .. } => text.parse::<f64>().map_or_else(|_| text.into(), number),
            Kind::Switch => text
                .parse::<bool>()
                .map_or_else(|_| text.into(), Value::from),
            Kind::Parsed { numbers: true, .. } => {
                text.parse::<f64>().map_or_else(|_| text.into(), number)
            }
            _ => text.into(),
        }
    }

    /// Its flag in the command-line group `prefix`, under the environment variable `FAULT_<FLAG>`; `needs`
    /// is what a required field is required with (e.g. "--with-latency"). The flag checks its text with the
    /// field's reader; the default is applied by [`FieldInput`], as for the tool.
    pub fn arg(&self, prefix: &str, needs: &str) -> clap::Arg {
        let long = self.long(prefix);
        let id = long.replace('-', "_");
        let presence = match self.presence {
            Presence::Required { .. } => format!("required with {needs}"),
            _ => self.default_text(),
        };
        let arg = clap::Arg::new(id.clone())
            .long(long)
            .env(format!("FAULT_{}", id.to_ascii_uppercase()))
            .help(format!("{}: {} [{presence}]", self.help, self.accepts()));
        match self.kind {
            // `--flag` alone is true; `--flag=false` says it, as a tool's `false` does.
            Kind::Switch => self
                .checked(arg)
                .value_name("BOOL")
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("true"),
            Kind::Number { unit, .. } => self.checked(arg).value_name(unit.value_name()),
            // One item per flag, the flag given again for the next.
            Kind::Texts { check, .. } => arg
                .action(clap::ArgAction::Append)
                .value_name("TEXT")
                .value_parser(move |raw: &str| check(raw.trim()).map(|()| raw.trim().to_owned())),
            // The value as JSON text.
            Kind::Json { check, .. } => arg
                .action(clap::ArgAction::Set)
                .value_name("JSON")
                .value_parser(move |raw: &str| {
                    let value: Value = serde_json::from_str(raw)
                        .map_err(|e| format!("'{raw}' is not JSON ({e})"))?;
                    check(&value).map(|()| raw.to_owned())
                }),
            // The object as JSON text, its members read as the tool's are.
            Kind::Object { .. } => arg
                .action(clap::ArgAction::Set)
                .value_name("JSON")
                .value_parser(|raw: &str| match serde_json::from_str::<Value>(raw) {
                    Ok(Value::Object(_)) => Ok(raw.to_owned()),
                    Ok(other) => Err(format!("expected a JSON object, got {other}")),
                    Err(e) => Err(format!("'{raw}' is not JSON ({e})")),
                }),
            Kind::TextMap => arg
                .action(clap::ArgAction::Append)
                .value_name("NAME: VALUE")
                .value_parser(|raw: &str| {
                    name_and_text(raw)
                        .map(|_| raw.to_owned())
                        .ok_or_else(|| format!("'{raw}' is not `NAME: VALUE`"))
                }),
            _ => self.checked(arg).value_name("TEXT"),
        }
    }

    fn checked(&self, arg: clap::Arg) -> clap::Arg {
        let field = *self;
        arg.action(clap::ArgAction::Set)
            .value_parser(move |raw: &str| {
                // A blank value means "the default", as in a tool's arguments.
                if raw.trim().is_empty() {
                    return Ok(raw.to_owned());
                }
                field
                    .read(&Value::String(raw.to_owned()))
                    .map(|_| raw.to_owned())
            })
    }

    /// The value `given` holds for this field, checked; the message says what is wrong, without the name.
    fn read(&self, given: &Value) -> Result<Read, String> {
        match self.kind {
            Kind::Number { accepted, .. } => {
                let value = match given {
                    Value::Number(n) => n.as_f64(),
                    Value::String(text) => text
                        .trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|value| value.is_finite()),
                    _ => None,
                }
                .ok_or_else(|| {
                    format!("expected a number (or a string holding one), got {given}")
                })?;
                accepted.check(value).map(Read::Number)
            }
            Kind::Switch => match given {
                Value::Bool(b) => Ok(Read::Switch(*b)),
                Value::String(text) if text.trim().eq_ignore_ascii_case("true") => {
                    Ok(Read::Switch(true))
                }
                Value::String(text) if text.trim().eq_ignore_ascii_case("false") => {
                    Ok(Read::Switch(false))
                }
                _ => Err(format!("expected true or false, got {given}")),
            },
            Kind::Text => match given {
                Value::String(text) => Ok(Read::Text(text.clone())),
                Value::Number(n) => Ok(Read::Text(n.to_string())),
                _ => Err(format!("expected text, got {given}")),
            },
            Kind::Parsed { check, numbers, .. } => {
                let text = match given {
                    Value::String(text) => text.trim().to_owned(),
                    Value::Number(n) if numbers => n.to_string(),
                    _ => return Err(format!("expected {}, got {given}", self.accepts())),
                };
                check(&text).map(|()| Read::Text(text))
            }
            Kind::Ignored => Ok(Read::Text(String::new())),
            Kind::Objects { .. } | Kind::Texts { .. } => match given {
                Value::Array(_) => Ok(Read::Value(given.clone())),
                Value::String(_) if matches!(self.kind, Kind::Texts { .. }) => {
                    Ok(Read::Value(json!([given])))
                }
                _ => Err(format!("expected {}, got {given}", self.accepts())),
            },
            Kind::Json { check, .. } => check(given).map(|()| Read::Value(given.clone())),
            Kind::Object { .. } | Kind::TextMap => match given {
                Value::Object(_) => Ok(Read::Value(given.clone())),
                _ => Err(format!("expected {}, got {given}", self.accepts())),
            },
        }
    }
}

/// `NAME: VALUE` split at its first colon, both trimmed; `None` without a colon or a name.
fn name_and_text(raw: &str) -> Option<(&str, &str)> {
    let (name, text) = raw.split_once(':')?;
    let name = name.trim();
    (!name.is_empty()).then_some((name, text.trim()))
}

/// The members' names, as [`Field::accepts`] lists them: "name, url, weight".
fn member_names(fields: &[Field]) -> String {
    fields
        .iter()
        .map(|field| field.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The JSON Schema of an object whose members are `fields`: closed, its required members listed.
pub fn object_schema(fields: &[Field]) -> Value {
    let properties: Map<String, Value> = fields
        .iter()
        .map(|field| (field.name.to_owned(), field.schema()))
        .collect();
    let required: Vec<&str> = fields
        .iter()
        .filter(|field| matches!(field.presence, Presence::Required { .. }))
        .map(|field| field.name)
        .collect();
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// The declared name closest to `given`, when one is close enough to be what was meant: a typo
/// (`deviaton`, `ul`), a different case or separator (`numClients`), letters swapped.
pub fn closest<'a>(given: &str, declared: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let plain = |name: &str| name.to_ascii_lowercase().replace(['-', '_'], "");
    let given_plain = plain(given);
    declared
        .into_iter()
        .filter_map(|name| {
            let name_plain = plain(name);
            let edits = strsim::damerau_levenshtein(&given_plain, &name_plain);
            let similar = strsim::jaro_winkler(&given_plain, &name_plain);
            // One slip in a short name, two in a longer one, or a close spelling.
            let allowed = if name_plain.len() < 5 { 1 } else { 2 };
            (edits <= allowed || similar >= 0.85).then_some((edits, similar, name))
        })
        .min_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)))
        .map(|(_, _, name)| name)
}

/// The message for a field nobody declared: "unknown field 'deviaton'; did you mean 'deviation'? (it
/// takes: …)".
pub fn unknown_field(given: &str, declared: &[&str]) -> String {
    let hint = closest(given, declared.iter().copied())
        .map(|name| format!("; did you mean '{name}'?"))
        .unwrap_or_default();
    format!(
        "unknown field '{given}'{hint} (it takes: {})",
        declared.join(", ")
    )
}

/// A value as [`Field::read`] read it.
enum Read {
    Number(f64),
    Switch(bool),
    Text(String),
    /// A list or an object, of the shape its kind takes, read further by its own accessor.
    Value(Value),
}

/// A JSON number for `x`: an integer when it is one.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

/// A field refused; the face's name for it and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

/// How a face names its fields in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Face {
    /// A tool's (or a plan's): by name.
    Tool,
    /// The command line's: by flag, in the group `prefix`.
    Flags { prefix: &'static str },
}

/// The values a face was given for its declared fields, read by the fields' own readers: one reader for
/// every face. Blank values (null, or a string of white space) are left out, so that they mean "use the
/// default", as the guide's payload templates send them.
#[derive(Debug, Clone)]
pub struct FieldInput {
    given: BTreeMap<&'static str, Value>,
    face: Face,
    /// Where these fields sit in the arguments, e.g. "requests[1]." (empty at the top).
    path: String,
}

impl FieldInput {
    /// The values of `fields` found in a tool's `arguments`.
    pub fn from_arguments<'a>(
        fields: impl IntoIterator<Item = &'a Field>,
        arguments: &Map<String, Value>,
    ) -> Self {
        let given = fields
            .into_iter()
            .filter_map(|field| {
                let value = arguments.get(field.name)?;
                (!is_blank(value)).then(|| (field.name, value.clone()))
            })
            .collect();
        Self {
            given,
            face: Face::Tool,
            path: String::new(),
        }
    }

    /// The values of `fields` given on the command line, `prefix` their group (see [`Field::arg`]).
    pub fn from_matches<'a>(
        fields: impl IntoIterator<Item = &'a Field>,
        prefix: &'static str,
        matches: &clap::ArgMatches,
    ) -> Self {
        let given = fields
            .into_iter()
            .filter_map(|field| {
                let id = field.long(prefix).replace('-', "_");
                let value = match field.kind {
                    Kind::Texts { .. } => Value::Array(
                        matches
                            .try_get_many::<String>(&id)
                            .ok()??
                            .map(|text| Value::String(text.clone()))
                            .collect(),
                    ),
                    Kind::TextMap => Value::Object(
                        matches
                            .try_get_many::<String>(&id)
                            .ok()??
                            .filter_map(|raw| name_and_text(raw))
                            .map(|(name, text)| (name.to_owned(), Value::String(text.to_owned())))
                            .collect(),
                    ),
                    Kind::Json { .. } | Kind::Object { .. } => {
                        serde_json::from_str(matches.try_get_one::<String>(&id).ok()??).ok()?
                    }
                    _ => Value::String(matches.try_get_one::<String>(&id).ok()??.clone()),
                };
                (!is_blank(&value)).then_some((field.name, value))
            })
            .collect();
        Self {
            given,
            face: Face::Flags { prefix },
            path: String::new(),
        }
    }

    /// The face's name for `field`.
    pub fn name_of(&self, field: &Field) -> String {
        match self.face {
            Face::Tool => format!("{}{}", self.path, field.name),
            Face::Flags { prefix } => format!("--{}", field.long(prefix)),
        }
    }

    /// Whether a value was given for `field` (blank counts as not given).
    pub fn has(&self, field: &Field) -> bool {
        self.given.contains_key(field.name)
    }

    /// The members of the object `value`, read as `fields` at `path` ("requests[1]."); a member none of them
    /// declares is refused with the closest declared name.
    fn nested(
        &self,
        fields: &'static [Field],
        value: &Value,
        at: &str,
    ) -> Result<Self, FieldError> {
        let refuse = |message: String| FieldError {
            field: at.to_owned(),
            message,
        };
        let Value::Object(members) = value else {
            return Err(refuse(format!(
                "expected an object with {}, got {value}",
                member_names(fields)
            )));
        };
        let declared: Vec<&str> = fields.iter().map(|field| field.name).collect();
        if let Some(unknown) = members
            .keys()
            .find(|name| !declared.contains(&name.as_str()))
        {
            return Err(refuse(unknown_field(unknown, &declared)));
        }
        let mut input = Self::from_arguments(fields, members);
        input.path = format!("{at}.");
        Ok(input)
    }

    /// A list of objects: each one's members, read by its own [`FieldInput`] (errors name them
    /// `requests[1].weight`); empty when the field is left out.
    pub fn objects(&self, field: &Field) -> Result<Vec<Self>, FieldError> {
        let Kind::Objects { fields, min, max } = field.kind else {
            return Err(self.refuse(field, "is not a list of objects"));
        };
        let items = match self.value(field)? {
            Some(Read::Value(Value::Array(items))) => items,
            Some(_) => return Err(self.refuse(field, "is not a list of objects")),
            None => return Ok(Vec::new()),
        };
        if !(min..=max).contains(&items.len()) {
            return Err(self.refuse(field, format!("{} items; give {min} to {max}", items.len())));
        }
        let name = self.name_of(field);
        items
            .iter()
            .enumerate()
            .map(|(index, item)| self.nested(fields, item, &format!("{name}[{index}]")))
            .collect()
    }

    /// One object's members, read by their own [`FieldInput`]; `None` when the field is left out.
    pub fn object(&self, field: &Field) -> Result<Option<Self>, FieldError> {
        let Kind::Object { fields } = field.kind else {
            return Err(self.refuse(field, "is not an object"));
        };
        match self.value(field)? {
            Some(Read::Value(value)) => self.nested(fields, &value, &self.name_of(field)).map(Some),
            Some(_) => Err(self.refuse(field, "is not an object")),
            None => Ok(None),
        }
    }

    /// Names to texts, in the order given (a number stands for its text; null or blank for "").
    pub fn text_map(&self, field: &Field) -> Result<Vec<(String, String)>, FieldError> {
        let members = match self.value(field)? {
            Some(Read::Value(Value::Object(members))) => members,
            Some(_) => return Err(self.refuse(field, "is not an object of names to texts")),
            None => return Ok(Vec::new()),
        };
        members
            .into_iter()
            .map(|(name, value)| match value {
                Value::String(text) => Ok((name, text)),
                Value::Number(n) => Ok((name, n.to_string())),
                Value::Null => Ok((name, String::new())),
                other => Err(FieldError {
                    field: format!("{}.{name}", self.name_of(field)),
                    message: format!("expected text, got {other}"),
                }),
            })
            .collect()
    }

    /// A JSON value field's value, as given (checked); `None` when left out.
    pub fn json(&self, field: &Field) -> Result<Option<Value>, FieldError> {
        match self.value(field)? {
            Some(Read::Value(value)) => Ok(Some(value)),
            Some(_) => Err(self.refuse(field, "is not a JSON value field")),
            None => Ok(None),
        }
    }

    /// A list of texts, each checked (blank ones dropped); empty when the field is left out.
    pub fn texts(&self, field: &Field) -> Result<Vec<String>, FieldError> {
        let Kind::Texts { check, .. } = field.kind else {
            return Err(self.refuse(field, "is not a list of texts"));
        };
        let items = match self.value(field)? {
            Some(Read::Value(Value::Array(items))) => items,
            Some(_) => return Err(self.refuse(field, "is not a list of texts")),
            None => return Ok(Vec::new()),
        };
        let name = self.name_of(field);
        let mut texts = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let at = |message: String| FieldError {
                field: format!("{name}[{index}]"),
                message,
            };
            match item {
                Value::String(text) if text.trim().is_empty() => {}
                Value::String(text) => {
                    check(text.trim()).map_err(at)?;
                    texts.push(text.trim().to_owned());
                }
                Value::Number(n) => {
                    let text = n.to_string();
                    check(&text).map_err(at)?;
                    texts.push(text);
                }
                Value::Null => {}
                other => return Err(at(format!("expected text, got {other}"))),
            }
        }
        Ok(texts)
    }

    /// An error about `field`.
    pub fn refuse(&self, field: &Field, message: impl Into<String>) -> FieldError {
        FieldError {
            field: self.name_of(field),
            message: message.into(),
        }
    }

    /// What `field` holds: the value given, else its default; `None` for an optional field left out.
    fn value(&self, field: &Field) -> Result<Option<Read>, FieldError> {
        let read = |given: &Value| field.read(given).map_err(|m| self.refuse(field, m));
        match (self.given.get(field.name), field.presence) {
            (Some(given), _) => read(given).map(Some),
            (None, Presence::Default(value)) => read(&Value::String(value.to_owned())).map(Some),
            (None, Presence::Optional(_)) => Ok(None),
            (None, Presence::Required { example }) => Err(self.refuse(
                field,
                format!("is required: {}, e.g. {example}", field.accepts()),
            )),
        }
    }

    /// A number field's value (its default when absent).
    pub fn number(&self, field: &Field) -> Result<f64, FieldError> {
        self.optional_number(field)?
            .ok_or_else(|| self.refuse(field, "has no value"))
    }

    /// A number field's value; `None` for an optional one left out.
    pub fn optional_number(&self, field: &Field) -> Result<Option<f64>, FieldError> {
        match self.value(field)? {
            Some(Read::Number(x)) => Ok(Some(x)),
            Some(_) => Err(self.refuse(field, "is not a number field")),
            None => Ok(None),
        }
    }

    /// A whole-number field's value.
    pub fn whole(&self, field: &Field) -> Result<u64, FieldError> {
        // The field's check accepts whole numbers only, within its range: the cast is exact.
        self.number(field).map(|x| x as u64)
    }

    /// A whole-number field's value; `None` for an optional one left out.
    pub fn optional_whole(&self, field: &Field) -> Result<Option<u64>, FieldError> {
        self.optional_number(field).map(|x| x.map(|x| x as u64))
    }

    /// A field of milliseconds, as a duration.
    pub fn millis(&self, field: &Field) -> Result<Duration, FieldError> {
        self.optional_millis(field)?
            .ok_or_else(|| self.refuse(field, "has no value"))
    }

    /// A field of milliseconds, as a duration; `None` for an optional one left out.
    pub fn optional_millis(&self, field: &Field) -> Result<Option<Duration>, FieldError> {
        self.optional_number(field)?
            .map(|ms| {
                Duration::try_from_secs_f64(ms / 1e3).map_err(|_| {
                    self.refuse(field, format!("{ms} is not a number of milliseconds"))
                })
            })
            .transpose()
    }

    /// A switch's value.
    pub fn switch(&self, field: &Field) -> Result<bool, FieldError> {
        match self.value(field)? {
            Some(Read::Switch(on)) => Ok(on),
            Some(_) => Err(self.refuse(field, "is not a switch")),
            None => Ok(false),
        }
    }

    /// A text field's value ("" when an optional one is left out).
    pub fn text(&self, field: &Field) -> Result<String, FieldError> {
        match self.value(field)? {
            Some(Read::Text(text)) => Ok(text),
            Some(_) => Err(self.refuse(field, "is not a text field")),
            None => Ok(String::new()),
        }
    }

    /// A text field's value, `None` when an optional one is left out.
    pub fn optional_text(&self, field: &Field) -> Result<Option<String>, FieldError> {
        match self.value(field)? {
            Some(Read::Text(text)) => Ok(Some(text)),
            Some(_) => Err(self.refuse(field, "is not a text field")),
            None => Ok(None),
        }
    }

    /// A parsed field's value as `T`.
    pub fn parsed<T>(&self, field: &Field) -> Result<T, FieldError>
    where
        T: FromStr,
        T::Err: Display,
    {
        self.optional_parsed(field)?
            .ok_or_else(|| self.refuse(field, "has no value"))
    }

    /// A parsed field's value as `T`; `None` for an optional one left out.
    pub fn optional_parsed<T>(&self, field: &Field) -> Result<Option<T>, FieldError>
    where
        T: FromStr,
        T::Err: Display,
    {
        match self.value(field)? {
            Some(Read::Text(text)) => text
                .parse::<T>()
                .map(Some)
                .map_err(|e| self.refuse(field, e.to_string())),
            Some(_) => Err(self.refuse(field, "is not a text field")),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEAN: Field = Field::millis(
        "latency",
        "Mean latency to add",
        Number::above_zero(3_600_000.0, ""),
    )
    .flag("latency-mean")
    .required("300");
    const DEVIATION: Field = Field::millis(
        "deviation",
        "Standard deviation",
        Number::from_to(0.0, 3_600_000.0),
    )
    .flag("latency-stddev")
    .default("0");

    fn tool(arguments: Value) -> FieldInput {
        FieldInput::from_arguments([&MEAN, &DEVIATION], arguments.as_object().unwrap())
    }

    #[test]
    fn one_reader_names_the_field_as_the_face_does() {
        let input = tool(json!({"latency": "250", "deviation": ""}));
        assert_eq!(input.millis(&MEAN), Ok(Duration::from_millis(250)));
        assert_eq!(input.millis(&DEVIATION), Ok(Duration::ZERO));
        let missing = tool(json!({})).millis(&MEAN).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "latency: is required: a number of ms, more than 0 and at most 3600000, e.g. 300"
        );
        let flags = FieldInput {
            given: BTreeMap::from([("deviation", json!("-1"))]),
            face: Face::Flags { prefix: "latency" },
            path: String::new(),
        };
        assert_eq!(
            flags.millis(&DEVIATION).unwrap_err().to_string(),
            "--latency-stddev: -1 is out of range; accepted: 0 to 3600000"
        );
    }

    #[test]
    fn an_unknown_field_is_named_with_the_closest_declared_one() {
        let declared = ["url", "duration", "deviation", "num_clients", "rps"];
        assert_eq!(
            unknown_field("deviaton", &declared),
            "unknown field 'deviaton'; did you mean 'deviation'? (it takes: url, duration, deviation, \
             num_clients, rps)"
        );
        assert_eq!(closest("durration", declared), Some("duration"));
        assert_eq!(closest("numClients", declared), Some("num_clients"));
        assert_eq!(closest("sched", declared), None);
    }

    #[test]
    fn the_schema_says_range_default_and_example() {
        let schema = DEVIATION.schema();
        assert_eq!(schema["minimum"], 0);
        assert_eq!(schema["maximum"], 3_600_000);
        assert_eq!(schema["default"], 0);
        assert_eq!(MEAN.schema()["exclusiveMinimum"], 0);
        assert_eq!(MEAN.schema()["examples"], json!([300]));
        assert_eq!(
            DEVIATION.long("latency") + " " + &Field::switch("per_x", "x").long("latency"),
            "latency-stddev latency-per-x"
        );
    }
}
