//! Project identity (absolute root → collection name) and the per-user registry of indexed projects, so
//! retrieval finds the index of the project a file belongs to.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};
use sha2::{Digest, Sha256};

use super::IndexError;

/// Environment variable overriding the per-user data directory (tests, CI, shared machines).
pub const DATA_DIR_ENV: &str = "FAULT_DATA_DIR";

/// The directory holding the registry and the embedded stores.
pub fn data_dir() -> Result<PathBuf, IndexError> {
    if let Some(dir) = std::env::var_os(DATA_DIR_ENV).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if dir.is_relative() {
            return Err(IndexError::DataDir(format!(
                "{DATA_DIR_ENV} must be an absolute path; got '{}'",
                dir.display()
            )));
        }
        return Ok(dir);
    }
    directories::ProjectDirs::from("", "", "fault")
        .map(|dirs| dirs.data_dir().to_path_buf())
        .ok_or_else(|| {
            IndexError::DataDir(format!(
                "no per-user data directory could be determined (no HOME?); set {DATA_DIR_ENV} to an absolute path"
            ))
        })
}

/// An indexed source tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// Canonical absolute root.
    pub root: PathBuf,
    /// Collection name: sanitized directory name + a short hash of the root, unique per root.
    pub collection: String,
}

impl Project {
    /// The project rooted at `root`, which must be an existing directory.
    pub fn at(root: &Path) -> Result<Project, IndexError> {
        let canonical = root
            .canonicalize()
            .map_err(|e| IndexError::SourceDir(format!("{}: {e}", root.display())))?;
        if !canonical.is_dir() {
            return Err(IndexError::SourceDir(format!(
                "{} is not a directory",
                root.display()
            )));
        }
        Ok(Project {
            collection: collection_name(&canonical),
            root: canonical,
        })
    }

    /// Where the embedded store of this project lives.
    pub fn embedded_file(&self, data_dir: &Path) -> PathBuf {
        data_dir
            .join("index")
            .join(format!("{}.sqlite3", self.collection))
    }
}

/// `fault_<dir name, [a-z0-9_-] only>_<8 hex of sha256(root)>`.
pub fn collection_name(root: &Path) -> String {
    let base: String = root
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    let digest = Sha256::digest(root.to_string_lossy().as_bytes());
    let short: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let base = if base.is_empty() { "root".into() } else { base };
    format!("fault_{base}_{short}")
}

/// One row of the registry.
#[derive(Debug, Clone)]
pub struct ProjectRecord {
    pub root: PathBuf,
    pub collection: String,
    /// `embedded` or `qdrant`.
    pub store: String,
    /// The embedded file or the Qdrant URL.
    pub location: String,
    pub embed_model: String,
    pub dimension: usize,
    pub indexed_at_ms: i64,
}

/// How long opening or writing the registry waits for another process using it.
const REGISTRY_BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The registry of indexed projects, `<data dir>/projects.sqlite3`.
pub struct Registry {
    conn: Connection,
}

impl Registry {
    pub fn open(data_dir: &Path) -> Result<Registry, IndexError> {
        std::fs::create_dir_all(data_dir).map_err(|e| {
            IndexError::DataDir(format!("cannot create {}: {e}", data_dir.display()))
        })?;
        let file = data_dir.join("projects.sqlite3");
        // Two servers sharing a data directory may open it at the same moment: switching to WAL takes the
        // database whole, and SQLite answers "locked" there without waiting, so the open is tried again.
        let deadline = std::time::Instant::now() + REGISTRY_BUSY_TIMEOUT;
        loop {
            match Self::open_file(&file) {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if matches!(
                        e.code,
                        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                    ) && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                opened => return opened.map_err(|e| registry_err(&file, e)),
            }
        }
    }

