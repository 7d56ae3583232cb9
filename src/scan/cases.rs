//! The contract phase's cases, built from a tool's input schema: each takes the tool's valid arguments and
//! breaks one field in one way the schema forbids (or, for an oversized text, in a way a server must
//! survive).

use serde_json::{Map, Value};

use super::schema;

/// Characters of the oversized text.
pub const OVERSIZED_CHARS: usize = 100_000;
/// The member no schema declares.
pub const UNDECLARED: &str = "scan_undeclared_field";

/// How a case breaks its field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseKind {
    MissingRequired,
    WrongType,
    Null,
    OutOfRange,
    NotInEnum,
    Undeclared,
    Oversized,
}

impl CaseKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::MissingRequired => "missing required",
            Self::WrongType => "wrong type",
            Self::Null => "null",
            Self::OutOfRange => "out of range",
            Self::NotInEnum => "not in the enum",
            Self::Undeclared => "undeclared field",
            Self::Oversized => "oversized text",
        }
    }
}

/// One contract case.
#[derive(Debug, Clone)]
pub struct Case {
    pub field: String,
    pub kind: CaseKind,
    /// The arguments sent.
    pub arguments: Value,
    /// Whether the schema forbids them (a server must refuse them); an oversized text within the schema
    /// must only be survived.
    pub invalid: bool,
    /// What was done, e.g. "12 where 0 to 10 is declared".
    pub what: String,
}

/// The cases of a tool whose input schema is `root`, each altering `base` (the tool's valid arguments).
pub fn cases(root: &Value, base: &Map<String, Value>) -> Vec<Case> {
    let (properties, required) = schema::properties(root, root);
    let mut cases = Vec::new();
    let with = |field: &str, value: Value| {
        let mut arguments = base.clone();
        arguments.insert(field.to_owned(), value);
        Value::Object(arguments)
    };
    for (field, member) in properties {
        let mut add = |kind, arguments, invalid, what: String| {
            cases.push(Case {
                field: field.to_owned(),
                kind,
                arguments,
                invalid,
                what,
            })
        };
        let is_required = required.contains(&field);
        if is_required {
            let mut arguments = base.clone();
            arguments.remove(field);
            add(
                CaseKind::MissingRequired,
                Value::Object(arguments),
                true,
                format!("`{field}` left out, though required"),
            );
        }
        let kinds = schema::types(root, member);
        if kinds.is_empty() {
            continue;
        }
        if let Some(wrong) = [
            Value::from(12345),
            Value::from("not-a-number"),
            Value::Bool(true),
            Value::Array(Vec::new()),
        ]
        .into_iter()
        .find(|v| !schema::allows(&kinds, schema::type_of(v)))
        {
            add(
                CaseKind::WrongType,
                with(field, wrong.clone()),
                true,
                format!("{wrong} where {} is declared", kinds.join(" or ")),
            );
        }
        // A null for an optional field is often read as "absent": only a required one must refuse it.
        if !kinds.iter().any(|k| k == "null") && is_required {
            add(
                CaseKind::Null,
                with(field, Value::Null),
                true,
                format!("null where {} is declared", kinds.join(" or ")),
            );
        }
        for (keyword, value, what) in bounds_broken(root, member, &kinds) {
            add(
                CaseKind::OutOfRange,
                with(field, value),
                true,
                format!("{what} where `{keyword}` is declared"),
            );
        }
        if let Some(Value::Array(allowed)) =
            schema::resolve(root, member).and_then(|s| s.get("enum"))
        {
            let outside = Value::from("scan-not-in-enum");
            if !allowed.contains(&outside) && schema::allows(&kinds, "string") {
                add(
                    CaseKind::NotInEnum,
                    with(field, outside),
                    true,
                    format!(
                        "\"scan-not-in-enum\" where one of {} is declared",
                        Value::Array(allowed.clone())
                    ),
                );
            }
        }
        let has_max = schema::number(root, member, "maxLength").is_some();
        if schema::allows(&kinds, "string") && !has_max {
            add(
                CaseKind::Oversized,
                with(field, Value::from("x".repeat(OVERSIZED_CHARS))),
                false,
                format!("a text of {OVERSIZED_CHARS} characters"),
            );
        }
    }
    let mut arguments = base.clone();
    arguments.insert(UNDECLARED.to_owned(), Value::from(1));
    cases.push(Case {
        field: UNDECLARED.to_owned(),
        kind: CaseKind::Undeclared,
        arguments: Value::Object(arguments),
        invalid: schema::closed(root, root),
        what: format!("`{UNDECLARED}`, which the schema does not declare"),
    });
    cases
}

