//! The tools' JSON Schemas, from the same declarations the readers use.

use std::sync::Arc;

use rmcp::model::JsonObject;

use serde_json::{Value, json};

use super::super::scenario_fields as fields;
use crate::{
    fields::{Field, Presence},
    proxy::faults::{self, EachFault, TcpFaultSpec},
};

use super::faults::{MAX_FAULTS, kinds};

/// The schema of one item of the compound tool's `faults`: `type` naming fault `S`, then its fields (its own
/// and where it acts), each generated from its declaration; closed to any other field.
pub(in crate::mcp) fn item_schema<S: TcpFaultSpec>() -> Value {
    let fields = faults::fields::<S>();
    let mut properties = serde_json::Map::new();
    properties.insert(
        "type".into(),
        json!({"type": "string", "const": S::KIND, "description": format!("The fault: {}.", S::TITLE)}),
    );
    for field in &fields {
        properties.insert(field.name.to_owned(), field.schema());
    }
    let required: Vec<&str> = std::iter::once("type")
        .chain(required_names(&fields))
        .collect();
    json!({
        "type": "object",
        "title": S::KIND,
        "description": S::MODEL,
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

pub(in crate::mcp) fn required_names(fields: &[Field]) -> impl Iterator<Item = &'static str> + '_ {
    fields
        .iter()
        .filter(|field| matches!(field.presence, Presence::Required { .. }))
        .map(|field| field.name)
}

/// The schema of the fields every scenario takes, closed to any other field.
pub(in crate::mcp) fn common_schema() -> JsonObject {
    match crate::fields::object_schema(fields::COMMON_FIELDS) {
        Value::Object(schema) => schema,
        _ => JsonObject::new(),
    }
}

/// The input schema of the compound tool: the common fields, then `faults`, a list whose items are one of the
/// registered faults, told apart by `type`.
pub(in crate::mcp) fn compound_schema() -> Arc<JsonObject> {
    struct Items(Vec<Value>);
    impl EachFault for Items {
        fn fault<S: TcpFaultSpec>(&mut self) {
            self.0.push(item_schema::<S>());
        }
    }
    let mut items = Items(Vec::new());
    faults::for_each(&mut items);
    let mut schema = common_schema();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            "faults".into(),
            json!({
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_FAULTS,
                "description": format!(
                    "The faults, all on the same proxies, each an object whose `type` names it ({}) with that \
                     fault's own fields and `sched`, its own window(s) (without: the whole run). 1 to {MAX_FAULTS}.",
                    kinds().join(", ")
                ),
                "items": {"anyOf": items.0},
            }),
        );
    }
    match schema.get_mut("required") {
        Some(Value::Array(names)) => names.push("faults".into()),
        _ => drop(schema.insert("required".into(), json!(["faults"]))),
    }
    Arc::new(schema)
}

/// The input schema of fault `S`'s tool: the common fields, then the fault's (its own and where it acts),
/// each generated from its declaration.
pub(in crate::mcp) fn input_schema<S: TcpFaultSpec>() -> Arc<JsonObject> {
    let mut schema = common_schema();
    let fields = faults::fields::<S>();
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for field in &fields {
            properties.insert(field.name.to_owned(), field.schema());
        }
    }
    let required = required_names(&fields).map(Value::from);
    match schema.get_mut("required") {
        Some(Value::Array(names)) => names.extend(required),
        _ => drop(schema.insert("required".into(), Value::Array(required.collect()))),
    }
    Arc::new(schema)
}
