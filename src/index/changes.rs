//! What a run has to do: the tree walked and compared with what the store holds. A file whose stored points
//! all carry its current hash is passed over unread past the hash; the others are chunked, and only the ids
//! of the chunks to embed are kept ([`FileWork`]): their text is produced again when their batch comes.

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

use super::{
    project::Project,
    store::{ChunkMeta, FileChanges, FileStamp, LineMove, StoredPoint},
};
use crate::{
    code::{
        Language,
        chunk::{SourceChunk, chunk_read_file},
    },
    files::{self, FileError},
};

/// Chunks per embedding request by default (`--llm-embed-batch-size`).
pub const DEFAULT_EMBED_BATCH_SIZE: u32 = 64;
/// The most chunks one embedding request may carry: OpenAI's limit on the inputs of a request.
pub const MAX_EMBED_BATCH_SIZE: u32 = 2048;

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
            batch_size: DEFAULT_EMBED_BATCH_SIZE as usize,
            max_lines: 80,
            max_embed_chars: 6000,
            max_file_bytes: 2 * 1024 * 1024,
        }
    }
}

/// A chunk to embed, with everything needed to store it.
pub(super) struct PendingChunk {
    pub(super) id: String,
    pub(super) meta: ChunkMeta,
    pub(super) chunk: SourceChunk,
    pub(super) input: String,
}

/// The chunks of one file to embed, by id: their text is read again when their batch comes.
pub(super) struct FileWork {
    pub(super) rel_path: String,
    path: PathBuf,
    lang: Language,
    ids: HashSet<String>,
}

/// What a run has to do after comparing the tree with the store.
#[derive(Default)]
pub(super) struct WorkList {
    pub(super) files_seen: u64,
    pub(super) files_changed: u64,
    pub(super) files_skipped: u64,
    pub(super) seen_paths: HashSet<String>,
    /// Files with chunks to embed, in walk order, and how many chunks in all.
    pub(super) to_embed: Vec<FileWork>,
    pub(super) chunks_to_embed: u64,
    /// Each changed file's moves, stale ids and stamp, by path; its new chunks join them once embedded.
    pub(super) changes: HashMap<String, FileChanges>,
    pub(super) unchanged: u64,
}

