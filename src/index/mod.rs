//! The source index: walk a tree (respecting .gitignore), chunk each file by function with the code registry,
//! embed changed chunks in batches, and keep them in a vector store (embedded SQLite by default, or Qdrant).
//! Retrieval gives the LLM tools the chunks of the user's own code closest to a query.

mod changes;
pub mod pipeline;
pub mod project;
pub mod store;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

pub use changes::IndexSettings;
pub use pipeline::{IndexSummary, ProgressSink, index_project};
pub use project::{DATA_DIR_ENV, Project};
use store::{
    SearchFilter, StoreError, VectorStore,
    qdrant::{ClusterLayout, QdrantStore},
    sqlite::SqliteStore,
};

use crate::{
    code::Language,
    llm::{Embedder, LlmError, LlmSettings},
};

/// Where the guide tells users to run Qdrant (gRPC port).
pub const DEFAULT_QDRANT_URL: &str = "http://localhost:6334";
/// How long `--vector-store auto` waits for a Qdrant at the default URL before using the embedded store.
const QDRANT_PROBE: Duration = Duration::from_millis(500);

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("source_dir {0}")]
    SourceDir(String),
    #[error("lang: {0}")]
    Language(String),
    #[error("data directory: {0}")]
    DataDir(String),
    #[error("project registry: {0}")]
    Registry(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("embedding model: {0}")]
    Embedder(#[source] LlmError),
    #[error(
        "embedding failed after {committed} chunks were committed ({remaining} left; they are kept, and running \
         the index again continues from there): {source}"
    )]
    Embedding {
        #[source]
        source: LlmError,
        committed: u64,
        remaining: u64,
    },
    #[error(
        "storing failed after {committed} chunks were committed ({remaining} left; they are kept, and running \
         the index again continues from there): {source}"
    )]
    Storing {
        #[source]
        source: StoreError,
        committed: u64,
        remaining: u64,
    },
    #[error("embedding provider answered unexpectedly: {0}")]
    EmbeddingShape(String),
    #[error(
        "indexing cancelled after {committed} chunks were committed ({remaining} left for the next run)"
    )]
    Cancelled { committed: u64, remaining: u64 },
    #[error(
        "the index of {root} was built with embedding model '{indexed_model}' ({indexed_dim} dimensions) but the \
         configured model is '{model}' ({dim}); index again with the configured model or configure the original one"
    )]
    ModelMismatch {
        root: String,
        indexed_model: String,
        indexed_dim: usize,
        model: String,
        dim: usize,
    },
    #[error("internal error: {0}")]
    Internal(String),
}

/// Which vector store keeps the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StoreChoice {
    /// The Qdrant server at the configured URL, or at [`DEFAULT_QDRANT_URL`] when one answers there; else
    /// the embedded store.
    #[default]
    Auto,
    /// The embedded store on disk, in the per-user data directory.
    Embedded,
    /// A Qdrant server (the configured URL, else [`DEFAULT_QDRANT_URL`]).
    Qdrant,
}

/// Where new indexes are kept.
#[derive(Debug, Clone)]
pub struct StoreSettings {
    pub choice: StoreChoice,
    /// Qdrant gRPC URL, e.g. http://localhost:6334; several nodes of a cluster, asked in turn while one cannot
    /// be reached.
    pub qdrant_urls: Vec<url::Url>,
    /// How a new Qdrant collection is spread over a cluster.
    pub qdrant_layout: ClusterLayout,
    /// How long one request to Qdrant may take.
    pub qdrant_timeout: std::time::Duration,
    /// Ceiling of the embedded store's vector copies of all projects together, in bytes.
    pub vector_cache_bytes: u64,
}

impl Default for StoreSettings {
    fn default() -> Self {
        Self {
            choice: StoreChoice::default(),
            qdrant_urls: Vec::new(),
            qdrant_layout: ClusterLayout::default(),
            qdrant_timeout: store::qdrant::DEFAULT_TIMEOUT,
            vector_cache_bytes: store::vectors::DEFAULT_CACHE_CEILING,
        }
    }
}

/// The languages a `lang` value names: `auto` (or nothing) means every language the registry knows.
pub fn parse_languages(names: &[String]) -> Result<Vec<Language>, IndexError> {
    let known = || {
        let mut names: Vec<&str> = Language::all().map(|l| l.name()).collect();
        names.push("auto");
        names.join(", ")
    };
    let mut languages = Vec::new();
    for name in names.iter().flat_map(|n| n.split(',')).map(str::trim) {
        if name.is_empty() {
            continue;
        }
        if name.eq_ignore_ascii_case("auto") {
            return Ok(Language::all().collect());
        }
        match Language::from_name(name) {
            Some(lang) if !languages.iter().any(|l: &Language| l.name() == lang.name()) => {
                languages.push(lang)
            }
            Some(_) => {}
            None => {
                return Err(IndexError::Language(format!(
                    "unknown language '{name}'; expected one of {}",
                    known()
                )));
            }
        }
    }
    if languages.is_empty() {
        return Ok(Language::all().collect());
    }
    Ok(languages)
}

