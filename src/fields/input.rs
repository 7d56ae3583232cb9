//! The one reader every face goes through: the values a face was given, each read and checked by its
//! field's declaration, and the error that names the field.

use std::{collections::BTreeMap, fmt::Display, str::FromStr, time::Duration};

use serde_json::{Map, Value, json};

use super::{
    Field, Kind, Presence,
    names::{member_names, unknown_field},
};
use crate::lenient::is_blank;

impl Field {
    /// Whether `value`, held by a value built in code rather than read from a face, is one this field accepts:
    /// its range, checked by the same declaration; the message names the field.
    pub fn check_number(&self, value: f64) -> Result<(), String> {
        let given = serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number);
        self.read(&given)
            .map(|_| ())
            .map_err(|message| format!("{}: {message}", self.name))
    }

    /// The value `given` holds for this field, checked; the message says what is wrong, without the name.
    pub(super) fn read(&self, given: &Value) -> Result<Read, String> {
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
            Kind::Json { check, .. } | Kind::Typed { check, .. } => {
                check(given).map(|()| Read::Value(given.clone()))
            }
            Kind::Object { .. } | Kind::TextMap => match given {
                Value::Object(_) => Ok(Read::Value(given.clone())),
                _ => Err(format!("expected {}, got {given}", self.accepts())),
            },
        }
    }
}

/// `NAME: VALUE` split at its first colon, both trimmed; `None` without a colon or a name.
pub(super) fn name_and_text(raw: &str) -> Option<(&str, &str)> {
    let (name, text) = raw.split_once(':')?;
    let name = name.trim();
    (!name.is_empty()).then_some((name, text.trim()))
}

/// A value as [`Field::read`] read it.
pub(super) enum Read {
    Number(f64),
    Switch(bool),
    Text(String),
    /// A list or an object, of the shape its kind takes, read further by its own accessor.
    Value(Value),
}

/// A JSON number for `x`: an integer when it is one.
pub(super) fn number(x: f64) -> Value {
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
    pub(super) given: BTreeMap<&'static str, Value>,
    pub(super) face: Face,
    /// Where these fields sit in the arguments, e.g. "requests[1]." (empty at the top).
    pub(super) path: String,
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
