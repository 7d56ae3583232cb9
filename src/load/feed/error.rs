//! Why a feed, its file or a template was refused.

use std::path::PathBuf;

use super::{FEED_MAX_BYTES, FEED_MAX_VALUES};
use crate::files::FileError;

/// A feed, its file, or a template refused; each message starts with the field it is about.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// Missing, a directory, a FIFO or device, unreadable, or not UTF-8.
    #[error("feed.file: {0}")]
    File(FileError),
    #[error(
        "feed.file: {path} is {size} bytes or more, over a feed's limit of {} MiB ({FEED_MAX_BYTES} bytes)",
        FEED_MAX_BYTES >> 20
    )]
    TooLarge { path: PathBuf, size: u64 },
    #[error(
        "feed.file: {path} has no data row; a CSV feed takes a header row and at least one row under it, a \
         JSON lines feed at least one object"
    )]
    Empty { path: PathBuf },
    #[error(
        "feed.file: {path} line {line} has {found} fields where the header has {expected}; a field that holds \
         a comma is quoted (\"a, b\"), a quote inside it doubled (\"say \"\"hi\"\"\")"
    )]
    CsvWidth {
        path: PathBuf,
        line: u64,
        expected: u64,
        found: u64,
    },
    #[error("feed.file: {path} is not CSV: {reason}")]
    Csv { path: PathBuf, reason: String },
    #[error(
        "feed.file: {path}'s header names column '{name}' twice (columns {first} and {second}); each column \
         takes a name of its own"
    )]
    DuplicateColumn {
        path: PathBuf,
        name: String,
        first: usize,
        second: usize,
    },
    #[error(
        "feed.file: {path} line {line} is not JSON ({reason}); each line of a JSON lines feed holds one object, e.g. {{\"user\": \"ann\"}}"
    )]
    NotJson {
        path: PathBuf,
        line: u64,
        reason: String,
    },
    #[error(
        "feed.file: {path} line {line} is {found}, not a JSON object; each line of a JSON lines feed holds one object, e.g. {{\"user\": \"ann\"}}"
    )]
    NotAnObject {
        path: PathBuf,
        line: u64,
        found: &'static str,
    },
    #[error(
        "feed.file: {path} has {rows} rows of {columns} columns, over a feed's limit of {FEED_MAX_VALUES} values"
    )]
    TooManyValues {
        path: PathBuf,
        rows: u64,
        columns: u64,
    },
    #[error("feed.order: unknown order '{given}'{hint} (one of sequential, random)")]
    UnknownOrder { given: String, hint: String },
    #[error(
        "{field}: the '{{{{' at character {at} opens a placeholder that no '}}}}' closes; a placeholder is \
         written {{{{column}}}}, and every '{{{{' opens one"
    )]
    Unclosed { field: String, at: usize },
    #[error(
        "{field}: the placeholder at character {at} names no column; write it {{{{column}}}}, with a column of \
         the feed"
    )]
    EmptyPlaceholder { field: String, at: usize },
    #[error(
        "{field}: the placeholder at character {at} is '{text}'; a column name between '{{{{' and '}}}}' holds \
         no brace"
    )]
    BracedPlaceholder {
        field: String,
        at: usize,
        text: String,
    },
    #[error(
        "{field}: the placeholder {{{{{name}}}}} names no column of the feed {path}{hint} (its columns: {columns})"
    )]
    UnknownColumn {
        field: String,
        name: String,
        hint: String,
        path: PathBuf,
        columns: String,
    },
    #[error(
        "{field}: the placeholder {{{{{name}}}}} needs a value on every line of the feed, but line {line} of \
         {path} has no '{name}'"
    )]
    MissingValue {
        field: String,
        name: String,
        path: PathBuf,
        line: u64,
    },
    #[error(
        "{field}: the placeholder {{{{{name}}}}} takes line {line} of {path}'s value, which holds a line break \
         or control character that a header value cannot hold"
    )]
    UnfitHeaderValue {
        field: String,
        name: String,
        path: PathBuf,
        line: u64,
    },
    #[error(
        "{field}: the placeholder {{{{{name}}}}} needs a feed to fill it; add feed: {{file, order}} or write \
         the text without '{{{{'"
    )]
    NoFeed { field: String, name: String },
}
