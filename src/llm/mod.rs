//! LLM providers behind two small traits: [`ChatModel`] (chat, and chat answering JSON under a schema) and
//! [`Embedder`] (embeddings).
//!
//! Implementations: OpenAI-compatible on `async-openai` (OpenAI, OpenRouter, any base URL) and Ollama on
//! `ollama-rs`. Both share one HTTP transport with a request timeout and bounded retries with backoff and
//! jitter. Keys are read when a tool needs them, never at start-up; keys and prompt text are logged at debug
//! level at most.

mod ollama;
mod openai;
pub mod structured;
pub mod transport;

use std::sync::Arc;

use futures::future::BoxFuture;

use url::Url;

pub use structured::{AnswerCheck, JsonAnswer, OutputSchema, RepairNotice, ask_json};
pub use transport::{MAX_RETRIES_ENV, MAX_TOKENS_ENV, RETRY_WINDOW_ENV, RetryPolicy, TIMEOUT_ENV};

/// OpenAI's API key variable.
pub const OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";
/// OpenRouter's API key variable.
pub const OPENROUTER_KEY_ENV: &str = "OPENROUTER_API_KEY";
/// The key sent to a custom base URL (an OpenAI-compatible server); the OpenAI and OpenRouter keys never are.
pub const COMPATIBLE_KEY_ENV: &str = "FAULT_LLM_API_KEY";
/// The hosts the OpenAI and OpenRouter keys are sent to (over https only).
pub const OPENAI_HOST: &str = "api.openai.com";
pub const OPENROUTER_HOST: &str = "openrouter.ai";
/// Ollama's host variable (`host[:port]` or a URL).
pub const OLLAMA_HOST_ENV: &str = "OLLAMA_HOST";

pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
pub const OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";
pub const OLLAMA_DEFAULT_HOST: &str = "http://localhost:11434";

pub const DEFAULT_CHAT_MODEL: &str = "o4-mini";
pub const DEFAULT_EMBED_MODEL: &str = "text-embedding-3-small";
pub const DEFAULT_EMBED_DIMENSION: u32 = 1536;

/// Who answers: OpenAI (or any OpenAI-compatible server at a base URL), OpenRouter, or Ollama.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Provider {
    #[default]
    OpenAi,
    OpenRouter,
    Ollama,
}

/// The models and where to reach them; the chat model and the embedder are built from these.
#[derive(Debug, Clone)]
pub struct LlmSettings {
    pub provider: Provider,
    /// Chat model used by the scoring and suggestion tools.
    pub chat_model: String,
    /// Embedding model used by the source index.
    pub embed_model: String,
    /// Dimension of the embedding model's vectors.
    pub embed_dimension: u32,
    /// Base URL of the chat API (an OpenAI-compatible server, or the Ollama host).
    pub base_url: Option<Url>,
    /// Base URL of the embeddings API; `None` means `base_url`.
    pub embed_base_url: Option<Url>,
}

impl Default for LlmSettings {
    fn default() -> Self {
        Self {
            provider: Provider::default(),
            chat_model: DEFAULT_CHAT_MODEL.into(),
            embed_model: DEFAULT_EMBED_MODEL.into(),
            embed_dimension: DEFAULT_EMBED_DIMENSION,
            base_url: None,
            embed_base_url: None,
        }
    }
}

