//! Parsed files kept while they do not change, so that listing, extracting and chunking one file parse it
//! once. An entry is keyed by the file's path and stamped with its size, modification time and inode: a
//! file that changed in any of them is read and parsed again. File times have a coarse clock (a few
//! milliseconds), so an entry read within [`RACY_WINDOW`] of its file's modification time is checked against
//! the file's content before use (a same-size rewrite within one clock tick would keep the stamp).
//! The cache holds at most [`CACHE_BYTES`] of
//! source and extracted text (least recently used entries go first); a larger file is parsed every time.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, LazyLock, Mutex},
    time::{Duration, SystemTime},
};

use super::{
    CodeError, FunctionBlock, Language, MAX_SOURCE_BYTES, functions_in_source_checked,
    read_source_file, resolve_path,
};
use crate::files;

/// Memory bound of the cache: 64 MiB of source and function text.
pub const CACHE_BYTES: usize = 64 * 1024 * 1024;

/// How close to its modification time a file must have been read for its entry to need a content check.
const RACY_WINDOW: Duration = Duration::from_secs(2);

/// One source file, read and parsed.
#[derive(Debug)]
pub struct ParsedFile {
    pub path: PathBuf,
    pub language: Language,
    pub source: String,
    /// Every function, in document order.
    pub blocks: Vec<FunctionBlock>,
}

impl ParsedFile {
    pub fn new(
        path: PathBuf,
        language: Language,
        source: String,
        blocks: Vec<FunctionBlock>,
    ) -> Self {
        Self {
            path,
            language,
            source,
            blocks,
        }
    }

    /// Bytes this entry keeps alive, as counted against [`CACHE_BYTES`].
    fn weight(&self) -> usize {
        const PER_BLOCK: usize = std::mem::size_of::<FunctionBlock>();
        self.source.len()
            + self
                .blocks
                .iter()
                .map(|b| PER_BLOCK + b.info.name.len() + b.info.qualified_name.len())
                .sum::<usize>()
    }
}

/// What identifies one version of a file's content without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    size: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl Stamp {
    /// Whether a change within the same file-clock tick could have kept this stamp after `read_at`.
    fn racy(&self, read_at: SystemTime) -> bool {
        self.modified
            .and_then(|modified| modified.checked_add(RACY_WINDOW))
            .is_none_or(|safe_after| read_at <= safe_after)
    }

    fn of(path: &Path) -> Option<Self> {
        let metadata = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&metadata);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Self {
            size: metadata.len(),
            modified: metadata.modified().ok(),
            inode,
        })
    }
}

struct CacheEntry {
    stamp: Stamp,
    /// The content must be compared before use (see [`RACY_WINDOW`]).
    racy: bool,
    file: Arc<ParsedFile>,
    weight: usize,
    last_used: u64,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<PathBuf, CacheEntry>,
    total_weight: usize,
    clock: u64,
}

impl Cache {
    /// The entry of `path` if its stamp is `stamp`, and whether it is racy.
    fn get(&mut self, path: &Path, stamp: &Stamp) -> Option<(Arc<ParsedFile>, bool)> {
        self.clock += 1;
        let clock = self.clock;
        let entry = self.entries.get_mut(path)?;
        if entry.stamp != *stamp {
            return None;
        }
        entry.last_used = clock;
        Some((Arc::clone(&entry.file), entry.racy))
    }

    /// The content of `path` was found unchanged at `read_at`.
    fn confirm(&mut self, path: &Path, read_at: SystemTime) {
        if let Some(entry) = self.entries.get_mut(path) {
            entry.racy = entry.stamp.racy(read_at);
        }
    }

    /// Keeps `file` under `stamp`; a `racy` entry is checked against the file's content before its next use.
    fn insert(&mut self, stamp: Stamp, racy: bool, file: Arc<ParsedFile>) {
        let weight = file.weight();
        if let Some(old) = self.entries.remove(&file.path) {
            self.total_weight -= old.weight;
        }
        if weight > CACHE_BYTES {
            return;
        }
        while self.total_weight + weight > CACHE_BYTES {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, entry)| entry.last_used)
                .map(|(path, _)| path.clone())
            else {
                break;
            };
            if let Some(evicted) = self.entries.remove(&oldest) {
                self.total_weight -= evicted.weight;
            }
        }
        self.clock += 1;
        self.total_weight += weight;
        self.entries.insert(
            file.path.clone(),
            CacheEntry {
                racy,
                stamp,
                file,
                weight,
                last_used: self.clock,
            },
        );
    }
}

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Mutex::default);

/// The file at `path_or_uri` (an absolute path or a `file://` URI, checked as by
/// [`read_source`](super::read_source)), parsed, from the cache when it has not changed.
pub fn parsed_file(path_or_uri: &str) -> Result<Arc<ParsedFile>, CodeError> {
    parsed_path(&resolve_path(path_or_uri)?)
}

/// [`parsed_file`] for an absolute path.
pub fn parsed_path(path: &Path) -> Result<Arc<ParsedFile>, CodeError> {
    // Stamped before reading: a change made while reading gives a newer stamp next time.
    let stamp = Stamp::of(path);
    let read_at = SystemTime::now();
    let cached = stamp.as_ref().and_then(|stamp| lock().get(path, stamp));
    if let Some((file, racy)) = cached {
        if !racy {
            return Ok(file);
        }
        if same_content(path, &file.source) {
            lock().confirm(path, read_at);
            return Ok(file);
        }
    }
    let (path, language, source) = read_source_file(path.to_owned())?;
    let blocks = functions_in_source_checked(language, &source)?;
    let file = Arc::new(ParsedFile::new(path, language, source, blocks));
    if let Some(stamp) = stamp {
        let racy = stamp.racy(read_at);
        lock().insert(stamp, racy, Arc::clone(&file));
    }
    Ok(file)
}

