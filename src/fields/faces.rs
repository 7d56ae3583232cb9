//! The faces generated from a field: its JSON Schema property, its command-line flag, and its row of the
//! reference.

use serde_json::{Map, Value, json};

use super::{
    Field, Kind, Presence, Unit,
    input::{name_and_text, number},
    names::member_names,
};

impl Field {
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
            Kind::Typed { takes, .. } => takes.into(),
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
            Kind::Typed { schema, .. } => {
                let mut schema = schema();
                if let Value::Object(members) = &mut schema {
                    members.insert("description".into(), description.into());
                }
                return schema;
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