/// What went wrong talking to a model. Messages name the provider, the model or the setting involved.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("{provider} needs an API key: set the {var} environment variable for the fault agent")]
    MissingKey {
        provider: &'static str,
        var: &'static str,
    },
    #[error("invalid LLM setting: {0}")]
    Config(String),
    #[error(
        "{provider} did not answer within {secs}s (model '{model}', {url}); raise {env} if the model is slow",
        env = TIMEOUT_ENV
    )]
    Timeout {
        provider: &'static str,
        model: String,
        url: String,
        secs: u64,
    },
    #[error("cannot reach {provider} at {url} (model '{model}'): {detail}")]
    Unreachable {
        provider: &'static str,
        model: String,
        url: String,
        detail: String,
    },
    #[error(
        "{provider} at {url} refused the request for model '{model}' (HTTP {status}): {shown}{hint}",
        shown = if message.trim().is_empty() { "no message" } else { message.as_str() },
        hint = status_hint(*status)
    )]
    Api {
        provider: &'static str,
        model: String,
        url: String,
        status: u16,
        message: String,
    },
    #[error(
        "{provider} at {url} has no embeddings for model '{model}' ({detail}). Point embeddings at a server \
         that has them, e.g. an Ollama: --llm-embed-base-url http://localhost:11434/v1 --llm-embed-model \
         nomic-embed-text --llm-embed-model-dim 768 (or --llm-client ollama --llm-embed-base-url \
         http://localhost:11434), or OpenAI's text-embedding-3-small with OPENAI_API_KEY"
    )]
    NoEmbeddings {
        provider: &'static str,
        model: String,
        url: String,
        detail: String,
    },
    #[error(
        "embedding model '{model}' returned vectors of dimension {received}, expected {expected} \
         (set --llm-embed-model-dim {received} if that model is the one you want)"
    )]
    Dimension {
        model: String,
        expected: usize,
        received: usize,
    },
    #[error("{provider} returned an unusable answer for model '{model}': {detail}")]
    BadResponse {
        provider: &'static str,
        model: String,
        detail: String,
    },
    #[error(
        "model '{model}' ({provider}) did not give a valid answer after one repair request: {detail}"
    )]
    InvalidAnswer {
        provider: &'static str,
        model: String,
        detail: String,
    },
    #[error("{}", truncated_message(provider, model, *limit, *written))]
    Truncated {
        provider: &'static str,
        model: String,
        /// The output tokens asked for.
        limit: u32,
        /// The tokens the model wrote, when the provider says.
        written: Option<u32>,
    },
    #[error("the request was cancelled")]
    Cancelled,
}

/// What to do about a refusal with this HTTP status, after the retries of [`RetryPolicy`].
fn status_hint(status: u16) -> String {
    match status {
        401 | 403 => "; check the API key it was given".into(),
        429 => format!(
            "; it is limiting the rate, and still was after the retries ({MAX_RETRIES_ENV}, {RETRY_WINDOW_ENV}): wait, then run again"
        ),
        500..=599 => format!(
            "; it failed, and still did after the retries ({MAX_RETRIES_ENV}, {RETRY_WINDOW_ENV}): run again when it is back"
        ),
        _ => String::new(),
    }
}

/// Why a model's answer ended unfinished: at the limit asked for (it kept writing), or earlier, when its
/// context window filled up.
fn truncated_message(provider: &str, model: &str, limit: u32, written: Option<u32>) -> String {
    match written {
        Some(written) if written < limit => format!(
            "model '{model}' ({provider}) ran out of context after {written} tokens, before its JSON was complete \
             (the limit for this answer was {limit}); give it less input or use a model with a longer context"
        ),
        _ => format!(
            "model '{model}' ({provider}) was stopped at {limit} tokens, the most this answer can need, before \
             its JSON was complete; a model that writes at more length (or reasons before answering) needs a \
             higher limit: set {MAX_TOKENS_ENV} (tokens per answer)"
        ),
    }
}

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

/// A chat model. `chat_json` asks the provider for JSON under `schema` (OpenAI `response_format`
/// json_schema, Ollama `format`) and returns the answer's text as written: parsing and validation are
/// [`ask_json`]'s job, so that a bad answer can be repaired.
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

/// Embeddings for the source index.
pub trait Embedder: Send + Sync {
    /// One vector per text, in order, each of `dimension()` floats.
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, LlmError>>;
    /// The embedding model's name, as sent to the provider.
    fn model(&self) -> &str;
    /// The configured vector dimension.
    fn dimension(&self) -> usize;
}

/// The chat model the settings describe. Nothing is sent and no key is read until it is used.
pub fn chat_model(settings: &LlmSettings) -> Result<Arc<dyn ChatModel>, LlmError> {
    chat_model_with_policy(settings, RetryPolicy::from_env()?)
}

