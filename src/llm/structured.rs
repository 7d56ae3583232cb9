//! JSON answers: ask for JSON under a schema, accept it bare or fenced, validate it, and on failure send
//! one repair request quoting what was wrong.

use serde_json::Value;

use super::{
    LlmError,
    chat::{ChatAnswer, ChatModel, Message, OutputSchema},
};

/// A validated answer, and whether it took a repair request to get it.
#[derive(Debug, Clone)]
pub struct JsonAnswer {
    pub value: Value,
    pub repaired: bool,
}

/// Extra checks beyond the schema (e.g. "the code parses"); `Err` is quoted in the repair request.
pub type AnswerCheck<'a> = dyn Fn(&Value) -> Result<(), String> + Send + Sync + 'a;

/// Told what was wrong with a first answer, before the repair request goes out.
pub type RepairNotice<'a> = dyn Fn(&str) + Send + Sync + 'a;

/// Asks `model` for JSON matching `schema` in at most `max_tokens` tokens, then checks it with `check`. One
/// repair round at most; an answer the provider cut at the limit is refused at once (a repair would be as
/// long).
pub async fn ask_json(
    model: &dyn ChatModel,
    messages: &[Message],
    schema: &OutputSchema,
    max_tokens: u32,
    check: Option<&AnswerCheck<'_>>,
    on_repair: Option<&RepairNotice<'_>>,
) -> Result<JsonAnswer, LlmError> {
    let validator = jsonschema::validator_for(&schema.schema)
        .map_err(|e| LlmError::Config(format!("schema '{}' is invalid: {e}", schema.name)))?;
    let truncated = |answer: &ChatAnswer| LlmError::Truncated {
        provider: model.provider(),
        model: model.model().to_owned(),
        limit: max_tokens,
        written: answer.written,
    };
    let first = model.chat_json(messages, schema, max_tokens).await?;
    let problem = match judge(&first.text, schema, &validator, check) {
        Ok(value) => {
            tracing::info!(model = model.model(), "answer valid first time");
            return Ok(JsonAnswer {
                value,
                repaired: false,
            });
        }
        Err(_) if first.cut => {
            tracing::info!(
                model = model.model(),
                max_tokens,
                "answer cut at the token limit"
            );
            return Err(truncated(&first));
        }
        Err(problem) => problem,
    };
    tracing::info!(model = model.model(), %problem, "answer rejected; asking for a repair");
    if let Some(notify) = on_repair {
        notify(&problem);
    }
    let mut repair = messages.to_vec();
    repair.push(Message::assistant(first.text.clone()));
    repair.push(Message::user(format!(
        "Your answer was rejected: {problem}\n\nReply again with only the corrected JSON, matching this \
         JSON Schema exactly:\n{}",
        serde_json::to_string(&schema.schema).unwrap_or_default()
    )));
    let second = model.chat_json(&repair, schema, max_tokens).await?;
    match judge(&second.text, schema, &validator, check) {
        Ok(value) => {
            tracing::info!(model = model.model(), "answer valid after one repair");
            Ok(JsonAnswer {
                value,
                repaired: true,
            })
        }
        Err(_) if second.cut => {
            tracing::info!(
                model = model.model(),
                max_tokens,
                "repair cut at the token limit"
            );
            Err(truncated(&second))
        }
        Err(problem) => {
            tracing::info!(model = model.model(), %problem, "answer invalid after one repair");
            Err(LlmError::InvalidAnswer {
                provider: model.provider(),
                model: model.model().to_owned(),
                detail: problem,
            })
        }
    }
}

