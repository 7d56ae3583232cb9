//! How a feed file is written, told by its extension or its first character.

use std::path::Path;

/// How a feed file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedFormat {
    Csv,
    JsonLines,
}

/// The format of the feed at `path` whose text is `text`.
pub(super) fn format_of(path: &Path, text: &str) -> FeedFormat {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("csv") => FeedFormat::Csv,
        Some("jsonl" | "ndjson") => FeedFormat::JsonLines,
        _ if text.trim_start().starts_with('{') => FeedFormat::JsonLines,
        _ => FeedFormat::Csv,
    }
}
