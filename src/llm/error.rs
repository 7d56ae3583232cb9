//! What went wrong talking to a model, said with the provider, the model or the setting involved.

use super::settings::{MAX_RETRIES_ENV, MAX_TOKENS_ENV, RETRY_WINDOW_ENV, TIMEOUT_ENV};

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
