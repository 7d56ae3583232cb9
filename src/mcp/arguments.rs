//! A call's arguments read against its tool's input schema before the tool runs: objects closed to undeclared
//! fields (named with the closest declared one), required fields, and each value's type, so every refusal names
//! its field and what was wrong.

use rmcp::model::JsonObject;
use serde_json::Value;

use crate::lenient::json_kind;

/// `schema` with every object schema that declares its properties closed to others (`additionalProperties:
/// false`), so that clients and models see that a field it does not name is refused. Maps (such as `headers`)
/// say what their values are instead and stay open.
pub(super) fn close_objects(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    if object.contains_key("properties") && !object.contains_key("additionalProperties") {
        object.insert("additionalProperties".into(), Value::Bool(false));
    }
    for (key, value) in object.iter_mut() {
        match key.as_str() {
            "properties" | "$defs" | "definitions" => {
                if let Value::Object(children) = value {
                    children.values_mut().for_each(close_objects);
                }
            }
            "items" | "anyOf" | "oneOf" | "allOf" => match value {
                Value::Array(children) => children.iter_mut().for_each(close_objects),
                child => close_objects(child),
            },
            _ => {}
        }
    }
}

/// The first field of `arguments`, at any depth, that its closed object schema does not declare, as an error
/// naming it (with its path) and the closest declared name.
pub(super) fn undeclared_field(schema: &JsonObject, arguments: &JsonObject) -> Option<String> {
    members(schema, schema, arguments, "")
}

/// [`undeclared_field`] for the members of one object.
fn members(
    root: &JsonObject,
    schema: &JsonObject,
    given: &JsonObject,
    path: &str,
) -> Option<String> {
    let schema = resolve(root, schema);
    if let Some(Value::Object(properties)) = schema.get("properties") {
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        for (name, member) in given {
            let field = if path.is_empty() {
                name.clone()
            } else {
                format!("{path}.{name}")
            };
            match properties.get(name).and_then(Value::as_object) {
                Some(property) => {
                    if let Some(error) = value(root, property, member, &field) {
                        return Some(error);
                    }
                }
                None if closed && !properties.contains_key(name) => {
                    let declared: Vec<&str> = properties.keys().map(String::as_str).collect();
                    let message = crate::fields::unknown_field(name, &declared);
                    return Some(if path.is_empty() {
                        message
                    } else {
                        format!("{path}: {message}")
                    });
                }
                None => {}
            }
        }
    }
    None
}

/// [`undeclared_field`] for one value of the schema `schema` (an object, a list of them, an optional one).
fn value(root: &JsonObject, schema: &JsonObject, given: &Value, path: &str) -> Option<String> {
    let schema = resolve(root, schema);
    match given {
        Value::Object(object) => {
            if schema.contains_key("properties") {
                return members(root, schema, object, path);
            }
            alternatives(root, schema, given, path)
        }
        Value::Array(elements) => {
            let items = schema.get("items").and_then(Value::as_object);
            match items {
                Some(items) => elements
                    .iter()
                    .enumerate()
                    .find_map(|(i, element)| value(root, items, element, &format!("{path}[{i}]"))),
                None => alternatives(root, schema, given, path),
            }
        }
        _ => None,
    }
}

/// For a schema of alternatives, [`value`] through the one that applies: of those that declare properties or
/// items, the one whose constant properties the value holds when they are told apart that way (a tagged list
/// such as the compound impact tool's `faults`, by `type`; none when the tag names no alternative, which the
/// tool then refuses by name), else the first (an optional object: `anyOf: [{$ref}, {type: null}]`).
fn alternatives(
    root: &JsonObject,
    schema: &JsonObject,
    given: &Value,
    path: &str,
) -> Option<String> {
    let candidates: Vec<&JsonObject> = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|key| schema.get(*key).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_object)
        .map(|alternative| resolve(root, alternative))
        .filter(|alternative| {
            alternative.contains_key("properties") || alternative.contains_key("items")
        })
        .collect();
    let constants = |alternative: &JsonObject| -> Vec<(String, Value)> {
        alternative
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(name, property)| Some((name.clone(), property.get("const")?.clone())))
            .collect()
    };
    let tagged = candidates.iter().any(|a| !constants(a).is_empty());
    let chosen = if tagged {
        candidates.into_iter().find(|alternative| {
            constants(alternative)
                .iter()
                .all(|(name, constant)| given.get(name) == Some(constant))
        })
    } else {
        candidates.into_iter().next()
    };
    chosen.and_then(|alternative| value(root, alternative, given, path))
}

/// `schema`, or the definition its `$ref` points at (`#/$defs/Name`).
fn resolve<'a>(root: &'a JsonObject, schema: &'a JsonObject) -> &'a JsonObject {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| {
            let (folder, name) = reference.strip_prefix("#/")?.split_once('/')?;
            root.get(folder)?.get(name)?.as_object()
        })
        .unwrap_or(schema)
}

/// The fields `schema` lists as required that `arguments` lacks or holds as null.
pub(super) fn missing_required(schema: &JsonObject, arguments: Option<&JsonObject>) -> Vec<String> {
    let Some(Value::Array(required)) = schema.get("required") else {
        return Vec::new();
    };
    required
        .iter()
        .filter_map(Value::as_str)
        // A blank string is left to the tool, which says what an empty value means for it.
        .filter(|field| {
            matches!(
                arguments.and_then(|a| a.get(*field)),
                None | Some(Value::Null)
            )
        })
        .map(str::to_owned)
        .collect()
}

/// The first top-level field whose value has a JSON type or a length its schema does not accept, as an error
/// naming it. Null and "" are left to the tool: they mean "use the default" for optional fields.
pub(super) fn wrong_field(schema: &JsonObject, arguments: &JsonObject) -> Option<String> {
    let properties = schema.get("properties")?.as_object()?;
    arguments.iter().find_map(|(field, value)| {
        let field_schema = properties.get(field)?;
        if value.is_null() || value.as_str().is_some_and(|text| text.trim().is_empty()) {
            return None;
        }
        let types: Vec<&str> = match field_schema.get("type") {
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| has_type(value, t)) {
            let expected = types
                .iter()
                .filter(|t| **t != "null")
                .copied()
                .collect::<Vec<_>>()
                .join(" or ");
            return Some(format!(
                "{field}: expected {expected}, got {}",
                json_kind(value)
            ));
        }
        let max = field_schema.get("maxLength").and_then(Value::as_u64)?;
        let length = value.as_str()?.chars().count() as u64;
        (length > max).then(|| format!("{field}: {length} characters; accepted: at most {max}"))
    })
}

/// Whether `value` is of JSON Schema type `name`.
fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "string" => value.is_string(),
        "number" => value.is_number(),
        // Whether a number is whole and within range is its reader's to say, with its range.
        "integer" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// What is wrong with `tools/call` params rmcp could not read.
pub(super) fn malformed_call(params: Option<&Value>) -> String {
    let Some(Value::Object(params)) = params else {
        return "tools/call: params must be an object with `name` (the tool) and `arguments` (an object)"
            .into();
    };
    match (params.get("name"), params.get("arguments")) {
        (Some(Value::String(_)), Some(arguments)) => format!(
            "arguments: expected an object of the tool's input fields by name (e.g. {{\"path\": \"/abs/file.py\"}}), got {}",
            json_kind(arguments)
        ),
        (Some(Value::String(_)), None) => "tools/call: params could not be read".into(),
        (Some(other), _) => format!(
            "name: expected the tool's name as a string, got {}",
            json_kind(other)
        ),
        (None, _) => "name: is required (the tool to call)".into(),
    }
}
