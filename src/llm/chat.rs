//! Chat: the messages, the answer as written, the trait every chat model implements with the schema it
//! answers under, and the room a reasoning model needs to think.

use futures::future::BoxFuture;
use serde_json::Value;

use super::LlmError;

/// Who speaks in a chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: content.into(),
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
        }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// A model's answer as written, and whether the provider stopped it at the token limit.
#[derive(Debug, Clone)]
pub struct ChatAnswer {
    pub text: String,
    /// The provider ended the answer for its length (OpenAI `finish_reason: length`, Ollama
    /// `done_reason: length`): at `max_tokens`, or when the context window filled. It is cut, not finished.
    pub cut: bool,
    /// The tokens written, when the provider says (OpenAI `usage.completion_tokens`, Ollama `eval_count`).
    pub written: Option<u32>,
}
/// A JSON Schema the answer must match, with the name providers want for it.
#[derive(Debug, Clone)]
pub struct OutputSchema {
    /// a-z, A-Z, 0-9, `_` or `-`, at most 64 characters (OpenAI's rule).
    pub name: String,
    pub schema: Value,
    /// OpenAI strict mode: only for schemas where every property is required and no object is open.
    pub strict: bool,
}

/// A chat model. `chat_json` asks the provider for JSON under `schema` (OpenAI `response_format`
/// json_schema, Ollama `format`) and returns the answer's text as written: parsing and validation are
/// [`ask_json`](super::ask_json)'s job, so that a bad answer can be repaired.
pub trait ChatModel: Send + Sync {
    /// One answer to `messages`, asked of the provider as JSON of `schema`'s shape, in at most
    /// `max_tokens` tokens (see [`ChatModel::output_limit`]).
    fn chat_json<'a>(
        &'a self,
        messages: &'a [Message],
        schema: &'a OutputSchema,
        max_tokens: u32,
    ) -> BoxFuture<'a, Result<ChatAnswer, LlmError>>;
    /// The tokens to ask for, for an answer a task says can need `budget`: `FAULT_LLM_MAX_TOKENS` when set,
    /// else the budget plus the room a reasoning model thinks in ([`output_limit`]).
    fn output_limit(&self, budget: u32) -> u32;
    /// The chat model's name, as sent to the provider.
    fn model(&self) -> &str;
    /// The provider's name for messages: "OpenAI", "OpenRouter", "Ollama" or "OpenAI-compatible server".
    fn provider(&self) -> &'static str;
}

/// The tokens a reasoning model may spend thinking before it answers, on top of the answer's budget: the
/// room OpenAI advises to reserve for its reasoning models.
pub const REASONING_ALLOWANCE: u32 = 25_000;

/// Whether `model` thinks in output tokens before answering (they count against the limit): OpenAI's o1, o3,
/// o4 and gpt-5 families (also as `openai/…` on OpenRouter) and models named as reasoners (`…r1…`,
/// `…reason…`, `…think…`: DeepSeek-R1, deepseek-reasoner, Qwen3 thinking).
pub fn is_reasoning_model(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|family| name.starts_with(family))
        || ["r1", "reason", "think"]
            .iter()
            .any(|word| name.contains(word))
}

/// The output-token limit of one answer: `configured` (`FAULT_LLM_MAX_TOKENS`) when set, else `budget`
/// plus [`REASONING_ALLOWANCE`] for a reasoning model.
pub fn output_limit(configured: Option<u32>, model: &str, budget: u32) -> u32 {
    configured.unwrap_or_else(|| {
        if is_reasoning_model(model) {
            budget.saturating_add(REASONING_ALLOWANCE)
        } else {
            budget
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_models_get_room_to_think_and_the_setting_wins() {
        for model in [
            "o4-mini",
            "openai/o3",
            "gpt-5-nano",
            "deepseek-r1:7b",
            "deepseek-reasoner",
        ] {
            assert_eq!(
                output_limit(None, model, 600),
                600 + REASONING_ALLOWANCE,
                "{model}"
            );
        }
        for model in ["gpt-4o-mini", "smollm2", "llama3.2:1b", "openai/gpt-4.1"] {
            assert_eq!(output_limit(None, model, 600), 600, "{model}");
        }
        assert_eq!(output_limit(Some(50), "o4-mini", 600), 50);
    }
}
