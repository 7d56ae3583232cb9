//! A field as it is declared: its name, what it holds ([`Kind`]), whether it must be given ([`Presence`]),
//! its unit and its help.

use std::{fmt::Display, str::FromStr};

use serde_json::Value;

use crate::lenient::Number;

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
    pub(super) fn value_name(self) -> &'static str {
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
    /// A JSON value a type declared elsewhere reads (a plan's gates, which a plan and flags read too):
    /// `schema` is that type's JSON Schema, `check` reads the value whole, `takes` says what in words. A
    /// tool's face only, read with [`FieldInput::json`].
    Typed {
        schema: fn() -> Value,
        check: fn(&Value) -> Result<(), String>,
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

/// Any text: the check of a text field that takes numbers too.
fn any_text(_: &str) -> Result<(), String> {
    Ok(())
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

    /// A JSON value of a type declared elsewhere, whose JSON Schema `schema` gives; `check` reads it whole.
    pub const fn of_type(
        name: &'static str,
        help: &'static str,
        (takes, schema): (&'static str, fn() -> Value),
        check: fn(&Value) -> Result<(), String>,
    ) -> Self {
        Self::new(
            name,
            help,
            Kind::Typed {
                schema,
                check,
                takes,
            },
        )
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

    /// A parsed field also takes a JSON number for its text (a share written 0.05 or "5%"); so does a text
    /// field, which then reads its text trimmed, as a parsed one does.
    pub const fn numbers_too(self) -> Self {
        match self.kind {
            Kind::Text => Self {
                kind: Kind::Parsed {
                    check: any_text,
                    takes: "text",
                    numbers: true,
                },
                ..self
            },
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
}
