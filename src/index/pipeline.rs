//! Indexing as a straight line: walk → compare with what is stored → delete stale → embed changed chunks in
//! batches → upsert each batch (committed on its own, so an interruption keeps every finished batch).
//!
//! The comparison keeps only the ids of the chunks to embed, per file; their text is produced again file by
//! file while embedding, a few batches ahead through a bounded channel, so a large tree never sits in
//! memory whole.

use std::{
    collections::{HashMap, HashSet},
    path::Path,
    sync::Arc,
    time::Instant,
};

use futures::future::BoxFuture;
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::{
    IndexError,
    project::Project,
    store::{ChunkMeta, ChunkPoint, FileStamp, LineMove, StoreKind, StoredPoint, VectorStore},
};
use crate::{
    code::{
        Language,
        chunk::{Chunk, chunk_read_file},
    },
    llm::Embedder,
};

/// Tunables of a run.
#[derive(Debug, Clone)]
pub struct IndexSettings {
    /// Texts per embedding request (and points per committed store batch).
    pub batch_size: usize,
    /// Longest chunk, in lines; longer functions are split.
    pub max_lines: usize,
    /// Longest embedding input, in characters (embedding models truncate anyway; this bounds the request).
    pub max_embed_chars: usize,
    /// Files larger than this are skipped (generated or minified code).
    pub max_file_bytes: u64,
}

impl Default for IndexSettings {
    fn default() -> Self {
        Self {
            batch_size: 64,
            max_lines: 80,
            max_embed_chars: 6000,
            max_file_bytes: 2 * 1024 * 1024,
        }
    }
}

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
}

/// A chunk to embed, with everything needed to store it.
struct Pending {
    id: String,
    meta: ChunkMeta,
    chunk: Chunk,
    input: String,
}

/// The chunks of one file to embed, by id: their text is read again when their batch comes.
struct FileWork {
    rel_path: String,
    path: std::path::PathBuf,
    lang: Language,
    ids: HashSet<String>,
}

/// Batches produced ahead of the embedder: the bound on chunk text held in memory.
const BATCHES_AHEAD: usize = 2;

