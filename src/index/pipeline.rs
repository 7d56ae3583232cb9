//! Indexing as a straight line: walk → compare with what is stored → delete the files gone → embed changed
//! chunks in batches → write each file whole once its chunks are embedded (its new chunks, moved lines, stale
//! chunks and stamp together), so a query never sees half a file and an interruption keeps every file written.
//!
//! The comparison ([`super::changes`]) keeps only the ids of the chunks to embed, per file; their text is
//! produced again file by file while embedding, a few batches ahead through a bounded channel, so a large
//! tree never sits in memory whole.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Instant,
};

use futures::future::BoxFuture;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::{
    IndexError,
    changes::{Batch, IndexSettings, plan, produce_batches},
    project::Project,
    store::{ChunkPoint, FileChanges, StoreKind, StoredPoint, VectorStore},
};
use crate::{code::Language, llm::Embedder};

/// Told after every committed batch.
pub trait ProgressSink: Send + Sync {
    fn batch_committed(&self, embedded: u64, total: u64, message: String) -> BoxFuture<'_, ()>;
}

/// What a run did.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct IndexSummary {
    /// `done` when the run finished.
    pub status: String,
    /// The store used: `embedded` or `qdrant`.
    pub store: StoreKind,
    /// The embedded database file or the Qdrant URL.
    pub store_location: String,
    pub collection: String,
    pub source_dir: String,
    pub languages: Vec<String>,
    pub embed_model: String,
    pub dimension: usize,
    /// Source files of the requested languages found by the walk.
    pub files_seen: u64,
    /// Files whose chunks were compared because the file changed (or is new).
    pub files_changed: u64,
    /// Files skipped as unreadable, not UTF-8, or too large.
    pub files_skipped: u64,
    /// Files removed from the index because they are gone from the tree.
    pub files_deleted: u64,
    pub chunks_embedded: u64,
    /// Chunks whose stored vector was still right (not re-embedded).
    pub chunks_unchanged: u64,
    /// Unchanged chunks that moved within their file (line range updated, no embedding).
    pub chunks_moved: u64,
    pub chunks_deleted: u64,
    /// Points in the collection after the run.
    pub chunks_total: u64,
    pub embedding_requests: u64,
    pub elapsed_ms: u64,
    /// What the user should know about the store as found (e.g. a collection laid out otherwise than asked).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Batches produced ahead of the embedder: the bound on chunk text held in memory.
const BATCHES_AHEAD: usize = 2;

