//! Opening what an index needs: the vector store the settings choose (probing for a Qdrant when asked to
//! pick), and the configured embedder.

use std::{path::Path, sync::Arc, time::Duration};

use super::{
    IndexError, Project,
    store::{
        self, VectorStore,
        qdrant::{ClusterLayout, QdrantStore},
        sqlite::SqliteStore,
    },
};
use crate::llm::{Embedder, LlmSettings};

/// Where the guide tells users to run Qdrant (gRPC port).
pub const DEFAULT_QDRANT_URL: &str = "http://localhost:6334";
/// How long `--vector-store auto` waits for a Qdrant at the default URL before using the embedded store.
const QDRANT_PROBE: Duration = Duration::from_millis(500);

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

pub(super) fn qdrant_api_key() -> Option<String> {
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