    fn open_file(file: &Path) -> Result<Registry, rusqlite::Error> {
        let conn = Connection::open(file)?;
        conn.busy_timeout(REGISTRY_BUSY_TIMEOUT)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS projects (
                root TEXT PRIMARY KEY, collection TEXT NOT NULL, store TEXT NOT NULL,
                location TEXT NOT NULL, embed_model TEXT NOT NULL, dimension INTEGER NOT NULL,
                indexed_at_ms INTEGER NOT NULL)",
        )?;
        Ok(Registry { conn })
    }

    /// The registry if it exists, without creating anything.
    pub fn open_existing(data_dir: &Path) -> Result<Option<Registry>, IndexError> {
        if !data_dir.join("projects.sqlite3").exists() {
            return Ok(None);
        }
        Self::open(data_dir).map(Some)
    }

    pub fn record(&self, record: &ProjectRecord) -> Result<(), IndexError> {
        self.conn
            .execute(
                "INSERT INTO projects (root, collection, store, location, embed_model, dimension, indexed_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT(root) DO UPDATE SET collection = excluded.collection, store = excluded.store,
                    location = excluded.location, embed_model = excluded.embed_model,
                    dimension = excluded.dimension, indexed_at_ms = excluded.indexed_at_ms",
                params![
                    record.root.to_string_lossy(),
                    record.collection,
                    record.store,
                    record.location,
                    record.embed_model,
                    record.dimension as i64,
                    record.indexed_at_ms
                ],
            )
            .map(|_| ())
            .map_err(|e| IndexError::Registry(e.to_string()))
    }

    pub fn all(&self) -> Result<Vec<ProjectRecord>, IndexError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT root, collection, store, location, embed_model, dimension, indexed_at_ms FROM projects",
            )
            .map_err(|e| IndexError::Registry(e.to_string()))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(ProjectRecord {
                    root: PathBuf::from(r.get::<_, String>(0)?),
                    collection: r.get(1)?,
                    store: r.get(2)?,
                    location: r.get(3)?,
                    embed_model: r.get(4)?,
                    dimension: r.get::<_, i64>(5)?.max(0) as usize,
                    indexed_at_ms: r.get(6)?,
                })
            })
            .map_err(|e| IndexError::Registry(e.to_string()))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| IndexError::Registry(e.to_string()))
    }

    pub fn get(&self, root: &Path) -> Result<Option<ProjectRecord>, IndexError> {
        Ok(self.all()?.into_iter().find(|p| p.root == root))
    }

    /// The project containing `hint` (the deepest root when nested), else the most recently indexed one.
    pub fn find(&self, hint: Option<&Path>) -> Result<Option<ProjectRecord>, IndexError> {
        let projects = self.all()?;
        if let Some(found) = hint.and_then(|hint| deepest_containing(&projects, hint)) {
            return Ok(Some(found.clone()));
        }
        Ok(projects.into_iter().max_by_key(|p| p.indexed_at_ms))
    }

    /// The project containing `path` (the deepest root when nested), and no other.
    pub fn containing(&self, path: &Path) -> Result<Option<ProjectRecord>, IndexError> {
        Ok(deepest_containing(&self.all()?, path).cloned())
    }

    /// The projects a client's roots cover: each root's containing project, and every project inside a root.
    pub fn for_roots(&self, roots: &[PathBuf]) -> Result<Vec<ProjectRecord>, IndexError> {
        let projects = self.all()?;
        let mut chosen: Vec<ProjectRecord> = Vec::new();
        for root in roots {
            let root = canonical_or_given(root);
            let inside = projects.iter().filter(|p| p.root.starts_with(&root));
            for project in deepest_containing(&projects, &root)
                .into_iter()
                .chain(inside)
            {
                if !chosen.iter().any(|c| c.root == project.root) {
                    chosen.push(project.clone());
                }
            }
        }
        Ok(chosen)
    }
}

fn canonical_or_given(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn deepest_containing<'a>(projects: &'a [ProjectRecord], path: &Path) -> Option<&'a ProjectRecord> {
    let path = canonical_or_given(path);
    projects
        .iter()
        .filter(|p| path.starts_with(&p.root))
        .max_by_key(|p| p.root.components().count())
}

fn registry_err(file: &Path, e: rusqlite::Error) -> IndexError {
    IndexError::Registry(format!("{}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collection_names_are_sanitized_and_unique_per_root() {
        let a = collection_name(Path::new("/home/me/My App!"));
        let b = collection_name(Path::new("/srv/My App!"));
        assert!(a.starts_with("fault_my_app__"), "{a}");
        assert_ne!(a, b);
        assert_eq!(a.len(), "fault_my_app__".len() + 8);
    }

    #[test]
    fn registry_finds_containing_then_latest() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::open(dir.path()).unwrap();
        let rec = |root: &str, at: i64| ProjectRecord {
            root: PathBuf::from(root),
            collection: collection_name(Path::new(root)),
            store: "embedded".into(),
            location: String::new(),
            embed_model: "m".into(),
            dimension: 3,
            indexed_at_ms: at,
        };
        registry.record(&rec("/a", 1)).unwrap();
        registry.record(&rec("/a/b", 2)).unwrap();
        registry.record(&rec("/c", 3)).unwrap();
        let find = |hint: &str| registry.find(Some(Path::new(hint))).unwrap().unwrap().root;
        assert_eq!(find("/a/b/x.py"), PathBuf::from("/a/b"));
        assert_eq!(find("/a/x.py"), PathBuf::from("/a"));
        assert_eq!(find("/elsewhere/x.py"), PathBuf::from("/c"));
        assert_eq!(
            registry.find(None).unwrap().unwrap().root,
            PathBuf::from("/c")
        );
        assert_eq!(
            registry
                .containing(Path::new("/a/b/x.py"))
                .unwrap()
                .unwrap()
                .root,
            PathBuf::from("/a/b")
        );
        assert!(
            registry
                .containing(Path::new("/elsewhere/x.py"))
                .unwrap()
                .is_none()
        );
        let roots = |given: &[&str]| {
            let given: Vec<PathBuf> = given.iter().map(PathBuf::from).collect();
            let mut found: Vec<PathBuf> = registry
                .for_roots(&given)
                .unwrap()
                .into_iter()
                .map(|p| p.root)
                .collect();
            found.sort();
            found
        };
        assert_eq!(roots(&["/a/b/src"]), [PathBuf::from("/a/b")]);
        assert_eq!(roots(&["/a"]), [PathBuf::from("/a"), PathBuf::from("/a/b")]);
        assert!(roots(&["/elsewhere"]).is_empty());
    }
}