/// The answer's JSON if it parses, matches the schema and passes `check`; else what was wrong.
fn judge(
    answer: &str,
    schema: &OutputSchema,
    validator: &jsonschema::Validator,
    check: Option<&AnswerCheck<'_>>,
) -> Result<Value, String> {
    let value = extract_json(answer).ok_or_else(|| {
        let preview: String = answer.trim().chars().take(80).collect();
        format!("the answer is not JSON (it starts with {preview:?})")
    })?;
    let value = wrap_bare_list(schema, value);
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .take(5)
        .map(|e| {
            // The message quotes the offending value, which may be a whole file: keep it short.
            let message = shorten(&e.to_string(), 200);
            let at = e.instance_path().to_string();
            if at.is_empty() {
                message
            } else {
                format!("at {at}: {message}")
            }
        })
        .collect();
    if !errors.is_empty() {
        return Err(format!(
            "the JSON does not match the schema: {}",
            errors.join("; ")
        ));
    }
    if let Some(check) = check {
        check(&value).map_err(|problem| shorten(&problem, 600))?;
    }
    Ok(value)
}

fn shorten(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(max_chars).collect();
    short.push('…');
    short
}

/// A bare array answering a schema whose root is an object with one required array property (OpenAI wants
/// an object at the root, so lists travel wrapped): wrap it rather than reject it.
fn wrap_bare_list(schema: &OutputSchema, value: Value) -> Value {
    let Value::Array(_) = value else {
        return value;
    };
    let required = schema.schema.get("required").and_then(Value::as_array);
    let Some([Value::String(key)]) = required.map(Vec::as_slice) else {
        return value;
    };
    let is_list = schema.schema["properties"][key.as_str()]["type"] == "array";
    if is_list {
        let mut wrapped = serde_json::Map::new();
        wrapped.insert(key.clone(), value);
        Value::Object(wrapped)
    } else {
        value
    }
}

/// The JSON value in a model's answer: the whole text, a ```json fenced block, or the first balanced
/// object/array in the text.
pub fn extract_json(answer: &str) -> Option<Value> {
    let trimmed = answer.trim();
    if let Ok(value) = serde_json::from_str(trimmed) {
        return Some(value);
    }
    for block in fenced_blocks(trimmed) {
        if let Ok(value) = serde_json::from_str(block.trim()) {
            return Some(value);
        }
    }
    // Prose around the JSON: parse the first value that starts at a `{` or `[`.
    for (start, _) in trimmed.match_indices(['{', '[']) {
        let mut stream = serde_json::Deserializer::from_str(&trimmed[start..]).into_iter::<Value>();
        if let Some(Ok(value)) = stream.next()
            && (value.is_object() || value.is_array())
        {
            return Some(value);
        }
    }
    None
}

/// The contents of the markdown code fences in `text`, in order.
pub fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after_ticks = &rest[open + 3..];
        // Skip the info string (e.g. "json") up to the end of the line.
        let Some(line_end) = after_ticks.find('\n') else {
            break;
        };
        let body = &after_ticks[line_end + 1..];
        let Some(close) = find_closing_fence(body) else {
            blocks.push(body);
            break;
        };
        blocks.push(&body[..close]);
        rest = &body[close + 3..];
    }
    blocks
}

/// The closing fence: "```" at the start of a line.
fn find_closing_fence(body: &str) -> Option<usize> {
    if body.starts_with("```") {
        return Some(0);
    }
    body.match_indices("\n```").next().map(|(i, _)| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_fenced_and_prose_wrapped_json_are_found() {
        assert_eq!(extract_json(r#"{"a":1}"#).unwrap()["a"], 1);
        assert_eq!(
            extract_json("Here:\n```json\n{\"a\": 2}\n```\nbye").unwrap()["a"],
            2
        );
        assert_eq!(
            extract_json("The answer is {\"a\": 3} as asked").unwrap()["a"],
            3
        );
        assert!(extract_json("no json here").is_none());
    }

    #[test]
    fn fences_inside_strings_do_not_cut_the_block() {
        let text = "```json\n{\"code\": \"x = '```'\"}\n```";
        assert_eq!(extract_json(text).unwrap()["code"], "x = '```'");
    }
}
