//! The points a store keeps: a chunk with its vector, what is compared between runs, and one file's changes
//! written together.

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
