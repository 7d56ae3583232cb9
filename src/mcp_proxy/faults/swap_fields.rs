//! `swap_fields`: two sibling fields of the same JSON type (both strings, both integers, both fractional
//! numbers, both booleans) exchange their values in the result, in `structuredContent` and in JSON text alike.
//! The pair is picked by the call's seeded roll; a result without such a pair passes unchanged. Types are
//! kept, so the result still validates against an `outputSchema` that constrains types; only meaning tells.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Action, CallContext, McpFaultSpec, edit_payloads};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SwapFields {}

/// The JSON type a swap keeps: integers and fractional numbers apart, as a schema's `integer` tells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Bool,
    Integer,
    Fraction,
    String,
}

fn kind(value: &Value) -> Option<Kind> {
    match value {
        Value::Bool(_) => Some(Kind::Bool),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(Kind::Integer),
        Value::Number(_) => Some(Kind::Fraction),
        Value::String(_) => Some(Kind::String),
        _ => None,
    }
}

/// Every object of `value`, depth first, as the path of keys and indices to it.
fn objects(value: &Value, path: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    match value {
        Value::Object(map) => {
            out.push(path.clone());
            for (key, child) in map {
                path.push(Value::String(key.clone()));
                objects(child, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                path.push(Value::from(i));
                objects(child, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn object_at<'a>(value: &'a mut Value, path: &[Value]) -> Option<&'a mut Map<String, Value>> {
    let mut at = value;
    for step in path {
        at = match step {
            Value::String(key) => at.get_mut(key.as_str())?,
            Value::Number(i) => at.get_mut(usize::try_from(i.as_u64()?).ok()?)?,
            _ => return None,
        };
    }
    at.as_object_mut()
}

/// The candidate pairs of `payload`: (object path, first key, second key), in a fixed order.
fn pairs(payload: &Value) -> Vec<(Vec<Value>, String, String)> {
    let mut paths = Vec::new();
    objects(payload, &mut Vec::new(), &mut paths);
    let mut out = Vec::new();
    for path in paths {
        let mut payload = payload.clone();
        let Some(object) = object_at(&mut payload, &path) else {
            continue;
        };
        let mut keys: Vec<(Kind, &String)> = object
            .iter()
            .filter_map(|(key, value)| Some((kind(value)?, key)))
            .collect();
        keys.sort();
        for (i, (kind_a, a)) in keys.iter().enumerate() {
            for (kind_b, b) in &keys[i + 1..] {
                if kind_a == kind_b && object[a.as_str()] != object[b.as_str()] {
                    out.push((path.clone(), (*a).clone(), (*b).clone()));
                }
            }
        }
    }
    out
}

impl McpFaultSpec for SwapFields {
    fn wire() -> &'static str {
        "two sibling fields of the same JSON type (string, integer, fractional number, boolean) exchange \
        their values in `structuredContent` and JSON text; the pair is picked by the call's seeded roll; \
        unchanged when no pair differs"
    }

    fn describe(&self) -> String {
        "swap the values of two fields of the same type".to_owned()
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Rewrite
    }

    fn rewrite(&self, response: &mut Value, call: &CallContext<'_>) {
        let roll = call.roll_for("swap_fields");
        edit_payloads(response, |payload| {
            let candidates = pairs(payload);
            if candidates.is_empty() {
                return;
            }
            let pick = ((roll * candidates.len() as f64) as usize).min(candidates.len() - 1);
            let (path, a, b) = &candidates[pick];
            if let Some(object) = object_at(payload, path)
                && let (Some(first), Some(second)) = (object.remove(a), object.remove(b))
            {
                object.insert(a.clone(), second);
                object.insert(b.clone(), first);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(ordinal: u64) -> CallContext<'static> {
        CallContext::for_tool("get_item", ordinal).seed(7)
    }

    #[test]
    fn only_siblings_of_one_type_trade_values() {
        let item = json!({"id": 7, "name": "Smart Widget 7", "price": 554.33,
            "dimensions": {"width_cm": 17.5, "height_cm": 12.0}});
        let mut response = json!({"result": {"structuredContent": item.clone(),
            "content": [{"type": "text", "text": item.to_string()}]}});
        SwapFields {}.rewrite(&mut response, &call(1));
        let swapped = &response["result"]["structuredContent"];
        assert_eq!(
            swapped["dimensions"],
            json!({"width_cm": 12.0, "height_cm": 17.5})
        );
        assert_eq!(
            (swapped["id"].clone(), swapped["price"].clone()),
            (json!(7), json!(554.33))
        );
        let text: Value =
            serde_json::from_str(response["result"]["content"][0]["text"].as_str().unwrap())
                .unwrap();
        assert_eq!(&text, swapped);
    }

    #[test]
    fn a_result_without_a_pair_passes_unchanged() {
        let mut response = json!({"result": {"structuredContent": {"text": "a", "length": 1}}});
        let before = response.clone();
        SwapFields {}.rewrite(&mut response, &call(1));
        assert_eq!(response, before);
    }
}
