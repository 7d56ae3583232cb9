//! Where chunk vectors live: one trait, an embedded SQLite store (the default) and a Qdrant server.
//!
//! A store holds one collection (one indexed project). Point ids are UUID strings derived from the chunk's
//! path and identity, so re-indexing overwrites instead of duplicating.

mod error;
mod points;
pub mod qdrant;
mod search;
pub mod sqlite;
mod vector_store;
pub mod vectors;

pub use error::StoreError;
pub use points::{ChunkMeta, ChunkPoint, FileChanges, FileStamp, LineMove, StoredPoint};
pub use search::{SearchFilter, SearchHit, normalize};
pub use vector_store::{CollectionInfo, StoreKind, VectorStore};
