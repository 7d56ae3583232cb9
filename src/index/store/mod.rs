//! Where chunk vectors live: one trait, an embedded SQLite store (the default) and a Qdrant server.
//!
//! A store holds one collection (one indexed project). Point ids are UUID strings derived from the chunk's
//! path and identity, so re-indexing overwrites instead of duplicating.

pub mod qdrant;
pub mod sqlite;
pub mod vectors;

use futures::future::BoxFuture;
use serde::Serialize;

/// One chunk with its vector, as written to a store.
#[derive(Debug, Clone)]
pub struct ChunkPoint {
    pub id: String,
    pub meta: ChunkMeta,
    pub kind: String,
    pub name: String,
    pub qualified_name: String,
    pub text: String,
    pub vector: Vec<f32>,
}

/// What the indexer compares between runs: enough to tell unchanged, moved and stale chunks apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkMeta {
    /// Path relative to the project root, with `/` separators.
    pub path: String,
    pub language: String,
    pub start_line: u32,
    pub end_line: u32,
    /// Hash of what was embedded (model + embedding input): equal hashes mean the stored vector is still right.
    pub content_hash: String,
    /// Hash of the whole file when this chunk was written, and how many chunks that file produced: a file whose
    /// stored points all carry its current hash and count is skipped without chunking.
    pub file_hash: String,
    pub file_chunks: u32,
}

/// A stored point as listed for comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPoint {
    pub id: String,
    pub meta: ChunkMeta,
}

/// New lines for a chunk whose content (and so vector) did not change but moved within its file.
#[derive(Debug, Clone)]
pub struct LineMove {
    pub id: String,
    pub start_line: u32,
    pub end_line: u32,
}

/// The file hash and chunk count to write on every point of a path once all its chunks are stored.
#[derive(Debug, Clone)]
pub struct FileStamp {
    pub path: String,
    pub file_hash: String,
    pub file_chunks: u32,
}

/// What a run changes in one file, written together (one request to Qdrant, one SQLite transaction), so that a
/// query sees the file's chunks as they were or as they are, never half of each, and an interrupted run leaves
/// every file whole.
#[derive(Debug, Clone, Default)]
pub struct FileChanges {
    pub path: String,
    /// New chunks, and chunks whose content changed.
    pub upserts: Vec<ChunkPoint>,
    /// Unchanged chunks at new lines.
    pub moves: Vec<LineMove>,
    /// Chunks the file no longer has.
    pub stale_ids: Vec<String>,
    /// The file's hash and chunk count, written on all its points last; `None` when they carry them already.
    pub stamp: Option<FileStamp>,
}

impl FileChanges {
    /// The changes of `points`' files that only insert or replace those points.
    pub fn upserts_by_file(points: Vec<ChunkPoint>) -> Vec<FileChanges> {
        let mut files: std::collections::BTreeMap<String, FileChanges> = Default::default();
        for point in points {
            files
                .entry(point.meta.path.clone())
                .or_insert_with(|| FileChanges {
                    path: point.meta.path.clone(),
                    ..Default::default()
                })
                .upserts
                .push(point);
        }
        files.into_values().collect()
    }
}

/// Restricts a search; empty lists mean no restriction.
#[derive(Debug, Clone, Default)]
pub struct SearchFilter {
    pub languages: Vec<String>,
    /// Exact relative paths.
    pub paths: Vec<String>,
}

impl SearchFilter {
    pub fn accepts(&self, path: &str, language: &str) -> bool {
        (self.languages.is_empty() || self.languages.iter().any(|l| l == language))
            && (self.paths.is_empty() || self.paths.iter().any(|p| p == path))
    }
}

/// A search result with its payload.
#[derive(Debug, Clone, Serialize)]
pub struct SearchHit {
    pub path: String,
    pub language: String,
    pub kind: String,
    pub name: String,
    pub qualified_name: String,
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
    /// Cosine similarity, higher is closer.
    pub score: f32,
}

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

/// Scales `v` to unit length (left as is when it is all zeros), so a dot product is the cosine.
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