/// Chunks to embed, and the files whose every chunk to embed is now in this batch or an earlier one.
pub(super) struct Batch {
    pub(super) chunks: Vec<PendingChunk>,
    pub(super) files_done: Vec<String>,
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
fn qualified_name(chunk: &SourceChunk) -> &str {
    chunk.qualified_name.as_deref().unwrap_or_default()
}

fn line_number(line: usize) -> u32 {
    u32::try_from(line).unwrap_or(u32::MAX)
}

/// The text sent to the embedding model: where the code is, then the code.
fn embedding_input(
    rel_path: &str,
    language: &str,
    chunk: &SourceChunk,
    max_chars: usize,
) -> String {
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
pub(super) fn plan(
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
        let source = match read_source(entry.path(), settings) {
            Ok(source) => source,
            Err(e) => {
                tracing::debug!(path = %rel_path, error = %e, "skipped: unreadable, not UTF-8 or too large");
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
    let mut changes = FileChanges {
        path: rel_path.to_owned(),
        ..Default::default()
    };
    let mut ids_to_embed = HashSet::new();
    for pending in pieces {
        let PendingChunk { id, meta, .. } = pending;
        current_ids.insert(id.clone());
        match by_id.get(id.as_str()) {
            Some(old) if old.meta.content_hash == meta.content_hash => {
                plan.unchanged += 1;
                restamp |=
                    old.meta.file_hash != meta.file_hash || old.meta.file_chunks != file_chunks;
                if (old.meta.start_line, old.meta.end_line) != (meta.start_line, meta.end_line) {
                    changes.moves.push(LineMove {
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
        changes.stamp = Some(FileStamp {
            path: rel_path.to_owned(),
            file_hash,
            file_chunks,
        });
    }
    changes.stale_ids.extend(
        stored
            .iter()
            .filter(|p| !current_ids.contains(&p.id))
            .map(|p| p.id.clone()),
    );
    plan.changes.insert(rel_path.to_owned(), changes);
}

/// A file's text through the one reader ([`files::read_text`]): a regular file of at most `max_file_bytes`
/// (the walk passes over larger ones; one that grew since is refused while read), UTF-8, byte for byte (a
/// byte-order mark stays, so the hash is of the file as it is).
fn read_source(path: &Path, settings: &IndexSettings) -> Result<String, FileError> {
    files::read_text(path, settings.max_file_bytes)
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
) -> Vec<PendingChunk> {
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
        out.push(PendingChunk {
            id,
            meta,
            chunk,
            input,
        });
    }
    out
}

/// Reads the planned files again and sends their chunks to embed in batches of `batch_size`, each naming the
/// files it completes; stops when the receiver is gone (the run ended). A file that changed since the walk
/// gives its current chunks; one that cannot be read any more is never named done, so it stays as stored.
pub(super) fn produce_batches(
    work: Vec<FileWork>,
    model_key: &str,
    settings: &IndexSettings,
    batches: &tokio::sync::mpsc::Sender<Batch>,
) {
    let batch_size = settings.batch_size.max(1);
    let mut batch = Vec::with_capacity(batch_size);
    let mut files_done = Vec::new();
    for file in work {
        let source = match read_source(&file.path, settings) {
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
            // Sent when the next chunk comes rather than when full: a file that ends with the batch is then
            // named done in it.
            if batch.len() == batch_size {
                let full = Batch {
                    chunks: std::mem::replace(&mut batch, Vec::with_capacity(batch_size)),
                    files_done: std::mem::take(&mut files_done),
                };
                if batches.blocking_send(full).is_err() {
                    return;
                }
            }
            batch.push(p);
        }
        files_done.push(file.rel_path);
    }
    if !batch.is_empty() || !files_done.is_empty() {
        let _ = batches.blocking_send(Batch {
            chunks: batch,
            files_done,
        });
    }
}

/// `path` relative to `root` with `/` separators, or `None` when it is not under `root` or not UTF-8.
fn relative_path(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
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

    /// Files are read as they are: UTF-8 with a byte-order mark or a NUL byte is indexed byte for byte;
    /// a file not UTF-8, or grown past the size limit since the walk, is counted as skipped; a file larger
    /// than the limit at the walk is passed over unseen.
    #[test]
    fn unreadable_non_utf8_and_large_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let write =
            |name: &str, bytes: &[u8]| std::fs::write(dir.path().join(name), bytes).unwrap();
        write("plain.py", b"def f():\n    return 1\n");
        write("bom.py", b"\xEF\xBB\xBFdef g():\n    return 2\n");
        write("nul.py", b"def h():\n    return '\0'\n");
        write("latin1.py", b"def i():\n    return '\xe9'\n");
        write("large.py", &[b'#'; 200]);
        let settings = IndexSettings {
            max_file_bytes: 100,
            ..IndexSettings::default()
        };
        let project = Project::at(dir.path()).unwrap();
        let python = Language::from_name("python").unwrap();
        let plan = plan(&project, &[python], &HashMap::new(), "model", &settings);
        assert_eq!(
            (plan.files_seen, plan.files_changed, plan.files_skipped),
            (4, 3, 1)
        );
        let bom = std::fs::read(dir.path().join("bom.py")).unwrap();
        let read = read_source(&dir.path().join("bom.py"), &settings).unwrap();
        assert_eq!(read.as_bytes(), bom, "the byte-order mark stays");
        assert!(read_source(&dir.path().join("large.py"), &settings).is_err());
    }

    #[test]
    fn embedding_input_is_bounded_on_a_char_boundary() {
        let chunk = SourceChunk {
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
