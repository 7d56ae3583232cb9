//! The operations every store implements, and what they say about their collection.

use futures::future::BoxFuture;
use serde::Serialize;

use super::{ChunkPoint, FileChanges, SearchFilter, SearchHit, StoreError, StoredPoint};

#[derive(Debug, Clone, Serialize)]
pub struct CollectionInfo {
    pub name: String,
    pub dimension: usize,
    pub points: u64,
    /// What the user should know about the collection as found (a layout other than the one asked for).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Which kind of store served a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    Embedded,
    Qdrant,
}

impl StoreKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Embedded => "embedded",
            StoreKind::Qdrant => "qdrant",
        }
    }
}

/// The operations the indexer and retrieval need, implemented by every store.
pub trait VectorStore: Send + Sync {
    fn kind(&self) -> StoreKind;
    /// Where the data lives: a file path or a server URL.
    fn location(&self) -> String;
    fn collection(&self) -> &str;
    /// Creates the collection for `dimension`-sized vectors (cosine) or checks the existing one matches.
    fn ensure_collection(
        &self,
        dimension: usize,
    ) -> BoxFuture<'_, Result<CollectionInfo, StoreError>>;
    /// The collection, or `None` when it does not exist.
    fn collection_info(&self) -> BoxFuture<'_, Result<Option<CollectionInfo>, StoreError>>;
    /// Every stored point's id and comparison metadata (no text, no vector).
    fn list_points(&self) -> BoxFuture<'_, Result<Vec<StoredPoint>, StoreError>>;
    /// Writes the changes of each file whole (see [`FileChanges`]); the number of stale points deleted.
    fn apply(&self, files: Vec<FileChanges>) -> BoxFuture<'_, Result<u64, StoreError>>;
    /// Inserts or replaces points: [`VectorStore::apply`] of their files with nothing else.
    fn upsert(&self, points: Vec<ChunkPoint>) -> BoxFuture<'_, Result<(), StoreError>> {
        let applied = self.apply(FileChanges::upserts_by_file(points));
        Box::pin(async move { applied.await.map(|_| ()) })
    }
    /// Removes every point of these relative paths.
    fn delete_paths(&self, paths: Vec<String>) -> BoxFuture<'_, Result<u64, StoreError>>;
    /// The `k` nearest points to `vector` by cosine similarity, best first.
    fn search(
        &self,
        vector: Vec<f32>,
        k: usize,
        filter: SearchFilter,
    ) -> BoxFuture<'_, Result<Vec<SearchHit>, StoreError>>;
}