/// [`chat_model`] with an explicit timeout and retry policy.
pub fn chat_model_with_policy(
    settings: &LlmSettings,
    policy: RetryPolicy,
) -> Result<Arc<dyn ChatModel>, LlmError> {
    let transport = transport::ProviderTransport::new(policy)?;
    let model = settings.chat_model.clone();
    let max_tokens = transport::max_output_tokens_from_env()?;
    Ok(match settings.provider {
        Provider::Ollama => Arc::new(ollama::OllamaChat::new(
            ollama_host(settings.base_url.as_ref())?,
            model,
            max_tokens,
            transport,
        )),
        provider => Arc::new(openai::OpenAiChat::new(
            openai::Endpoint::for_chat(provider, settings.base_url.as_ref()),
            model,
            max_tokens,
            transport,
        )),
    })
}

/// The embedder the settings describe. Nothing is sent and no key is read until it is used.
pub fn embedder(settings: &LlmSettings) -> Result<Arc<dyn Embedder>, LlmError> {
    embedder_with_policy(settings, RetryPolicy::from_env()?)
}

/// [`embedder`] with an explicit timeout and retry policy.
pub fn embedder_with_policy(
    settings: &LlmSettings,
    policy: RetryPolicy,
) -> Result<Arc<dyn Embedder>, LlmError> {
    let transport = transport::ProviderTransport::new(policy)?;
    let model = settings.embed_model.clone();
    let dimension = settings.embed_dimension as usize;
    Ok(match settings.provider {
        Provider::Ollama => Arc::new(ollama::OllamaEmbedder::new(
            ollama_host(
                settings
                    .embed_base_url
                    .as_ref()
                    .or(settings.base_url.as_ref()),
            )?,
            model,
            dimension,
            transport,
        )),
        provider => Arc::new(openai::OpenAiEmbedder::new(
            openai::Endpoint::for_embeddings(
                provider,
                settings.base_url.as_ref(),
                settings.embed_base_url.as_ref(),
            ),
            model,
            dimension,
            transport,
        )),
    })
}

/// The Ollama host: the given URL, else `OLLAMA_HOST` (`host`, `host:port` or a URL), else localhost:11434.
fn ollama_host(base_url: Option<&Url>) -> Result<Url, LlmError> {
    if let Some(url) = base_url {
        return Ok(url.clone());
    }
    let Some(raw) = transport::non_empty_env(OLLAMA_HOST_ENV) else {
        return Url::parse(OLLAMA_DEFAULT_HOST).map_err(|e| LlmError::Config(e.to_string()));
    };
    let with_scheme = if raw.contains("://") {
        raw.clone()
    } else {
        format!("http://{raw}")
    };
    let mut url = Url::parse(&with_scheme).map_err(|e| {
        LlmError::Config(format!(
            "{OLLAMA_HOST_ENV}='{raw}' is not a host or URL ({e})"
        ))
    })?;
    if url.port().is_none() && !raw.contains("://") {
        let _ = url.set_port(Some(11434));
    }
    Ok(url)
}

/// Checks that the provider returned `expected_count` vectors of `dimension` floats each.
fn check_vectors(
    model: &str,
    provider: &'static str,
    dimension: usize,
    expected_count: usize,
    vectors: &[Vec<f32>],
) -> Result<(), LlmError> {
    if vectors.len() != expected_count {
        return Err(LlmError::BadResponse {
            provider,
            model: model.to_owned(),
            detail: format!("{} vectors for {expected_count} texts", vectors.len()),
        });
    }
    if let Some(bad) = vectors.iter().find(|v| v.len() != dimension) {
        return Err(LlmError::Dimension {
            model: model.to_owned(),
            expected: dimension,
            received: bad.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_dimension_names_model_and_both_sizes() {
        let err = check_vectors("m1", "Ollama", 3, 1, &[vec![0.0; 4]]).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("'m1'") && text.contains("dimension 4") && text.contains("expected 3")
        );
    }

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

    #[test]
    fn ollama_host_defaults_to_localhost() {
        let url = ollama_host(Some(&url::Url::parse("http://h:1").unwrap())).unwrap();
        assert_eq!(url.as_str(), "http://h:1/");
    }
}
