//! Why a store refused or failed a request.

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "collection '{collection}' holds {stored}-dimensional vectors but the embedding model gives {configured}; \
         use the model the index was built with (--llm-embed-model / --llm-embed-model-dim), or remove the old \
         index ({fix})"
    )]
    DimensionMismatch {
        collection: String,
        stored: usize,
        configured: usize,
        fix: String,
    },
    #[error("embedded store {path}: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("embedded store {path}: {message}")]
    Embedded { path: String, message: String },
    #[error("Qdrant at {url}: {message}")]
    Qdrant { url: String, message: String },
    #[error("vector of {got} floats given to a collection of dimension {expected}")]
    BadVector { expected: usize, got: usize },
}
