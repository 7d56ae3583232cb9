//! `partial_result`: silent truncation. Keeps `keep_ratio` of the content blocks, of the array items in
//! `structuredContent` (and in JSON text), or of a plain text's characters. Not marked partial unless `mark`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Action, CallContext, FaultError, McpFaultSpec, check_probability, edit_payloads, result_mut,
};

fn half() -> f64 {
    0.5
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PartialResult {
    #[serde(default = "half")]
    pub keep_ratio: f64,
    #[serde(default)]
    pub mark: bool,
}

impl PartialResult {

    fn keep(&self, len: usize) -> usize {
        ((len as f64) * self.keep_ratio).floor() as usize
    }

    fn truncate_arrays(&self, payload: &mut Value) {
        match payload {
            Value::Array(items) => items.truncate(self.keep(items.len())),
            Value::Object(object) => {
                for value in object.values_mut() {
                    if let Value::Array(items) = value {
                        items.truncate(self.keep(items.len()));
                    }
                }
            }
            _ => {}
        }
    }
}

impl McpFaultSpec for PartialResult {
    fn validate(&self) -> Result<(), FaultError> {
        check_probability("keep_ratio", self.keep_ratio)
    }

    fn describe(&self) -> String {
        format!(
            "keep {:.0}% of the result, silently",
            self.keep_ratio * 100.0
        )
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Rewrite
    }

    fn rewrite(&self, response: &mut Value, _call: &CallContext<'_>) {
        let has_structured = response.pointer("/result/structuredContent").is_some();
        let mut json_text = false;
        edit_payloads(response, |payload| {
            json_text = true;
            self.truncate_arrays(payload)
        });
        let Some(result) = result_mut(response) else {
            return;
        };
        if let Some(Value::Array(blocks)) = result.get_mut("content") {
            if blocks.len() > 1 {
                let keep = self.keep(blocks.len()).max(1);
                blocks.truncate(keep);
            } else if !has_structured && !json_text {
                for block in blocks.iter_mut() {
                    if let Some(Value::String(text)) = block.get_mut("text") {
                        let keep = self.keep(text.chars().count());
                        *text = text.chars().take(keep).collect();
                    }
                }
            }
        }
        if self.mark {
            let meta = result
                .entry("_meta")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("fault/partial".into(), Value::Bool(true));
            }
        }
    }
}
