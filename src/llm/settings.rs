//! What configures the providers: the environment variables read, the hosts keys go to, the defaults, and
//! the settings the chat model and the embedder are built from.

use url::Url;

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

/// Environment variable: seconds a single request may take before it is abandoned (default 120).
pub const TIMEOUT_ENV: &str = "FAULT_LLM_TIMEOUT_SECS";
/// Environment variable: the most tokens a chat answer may have (unset: the provider's default).
pub const MAX_TOKENS_ENV: &str = "FAULT_LLM_MAX_TOKENS";
/// Environment variable: how many times a request is retried after a 429, 5xx or connection error (default 3).
pub const MAX_RETRIES_ENV: &str = "FAULT_LLM_MAX_RETRIES";
/// Environment variable: seconds from a request's first try after which no retry starts (default 60).
pub const RETRY_WINDOW_ENV: &str = "FAULT_LLM_RETRY_WINDOW_SECS";

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
