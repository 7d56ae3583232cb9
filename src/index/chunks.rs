//! The index's view of the code registry: languages and function-level chunks.

use std::path::Path;

pub use crate::code::Language as Lang;
use crate::code::chunk::{ChunkKind, chunk_read_file};

/// One piece of a file to embed.
#[derive(Debug, Clone)]
pub struct SourceChunk {
    /// `function` or `top_level`.
    pub kind: String,
    /// Function name; empty for top-level code.
    pub name: String,
    pub qualified_name: String,
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
}

pub fn all_languages() -> Vec<Lang> {
    Lang::all().collect()
}

pub fn language_name(lang: Lang) -> &'static str {
    lang.name()
}

pub fn language_from_name(name: &str) -> Option<Lang> {
    Lang::from_name(name)
}

pub fn language_for_path(path: &Path) -> Option<Lang> {
    Lang::from_path(path)
}

pub fn contains(languages: &[Lang], lang: Lang) -> bool {
    languages.iter().any(|l| l.name() == lang.name())
}

/// Function-sized chunks of `source`, just read from the file at `path`, functions longer than `max_lines`
/// split. The parse goes through the code tools' parse cache.
pub fn chunk(path: &Path, lang: Lang, source: &str, max_lines: usize) -> Vec<SourceChunk> {
    chunk_read_file(path, lang, source, max_lines)
        .into_iter()
        .map(|c| SourceChunk {
            kind: match c.kind {
                ChunkKind::Function => "function",
                ChunkKind::TopLevel => "top_level",
            }
            .to_owned(),
            name: c.name.unwrap_or_default(),
            qualified_name: c.qualified_name.unwrap_or_default(),
            start_line: u32::try_from(c.start_line).unwrap_or(u32::MAX),
            end_line: u32::try_from(c.end_line).unwrap_or(u32::MAX),
            text: c.text,
        })
        .collect()
}
