//! The embedded store: one SQLite database per project, WAL mode, one transaction per write, vectors as
//! little-endian f32 blobs normalized at insert, exact search by scanning a per-collection in-memory copy
//! ([`super::vectors`]), or the rows themselves when the copy would not fit under the shared ceiling.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock},
};

use futures::{FutureExt, future::BoxFuture};
use rusqlite::{Connection, OptionalExtension, params};

use super::{
    ChunkMeta, CollectionInfo, FileChanges, SearchFilter, SearchHit, StoreError, StoreKind,
    StoredPoint, VectorStore, normalize,
    vectors::{Best, CacheSlot, VectorCache, budget, cache_ceiling, dot, estimated_bytes, top_k},
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    language TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    qualified_name TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    file_hash TEXT NOT NULL,
    file_chunks INTEGER NOT NULL,
    text TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
";

/// An embedded collection in `<file>`; shared per file within the process so the vector cache is reused.
pub struct SqliteStore {
    path: PathBuf,
    collection: String,
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    conn: Connection,
    /// Decoded vectors for search; dropped on every write through this connection, reloaded when another
    /// connection changed the file (`PRAGMA data_version`), and released by the shared ceiling.
    cache: CacheSlot,
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `file` for `collection`; the same file returns the same store.
    pub fn open(file: &Path, collection: &str) -> Result<Arc<SqliteStore>, StoreError> {
        static OPEN: OnceLock<Mutex<HashMap<PathBuf, Arc<SqliteStore>>>> = OnceLock::new();
        let mut open = OPEN
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(store) = open.get(file) {
            return Ok(store.clone());
        }
        let store = Arc::new(Self::open_uncached(file, collection)?);
        open.insert(file.to_path_buf(), store.clone());
        Ok(store)
    }

    /// Opens a new connection, bypassing the per-process sharing (benchmarks, tests).
    pub fn open_uncached(file: &Path, collection: &str) -> Result<SqliteStore, StoreError> {
        let sqlite_err = |source| StoreError::Sqlite {
            path: file.display().to_string(),
            source,
        };
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| StoreError::Embedded {
                path: file.display().to_string(),
                message: format!("cannot create directory {}: {e}", parent.display()),
            })?;
        }
        let conn = Connection::open(file).map_err(sqlite_err)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(sqlite_err)?;
        // WAL: readers never block the writer and a killed writer loses only its open transaction.
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sqlite_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sqlite_err)?;
        conn.execute_batch(SCHEMA).map_err(sqlite_err)?;
        Ok(SqliteStore {
            path: file.to_path_buf(),
            collection: collection.to_owned(),
            inner: Arc::new(Mutex::new(Inner {
                conn,
                cache: Arc::default(),
            })),
        })
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Runs `work` on the connection in a blocking thread.
    fn with_inner<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Inner) -> Result<T, rusqlite::Error> + Send + 'static,
    ) -> BoxFuture<'_, Result<T, StoreError>> {
        let inner = self.inner.clone();
        async move {
            let joined = tokio::task::spawn_blocking(move || {
                let mut guard = inner.lock().unwrap_or_else(|p| p.into_inner());
                work(&mut guard)
            })
            .await;
            match joined {
                Ok(result) => result.map_err(|e| self.err(e)),
                Err(e) => Err(StoreError::Embedded {
                    path: self.path.display().to_string(),
                    message: format!("store worker failed: {e}"),
                }),
            }
        }
        .boxed()
    }

    /// The stored dimension, if the collection was created.
    fn stored_dimension(conn: &Connection) -> Result<Option<usize>, rusqlite::Error> {
        let raw: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'dimension'", [], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(raw.and_then(|v| v.parse().ok()))
    }

    fn count(conn: &Connection) -> Result<u64, rusqlite::Error> {
        conn.query_row("SELECT COUNT(*) FROM chunks", [], |r| r.get::<_, i64>(0))
            .map(|n| n.max(0) as u64)
    }

    /// Exact top-k search, callable without the async wrapper (benchmarks).
    pub fn search_blocking(
        &self,
        vector: Vec<f32>,
        k: usize,
        filter: &SearchFilter,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        search_inner(&mut guard, &self.path, vector, k, filter).map_err(|e| match e {
            SearchError::Sqlite(e) => self.err(e),
            SearchError::BadVector { expected, got } => StoreError::BadVector { expected, got },
        })
    }
}

