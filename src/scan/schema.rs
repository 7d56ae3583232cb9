//! Reading a tool's JSON Schema as the scan needs it: local `$ref`s resolved, a property's JSON types, its
//! bounds, and each property of an object with its path ("filter.limit", "tags[]").

use serde_json::{Map, Value};

/// `schema` with a local `$ref` (`#/…`) followed within `root`, up to a depth that stops cycles; `None` for
/// a reference nothing answers (remote, or a pointer to nothing).
pub fn resolve<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    let mut current = schema;
    for _ in 0..16 {
        let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
            return Some(current);
        };
        let pointer = reference.strip_prefix('#')?;
        current = root.pointer(pointer)?;
    }
    None
}

/// The JSON types `schema` allows: its `type` (a name or a list), else the types of its `enum`/`const`
/// values, else the union of its `anyOf`/`oneOf` members'; empty when nothing says.
pub fn types(root: &Value, schema: &Value) -> Vec<String> {
    let Some(schema) = resolve(root, schema) else {
        return Vec::new();
    };
    let mut found: Vec<String> = match schema.get("type") {
        Some(Value::String(name)) => vec![name.clone()],
        Some(Value::Array(names)) => names
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    if found.is_empty() {
        let values = match (schema.get("enum"), schema.get("const")) {
            (Some(Value::Array(values)), _) => values.clone(),
            (_, Some(value)) => vec![value.clone()],
            _ => Vec::new(),
        };
        found.extend(values.iter().map(|v| type_of(v).to_owned()));
    }
    if found.is_empty() {
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(members)) = schema.get(key) {
                for member in members {
                    found.extend(types(root, member));
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The JSON Schema type name of `value` ("integer" for a whole number).
pub fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether a value of JSON type `given` is allowed by `allowed` (an integer is a number).
pub fn allows(allowed: &[String], given: &str) -> bool {
    allowed.iter().any(|t| t == given)
        || (given == "integer" && allowed.iter().any(|t| t == "number"))
}

/// The properties of the object schema `schema`, in their order, and the names it requires.
pub fn properties<'a>(
    root: &'a Value,
    schema: &'a Value,
) -> (Vec<(&'a str, &'a Value)>, Vec<&'a str>) {
    let Some(schema) = resolve(root, schema) else {
        return (Vec::new(), Vec::new());
    };
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|members| members.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default();
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    (properties, required)
}

/// Whether the object schema refuses members it does not declare.
pub fn closed(root: &Value, schema: &Value) -> bool {
    resolve(root, schema)
        .and_then(|s| s.get("additionalProperties"))
        .is_some_and(|a| a == &Value::Bool(false))
}

/// A number keyword of `schema` (after `$ref`).
pub fn number(root: &Value, schema: &Value, keyword: &str) -> Option<f64> {
    resolve(root, schema)?.get(keyword)?.as_f64()
}

/// An example value `schema` accepts, for arguments nobody gave: its `default`, first `examples` entry,
/// `const` or first `enum` value, else one built from its type and bounds (an object with its required
/// members only).
pub fn example(root: &Value, schema: &Value, depth: usize) -> Value {
    let Some(schema) = resolve(root, schema) else {
        return Value::Null;
    };
    for key in ["default", "const"] {
        if let Some(value) = schema.get(key) {
            return value.clone();
        }
    }
    for key in ["examples", "enum"] {
        if let Some(value) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|v| v.first())
        {
            return value.clone();
        }
    }
    let kinds = types(root, schema);
    let kind = kinds
        .iter()
        .find(|t| t.as_str() != "null")
        .map(String::as_str)
        .unwrap_or(if kinds.is_empty() { "string" } else { "null" });
    let low = number(root, schema, "minimum")
        .or_else(|| number(root, schema, "exclusiveMinimum").map(|m| m + 1.0));
    let high = number(root, schema, "maximum");
    match kind {
        "integer" | "number" => {
            // 1, moved into the bounds.
            let mut value = 1.0_f64;
            if let Some(low) = low {
                value = value.max(low);
            }
            if let Some(high) = high {
                value = value.min(high);
            }
            if kind == "integer" {
                Value::from(value.ceil() as i64)
            } else {
                serde_json::Number::from_f64(value).map_or(Value::from(1), Value::Number)
            }
        }
        "boolean" => Value::Bool(false),
        "array" => {
            let min = number(root, schema, "minItems").unwrap_or(0.0) as usize;
            let item = schema.get("items").cloned().unwrap_or(Value::Null);
            Value::Array(
                (0..min.min(8))
                    .map(|_| example(root, &item, depth + 1))
                    .collect(),
            )
        }
        "object" if depth < 8 => {
            let (properties, required) = properties(root, schema);
            let members: Map<String, Value> = properties
                .into_iter()
                .filter(|(name, _)| required.contains(name))
                .map(|(name, member)| (name.to_owned(), example(root, member, depth + 1)))
                .collect();
            Value::Object(members)
        }
        "object" => Value::Object(Map::new()),
        "null" => Value::Null,
        _ => {
            let min = number(root, schema, "minLength").unwrap_or(1.0).max(1.0) as usize;
            let max = number(root, schema, "maxLength").map_or(usize::MAX, |m| m as usize);
            Value::String("x".repeat(min.clamp(1, 64).min(max.max(1))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_are_followed_and_unknown_ones_are_none() {
        let root = json!({"$defs": {"Level": {"type": "integer", "minimum": 0}},
            "properties": {"a": {"$ref": "#/$defs/Level"}, "b": {"$ref": "#/$defs/Nope"},
            "c": {"$ref": "https://example.com/s.json"}}});
        assert_eq!(types(&root, &root["properties"]["a"]), vec!["integer"]);
        assert!(resolve(&root, &root["properties"]["b"]).is_none());
        assert!(resolve(&root, &root["properties"]["c"]).is_none());
    }

    #[test]
    fn examples_meet_the_bounds() {
        let root = json!({"type": "object", "required": ["level", "name", "tags"], "properties": {
            "level": {"type": "integer", "minimum": 3, "maximum": 10},
            "name": {"type": "string", "minLength": 4},
            "tags": {"type": "array", "minItems": 1, "items": {"enum": ["a", "b"]}},
            "optional": {"type": "string"}}});
        assert_eq!(
            example(&root, &root, 0),
            json!({"level": 3, "name": "xxxx", "tags": ["a"]})
        );
    }
}
