//! Edits of a response that the faults which rewrite one share.

use serde_json::{Map, Value};

/// The `result` object of a JSON-RPC response, when it is one.
pub(crate) fn result_mut(response: &mut Value) -> Option<&mut Map<String, Value>> {
    response.get_mut("result").and_then(Value::as_object_mut)
}

/// Applies `edit` to `structuredContent` and to every text block whose text is a JSON value, keeping the two
/// views of a tool result consistent.
pub(crate) fn edit_payloads(response: &mut Value, mut edit: impl FnMut(&mut Value)) {
    let Some(result) = result_mut(response) else {
        return;
    };
    if let Some(structured) = result.get_mut("structuredContent") {
        edit(structured);
    }
    if let Some(Value::Array(blocks)) = result.get_mut("content") {
        for block in blocks {
            if block.get("type").and_then(Value::as_str) != Some("text") {
                continue;
            }
            let Some(Value::String(text)) = block.get_mut("text") else {
                continue;
            };
            if let Ok(mut parsed) = serde_json::from_str::<Value>(text)
                && (parsed.is_object() || parsed.is_array())
            {
                edit(&mut parsed);
                *text = parsed.to_string();
            }
        }
    }
}

/// Removes from a `tools/list` response the tools `hidden` says are gone.
pub(crate) fn hide_listed_tools(response: &mut Value, hidden: impl Fn(&str) -> bool) {
    if let Some(Value::Array(tools)) = result_mut(response).and_then(|r| r.get_mut("tools")) {
        tools.retain(|tool| {
            !tool
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(&hidden)
        });
    }
}
