//! The source index: walk a tree (respecting .gitignore), chunk each file by function with the code registry,
//! embed changed chunks in batches, and keep them in a vector store (embedded SQLite by default, or Qdrant).
//! Retrieval gives the LLM tools the chunks of the user's own code closest to a query.

mod changes;
mod error;
mod languages;
mod open;
pub mod pipeline;
pub mod project;
mod retrieve;
mod source;
pub mod store;

pub use changes::{DEFAULT_EMBED_BATCH_SIZE, IndexSettings, MAX_EMBED_BATCH_SIZE};
pub use error::IndexError;
pub use languages::parse_languages;
pub use open::{DEFAULT_QDRANT_URL, StoreChoice, StoreSettings, embedder, open_store};
pub use pipeline::{IndexSummary, ProgressSink, index_project};
pub use project::{DATA_DIR_ENV, Project};
pub use retrieve::{
    ContextScope, RetrievedChunk, ScopedContext, retrieve_context_in, retrieve_from,
    retrieve_scoped, retrieve_scoped_in,
};
pub use source::index_source;
