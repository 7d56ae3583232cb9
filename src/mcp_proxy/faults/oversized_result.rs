//! `oversized_result`: a tool result that floods the agent's context, as a tool that dumps a whole file or log
//! does. A text block of filler is appended so that the result's text blocks hold `bytes` bytes in all. The
//! blocks the server sent and its `structuredContent` are kept as they were, so the result still matches the
//! tool's output schema; a result already that large, or an error, passes untouched.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Action, CallContext, FaultError, McpFaultSpec, result_mut};

/// The largest `bytes`: far past any model's context, still a line a client can read.
const MAX_BYTES: u64 = 16 * 1024 * 1024;

fn one_mebibyte() -> u64 {
    1024 * 1024
}

fn lorem() -> String {
    "lorem ipsum dolor sit amet ".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OversizedResult {
    /// The UTF-8 size the result's text is brought to.
    #[serde(default = "one_mebibyte")]
    pub bytes: u64,
    /// The text repeated to fill.
    #[serde(default = "lorem")]
    pub filler: String,
}

impl OversizedResult {
    /// `len` bytes of the filler repeated, cut at a character boundary and made up with spaces.
    fn fill(&self, len: usize) -> String {
        let mut text = self.filler.repeat(len / self.filler.len() + 1);
        let mut cut = len;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.extend(std::iter::repeat_n(' ', len - cut));
        text
    }
}

impl McpFaultSpec for OversizedResult {
    fn wire() -> &'static str {
        "a tool result that floods the agent's context: a text block of `filler` (`lorem ipsum dolor sit amet \
        `, repeated) is appended so the result's text blocks hold `bytes` (1 MiB; at most 16 MiB) in all; the \
        server's own blocks and `structuredContent` are kept, so the result still matches its output schema"
    }

    fn validate(&self) -> Result<(), FaultError> {
        if self.bytes > MAX_BYTES {
            return Err(FaultError::Value {
                field: "bytes",
                rule: "be at most 16777216 (16 MiB)",
                got: self.bytes.to_string(),
            });
        }
        if self.filler.is_empty() {
            return Err(FaultError::Rule {
                field: "filler",
                rule: "not be empty",
            });
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!("pad the result's text to {} bytes of filler", self.bytes)
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Rewrite
    }

    fn rewrite(&self, response: &mut Value, _call: &CallContext<'_>) {
        let Some(result) = result_mut(response) else {
            return;
        };
        let Value::Array(blocks) = result
            .entry("content")
            .or_insert_with(|| Value::Array(Vec::new()))
        else {
            return;
        };
        let text_bytes: usize = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .map(str::len)
            .sum();
        let wanted = usize::try_from(self.bytes).unwrap_or(usize::MAX);
        if text_bytes < wanted {
            blocks.push(
                serde_json::json!({ "type": "text", "text": self.fill(wanted - text_bytes) }),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call() -> CallContext<'static> {
        CallContext::for_tool("get_item", 1).seed(1)
    }

    #[test]
    fn pads_the_text_to_the_size_and_keeps_the_rest() {
        let fault = OversizedResult {
            bytes: 1000,
            filler: "é-".into(),
        };
        let mut response = serde_json::json!({"jsonrpc":"2.0","id":1,"result":{
            "content":[{"type":"text","text":"{\"id\":7}"}],"structuredContent":{"id":7}}});
        fault.rewrite(&mut response, &call());
        let blocks = response["result"]["content"].as_array().unwrap();
        assert_eq!(blocks[0]["text"], "{\"id\":7}");
        let total: usize = blocks
            .iter()
            .map(|b| b["text"].as_str().unwrap().len())
            .sum();
        assert_eq!(total, 1000);
        assert_eq!(
            response["result"]["structuredContent"],
            serde_json::json!({"id":7})
        );
        // Already large enough, or an error: untouched.
        let before = response.clone();
        fault.rewrite(&mut response, &call());
        assert_eq!(response, before);
        let mut error =
            serde_json::json!({"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}});
        fault.rewrite(&mut error, &call());
        assert!(error.get("result").is_none());
    }
}
