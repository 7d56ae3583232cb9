//! LLM providers behind two small traits: [`ChatModel`] (chat, and chat answering JSON under a schema) and
//! [`Embedder`] (embeddings).
//!
//! Implementations: OpenAI-compatible on `async-openai` (OpenAI, OpenRouter, any base URL) and Ollama on
//! `ollama-rs`. Both share one HTTP transport with a request timeout and bounded retries with backoff and
//! jitter. Keys are read when a tool needs them, never at start-up; keys and prompt text are logged at debug
//! level at most.

mod chat;
mod embed;
mod error;
mod ollama;
mod openai;
mod providers;
mod settings;
pub mod structured;
pub mod transport;

pub use chat::{
    ChatAnswer, ChatModel, Message, OutputSchema, REASONING_ALLOWANCE, Role, is_reasoning_model,
    output_limit,
};
pub use embed::Embedder;
pub use error::LlmError;
pub use providers::{chat_model, chat_model_with_policy, embedder, embedder_with_policy};
pub use settings::{
    COMPATIBLE_KEY_ENV, DEFAULT_CHAT_MODEL, DEFAULT_EMBED_DIMENSION, DEFAULT_EMBED_MODEL,
    LlmSettings, MAX_RETRIES_ENV, MAX_TOKENS_ENV, OLLAMA_DEFAULT_HOST, OLLAMA_HOST_ENV,
    OPENAI_BASE_URL, OPENAI_HOST, OPENAI_KEY_ENV, OPENROUTER_BASE_URL, OPENROUTER_HOST,
    OPENROUTER_KEY_ENV, Provider, RETRY_WINDOW_ENV, TIMEOUT_ENV,
};
pub use structured::{AnswerCheck, JsonAnswer, RepairNotice, ask_json};
pub use transport::RetryPolicy;