/// A parse of `source`, the text the caller has just read from the file at `path` (absolute): the cached one
/// when it is of this same text, else a new one, kept for the calls that follow. Its stamp is taken after the
/// caller's read, so the entry is checked against the file's content before its next use.
pub fn parsed_source(
    path: &Path,
    language: Language,
    source: &str,
) -> Result<Arc<ParsedFile>, CodeError> {
    let stamp = Stamp::of(path).filter(|_| path.is_absolute());
    let cached = stamp.as_ref().and_then(|stamp| lock().get(path, stamp));
    if let Some((file, _)) = cached
        && file.language == language
        && file.source == source
    {
        return Ok(file);
    }
    let blocks = functions_in_source_checked(language, source)?;
    let file = Arc::new(ParsedFile::new(
        path.to_owned(),
        language,
        source.to_owned(),
        blocks,
    ));
    if let Some(stamp) = stamp {
        lock().insert(stamp, true, Arc::clone(&file));
    }
    Ok(file)
}

/// Whether the file at `path` still holds `source` (a leading byte-order mark aside, as when it was read).
fn same_content(path: &Path, source: &str) -> bool {
    files::read_bounded(path, MAX_SOURCE_BYTES).is_ok_and(|bytes| {
        bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(&bytes) == source.as_bytes()
    })
}

fn lock() -> std::sync::MutexGuard<'static, Cache> {
    // The cache holds no invariant a panicking holder could break half-way that matters: keep using it.
    CACHE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_parse_while_unchanged_a_new_one_after_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.py");
        std::fs::write(&path, "def first():\n    return 1\n").unwrap();
        let a = parsed_path(&path).unwrap();
        let b = parsed_path(&path).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "the second call uses the first parse");
        assert_eq!(b.blocks[0].info.name, "first");

        // Same size, new content, written in place right away (maybe within one file-clock tick).
        std::fs::write(&path, "def other():\n    return 2\n").unwrap();
        let c = parsed_path(&path).unwrap();
        assert!(!Arc::ptr_eq(&b, &c));
        assert_eq!(c.blocks[0].info.name, "other");

        // Same size, new content, renamed over it: a new inode.
        let replacement = dir.path().join("m.py.new");
        std::fs::write(&replacement, "def third():\n    return 3\n").unwrap();
        std::fs::rename(&replacement, &path).unwrap();
        let d = parsed_path(&path).unwrap();
        assert_eq!(d.blocks[0].info.name, "third");
    }

    #[test]
    fn text_read_by_the_caller_shares_the_cache_and_is_checked_before_reuse() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.py");
        let python = Language::from_name("python").unwrap();
        std::fs::write(&path, "def first():\n    return 1\n").unwrap();
        let listed = parsed_path(&path).unwrap();
        let chunked = parsed_source(&path, python, "def first():\n    return 1\n").unwrap();
        assert!(
            Arc::ptr_eq(&listed, &chunked),
            "the listing's parse is reused"
        );

        std::fs::write(&path, "def other():\n    return 2\n").unwrap();
        let read = std::fs::read_to_string(&path).unwrap();
        let chunked = parsed_source(&path, python, &read).unwrap();
        assert_eq!(chunked.blocks[0].info.name, "other");
        assert!(Arc::ptr_eq(&chunked, &parsed_path(&path).unwrap()));

        // Rewritten in place, same size, right away: the entry's content is checked.
        std::fs::write(&path, "def third():\n    return 3\n").unwrap();
        assert_eq!(parsed_path(&path).unwrap().blocks[0].info.name, "third");
    }

    #[test]
    fn the_bound_evicts_the_least_recently_used() {
        let mut cache = Cache::default();
        let stamp = Stamp {
            size: 0,
            modified: None,
            inode: 0,
        };
        let python = Language::from_name("python").unwrap();
        let big = |name: &str| {
            Arc::new(ParsedFile::new(
                PathBuf::from(name),
                python,
                "#".repeat(CACHE_BYTES / 3),
                Vec::new(),
            ))
        };
        cache.insert(stamp.clone(), false, big("/a"));
        cache.insert(stamp.clone(), false, big("/b"));
        cache.insert(stamp.clone(), false, big("/c"));
        assert!(cache.get(Path::new("/a"), &stamp).is_some());
        cache.insert(stamp.clone(), false, big("/d"));
        assert!(
            cache.get(Path::new("/b"), &stamp).is_none(),
            "b was the oldest"
        );
        assert!(cache.get(Path::new("/a"), &stamp).is_some());
        assert!(cache.total_weight <= CACHE_BYTES);
        cache.insert(
            stamp.clone(),
            false,
            Arc::new(ParsedFile::new(
                PathBuf::from("/huge"),
                python,
                "#".repeat(CACHE_BYTES + 1),
                Vec::new(),
            )),
        );
        assert!(cache.get(Path::new("/huge"), &stamp).is_none());
    }
}
