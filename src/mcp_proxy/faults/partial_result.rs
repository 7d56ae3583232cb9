//! `partial_result` (alias `corrupt`, SmartAI's): silent truncation. Keeps `keep_ratio` of the content blocks,
//! of the array items in `structuredContent` (and in JSON text), or of a plain text's characters; with
//! `cut: text`, of every text block's characters and nothing else. Not marked partial unless `mark`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    Action, CallContext, FaultError, Format, McpFaultSpec, PeerEntry, PeerType, PeerValueError,
    check_probability, edit_payloads, result_mut,
};

fn half() -> f64 {
    0.5
}

/// What a partial result keeps `keep_ratio` of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cut {
    /// The content blocks when there are several, else the arrays of `structuredContent` and of JSON text,
    /// else a plain text's characters.
    #[default]
    Auto,
    /// The characters of every text block (at least one each); `structuredContent` is left as it is.
    Text,
}

fn is_auto(cut: &Cut) -> bool {
    *cut == Cut::Auto
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PartialResult {
    #[serde(default = "half")]
    pub keep_ratio: f64,
    #[serde(default, skip_serializing_if = "is_auto")]
    pub cut: Cut,
    #[serde(default)]
    pub mark: bool,
}

impl PartialResult {
    /// Cuts every text block to `keep_ratio` of its characters, at least one.
    fn cut_texts(&self, result: &mut serde_json::Map<String, Value>) {
        let Some(Value::Array(blocks)) = result.get_mut("content") else {
            return;
        };
        for block in blocks {
            if block.get("type").and_then(Value::as_str) != Some("text") {
                continue;
            }
            if let Some(Value::String(text)) = block.get_mut("text") {
                let keep = self.keep(text.chars().count()).max(1);
                *text = text.chars().take(keep).collect();
            }
        }
    }

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
    fn wire() -> &'static str {
        "keeps `keep_ratio` (0.5) of the content blocks, of arrays in `structuredContent`/JSON text, or of a \
        plain text; with `cut: text` (`corrupt`'s default) of every text block's characters (at least one), \
        `structuredContent` untouched; not marked unless `mark`"
    }

    fn peer_types() -> &'static [PeerType] {
        const {
            &[
                PeerType::mcp_chaos("partial_result", &["tools", "probability"]),
                PeerType::of(Format::SmartAi, "corrupt"),
            ]
        }
    }

    /// SmartAI's `corrupt` halves every text block.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        if entry.type_name == "corrupt" {
            entry.set_default("cut", "text".into());
        }
        Ok(())
    }

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
        if self.cut == Cut::Auto {
            edit_payloads(response, |payload| {
                json_text = true;
                self.truncate_arrays(payload)
            });
        }
        let Some(result) = result_mut(response) else {
            return;
        };
        if self.cut == Cut::Text {
            self.cut_texts(result);
        } else if let Some(Value::Array(blocks)) = result.get_mut("content") {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_text_halves_every_text_block_as_smartai_corrupt_does() {
        let fault = PartialResult {
            keep_ratio: 0.5,
            cut: Cut::Text,
            mark: false,
        };
        let mut response = serde_json::json!({"result":{"content":[
            {"type":"text","text":"abcdefg"},{"type":"image","data":"x"},{"type":"text","text":"é"}],
            "structuredContent":{"items":[1,2,3,4]}}});
        let call = CallContext::for_tool("t", 1);
        fault.rewrite(&mut response, &call);
        assert_eq!(response["result"]["content"][0]["text"], "abc");
        assert_eq!(response["result"]["content"][1]["data"], "x");
        assert_eq!(response["result"]["content"][2]["text"], "é");
        assert_eq!(
            response["result"]["structuredContent"]["items"],
            serde_json::json!([1, 2, 3, 4])
        );
    }
}
