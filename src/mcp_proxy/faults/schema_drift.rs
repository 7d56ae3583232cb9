//! `schema_drift` (alias `schema_mismatch`): the tool result is really changed, in `structuredContent` and in
//! text blocks that hold JSON alike: `drop_fields`, `rename`, `retype`, `nullify`, `wrap`. Without any
//! operation, a seeded drift renames one top-level key and retypes another. With `target: list` the tools'
//! interface drifts instead: the same operations act on the properties of each selected tool's
//! `inputSchema` and `outputSchema` in `tools/list` results (and on their `required` lists).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    Action, CallContext, FaultError, Format, McpFaultSpec, PeerEntry, PeerType, PeerValueError,
    Scope, edit_payloads,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JsonType {
    String,
    Number,
    Boolean,
    Null,
    Array,
    Object,
}

/// What a schema drift changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DriftTarget {
    /// The tool call's result.
    #[default]
    Result,
    /// The tools' schemas in `tools/list` results.
    List,
}

fn is_result(target: &DriftTarget) -> bool {
    *target == DriftTarget::Result
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SchemaDrift {
    #[serde(default, skip_serializing_if = "is_result")]
    pub target: DriftTarget,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_fields: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rename: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub retype: BTreeMap<String, JsonType>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nullify: Vec<String>,
    /// Nest the whole payload one level down under this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrap: Option<String>,
}

impl SchemaDrift {
    fn has_operations(&self) -> bool {
        !(self.drop_fields.is_empty()
            && self.rename.is_empty()
            && self.retype.is_empty()
            && self.nullify.is_empty()
            && self.wrap.is_none())
    }

    /// The operations for one call: the plan's, or a seeded rename + retype of the payload's own keys.
    /// `scope` tells apart the drifts of one call (each schema of a listing); it is empty for a result.
    fn operations_for(&self, keys: &[String], call: &CallContext<'_>, scope: &str) -> SchemaDrift {
        if self.has_operations() || keys.is_empty() {
            return self.clone();
        }
        let pick = |salt: &str| {
            let roll = call.roll_for(&format!("{salt}{scope}"));
            keys[(roll * keys.len() as f64) as usize % keys.len()].clone()
        };
        let renamed = pick("rename");
        let mut drift = SchemaDrift::default();
        drift
            .rename
            .insert(renamed.clone(), format!("{renamed}_v2"));
        let retyped = pick("retype");
        if retyped != renamed {
            drift.retype.insert(retyped, JsonType::String);
        }
        drift
    }

    fn apply(&self, object: &mut Map<String, Value>) {
        for field in &self.drop_fields {
            object.remove(field);
        }
        for (from, to) in &self.rename {
            if let Some(value) = object.remove(from) {
                object.insert(to.clone(), value);
            }
        }
        for (field, json_type) in &self.retype {
            if let Some(value) = object.get_mut(field) {
                *value = retype(value.take(), *json_type);
            }
        }
        for field in &self.nullify {
            if let Some(value) = object.get_mut(field) {
                *value = Value::Null;
            }
        }
    }

    /// Drifts one JSON Schema object: its `properties` and `required` change as its instances would.
    fn apply_schema(&self, schema: &mut Map<String, Value>) {
        let mut required: Vec<String> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            for field in &self.drop_fields {
                properties.remove(field);
                required.retain(|r| r != field);
            }
            for (from, to) in &self.rename {
                if let Some(property) = properties.remove(from) {
                    properties.insert(to.clone(), property);
                    for r in required.iter_mut().filter(|r| r.as_str() == from.as_str()) {
                        *r = to.clone();
                    }
                }
            }
            for (field, json_type) in &self.retype {
                if let Some(property) = properties.get_mut(field) {
                    *property = retyped_property(property, *json_type);
                }
            }
            for field in &self.nullify {
                if let Some(property) = properties.get_mut(field) {
                    *property = retyped_property(property, JsonType::Null);
                }
            }
        }
        if schema.contains_key("required") {
            schema.insert("required".into(), Value::from(required));
        }
        if let Some(key) = &self.wrap {
            let mut inner = Map::new();
            inner.insert("type".into(), Value::from("object"));
            for part in ["properties", "required"] {
                if let Some(value) = schema.remove(part) {
                    inner.insert(part.into(), value);
                }
            }
            schema.insert(
                "properties".into(),
                serde_json::json!({ key.clone(): inner }),
            );
            schema.insert("required".into(), serde_json::json!([key]));
        }
    }

    /// Drifts the `inputSchema` and `outputSchema` of every tool of a `tools/list` response that `selected`
    /// picks.
    pub fn rewrite_list(
        &self,
        response: &mut Value,
        call: &CallContext<'_>,
        selected: impl Fn(&str) -> bool,
    ) {
        let Some(Value::Array(tools)) =
            super::result_mut(response).and_then(|r| r.get_mut("tools"))
        else {
            return;
        };
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str).map(str::to_owned) else {
                continue;
            };
            if !selected(&name) {
                continue;
            }
            for schema_key in ["inputSchema", "outputSchema"] {
                let Some(Value::Object(schema)) = tool.get_mut(schema_key) else {
                    continue;
                };
                let keys: Vec<String> = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                self.operations_for(&keys, call, &format!(":{name}:{schema_key}"))
                    .apply_schema(schema);
            }
        }
    }
}