/// Values just outside the bounds `member` declares: (keyword, value, what).
fn bounds_broken(
    root: &Value,
    member: &Value,
    kinds: &[String],
) -> Vec<(&'static str, Value, String)> {
    let number = |keyword| schema::number(root, member, keyword);
    let mut broken: Vec<(&'static str, Value, String)> = Vec::new();
    let numeric = schema::allows(kinds, "integer");
    let whole_only = numeric && !kinds.iter().any(|k| k == "number");
    if numeric {
        let step = if whole_only { 1.0 } else { 0.5 };
        if let Some(min) = number("minimum") {
            broken.push((
                "minimum",
                number_value(min - step),
                format!("{} below minimum {min}", min - step),
            ));
        }
        if let Some(min) = number("exclusiveMinimum") {
            broken.push((
                "exclusiveMinimum",
                number_value(min),
                format!("{min}, not above it"),
            ));
        }
        if let Some(max) = number("maximum") {
            broken.push((
                "maximum",
                number_value(max + step),
                format!("{} above maximum {max}", max + step),
            ));
        }
        if let Some(max) = number("exclusiveMaximum") {
            broken.push((
                "exclusiveMaximum",
                number_value(max),
                format!("{max}, not below it"),
            ));
        }
        if whole_only {
            let inside = number("minimum").unwrap_or(0.0) + 0.5;
            broken.push((
                "type",
                number_value(inside),
                format!("{inside} where a whole number is declared"),
            ));
        }
    }
    if schema::allows(kinds, "string") {
        if let Some(min) = number("minLength").filter(|m| *m >= 1.0) {
            let text = "x".repeat(min as usize - 1);
            broken.push((
                "minLength",
                Value::from(text),
                format!("{} characters, fewer than minLength {min}", min - 1.0),
            ));
        }
        if let Some(max) = number("maxLength").filter(|m| *m < 1_000_000.0) {
            let text = "x".repeat(max as usize + 1);
            broken.push((
                "maxLength",
                Value::from(text),
                format!("{} characters, more than maxLength {max}", max + 1.0),
            ));
        }
    }
    if schema::allows(kinds, "array") {
        let item = schema::resolve(root, member)
            .and_then(|s| s.get("items"))
            .map(|i| schema::example(root, i, 1))
            .unwrap_or(Value::Null);
        if let Some(min) = number("minItems").filter(|m| *m >= 1.0) {
            broken.push((
                "minItems",
                Value::Array(vec![item.clone(); min as usize - 1]),
                format!("{} items, fewer than minItems {min}", min - 1.0),
            ));
        }
        if let Some(max) = number("maxItems").filter(|m| *m < 10_000.0) {
            broken.push((
                "maxItems",
                Value::Array(vec![item; max as usize + 1]),
                format!("{} items, more than maxItems {max}", max + 1.0),
            ));
        }
    }
    broken
}

/// `n` as a client would send it: a whole number as an integer (12, not 12.0).
fn number_value(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_rule_of_the_schema_gets_a_case() {
        let root = json!({"type": "object", "additionalProperties": false, "required": ["level"],
            "properties": {"level": {"type": "integer", "minimum": 0, "maximum": 10},
                "mode": {"type": "string", "enum": ["a", "b"]}}});
        let base = json!({"level": 3}).as_object().unwrap().clone();
        let found: Vec<(String, &str, Value, bool)> = cases(&root, &base)
            .into_iter()
            .map(|c| (c.field, c.kind.name(), c.arguments, c.invalid))
            .collect();
        assert_eq!(
            found,
            vec![
                ("level".into(), "missing required", json!({}), true),
                (
                    "level".into(),
                    "wrong type",
                    json!({"level": "not-a-number"}),
                    true
                ),
                ("level".into(), "null", json!({"level": null}), true),
                ("level".into(), "out of range", json!({"level": -1}), true),
                ("level".into(), "out of range", json!({"level": 11}), true),
                ("level".into(), "out of range", json!({"level": 0.5}), true),
                (
                    "mode".into(),
                    "wrong type",
                    json!({"level": 3, "mode": 12345}),
                    true
                ),
                (
                    "mode".into(),
                    "not in the enum",
                    json!({"level": 3, "mode": "scan-not-in-enum"}),
                    true
                ),
                (
                    "mode".into(),
                    "oversized text",
                    json!({"level": 3, "mode": "x".repeat(OVERSIZED_CHARS)}),
                    false
                ),
                (
                    UNDECLARED.into(),
                    "undeclared field",
                    json!({"level": 3, UNDECLARED: 1}),
                    true
                ),
            ]
        );
    }
}
