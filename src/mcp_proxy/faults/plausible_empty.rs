//! `plausible_empty`: a result that looks right and holds nothing: the payload's lists emptied, else its
//! numbers zeroed, else its strings blanked (top-level fields of `structuredContent` and of JSON text alike;
//! `empties` picks one kind). Types are kept, so the result still validates against an `outputSchema` that
//! constrains types; only meaning tells.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Action, CallContext, McpFaultSpec, edit_payloads};

/// What a plausible empty result empties.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Empties {
    /// The lists when there are any, else the numbers, else the strings.
    #[default]
    Auto,
    /// Every list becomes `[]`.
    Lists,
    /// Every number becomes 0.
    Numbers,
    /// Every string becomes "".
    Strings,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlausibleEmpty {
    #[serde(default)]
    pub empties: Empties,
}

fn empty(payload: &mut Value, empties: Empties) {
    let Value::Object(fields) = payload else {
        if let Value::Array(items) = payload {
            items.clear();
        }
        return;
    };
    let has = |test: fn(&Value) -> bool| fields.values().any(test);
    let empties = match empties {
        Empties::Auto if has(Value::is_array) => Empties::Lists,
        Empties::Auto if has(Value::is_number) => Empties::Numbers,
        Empties::Auto => Empties::Strings,
        chosen => chosen,
    };
    for value in fields.values_mut() {
        match (empties, &mut *value) {
            (Empties::Lists, Value::Array(items)) => items.clear(),
            (Empties::Numbers, Value::Number(n)) => *n = 0.into(),
            (Empties::Strings, Value::String(s)) => s.clear(),
            _ => {}
        }
    }
}

impl McpFaultSpec for PlausibleEmpty {
    fn wire() -> &'static str {
        "the top-level lists of `structuredContent` and JSON text become `[]`, else its numbers 0, else its \
        strings \"\" (`empties`: `auto`, `lists`, `numbers`, `strings`); not an error, nothing marked"
    }

    fn describe(&self) -> String {
        format!("answer a plausible empty result ({:?})", self.empties)
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Rewrite
    }

    fn rewrite(&self, response: &mut Value, _call: &CallContext<'_>) {
        edit_payloads(response, |payload| empty(payload, self.empties));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_first_then_numbers_then_strings() {
        let mut listing = json!({"items": [1, 2], "count": 2});
        empty(&mut listing, Empties::Auto);
        assert_eq!(listing, json!({"items": [], "count": 2}));
        let mut echo = json!({"text": "hi", "length": 2});
        empty(&mut echo, Empties::Auto);
        assert_eq!(echo, json!({"text": "hi", "length": 0}));
        let mut named = json!({"name": "x", "ok": true});
        empty(&mut named, Empties::Auto);
        assert_eq!(named, json!({"name": "", "ok": true}));
    }
}
