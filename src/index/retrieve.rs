//! Retrieval: the chunks of the user's own code closest to a query, from the projects a prompt may draw on.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use serde::Serialize;

use super::{
    IndexError,
    open::{embedder, qdrant_api_key},
    project,
    store::{
        self, SearchFilter, VectorStore,
        qdrant::{ClusterLayout, QdrantStore},
        sqlite::SqliteStore,
    },
};
use crate::llm::{Embedder, LlmSettings};

/// A chunk of the user's code returned for a prompt, citable by path and lines.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RetrievedChunk {
    /// Absolute path of the file.
    pub path: PathBuf,
    pub language: String,
    /// Function (or block) name; `qualified_name` includes the enclosing class or impl.
    pub function: String,
    pub qualified_name: String,
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
    /// Cosine similarity to the query, higher is closer.
    pub score: f32,
}

/// Which indexed projects may give context to a prompt: never one the user is not working in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextScope {
    /// The project containing this file.
    File(PathBuf),
    /// The projects the client's MCP roots cover (containing a root, or inside one).
    Roots(Vec<PathBuf>),
}

/// At most this many projects are searched for one prompt (a client root can hold many).
const MAX_SCOPED_PROJECTS: usize = 8;

/// Chunks retrieved within a scope, and the roots of the projects searched.
#[derive(Debug, Clone, Default)]
pub struct ScopedContext {
    pub chunks: Vec<RetrievedChunk>,
    pub projects: Vec<PathBuf>,
}

/// The `k` chunks closest to `query` among the projects `scope` allows; empty when none of them is indexed.
pub async fn retrieve_scoped(
    llm: &LlmSettings,
    scope: &ContextScope,
    query: &str,
    k: usize,
) -> Result<ScopedContext, IndexError> {
    retrieve_scoped_in(&project::data_dir()?, llm, scope, query, k).await
}

/// [`retrieve_scoped`] with an explicit data directory.
pub async fn retrieve_scoped_in(
    data_dir: &Path,
    llm: &LlmSettings,
    scope: &ContextScope,
    query: &str,
    k: usize,
) -> Result<ScopedContext, IndexError> {
    let Some(registry) = project::Registry::open_existing(data_dir)? else {
        return Ok(ScopedContext::default());
    };
    let mut records = match scope {
        ContextScope::File(path) => registry.containing(path)?.into_iter().collect(),
        ContextScope::Roots(roots) => registry.for_roots(roots)?,
    };
    records.truncate(MAX_SCOPED_PROJECTS);
    if records.is_empty() {
        return Ok(ScopedContext::default());
    }
    let embedder = embedder(llm)?;
    let mut found = ScopedContext::default();
    for record in &records {
        match retrieve_from(record, embedder.clone(), query, k).await {
            Ok(chunks) => {
                found.projects.push(record.root.clone());
                found.chunks.extend(chunks);
            }
            // One project's mismatch must not hide the others a root covers.
            Err(e) if records.len() > 1 => {
                tracing::warn!(root = %record.root.display(), error = %e, "project skipped for context");
            }
            Err(e) => return Err(e),
        }
    }
    found.chunks.sort_by(|a, b| b.score.total_cmp(&a.score));
    found.chunks.truncate(k);
    Ok(found)
}

/// The `k` chunks closest to `query` in the project containing `hint_path`, else the most recently indexed
/// project; empty when nothing was indexed. For tools and scripts that name no file; prompts use
/// [`retrieve_scoped`].
pub async fn retrieve_context_in(
    data_dir: &Path,
    llm: &LlmSettings,
    hint_path: Option<&Path>,
    query: &str,
    k: usize,
) -> Result<Vec<RetrievedChunk>, IndexError> {
    let Some(registry) = project::Registry::open_existing(data_dir)? else {
        return Ok(Vec::new());
    };
    let Some(record) = registry.find(hint_path)? else {
        return Ok(Vec::new());
    };
    let embedder = embedder(llm)?;
    retrieve_from(&record, embedder, query, k).await
}

/// Retrieval against a known project with a given embedder.
pub async fn retrieve_from(
    record: &project::ProjectRecord,
    embedder: Arc<dyn Embedder>,
    query: &str,
    k: usize,
) -> Result<Vec<RetrievedChunk>, IndexError> {
    if embedder.model() != record.embed_model || embedder.dimension() != record.dimension {
        return Err(IndexError::ModelMismatch {
            root: record.root.display().to_string(),
            indexed_model: record.embed_model.clone(),
            indexed_dim: record.dimension,
            model: embedder.model().to_owned(),
            dim: embedder.dimension(),
        });
    }
    let store: Arc<dyn VectorStore> = match record.store.as_str() {
        // A query creates nothing: the layout does not matter.
        "qdrant" => Arc::new(QdrantStore::connect(
            &record.location,
            qdrant_api_key(),
            &record.collection,
            ClusterLayout::default(),
            store::qdrant::DEFAULT_TIMEOUT,
        )?),
        _ => SqliteStore::open(Path::new(&record.location), &record.collection)?,
    };
    let mut vectors = embedder
        .embed(&[query.to_owned()])
        .await
        .map_err(IndexError::Embedder)?;
    let Some(vector) = vectors.pop() else {
        return Err(IndexError::EmbeddingShape("no vector for the query".into()));
    };
    let hits = store.search(vector, k, SearchFilter::default()).await?;
    Ok(hits
        .into_iter()
        .map(|hit| RetrievedChunk {
            path: record.root.join(&hit.path),
            language: hit.language,
            function: hit.name,
            qualified_name: hit.qualified_name,
            start_line: hit.start_line,
            end_line: hit.end_line,
            text: hit.text,
            score: hit.score,
        })
        .collect())
}
