//! Why indexing or retrieval failed.

use super::store::StoreError;
use crate::llm::LlmError;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("source_dir {0}")]
    SourceDir(String),
    #[error("lang: {0}")]
    Language(String),
    #[error("data directory: {0}")]
    DataDir(String),
    #[error("project registry: {0}")]
    Registry(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("embedding model: {0}")]
    Embedder(#[source] LlmError),
    #[error(
        "embedding failed after {committed} chunks were committed ({remaining} left; they are kept, and running \
         the index again continues from there): {source}"
    )]
    Embedding {
        #[source]
        source: LlmError,
        committed: u64,
        remaining: u64,
    },
    #[error(
        "storing failed after {committed} chunks were committed ({remaining} left; they are kept, and running \
         the index again continues from there): {source}"
    )]
    Storing {
        #[source]
        source: StoreError,
        committed: u64,
        remaining: u64,
    },
    #[error("embedding provider answered unexpectedly: {0}")]
    EmbeddingShape(String),
    #[error(
        "indexing cancelled after {committed} chunks were committed ({remaining} left for the next run)"
    )]
    Cancelled { committed: u64, remaining: u64 },
    #[error(
        "the index of {root} was built with embedding model '{indexed_model}' ({indexed_dim} dimensions) but the \
         configured model is '{model}' ({dim}); index again with the configured model or configure the original one"
    )]
    ModelMismatch {
        root: String,
        indexed_model: String,
        indexed_dim: usize,
        model: String,
        dim: usize,
    },
    #[error("internal error: {0}")]
    Internal(String),
}