/// A property's schema with its type changed (its description kept).
fn retyped_property(property: &Value, json_type: JsonType) -> Value {
    let mut out = Map::new();
    if let Some(description) = property.get("description") {
        out.insert("description".into(), description.clone());
    }
    out.insert(
        "type".into(),
        serde_json::to_value(json_type).unwrap_or(Value::Null),
    );
    Value::Object(out)
}

fn retype(value: Value, json_type: JsonType) -> Value {
    match json_type {
        JsonType::String => match value {
            Value::String(s) => Value::String(s),
            other => Value::String(other.to_string()),
        },
        JsonType::Number => match &value {
            Value::Number(_) => value,
            Value::String(s) => s
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map_or(Value::from(0), Value::Number),
            Value::Bool(b) => Value::from(u8::from(*b)),
            _ => Value::from(0),
        },
        JsonType::Boolean => Value::Bool(match &value {
            Value::Bool(b) => *b,
            Value::Null => false,
            Value::Number(n) => n.as_f64() != Some(0.0),
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
        }),
        JsonType::Null => Value::Null,
        JsonType::Array => match value {
            Value::Array(a) => Value::Array(a),
            other => Value::Array(vec![other]),
        },
        JsonType::Object => match value {
            Value::Object(o) => Value::Object(o),
            other => serde_json::json!({ "value": other }),
        },
    }
}