/// Indexes `project` into `store` with `embedder`. Re-running on an unchanged tree embeds nothing.
pub async fn index_project(
    project: &Project,
    languages: &[Language],
    embedder: Arc<dyn Embedder>,
    store: Arc<dyn VectorStore>,
    settings: &IndexSettings,
    progress: Option<&dyn ProgressSink>,
    ct: &CancellationToken,
) -> Result<IndexSummary, IndexError> {
    let started = Instant::now();
    let dimension = embedder.dimension();
    let notes = store.ensure_collection(dimension).await?.notes;
    for note in &notes {
        tracing::warn!("{note}");
    }

    let mut stored: HashMap<String, Vec<StoredPoint>> = HashMap::new();
    for point in store.list_points().await? {
        stored
            .entry(point.meta.path.clone())
            .or_default()
            .push(point);
    }
    let model_key = format!("{}\0{dimension}", embedder.model());
    let plan = {
        let project = project.clone();
        let languages = languages.to_vec();
        let settings = settings.clone();
        let model_key = model_key.clone();
        tokio::task::spawn_blocking(move || {
            let plan = plan(&project, &languages, &stored, &model_key, &settings);
            (plan, stored)
        })
        .await
        .map_err(|e| IndexError::Internal(format!("walk failed: {e}")))?
    };
    let (plan, stored) = plan;

    let language_names: HashSet<&str> = languages.iter().map(Language::name).collect();
    let gone: Vec<String> = stored
        .iter()
        .filter(|(path, points)| {
            !plan.seen_paths.contains(*path)
                && points
                    .iter()
                    .any(|p| language_names.contains(p.meta.language.as_str()))
        })
        .map(|(path, _)| path.clone())
        .collect();
    let files_deleted = gone.len() as u64;
    let mut chunks_deleted = store.delete_paths(gone).await?;
    let mut changes = plan.changes;
    let chunks_moved = changes.values().map(|f| f.moves.len() as u64).sum();
    // Files with nothing to embed are written at once; the others when their last chunk is embedded.
    let to_embed: HashSet<&str> = plan.to_embed.iter().map(|f| f.rel_path.as_str()).collect();
    let ready: Vec<FileChanges> = changes
        .extract_if(|path, _| !to_embed.contains(path.as_str()))
        .map(|(_, file)| file)
        .collect();
    chunks_deleted += store.apply(ready).await?;

    let total = plan.chunks_to_embed;
    let mut embedded = 0u64;
    let mut requests = 0u64;
    let (sender, mut batches) = tokio::sync::mpsc::channel::<Batch>(BATCHES_AHEAD);
    let producer = {
        let work = plan.to_embed;
        let settings = settings.clone();
        let model_key = model_key.clone();
        tokio::task::spawn_blocking(move || produce_batches(work, &model_key, &settings, &sender))
    };
    while let Some(Batch {
        chunks: batch,
        files_done,
    }) = batches.recv().await
    {
        let inputs: Vec<String> = batch.iter().map(|p| p.input.clone()).collect();
        let vectors = if batch.is_empty() {
            Vec::new()
        } else {
            tokio::select! {
                _ = ct.cancelled() => {
                    return Err(IndexError::Cancelled { committed: embedded, remaining: total.saturating_sub(embedded) });
                }
                result = embedder.embed(&inputs) => result.map_err(|source| IndexError::Embedding {
                    source,
                    committed: embedded,
                    remaining: total.saturating_sub(embedded),
                })?,
            }
        };
        requests += u64::from(!batch.is_empty());
        if vectors.len() != batch.len() {
            return Err(IndexError::EmbeddingShape(format!(
                "asked for {} vectors, got {} ({embedded} chunks committed before this batch)",
                batch.len(),
                vectors.len()
            )));
        }
        if let Some(bad) = vectors.iter().find(|v| v.len() != dimension) {
            return Err(IndexError::EmbeddingShape(format!(
                "model '{}' returned {}-dimensional vectors but --llm-embed-model-dim is {dimension}; set it to {}",
                embedder.model(),
                bad.len(),
                bad.len()
            )));
        }
        for (p, vector) in batch.into_iter().zip(vectors) {
            let file = changes
                .entry(p.meta.path.clone())
                .or_insert_with(|| FileChanges {
                    path: p.meta.path.clone(),
                    ..Default::default()
                });
            file.upserts.push(ChunkPoint {
                id: p.id,
                meta: p.meta,
                kind: p.chunk.kind.as_str().to_owned(),
                name: p.chunk.name.unwrap_or_default(),
                qualified_name: p.chunk.qualified_name.unwrap_or_default(),
                text: p.chunk.text,
                vector,
            });
        }
        let ready: Vec<FileChanges> = files_done
            .iter()
            .filter_map(|path| changes.remove(path))
            .collect();
        if ready.is_empty() {
            continue;
        }
        let count: u64 = ready.iter().map(|f| f.upserts.len() as u64).sum();
        chunks_deleted += store
            .apply(ready)
            .await
            .map_err(|source| IndexError::Storing {
                source,
                committed: embedded,
                remaining: total.saturating_sub(embedded),
            })?;
        embedded += count;
        tracing::debug!(embedded, total, "index batch committed");
        if let Some(progress) = progress {
            progress
                .batch_committed(
                    embedded,
                    total,
                    format!("embedded {embedded}/{total} chunks"),
                )
                .await;
        }
    }

    drop(batches);
    producer
        .await
        .map_err(|e| IndexError::Internal(format!("chunk reader failed: {e}")))?;

    let chunks_total = store
        .collection_info()
        .await?
        .map(|c| c.points)
        .unwrap_or(0);
    let summary = IndexSummary {
        status: "done".into(),
        store: store.kind(),
        store_location: store.location(),
        collection: store.collection().to_owned(),
        source_dir: project.root.display().to_string(),
        languages: languages.iter().map(|l| l.name().to_owned()).collect(),
        embed_model: embedder.model().to_owned(),
        dimension,
        files_seen: plan.files_seen,
        files_changed: plan.files_changed,
        files_skipped: plan.files_skipped,
        files_deleted,
        chunks_embedded: embedded,
        chunks_unchanged: plan.unchanged,
        chunks_moved,
        chunks_deleted,
        chunks_total,
        embedding_requests: requests,
        elapsed_ms: started.elapsed().as_millis() as u64,
        notes,
    };
    Ok(summary)
}