/// What a run has to do after comparing the tree with the store.
#[derive(Default)]
struct WorkList {
    files_seen: u64,
    files_changed: u64,
    files_skipped: u64,
    seen_paths: HashSet<String>,
    /// Files with chunks to embed, in walk order, and how many chunks in all.
    to_embed: Vec<FileWork>,
    chunks_to_embed: u64,
    moves: Vec<LineMove>,
    stamps: Vec<FileStamp>,
    stale_ids: Vec<String>,
    unchanged: u64,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hash_parts(parts: &[&[u8]]) -> Sha256 {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher
}

/// A UUID-formatted id from the chunk's path and identity (Qdrant accepts only integers and UUIDs).
pub fn point_id(path: &str, kind: &str, qualified_name: &str, ordinal: usize) -> String {
    let digest = hash_parts(&[
        path.as_bytes(),
        kind.as_bytes(),
        qualified_name.as_bytes(),
        &ordinal.to_le_bytes(),
    ])
    .finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x50; // version 5 (name-based, SHA)
    b[8] = (b[8] & 0x3f) | 0x80; // RFC 4122 variant
    let h = hex(&b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The chunk's qualified name; empty for top-level code.
fn qualified_name(chunk: &Chunk) -> &str {
    chunk.qualified_name.as_deref().unwrap_or_default()
}

fn line_number(line: usize) -> u32 {
    u32::try_from(line).unwrap_or(u32::MAX)
}

/// The text sent to the embedding model: where the code is, then the code.
fn embedding_input(rel_path: &str, language: &str, chunk: &Chunk, max_chars: usize) -> String {
    let mut input = format!(
        "{language} {} {} in {rel_path}\n{}",
        chunk.kind.as_str(),
        qualified_name(chunk),
        chunk.text
    );
    if let Some((cut, _)) = input.char_indices().nth(max_chars) {
        input.truncate(cut);
    }
    input
}

/// Walks and compares in a blocking thread: no embedding happens here.
fn plan(
    project: &Project,
    languages: &[Language],
    stored: &HashMap<String, Vec<StoredPoint>>,
    model_key: &str,
    settings: &IndexSettings,
) -> WorkList {
    let mut plan = WorkList::default();
    let walker = ignore::WalkBuilder::new(&project.root)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        // Honour .gitignore even when the tree is not (yet) a git repository.
        .require_git(false)
        .max_filesize(Some(settings.max_file_bytes))
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                tracing::debug!(error = %e, "walk: skipped an entry");
                continue;
            }
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(lang) = Language::from_path(entry.path())
            .filter(|l| languages.iter().any(|known| known.name() == l.name()))
        else {
            continue;
        };
        let Some(rel_path) = relative_path(&project.root, entry.path()) else {
            continue;
        };
        plan.files_seen += 1;
        plan.seen_paths.insert(rel_path.clone());
        let source = match std::fs::read_to_string(entry.path()) {
            Ok(source) => source,
            Err(e) => {
                tracing::debug!(path = %rel_path, error = %e, "skipped: unreadable or not UTF-8");
                plan.files_skipped += 1;
                continue;
            }
        };
        plan_file(
            &mut plan,
            &rel_path,
            entry.path(),
            lang,
            &source,
            stored.get(&rel_path),
            model_key,
            settings,
        );
    }
    plan
}

// The file's names, language and text, the stored points and the settings: each used on its own.
#[allow(clippy::too_many_arguments)]
fn plan_file(
    plan: &mut WorkList,
    rel_path: &str,
    path: &Path,
    lang: Language,
    source: &str,
    stored: Option<&Vec<StoredPoint>>,
    model_key: &str,
    settings: &IndexSettings,
) {
    let file_hash = file_hash(model_key, settings, source);
    let stored: &[StoredPoint] = stored.map(Vec::as_slice).unwrap_or_default();
    if !stored.is_empty()
        && stored
            .iter()
            .all(|p| p.meta.file_hash == file_hash && p.meta.file_chunks as usize == stored.len())
    {
        plan.unchanged += stored.len() as u64;
        return;
    }
    plan.files_changed += 1;
    let pieces = file_pending(
        rel_path, path, lang, source, &file_hash, model_key, settings,
    );
    let file_chunks = pieces.first().map_or(0, |p| p.meta.file_chunks);
    let by_id: HashMap<&str, &StoredPoint> = stored.iter().map(|p| (p.id.as_str(), p)).collect();
    let mut current_ids = HashSet::new();
    let mut restamp = false;
    let mut ids_to_embed = HashSet::new();
    for pending in pieces {
        let Pending { id, meta, .. } = pending;
        current_ids.insert(id.clone());
        match by_id.get(id.as_str()) {
            Some(old) if old.meta.content_hash == meta.content_hash => {
                plan.unchanged += 1;
                restamp |=
                    old.meta.file_hash != meta.file_hash || old.meta.file_chunks != file_chunks;
                if (old.meta.start_line, old.meta.end_line) != (meta.start_line, meta.end_line) {
                    plan.moves.push(LineMove {
                        id,
                        start_line: meta.start_line,
                        end_line: meta.end_line,
                    });
                }
            }
            _ => {
                ids_to_embed.insert(id);
            }
        }
    }
    if !ids_to_embed.is_empty() {
        plan.chunks_to_embed += ids_to_embed.len() as u64;
        plan.to_embed.push(FileWork {
            rel_path: rel_path.to_owned(),
            path: path.to_path_buf(),
            lang,
            ids: ids_to_embed,
        });
    }
    if restamp {
        plan.stamps.push(FileStamp {
            path: rel_path.to_owned(),
            file_hash,
            file_chunks,
        });
    }
    plan.stale_ids.extend(
        stored
            .iter()
            .filter(|p| !current_ids.contains(&p.id))
            .map(|p| p.id.clone()),
    );
}

/// The file hash: the model and chunking are part of it, so changing either re-indexes every file.
fn file_hash(model_key: &str, settings: &IndexSettings, source: &str) -> String {
    hex(&hash_parts(&[
        model_key.as_bytes(),
        &settings.max_lines.to_le_bytes(),
        source.as_bytes(),
    ])
    .finalize()[..16])
}

/// Every chunk of a file with its id, metadata and embedding input.
fn file_pending(
    rel_path: &str,
    path: &Path,
    lang: Language,
    source: &str,
    file_hash: &str,
    model_key: &str,
    settings: &IndexSettings,
) -> Vec<Pending> {
    let language = lang.name();
    let pieces = chunk_read_file(path, lang, source, settings.max_lines);
    let file_chunks = pieces.len() as u32;
    let mut ordinals: HashMap<(&str, String), usize> = HashMap::new();
    let mut out = Vec::with_capacity(pieces.len());
    for chunk in pieces {
        let ordinal = ordinals
            .entry((chunk.kind.as_str(), qualified_name(&chunk).to_owned()))
            .and_modify(|n| *n += 1)
            .or_insert(0);
        let id = point_id(
            rel_path,
            chunk.kind.as_str(),
            qualified_name(&chunk),
            *ordinal,
        );
        let input = embedding_input(rel_path, language, &chunk, settings.max_embed_chars);
        let content_hash =
            hex(&hash_parts(&[model_key.as_bytes(), input.as_bytes()]).finalize()[..16]);
        let meta = ChunkMeta {
            path: rel_path.to_owned(),
            language: language.to_owned(),
            start_line: line_number(chunk.start_line),
            end_line: line_number(chunk.end_line),
            content_hash,
            file_hash: file_hash.to_owned(),
            file_chunks,
        };
        out.push(Pending {
            id,
            meta,
            chunk,
            input,
        });
    }
    out
}

/// Reads the planned files again and sends their chunks to embed in batches of `batch_size`; stops when
/// the receiver is gone (the run ended). A file that changed since the walk gives its current chunks.
fn produce_batches(
    work: Vec<FileWork>,
    model_key: &str,
    settings: &IndexSettings,
    batches: &tokio::sync::mpsc::Sender<Vec<Pending>>,
) {
    let batch_size = settings.batch_size.max(1);
    let mut batch = Vec::with_capacity(batch_size);
    for file in work {
        let source = match std::fs::read_to_string(&file.path) {
            Ok(source) => source,
            Err(e) => {
                tracing::debug!(path = %file.rel_path, error = %e, "skipped: unreadable since the walk");
                continue;
            }
        };
        let hash = file_hash(model_key, settings, &source);
        let pending = file_pending(
            &file.rel_path,
            &file.path,
            file.lang,
            &source,
            &hash,
            model_key,
            settings,
        );
        for p in pending.into_iter().filter(|p| file.ids.contains(&p.id)) {
            batch.push(p);
            if batch.len() == batch_size
                && batches
                    .blocking_send(std::mem::replace(
                        &mut batch,
                        Vec::with_capacity(batch_size),
                    ))
                    .is_err()
            {
                return;
            }
        }
    }
    if !batch.is_empty() {
        let _ = batches.blocking_send(batch);
    }
}

/// `path` relative to `root` with `/` separators, or `None` when it is not under `root` or not UTF-8.
fn relative_path(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

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
    store.ensure_collection(dimension).await?;

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
    chunks_deleted += store.delete_ids(plan.stale_ids).await?;
    let chunks_moved = plan.moves.len() as u64;
    if !plan.moves.is_empty() {
        store.move_lines(plan.moves).await?;
    }

    let total = plan.chunks_to_embed;
    let mut embedded = 0u64;
    let mut requests = 0u64;
    let (sender, mut batches) = tokio::sync::mpsc::channel::<Vec<Pending>>(BATCHES_AHEAD);
    let producer = {
        let work = plan.to_embed;
        let settings = settings.clone();
        let model_key = model_key.clone();
        tokio::task::spawn_blocking(move || produce_batches(work, &model_key, &settings, &sender))
    };
    while let Some(batch) = batches.recv().await {
        let inputs: Vec<String> = batch.iter().map(|p| p.input.clone()).collect();
        let vectors = tokio::select! {
            _ = ct.cancelled() => {
                return Err(IndexError::Cancelled { committed: embedded, remaining: total.saturating_sub(embedded) });
            }
            result = embedder.embed(&inputs) => result.map_err(|source| IndexError::Embedding {
                source,
                committed: embedded,
                remaining: total.saturating_sub(embedded),
            })?,
        };
        requests += 1;
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
        let points: Vec<ChunkPoint> = batch
            .into_iter()
            .zip(vectors)
            .map(|(p, vector)| ChunkPoint {
                id: p.id,
                meta: p.meta,
                kind: p.chunk.kind.as_str().to_owned(),
                name: p.chunk.name.unwrap_or_default(),
                qualified_name: p.chunk.qualified_name.unwrap_or_default(),
                text: p.chunk.text,
                vector,
            })
            .collect();
        let count = points.len() as u64;
        store.upsert(points).await?;
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

    // Last: a file is marked complete only once every one of its chunks is stored, so a run interrupted
    // before this point re-examines the file next time instead of skipping it.
    if !plan.stamps.is_empty() {
        store.stamp_files(plan.stamps).await?;
    }

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
    };
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::chunk::ChunkKind;

    #[test]
    fn point_ids_are_uuids_stable_and_distinct() {
        let a = point_id("a.py", "function", "f", 0);
        assert_eq!(a, point_id("a.py", "function", "f", 0));
        assert_ne!(a, point_id("a.py", "function", "f", 1));
        assert_ne!(a, point_id("b.py", "function", "f", 0));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "5");
    }

    #[test]
    fn embedding_input_is_bounded_on_a_char_boundary() {
        let chunk = Chunk {
            kind: ChunkKind::Function,
            name: Some("f".into()),
            qualified_name: Some("f".into()),
            start_line: 1,
            end_line: 1,
            text: "é".repeat(100),
        };
        let input = embedding_input("a.py", "python", &chunk, 20);
        assert_eq!(input.chars().count(), 20);
    }
}