enum SearchError {
    Sqlite(rusqlite::Error),
    BadVector { expected: usize, got: usize },
}

impl From<rusqlite::Error> for SearchError {
    fn from(e: rusqlite::Error) -> Self {
        SearchError::Sqlite(e)
    }
}

fn data_version(conn: &Connection) -> Result<i64, rusqlite::Error> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0))
}

fn load_cache(conn: &Connection, dimension: usize) -> Result<VectorCache, rusqlite::Error> {
    let version = data_version(conn)?;
    let mut interned: HashMap<String, Arc<str>> = HashMap::new();
    let mut intern = |s: String| -> Arc<str> {
        interned
            .entry(s)
            .or_insert_with_key(|k| Arc::from(k.as_str()))
            .clone()
    };
    let mut cache = VectorCache {
        data_version: version,
        dimension,
        rowids: Vec::new(),
        paths: Vec::new(),
        languages: Vec::new(),
        vectors: Vec::new(),
    };
    let mut stmt = conn.prepare("SELECT rowid, path, language, vector FROM chunks")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let blob = row.get_ref(3)?.as_blob()?;
        // A row of another length cannot come from this collection's writes; skip it rather than misread it.
        if blob.len() != dimension * 4 {
            continue;
        }
        cache.rowids.push(row.get(0)?);
        cache.paths.push(intern(row.get(1)?));
        cache.languages.push(intern(row.get(2)?));
        cache.vectors.extend(blob_floats(blob));
    }
    Ok(cache)
}

fn search_inner(
    inner: &mut Inner,
    file: &Path,
    mut vector: Vec<f32>,
    k: usize,
    filter: &SearchFilter,
) -> Result<Vec<SearchHit>, SearchError> {
    let Some(dimension) = SqliteStore::stored_dimension(&inner.conn)? else {
        return Ok(Vec::new());
    };
    if vector.len() != dimension {
        return Err(SearchError::BadVector {
            expected: dimension,
            got: vector.len(),
        });
    }
    normalize(&mut vector);
    let version = data_version(&inner.conn)?;
    let current = inner
        .cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .filter(|cache| cache.data_version == version && cache.dimension == dimension);
    let cache = match current {
        Some(cache) => Some(cache),
        None if estimated_bytes(SqliteStore::count(&inner.conn)?, dimension) <= cache_ceiling() => {
            let loaded = Arc::new(load_cache(&inner.conn, dimension)?);
            *inner.cache.lock().unwrap_or_else(|p| p.into_inner()) = Some(loaded.clone());
            Some(loaded)
        }
        None => None,
    };
    let best: Vec<(i64, f32)> = match &cache {
        Some(cache) => {
            budget().used(file, cache.bytes(), &inner.cache);
            top_k(&cache.vectors, dimension, &vector, k, |i| {
                filter.accepts(&cache.paths[i], &cache.languages[i])
            })
            .into_iter()
            .map(|(index, score)| (cache.rowids[index], score))
            .collect()
        }
        None => {
            budget().forget(file);
            scan_top_k(&inner.conn, dimension, &vector, k, filter)?
        }
    };
    drop(cache);
    let mut stmt = inner.conn.prepare_cached(
        "SELECT path, language, kind, name, qualified_name, start_line, end_line, text FROM chunks WHERE rowid = ?1",
    )?;
    let mut hits = Vec::with_capacity(best.len());
    for (rowid, score) in best {
        let hit = stmt
            .query_row([rowid], |r| {
                Ok(SearchHit {
                    path: r.get(0)?,
                    language: r.get(1)?,
                    kind: r.get(2)?,
                    name: r.get(3)?,
                    qualified_name: r.get(4)?,
                    start_line: r.get(5)?,
                    end_line: r.get(6)?,
                    text: r.get(7)?,
                    score,
                })
            })
            .optional()?;
        hits.extend(hit);
    }
    Ok(hits)
}