impl McpFaultSpec for SchemaDrift {
    fn wire() -> &'static str {
        "changes `structuredContent` and JSON text alike: `drop_fields`, `rename`, `retype`, `nullify`, `wrap`; \
        without operations a seeded rename + retype. `target: list` drifts the interface instead: the same \
        operations act on the `properties` (and `required`) of the `inputSchema` and `outputSchema` of the \
        `tools` it selects in `tools/list` results, decided per `tools/list` call; a client that validates \
        results against the listed `outputSchema` (the Python SDK does) then rejects the server's real results"
    }

    fn aliases() -> &'static [&'static str] {
        &["schema_mismatch"]
    }

    fn peer_types() -> &'static [PeerType] {
        const {
            &[
                PeerType::mcp_chaos("schema_drift", &["tools", "probability"]),
                PeerType::of(Format::ChaosMonkey, "schema-mismatch"),
            ]
        }
    }

    /// mcp-chaos-monkey's `missingFields` are the fields its `schema-mismatch` strips, and nothing else
    /// changes: without any (or with an empty `missingFields` in whatever fault) the answer is left as it is,
    /// where ours without operations drifts at random. A `target` that names what drifts (`list`, `result`)
    /// is ours, not a peer's target tool.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        let none_missing = entry
            .get("missing_fields")
            .is_some_and(|fields| fields.as_array().is_some_and(Vec::is_empty));
        let peer_type = matches!(
            entry.type_name.as_str(),
            "schema-mismatch" | "schema_mismatch"
        );
        entry.rename("missing_fields", "drop_fields");
        let operations = ["drop_fields", "rename", "retype", "nullify", "wrap"];
        let changes_something = operations.iter().any(|key| {
            entry.get(key).is_some_and(|value| match value {
                serde_json::Value::Array(items) => !items.is_empty(),
                serde_json::Value::Object(map) => !map.is_empty(),
                serde_json::Value::Null => false,
                _ => true,
            })
        });
        if (none_missing || peer_type) && !changes_something {
            entry.set("probability", 0.0.into());
        }
        if entry
            .get("target")
            .is_some_and(|t| DriftTarget::deserialize(t).is_ok())
        {
            entry.claim("target");
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), FaultError> {
        if let Some((from, _)) = self.rename.iter().find(|(from, to)| from == to) {
            return Err(FaultError::RenameToItself(from.clone()));
        }
        Ok(())
    }

    /// With `target: list`, the trigger's `tools` pick the tools of the listing whose schemas drift.
    fn scope(&self) -> Scope {
        match self.target {
            DriftTarget::List => Scope::Listing,
            DriftTarget::Result => Scope::Call,
        }
    }

    fn describe(&self) -> String {
        let what = match self.target {
            DriftTarget::Result => "the result",
            DriftTarget::List => "the tools' schemas in tools/list",
        };
        if self.has_operations() {
            format!(
                "change {what}: drop {:?}, rename {:?}, retype {:?}, nullify {:?}{}",
                self.drop_fields,
                self.rename,
                self.retype,
                self.nullify,
                self.wrap
                    .as_ref()
                    .map(|w| format!(", wrap in `{w}`"))
                    .unwrap_or_default()
            )
        } else {
            format!("change {what}: rename one key and retype another (seeded)")
        }
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Rewrite
    }

    fn rewrite(&self, response: &mut Value, call: &CallContext<'_>) {
        if self.target == DriftTarget::List {
            self.rewrite_list(response, call, |tool| call.selects_tool(tool));
            return;
        }
        let keys: Vec<String> = response
            .pointer("/result/structuredContent")
            .and_then(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        let drift = self.operations_for(&keys, call, "");
        edit_payloads(response, |payload| {
            // Without structuredContent, the seeded drift picks from the text payload's own keys.
            let drift = if keys.is_empty() && !self.has_operations() {
                let own: Vec<String> = payload
                    .as_object()
                    .map(|o| o.keys().cloned().collect())
                    .unwrap_or_default();
                self.operations_for(&own, call, "")
            } else {
                drift.clone()
            };
            if let Value::Object(object) = payload {
                drift.apply(object);
            }
            if let Some(key) = &drift.wrap {
                let inner = payload.take();
                *payload = serde_json::json!({ key.clone(): inner });
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call() -> CallContext<'static> {
        CallContext::for_tool("get_item", 1).seed(42).roll(0.1)
    }

    #[test]
    fn drops_renames_and_retypes_both_views() {
        let drift = SchemaDrift {
            drop_fields: vec!["price".into()],
            rename: [("name".to_string(), "title".to_string())].into(),
            retype: [("id".to_string(), JsonType::String)].into(),
            ..Default::default()
        };
        let mut response = serde_json::json!({"jsonrpc":"2.0","id":1,"result":{
            "content":[{"type":"text","text":"{\"id\":7,\"name\":\"a\",\"price\":3}"}],
            "structuredContent":{"id":7,"name":"a","price":3}}});
        drift.rewrite(&mut response, &call());
        let expected = serde_json::json!({"id":"7","title":"a"});
        assert_eq!(response["result"]["structuredContent"], expected);
        let text: Value =
            serde_json::from_str(response["result"]["content"][0]["text"].as_str().unwrap())
                .unwrap();
        assert_eq!(text, expected);
    }

    #[test]
    fn list_target_drifts_the_selected_tools_schemas() {
        let drift = SchemaDrift {
            target: DriftTarget::List,
            drop_fields: vec!["price".into()],
            rename: [("name".to_string(), "title".to_string())].into(),
            retype: [("id".to_string(), JsonType::String)].into(),
            ..Default::default()
        };
        let schema = serde_json::json!({"type":"object","properties":{
            "id":{"type":"integer","description":"the id"},"name":{"type":"string"},"price":{"type":"number"}},
            "required":["id","name","price"]});
        let mut response = serde_json::json!({"result":{"tools":[
            {"name":"get_item","inputSchema":schema.clone(),"outputSchema":schema.clone()},
            {"name":"echo","inputSchema":schema.clone()}]}});
        drift.rewrite_list(&mut response, &call(), |t| t == "get_item");
        let expected = serde_json::json!({"type":"object","properties":{
            "id":{"type":"string","description":"the id"},"title":{"type":"string"}},
            "required":["id","title"]});
        assert_eq!(response["result"]["tools"][0]["inputSchema"], expected);
        assert_eq!(response["result"]["tools"][0]["outputSchema"], expected);
        assert_eq!(response["result"]["tools"][1]["inputSchema"], schema);
        // Without operations: a seeded rename in each schema.
        let mut response =
            serde_json::json!({"result":{"tools":[{"name":"t","inputSchema":schema}]}});
        SchemaDrift {
            target: DriftTarget::List,
            ..Default::default()
        }
        .rewrite(&mut response, &call());
        let properties = response["result"]["tools"][0]["inputSchema"]["properties"]
            .as_object()
            .unwrap();
        assert!(properties.keys().any(|k| k.ends_with("_v2")), "{response}");
    }

    #[test]
    fn seeded_drift_changes_a_key() {
        let mut response = serde_json::json!({"result":{"structuredContent":{"id":7,"name":"a"}}});
        SchemaDrift::default().rewrite(&mut response, &call());
        let keys: Vec<&String> = response["result"]["structuredContent"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert!(keys.iter().any(|k| k.ends_with("_v2")), "{response}");
    }
}
