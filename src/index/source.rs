//! Indexing a source tree as a project: its store opened, the pipeline run, and the project recorded so
//! that retrieval finds it.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::{
    IndexError, IndexSettings, IndexSummary, ProgressSink, Project, StoreSettings, index_project,
    open::{embedder, open_store},
    project,
};
use crate::{code::Language, llm::LlmSettings};

/// Indexes `source_dir` for `languages` with the configured embedder, store and run settings, and records the
/// project.
pub async fn index_source(
    llm: &LlmSettings,
    store: &StoreSettings,
    settings: &IndexSettings,
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
        settings,
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