/// Exact top-k straight from the database, one row at a time: for a project larger than the ceiling.
fn scan_top_k(
    conn: &Connection,
    dimension: usize,
    query: &[f32],
    k: usize,
    filter: &SearchFilter,
) -> Result<Vec<(i64, f32)>, rusqlite::Error> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let mut best = Best::new(k);
    let mut rowids = Vec::new();
    let mut row_vector = vec![0f32; dimension];
    let mut stmt = conn.prepare("SELECT rowid, path, language, vector FROM chunks")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let blob = row.get_ref(3)?.as_blob()?;
        if blob.len() != dimension * 4 {
            continue;
        }
        for (value, float) in row_vector.iter_mut().zip(blob_floats(blob)) {
            *value = float;
        }
        let score = dot(&row_vector, query);
        if !best.admits(score)
            || !filter.accepts(row.get_ref(1)?.as_str()?, row.get_ref(2)?.as_str()?)
        {
            continue;
        }
        best.push(score, rowids.len());
        rowids.push(row.get::<_, i64>(0)?);
    }
    Ok(best
        .into_sorted()
        .into_iter()
        .map(|(i, s)| (rowids[i], s))
        .collect())
}

/// The floats of a stored vector (little-endian, as [`vector_blob`] writes them).
fn blob_floats(blob: &[u8]) -> impl Iterator<Item = f32> + '_ {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn vector_blob(vector: &[f32]) -> Vec<u8> {
    let mut normalized = vector.to_vec();
    normalize(&mut normalized);
    normalized.iter().flat_map(|f| f.to_le_bytes()).collect()
}

impl VectorStore for SqliteStore {
    fn kind(&self) -> StoreKind {
        StoreKind::Embedded
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn collection(&self) -> &str {
        &self.collection
    }

    fn ensure_collection(
        &self,
        dimension: usize,
    ) -> BoxFuture<'_, Result<CollectionInfo, StoreError>> {
        let collection = self.collection.clone();
        let path = self.location();
        async move {
            let (stored, points) = self
                .with_inner(move |inner| {
                    let tx = inner.conn.transaction()?;
                    let stored = SqliteStore::stored_dimension(&tx)?;
                    if stored.is_none() {
                        tx.execute(
                            "INSERT INTO meta (key, value) VALUES ('dimension', ?1), ('collection', ?2)",
                            params![dimension.to_string(), collection],
                        )?;
                    }
                    let points = SqliteStore::count(&tx)?;
                    tx.commit()?;
                    Ok((stored, points))
                })
                .await?;
            match stored {
                Some(stored) if stored != dimension => Err(StoreError::DimensionMismatch {
                    collection: self.collection.clone(),
                    stored,
                    configured: dimension,
                    fix: format!("delete {path} and index again"),
                }),
                _ => Ok(CollectionInfo {
                    name: self.collection.clone(),
                    dimension,
                    points,
                    notes: Vec::new(),
                }),
            }
        }
        .boxed()
    }

