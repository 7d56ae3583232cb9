//! LLM providers behind one trait: chat, chat answering JSON under a schema, and embeddings.
//!
//! Implementations: OpenAI-compatible (OpenAI, OpenRouter, any base URL) and Ollama.
//! Keys are read when a tool needs them, never at start-up.

use futures::future::BoxFuture;

/// What went wrong talking to a model.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("{0}")]
    NotImplemented(&'static str),
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