fn qdrant_api_key() -> Option<String> {
    std::env::var("QDRANT_API_KEY")
        .ok()
        .filter(|k| !k.trim().is_empty())
}

/// The store for `project` as `settings` ask; `Auto` probes the default Qdrant URL briefly.
pub async fn open_store(
    settings: &StoreSettings,
    project: &Project,
    data_dir: &Path,
) -> Result<Arc<dyn VectorStore>, IndexError> {
    let embedded = || -> Result<Arc<dyn VectorStore>, IndexError> {
        Ok(SqliteStore::open(
            &project.embedded_file(data_dir),
            &project.collection,
        )?)
    };
    let qdrant = |url: &str| -> Result<Arc<dyn VectorStore>, IndexError> {
        Ok(Arc::new(QdrantStore::connect(
            url,
            qdrant_api_key(),
            &project.collection,
            settings.qdrant_layout,
            settings.qdrant_timeout,
        )?))
    };
    // The nodes as one comma-separated location, as the project record keeps it.
    let configured_url = (!settings.qdrant_urls.is_empty()).then(|| {
        settings
            .qdrant_urls
            .iter()
            .map(|u| u.as_str().trim_end_matches('/'))
            .collect::<Vec<_>>()
            .join(",")
    });
    let store = match settings.choice {
        StoreChoice::Embedded => embedded()?,
        StoreChoice::Qdrant => qdrant(configured_url.as_deref().unwrap_or(DEFAULT_QDRANT_URL))?,
        StoreChoice::Auto => match configured_url {
            Some(url) => qdrant(&url)?,
            None if QdrantStore::answers(DEFAULT_QDRANT_URL, qdrant_api_key(), QDRANT_PROBE)
                .await =>
            {
                qdrant(DEFAULT_QDRANT_URL)?
            }
            None => embedded()?,
        },
    };
    tracing::info!(
        store = store.kind().as_str(),
        location = %store.location(),
        collection = %project.collection,
        requested = ?settings.choice,
        "vector store selected"
    );
    Ok(store)
}

/// The configured embedding provider.
pub fn embedder(llm: &LlmSettings) -> Result<Arc<dyn Embedder>, IndexError> {
    crate::llm::embedder(llm).map_err(IndexError::Embedder)
}

/// Indexes `source_dir` for `languages` with the configured embedder and store, and records the project.
pub async fn index_source(
    llm: &LlmSettings,
    store: &StoreSettings,
    source_dir: &Path,
    languages: &[Language],
    progress: Option<&dyn ProgressSink>,
    ct: &CancellationToken,
) -> Result<IndexSummary, IndexError> {
    if !source_dir.is_absolute() {
        return Err(IndexError::SourceDir(format!(
            "must be an absolute path; got '{}'",
            source_dir.display()
        )));
    }
    let project = Project::at(source_dir)?;
    let embedder = embedder(llm)?;
    let data_dir = project::data_dir()?;
    let store = open_store(store, &project, &data_dir).await?;
    let registry = project::Registry::open(&data_dir)?;
    let record = |at_ms| project::ProjectRecord {
        root: project.root.clone(),
        collection: project.collection.clone(),
        store: store.kind().as_str().to_owned(),
        location: store.location(),
        embed_model: embedder.model().to_owned(),
        dimension: embedder.dimension(),
        indexed_at_ms: at_ms,
    };
    // Recorded before the run too, so an interrupted index is still found (and completed) later.
    let now_ms = || chrono::Utc::now().timestamp_millis();
    registry.record(&record(now_ms()))?;
    let summary = index_project(
        &project,
        languages,
        embedder.clone(),
        store.clone(),
        &IndexSettings::default(),
        progress,
        ct,
    )
    .await?;
    registry.record(&record(now_ms()))?;
    tracing::info!(
        store = summary.store.as_str(),
        collection = %summary.collection,
        files_seen = summary.files_seen,
        chunks_embedded = summary.chunks_embedded,
        chunks_unchanged = summary.chunks_unchanged,
        chunks_deleted = summary.chunks_deleted,
        elapsed_ms = summary.elapsed_ms,
        "source index updated"
    );
    Ok(summary)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_parse_single_list_auto_and_reject_unknown() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_languages(&names(&["python"])).unwrap().len(), 1);
        assert_eq!(parse_languages(&names(&["Python", "go"])).unwrap().len(), 2);
        assert_eq!(parse_languages(&names(&["python,go"])).unwrap().len(), 2);
        assert_eq!(
            parse_languages(&names(&["auto"])).unwrap().len(),
            Language::all().count()
        );
        let err = parse_languages(&names(&["cobol"])).unwrap_err().to_string();
        assert!(err.contains("'cobol'") && err.contains("python"), "{err}");
    }
}