    fn collection_info(&self) -> BoxFuture<'_, Result<Option<CollectionInfo>, StoreError>> {
        let name = self.collection.clone();
        self.with_inner(move |inner| {
            let Some(dimension) = SqliteStore::stored_dimension(&inner.conn)? else {
                return Ok(None);
            };
            Ok(Some(CollectionInfo {
                name,
                dimension,
                points: SqliteStore::count(&inner.conn)?,
                notes: Vec::new(),
            }))
        })
    }

    fn list_points(&self) -> BoxFuture<'_, Result<Vec<StoredPoint>, StoreError>> {
        self.with_inner(|inner| {
            let mut stmt = inner.conn.prepare(
                "SELECT id, path, language, start_line, end_line, content_hash, file_hash, file_chunks FROM chunks",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok(StoredPoint {
                    id: r.get(0)?,
                    meta: ChunkMeta {
                        path: r.get(1)?,
                        language: r.get(2)?,
                        start_line: r.get(3)?,
                        end_line: r.get(4)?,
                        content_hash: r.get(5)?,
                        file_hash: r.get(6)?,
                        file_chunks: r.get(7)?,
                    },
                })
            })?;
            rows.collect()
        })
    }

    fn apply(&self, files: Vec<FileChanges>) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.with_inner(move |inner| {
            let tx = inner.conn.transaction()?;
            let mut deleted = 0u64;
            {
                let mut upsert = tx.prepare_cached(
                    "INSERT INTO chunks (id, path, language, kind, name, qualified_name, start_line, end_line,
                                         content_hash, file_hash, file_chunks, text, vector)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
                     ON CONFLICT(id) DO UPDATE SET
                        path = excluded.path, language = excluded.language, kind = excluded.kind,
                        name = excluded.name, qualified_name = excluded.qualified_name,
                        start_line = excluded.start_line, end_line = excluded.end_line,
                        content_hash = excluded.content_hash, file_hash = excluded.file_hash,
                        file_chunks = excluded.file_chunks, text = excluded.text, vector = excluded.vector",
                )?;
                let mut move_lines = tx.prepare_cached(
                    "UPDATE chunks SET start_line = ?2, end_line = ?3 WHERE id = ?1",
                )?;
                let mut delete = tx.prepare_cached("DELETE FROM chunks WHERE id = ?1")?;
                let mut stamp = tx.prepare_cached(
                    "UPDATE chunks SET file_hash = ?2, file_chunks = ?3 WHERE path = ?1",
                )?;
                for file in &files {
                    for p in &file.upserts {
                        upsert.execute(params![
                            p.id,
                            p.meta.path,
                            p.meta.language,
                            p.kind,
                            p.name,
                            p.qualified_name,
                            p.meta.start_line,
                            p.meta.end_line,
                            p.meta.content_hash,
                            p.meta.file_hash,
                            p.meta.file_chunks,
                            p.text,
                            vector_blob(&p.vector),
                        ])?;
                    }
                    for m in &file.moves {
                        move_lines.execute(params![m.id, m.start_line, m.end_line])?;
                    }
                    for id in &file.stale_ids {
                        deleted += delete.execute([id])? as u64;
                    }
                    if let Some(f) = &file.stamp {
                        stamp.execute(params![f.path, f.file_hash, f.file_chunks])?;
                    }
                }
            }
            tx.commit()?;
            inner.cache.lock().unwrap_or_else(|p| p.into_inner()).take();
            Ok(deleted)
        })
    }

    fn delete_paths(&self, paths: Vec<String>) -> BoxFuture<'_, Result<u64, StoreError>> {
        self.with_inner(move |inner| {
            let tx = inner.conn.transaction()?;
            let mut deleted = 0u64;
            {
                let mut stmt = tx.prepare_cached("DELETE FROM chunks WHERE path = ?1")?;
                for path in &paths {
                    deleted += stmt.execute([path])? as u64;
                }
            }
            tx.commit()?;
            inner.cache.lock().unwrap_or_else(|p| p.into_inner()).take();
            Ok(deleted)
        })
    }

    fn search(
        &self,
        vector: Vec<f32>,
        k: usize,
        filter: SearchFilter,
    ) -> BoxFuture<'_, Result<Vec<SearchHit>, StoreError>> {
        let inner = self.inner.clone();
        let path = self.path.clone();
        async move {
            let joined = tokio::task::spawn_blocking(move || {
                let mut guard = inner.lock().unwrap_or_else(|p| p.into_inner());
                search_inner(&mut guard, &path, vector, k, &filter)
            })
            .await;
            match joined {
                Ok(Ok(hits)) => Ok(hits),
                Ok(Err(SearchError::Sqlite(e))) => Err(self.err(e)),
                Ok(Err(SearchError::BadVector { expected, got })) => {
                    Err(StoreError::BadVector { expected, got })
                }
                Err(e) => Err(StoreError::Embedded {
                    path: self.location(),
                    message: format!("search worker failed: {e}"),
                }),
            }
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::store::vectors::{DEFAULT_CACHE_CEILING, set_cache_ceiling};

    use crate::index::store::ChunkPoint;

    fn point(id: &str, path: &str, vector: Vec<f32>) -> ChunkPoint {
        ChunkPoint {
            id: id.into(),
            meta: ChunkMeta {
                path: path.into(),
                language: "python".into(),
                start_line: 1,
                end_line: 2,
                content_hash: format!("h-{id}"),
                file_hash: "f".into(),
                file_chunks: 1,
            },
            kind: "function".into(),
            name: id.into(),
            qualified_name: id.into(),
            text: format!("def {id}(): pass"),
            vector,
        }
    }

    #[tokio::test]
    async fn upsert_search_delete_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open_uncached(&dir.path().join("c.sqlite3"), "c").unwrap();
        store.ensure_collection(3).await.unwrap();
        store
            .upsert(vec![
                point("a", "a.py", vec![1.0, 0.0, 0.0]),
                point("b", "b.py", vec![0.0, 2.0, 0.0]),
                point("c", "b.py", vec![0.7, 0.7, 0.0]),
            ])
            .await
            .unwrap();
        let hits = store
            .search(vec![0.0, 1.0, 0.0], 2, SearchFilter::default())
            .await
            .unwrap();
        assert_eq!(
            hits.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(),
            ["b", "c"]
        );
        assert!((hits[0].score - 1.0).abs() < 1e-6);
        let only_a = SearchFilter {
            paths: vec!["a.py".into()],
            ..Default::default()
        };
        let hits = store.search(vec![0.0, 1.0, 0.0], 2, only_a).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].name, "a");
        assert_eq!(store.delete_paths(vec!["b.py".into()]).await.unwrap(), 2);
        assert_eq!(store.list_points().await.unwrap().len(), 1);
        let err = store.ensure_collection(4).await.unwrap_err().to_string();
        assert!(
            err.contains("3-dimensional") && err.contains("gives 4"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn copies_past_the_ceiling_are_released_and_searches_stay_exact() {
        let dir = tempfile::tempdir().unwrap();
        let open = |name: &str| {
            SqliteStore::open_uncached(&dir.path().join(format!("{name}.sqlite3")), name).unwrap()
        };
        let (a, b) = (open("a"), open("b"));
        for store in [&a, &b] {
            store.ensure_collection(3).await.unwrap();
            store
                .upsert(vec![
                    point("x", "x.py", vec![1.0, 0.0, 0.0]),
                    point("y", "y.py", vec![0.0, 1.0, 0.0]),
                    point("z", "z.py", vec![0.6, 0.8, 0.0]),
                ])
                .await
                .unwrap();
        }
        let names = |hits: Vec<SearchHit>| hits.into_iter().map(|h| h.name).collect::<Vec<_>>();
        let query = || vec![0.0, 1.0, 0.0];
        let cached = |store: &SqliteStore| {
            let inner = store.inner.lock().unwrap();
            inner.cache.lock().unwrap().is_some()
        };
        // Room for one copy only: searching b releases a's.
        let one_copy = estimated_bytes(3, 3) + 1;
        set_cache_ceiling(one_copy);
        let first = names(a.search(query(), 2, SearchFilter::default()).await.unwrap());
        assert!(cached(&a));
        assert_eq!(
            names(b.search(query(), 2, SearchFilter::default()).await.unwrap()),
            first
        );
        assert!(!cached(&a));
        // Smaller than one project: searched from disk, same answer, no copy kept.
        set_cache_ceiling(0);
        assert_eq!(
            names(a.search(query(), 2, SearchFilter::default()).await.unwrap()),
            first
        );
        assert_eq!(first, ["y", "z"]);
        assert!(!cached(&a));
        set_cache_ceiling(DEFAULT_CACHE_CEILING);
    }
}
