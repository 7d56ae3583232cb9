//! A Qdrant server as the store, over gRPC with `qdrant-client`: one collection per project, cosine distance,
//! a keyword index on `path` so deleting a file's chunks is a filtered delete.

mod client;
mod layout;
mod operations;
mod payload;

pub use client::{DEFAULT_TIMEOUT, QdrantStore};
pub use layout::ClusterLayout;
