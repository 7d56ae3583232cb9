//! Data feeds: the rows of a CSV or JSON lines file, whose columns fill `{{name}}` placeholders in the url,
//! header values and body of a scenario's requests (Gatling's feeders).
//!
//! A feed is read once, before the run, through [`crate::files`] (so a missing file, a directory, a FIFO or a
//! file over [`FEED_MAX_BYTES`] is refused without being opened or read past the cap), and kept in memory as
//! one text with the place of every value in it. Its format is told by the extension (`.csv`; `.jsonl` or
//! `.ndjson`), else by the first non-blank character: `{` is JSON lines, anything else CSV.
//! - CSV: a header row names the columns (names trimmed, none twice), and every row under it has as many
//!   fields (RFC 4180 quoting: `"a, b"`, `"say ""hi"""`); blank lines are skipped.
//! - JSON lines: one object per line (blank lines skipped); its keys are the columns. A string value is its
//!   text, any other value its JSON text (`42`, `true`, `null`, `{"a":1}`). A line may lack a key another line
//!   has; binding a template refuses a placeholder naming a column that some line lacks.
//!
//! Which row serves call number `k` is [`Feed::row`]'s pure function of `k` (and of the seed), so it is the same
//! whichever task asks first: `sequential` serves row `k mod rows`; `random` draws a row uniformly for each
//! call (with replacement) from the seed and `k` alone ([`crate::seeded::keyed_hash`]), so a seed gives one
//! sequence and another run with that seed repeats it. [`Feed::next_row`] numbers the calls itself, with one
//! atomic counter, for a caller that has no call number of its own.
//!
//! A [`Template`] is parsed once into literal and placeholder parts; [`Feed::bind`] resolves its placeholders
//! to the feed's columns, refusing a name that is not one, and rendering a row then only copies text. A
//! placeholder is `{{name}}` (spaces inside the braces are trimmed); the name runs to the first `}}` and holds
//! no brace. There is no escape: every `{{` opens a placeholder, and one that no `}}` closes is refused, with
//! its field and position. Values go in as they are (a url's value is not percent-encoded).

use std::{
    borrow::Cow,
    collections::HashMap,
    fmt,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use crate::files::{self, FileError};

/// The largest feed file read (64 MiB).
pub const FEED_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The most values (rows × columns) a feed holds: each takes 8 bytes of index beside its text, and a JSON
/// lines file whose lines each add a new key would otherwise need rows × keys of them.
pub const FEED_MAX_VALUES: u64 = 16 * 1024 * 1024;

/// The order in which calls take the feed's rows (`feed.order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FeedOrder {
    /// Row 0, 1, 2, … for call 0, 1, 2, …, wrapping around after the last.
    #[default]
    Sequential,
    /// A row drawn uniformly for each call from the scenario's seed and the call's number.
    Random,
}

impl FeedOrder {
    /// Every order's name, as `feed.order` takes it.
    pub const NAMES: [&'static str; 2] = ["sequential", "random"];

    /// The order named `given` (case and surrounding spaces ignored); an unknown name is refused with the
    /// closest one.
    pub fn parse(given: &str) -> Result<Self, FeedError> {
        match given.trim().to_ascii_lowercase().as_str() {
            "sequential" => Ok(Self::Sequential),
            "random" => Ok(Self::Random),
            _ => Err(FeedError::UnknownOrder {
                given: given.to_owned(),
                hint: crate::fields::closest(given.trim(), Self::NAMES)
                    .map(|name| format!("; did you mean '{name}'?"))
                    .unwrap_or_default(),
            }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Sequential => "sequential",
            Self::Random => "random",
        }
    }
}

/// How a feed file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedFormat {
    Csv,
    JsonLines,
}

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

/// Where one value lies in [`Feed::text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    /// No value: the row's line lacks the column (JSON lines only).
    const MISSING: Span = Span {
        start: u32::MAX,
        len: 0,
    };
}

/// The rows of a data file, and which of them each call takes. Shared by reference (or `Arc`) between the
/// tasks that send requests.
pub struct Feed {
    path: PathBuf,
    format: FeedFormat,
    order: FeedOrder,
    seed: u64,
    columns: Vec<String>,
    /// Every value's text, one after another.
    text: String,
    /// Row-major: row `r`'s value of column `c` is `cells[r * columns.len() + c]`.
    cells: Vec<Span>,
    /// The line each row starts on (1-based).
    lines: Vec<u32>,
    /// For each column, the line of the first row that lacks it (JSON lines), if any does.
    lacking: Vec<Option<u32>>,
    /// The call number [`Feed::next_row`] hands out next.
    next_call: AtomicU64,
}

impl fmt::Debug for Feed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Feed")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("order", &self.order)
            .field("columns", &self.columns)
            .field("rows", &self.rows())
            .finish_non_exhaustive()
    }
}

impl Feed {
    /// Reads the feed file at `path` (`feed.file`) whole, to serve its rows in `order` (`random` draws from
    /// `seed`, the scenario's).
    pub fn load(path: &Path, order: FeedOrder, seed: u64) -> Result<Self, FeedError> {
        let text = files::read_text(path, FEED_MAX_BYTES).map_err(|e| match e {
            FileError::TooLarge { path, size, .. } => FeedError::TooLarge { path, size },
            other => FeedError::File(other),
        })?;
        // A byte-order mark is not part of the first column's name.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let format = format_of(path, text);
        let mut table = Table::new(path);
        match format {
            FeedFormat::Csv => table.read_csv(text)?,
            FeedFormat::JsonLines => table.read_json_lines(text)?,
        }
        table.into_feed(format, order, seed)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn format(&self) -> FeedFormat {
        self.format
    }

    pub fn order(&self) -> FeedOrder {
        self.order
    }

    /// The columns' names: the CSV header's, in its order, or the JSON objects' keys, in the order first seen.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// How many rows it has (at least one).
    pub fn rows(&self) -> usize {
        self.lines.len()
    }

    /// The row call number `call` takes: the same for the same call (and seed), whoever asks.
    pub fn row_index(&self, call: u64) -> usize {
        let rows = self.rows() as u64;
        let index = match self.order {
            FeedOrder::Sequential => call % rows,
            FeedOrder::Random => {
                let hash = crate::seeded::keyed_hash(self.seed, &[b"feed", &call.to_le_bytes()]);
                // Lemire's multiply-shift: uniform over the rows without a division.
                ((u128::from(hash) * u128::from(rows)) >> 64) as u64
            }
        };
        index as usize
    }

    /// The row call number `call` takes.
    pub fn row(&self, call: u64) -> Row<'_> {
        Row {
            feed: self,
            index: self.row_index(call),
        }
    }

    /// The row of the next call, numbering calls 0, 1, 2, … in the order they ask (one atomic counter shared by
    /// every caller).
    pub fn next_row(&self) -> Row<'_> {
        self.row(self.next_call.fetch_add(1, Ordering::Relaxed))
    }

    /// `template` ready to fill from this feed's rows; a placeholder naming no column, or a column some line
    /// lacks, is refused.
    pub fn bind(&self, template: &Template) -> Result<BoundTemplate, FeedError> {
        let parts = template
            .parts
            .iter()
            .map(|part| match part {
                Part::Literal(text) => Ok(BoundPart::Literal(text.clone())),
                Part::Placeholder(name) => self.column_for(template.field(), name),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(BoundTemplate { parts })
    }

    /// [`Feed::bind`] for a header value: also refuses a column named whose value on some row holds a line break
    /// or another control character (tab aside), which would end the header or break the request.
    pub fn bind_header_value(&self, template: &Template) -> Result<BoundTemplate, FeedError> {
        let bound = self.bind(template)?;
        for part in &bound.parts {
            let BoundPart::Column(column) = *part else {
                continue;
            };
            let unfit = (0..self.rows()).find(|&row| {
                self.value(row, column)
                    .bytes()
                    .any(|b| (b < b' ' && b != b'\t') || b == 0x7f)
            });
            if let Some(row) = unfit {
                return Err(FeedError::UnfitHeaderValue {
                    field: template.field().to_owned(),
                    name: self.columns[column].clone(),
                    path: self.path.clone(),
                    line: u64::from(self.lines[row]),
                });
            }
        }
        Ok(bound)
    }

    fn column_for(&self, field: &str, name: &str) -> Result<BoundPart, FeedError> {
        let Some(column) = self.columns.iter().position(|c| c == name) else {
            return Err(FeedError::UnknownColumn {
                field: field.to_owned(),
                name: name.to_owned(),
                hint: crate::fields::closest(name, self.columns.iter().map(String::as_str))
                    .map(|close| format!("; did you mean {{{{{close}}}}}?"))
                    .unwrap_or_default(),
                path: self.path.clone(),
                columns: self.columns.join(", "),
            });
        };
        if let Some(line) = self.lacking[column] {
            return Err(FeedError::MissingValue {
                field: field.to_owned(),
                name: name.to_owned(),
                path: self.path.clone(),
                line: u64::from(line),
            });
        }
        Ok(BoundPart::Column(column))
    }

    /// Row `row`'s value of column `column`; empty where there is none.
    fn value(&self, row: usize, column: usize) -> &str {
        let span = row
            .checked_mul(self.columns.len())
            .and_then(|at| at.checked_add(column))
            .filter(|_| column < self.columns.len())
            .and_then(|at| self.cells.get(at));
        match span {
            Some(span) if *span != Span::MISSING => {
                let start = span.start as usize;
                self.text
                    .get(start..start + span.len as usize)
                    .unwrap_or_default()
            }
            _ => "",
        }
    }
}

/// One row of a feed.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    feed: &'a Feed,
    index: usize,
}

impl<'a> Row<'a> {
    /// Its place in the feed, from 0.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its value of column `name`, if the feed has that column and this row's line gave it.
    pub fn get(&self, name: &str) -> Option<&'a str> {
        let column = self.feed.columns.iter().position(|c| c == name)?;
        let at = self.index * self.feed.columns.len() + column;
        (self.feed.cells.get(at) != Some(&Span::MISSING))
            .then(|| self.feed.value(self.index, column))
    }
}

/// One part of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Placeholder(String),
}

/// A text with `{{name}}` placeholders (a request's url, a header value, a body), parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The input field it came from (`requests[1].body`), which its errors name.
    field: String,
    text: String,
    parts: Vec<Part>,
}

impl Template {
    /// Parses `text` of input field `field`. Refused: a `{{` that no `}}` closes, `{{}}`, and a name holding a
    /// brace (`{{{id}}}`).
    pub fn parse(field: impl Into<String>, text: &str) -> Result<Self, FeedError> {
        let field = field.into();
        let at = |byte: usize| text[..byte].chars().count() + 1;
        let mut parts = Vec::new();
        let mut rest = text;
        let mut offset = 0;
        while let Some(open) = rest.find("{{") {
            let inside = &rest[open + 2..];
            let Some(close) = inside.find("}}") else {
                return Err(FeedError::Unclosed {
                    field,
                    at: at(offset + open),
                });
            };
            let name = inside[..close].trim();
            if name.is_empty() {
                return Err(FeedError::EmptyPlaceholder {
                    field,
                    at: at(offset + open),
                });
            }
            if name.contains(['{', '}']) {
                return Err(FeedError::BracedPlaceholder {
                    field,
                    at: at(offset + open),
                    text: rest[open..open + 2 + close + 2].to_owned(),
                });
            }
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            parts.push(Part::Placeholder(name.to_owned()));
            let consumed = open + 2 + close + 2;
            rest = &rest[consumed..];
            offset += consumed;
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self {
            field,
            text: text.to_owned(),
            parts,
        })
    }

    pub fn field(&self) -> &str {
        &self.field
    }

    /// The column names its placeholders name, in order (a name used twice comes twice).
    pub fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|part| match part {
            Part::Placeholder(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// True when it names no placeholder: it renders to its own text.
    pub fn is_literal(&self) -> bool {
        self.placeholders().next().is_none()
    }

    /// Its text, for a scenario without a feed: refused when it names a placeholder, which nothing would fill.
    pub fn without_feed(&self) -> Result<&str, FeedError> {
        match self.placeholders().next() {
            None => Ok(&self.text),
            Some(name) => Err(FeedError::NoFeed {
                field: self.field.clone(),
                name: name.to_owned(),
            }),
        }
    }
}

/// One part of a bound template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum BoundPart {
    Literal(String),
    /// The index of a column of the feed it was bound to.
    Column(usize),
}

/// A [`Template`] whose placeholders are columns of one feed ([`Feed::bind`]): rendering copies text and
/// parses nothing. Render it only with rows of the feed it was bound to (another feed's rows give empty
/// values where the columns do not line up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundTemplate {
    parts: Vec<BoundPart>,
}

impl BoundTemplate {
    /// True when it names no placeholder: every row renders it to the same text.
    pub fn is_literal(&self) -> bool {
        !self
            .parts
            .iter()
            .any(|part| matches!(part, BoundPart::Column(_)))
    }

    /// The text for `row`. A text without placeholders, or that is one placeholder alone, is borrowed, not
    /// copied.
    pub fn render<'a>(&'a self, row: Row<'a>) -> Cow<'a, str> {
        match self.parts.as_slice() {
            [] => Cow::Borrowed(""),
            [BoundPart::Literal(text)] => Cow::Borrowed(text),
            [BoundPart::Column(column)] => Cow::Borrowed(row.feed.value(row.index, *column)),
            parts => {
                let len = parts
                    .iter()
                    .map(|part| self.part_text(part, row).len())
                    .sum();
                let mut out = String::with_capacity(len);
                self.render_into(row, &mut out);
                Cow::Owned(out)
            }
        }
    }

    /// Appends the text for `row` to `out` (e.g. a request being serialized).
    pub fn render_into(&self, row: Row<'_>, out: &mut String) {
        for part in &self.parts {
            out.push_str(self.part_text(part, row));
        }
    }

    fn part_text<'a>(&'a self, part: &'a BoundPart, row: Row<'a>) -> &'a str {
        match part {
            BoundPart::Literal(text) => text,
            BoundPart::Column(column) => row.feed.value(row.index, *column),
        }
    }
}

/// The format of the feed at `path` whose text is `text`.
fn format_of(path: &Path, text: &str) -> FeedFormat {
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

/// A feed being read.
struct Table {
    path: PathBuf,
    columns: Vec<String>,
    text: String,
    cells: Vec<Span>,
    lines: Vec<u32>,
}

impl Table {
    fn new(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            columns: Vec::new(),
            text: String::new(),
            cells: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// Keeps `value`'s text, and says where.
    fn keep(&mut self, value: &str) -> Result<Span, FeedError> {
        // Values are at most the file's text again (and numbers' JSON text, a few bytes more): far below the
        // 4 GiB a span reaches, but checked rather than wrapped.
        let start = u32::try_from(self.text.len()).ok();
        let len = u32::try_from(value.len()).ok();
        match (start, len) {
            (Some(start), Some(len))
                if start.checked_add(len).is_some_and(|end| end < u32::MAX) =>
            {
                self.text.push_str(value);
                Ok(Span { start, len })
            }
            _ => Err(FeedError::TooLarge {
                path: self.path.clone(),
                size: (self.text.len() + value.len()) as u64,
            }),
        }
    }

    fn check_values(&self, rows: usize) -> Result<(), FeedError> {
        let values = (rows as u64).saturating_mul(self.columns.len() as u64);
        if values > FEED_MAX_VALUES {
            return Err(FeedError::TooManyValues {
                path: self.path.clone(),
                rows: rows as u64,
                columns: self.columns.len() as u64,
            });
        }
        Ok(())
    }

    fn read_csv(&mut self, text: &str) -> Result<(), FeedError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .trim(csv::Trim::Headers)
            .from_reader(text.as_bytes());
        let headers = reader
            .headers()
            .map_err(|e| self.csv_error(e, &mut LineCounter::new(text)))?;
        self.columns = headers.iter().map(str::to_owned).collect();
        let mut seen = HashMap::new();
        for (index, name) in self.columns.iter().enumerate() {
            if let Some(first) = seen.insert(name.as_str(), index) {
                return Err(FeedError::DuplicateColumn {
                    path: self.path.clone(),
                    name: name.clone(),
                    first: first + 1,
                    second: index + 1,
                });
            }
        }
        let mut record = csv::StringRecord::new();
        let mut lines = LineCounter::new(text);
        while reader
            .read_record(&mut record)
            .map_err(|e| self.csv_error(e, &mut lines))?
        {
            self.check_values(self.lines.len() + 1)?;
            let line = lines.line_of(record.position());
            self.lines.push(u32::try_from(line).unwrap_or(u32::MAX));
            for value in &record {
                let span = self.keep(value)?;
                self.cells.push(span);
            }
        }
        Ok(())
    }

    fn csv_error(&self, error: csv::Error, lines: &mut LineCounter) -> FeedError {
        match error.kind() {
            csv::ErrorKind::UnequalLengths {
                pos,
                expected_len,
                len,
            } => FeedError::CsvWidth {
                path: self.path.clone(),
                line: lines.line_of(pos.as_ref()),
                expected: *expected_len,
                found: *len,
            },
            _ => FeedError::Csv {
                path: self.path.clone(),
                reason: error.to_string(),
            },
        }
    }

    fn read_json_lines(&mut self, text: &str) -> Result<(), FeedError> {
        use serde_json::Value;
        let mut column_of: HashMap<String, usize> = HashMap::new();
        // (row, column, value) as read; laid out row by row once every column is known.
        let mut values: Vec<(usize, usize, Span)> = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line_number = number as u64 + 1;
            if line.trim().is_empty() {
                continue;
            }
            let object = match serde_json::from_str::<Value>(line) {
                Ok(Value::Object(object)) => object,
                Ok(other) => {
                    return Err(FeedError::NotAnObject {
                        path: self.path.clone(),
                        line: line_number,
                        found: json_kind(&other),
                    });
                }
                Err(e) => {
                    // serde_json's position counts within the line: give the column alone.
                    let message = e.to_string();
                    let reason = message.split(" at line ").next().unwrap_or(&message);
                    return Err(FeedError::NotJson {
                        path: self.path.clone(),
                        line: line_number,
                        reason: format!("{reason} at column {}", e.column()),
                    });
                }
            };
            let row = self.lines.len();
            self.lines
                .push(u32::try_from(line_number).unwrap_or(u32::MAX));
            for (key, value) in object {
                let next = column_of.len();
                let column = *column_of.entry(key).or_insert_with_key(|key| {
                    self.columns.push(key.clone());
                    next
                });
                let span = match &value {
                    Value::String(text) => self.keep(text)?,
                    other => self.keep(&other.to_string())?,
                };
                values.push((row, column, span));
            }
        }
        let rows = self.lines.len();
        self.check_values(rows)?;
        let width = self.columns.len();
        self.cells = vec![Span::MISSING; rows * width];
        for (row, column, span) in values {
            self.cells[row * width + column] = span;
        }
        Ok(())
    }

    fn into_feed(self, format: FeedFormat, order: FeedOrder, seed: u64) -> Result<Feed, FeedError> {
        if self.lines.is_empty() {
            return Err(FeedError::Empty { path: self.path });
        }
        let width = self.columns.len();
        let lacking = (0..width)
            .map(|column| {
                (0..self.lines.len())
                    .find(|row| self.cells[row * width + column] == Span::MISSING)
                    .map(|row| self.lines[row])
            })
            .collect();
        Ok(Feed {
            path: self.path,
            format,
            order,
            seed,
            columns: self.columns,
            text: self.text,
            cells: self.cells,
            lines: self.lines,
            lacking,
            next_call: AtomicU64::new(0),
        })
    }
}

/// The line of a CSV record from its byte offset: the reader's own line count leaves out blank lines.
struct LineCounter<'a> {
    text: &'a str,
    /// A byte offset already counted, and the line it is on.
    byte: usize,
    line: u64,
}

impl<'a> LineCounter<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            text,
            byte: 0,
            line: 1,
        }
    }

    /// The line (from 1) of the record at `position`: its offset's line, past the line breaks of any blank
    /// lines before it. Offsets asked in order are counted once.
    fn line_of(&mut self, position: Option<&csv::Position>) -> u64 {
        let Some(position) = position else {
            return 0;
        };
        let bytes = self.text.as_bytes();
        let mut at = usize::try_from(position.byte()).map_or(bytes.len(), |b| b.min(bytes.len()));
        while matches!(bytes.get(at), Some(b'\r' | b'\n')) {
            at += 1;
        }
        if at < self.byte {
            self.byte = 0;
            self.line = 1;
        }
        self.line += bytes[self.byte..at].iter().filter(|&&b| b == b'\n').count() as u64;
        self.byte = at;
        self.line
    }
}

/// What a JSON value is, for a message.
fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A feed file named `name` holding `text`, in a directory kept alive by the returned guard.
    fn file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    fn load(name: &str, text: &str) -> Result<Feed, FeedError> {
        let (_dir, path) = file(name, text);
        Feed::load(&path, FeedOrder::Sequential, 0)
    }

    fn refused(name: &str, text: &str) -> String {
        load(name, text).unwrap_err().to_string()
    }

    /// A CSV feed of `rows` users: `id` 0.., `name` "user-<id>".
    fn users_csv(rows: usize) -> String {
        let mut text = String::from("id,name\n");
        for id in 0..rows {
            text.push_str(&format!("{id},user-{id}\n"));
        }
        text
    }

    fn template(field: &str, text: &str) -> Template {
        Template::parse(field, text).unwrap()
    }

    #[test]
    fn a_thousand_rows_fill_the_templates_in_order_and_wrap_around() {
        let (_dir, path) = file("users.csv", &users_csv(1_000));
        let feed = Feed::load(&path, FeedOrder::Sequential, 42).unwrap();
        assert_eq!(feed.rows(), 1_000);
        assert_eq!(feed.columns(), ["id", "name"]);
        let url = feed
            .bind(&template(
                "url",
                "http://127.0.0.1:9090/users/{{id}}?who={{ name }}",
            ))
            .unwrap();
        let body = feed
            .bind(&template("requests[0].body", "{\"id\":{{id}}}"))
            .unwrap();
        for call in 0..2_500u64 {
            let k = call % 1_000;
            let row = feed.row(call);
            assert_eq!(row.index() as u64, k);
            assert_eq!(
                url.render(row),
                format!("http://127.0.0.1:9090/users/{k}?who=user-{k}")
            );
            assert_eq!(body.render(row), format!("{{\"id\":{k}}}"));
        }
    }

    #[test]
    fn next_row_hands_each_call_its_own_row_across_threads() {
        let (_dir, path) = file("users.csv", &users_csv(1_000));
        let feed = Feed::load(&path, FeedOrder::Sequential, 0).unwrap();
        let mut taken: Vec<usize> = std::thread::scope(|scope| {
            let tasks: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        (0..250)
                            .map(|_| feed.next_row().index())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            tasks.into_iter().flat_map(|t| t.join().unwrap()).collect()
        });
        taken.sort_unstable();
        assert_eq!(taken, (0..1_000).collect::<Vec<_>>());
        // The next caller starts the second round.
        assert_eq!(feed.next_row().index(), 0);
    }

    #[test]
    fn a_seed_gives_one_random_order_and_a_second_feed_with_it_repeats_it() {
        let (_dir, path) = file("users.csv", &users_csv(1_000));
        let picks = |seed: u64| {
            let feed = Feed::load(&path, FeedOrder::Random, seed).unwrap();
            let name = feed
                .bind(&template("requests[0].body", "{{name}}"))
                .unwrap();
            (0..1_000u64)
                .map(|call| name.render(feed.row(call)).into_owned())
                .collect::<Vec<_>>()
        };
        let first = picks(7);
        assert_eq!(first, picks(7), "the same seed repeats the same rows");
        let other = picks(8);
        assert_ne!(first, other, "another seed draws other rows");
        let same_place = first.iter().zip(&other).filter(|(a, b)| a == b).count();
        assert!(
            same_place < 20,
            "{same_place} of 1000 calls got the same row"
        );
        // Drawn with replacement, uniformly: about 1 − 1/e of the rows come up in 1,000 draws.
        let distinct = first.iter().collect::<std::collections::HashSet<_>>().len();
        assert!((580..=680).contains(&distinct), "{distinct} distinct rows");
        assert!(first.iter().all(|name| name.starts_with("user-")));
        // The row of a call does not depend on which calls were asked before.
        let feed = Feed::load(&path, FeedOrder::Random, 7).unwrap();
        assert_eq!(
            feed.row(999).get("name").unwrap(),
            first[999],
            "call 999 asked first"
        );
    }

    #[test]
    fn csv_quoting_keeps_commas_quotes_and_line_breaks_inside_fields() {
        let feed = load(
            "quoted.csv",
            "\u{feff} user , note,empty\n\
             \"Smith, Ann\",\"she said \"\"hi\"\"\",\n\
             \n\
             bob,\"two\nlines\",\"\"\n",
        )
        .unwrap();
        assert_eq!(feed.columns(), ["user", "note", "empty"]);
        assert_eq!(feed.rows(), 2);
        let body = feed
            .bind(&template(
                "requests[0].body",
                "{{user}}|{{note}}|{{empty}}|",
            ))
            .unwrap();
        assert_eq!(body.render(feed.row(0)), "Smith, Ann|she said \"hi\"||");
        assert_eq!(body.render(feed.row(1)), "bob|two\nlines||");
        // Values are not trimmed; only the header's names are.
        assert_eq!(
            load("t.csv", "a\n x \n").unwrap().row(0).get("a"),
            Some(" x ")
        );
    }

    #[test]
    fn json_lines_take_strings_as_text_and_other_values_as_json() {
        let text = "{\"user\": \"ann\", \"age\": 41, \"admin\": true, \"tags\": [\"a\", 1], \"extra\": null}\n\
                    \n\
                    {\"user\": \"bo \\\"b\\\"\", \"age\": 7.5, \"admin\": false, \"tags\": {\"k\": \"v\"}, \"extra\": \"x\"}\r\n";
        for name in ["users.jsonl", "users.ndjson", "users.txt"] {
            let feed = load(name, text).unwrap();
            assert_eq!(feed.format(), FeedFormat::JsonLines, "{name}");
            assert_eq!(feed.rows(), 2);
            let body = feed
                .bind(&template(
                    "requests[0].body",
                    "{{user}};{{age}};{{admin}};{{tags}};{{extra}}",
                ))
                .unwrap();
            assert_eq!(body.render(feed.row(0)), "ann;41;true;[\"a\",1];null");
            assert_eq!(
                body.render(feed.row(1)),
                "bo \"b\";7.5;false;{\"k\":\"v\"};x"
            );
        }
        // Not told by its extension, a file that does not start with '{' is CSV.
        assert_eq!(
            load("users.txt", "a,b\n1,2\n").unwrap().format(),
            FeedFormat::Csv
        );
        // A line may lack a key: a template naming it is refused with the line, one that does not is fine.
        let feed = load("sparse.jsonl", "{\"a\": 1, \"b\": 2}\n\n{\"a\": 3}\n").unwrap();
        let error = feed
            .bind(&template("requests[2].url", "http://h/{{b}}"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            format!(
                "requests[2].url: the placeholder {{{{b}}}} needs a value on every line of the feed, but line 3 \
                 of {} has no 'b'",
                feed.path().display()
            )
        );
        assert_eq!(feed.row(1).get("b"), None);
        let a = feed
            .bind(&template("requests[2].url", "http://h/{{a}}"))
            .unwrap();
        assert_eq!(a.render(feed.row(1)), "http://h/3");
    }

    #[test]
    fn templates_parse_once_and_text_without_placeholders_is_borrowed() {
        let parsed = template("requests[1].body", "a{{x}}b{{ y }}{{x}}");
        assert_eq!(parsed.placeholders().collect::<Vec<_>>(), ["x", "y", "x"]);
        assert!(!parsed.is_literal());
        let plain = template("requests[1].body", "{\"a\": {\"b\": 1}}");
        assert!(plain.is_literal());
        assert_eq!(plain.without_feed().unwrap(), "{\"a\": {\"b\": 1}}");
        assert_eq!(
            parsed.without_feed().unwrap_err().to_string(),
            "requests[1].body: the placeholder {{x}} needs a feed to fill it; add feed: {file, order} or write \
             the text without '{{'"
        );

        let feed = load("xy.csv", "x,y\n1,2\n").unwrap();
        let bound = feed.bind(&parsed).unwrap();
        assert_eq!(bound.render(feed.row(0)), "a1b21");
        let mut out = String::from("> ");
        bound.render_into(feed.row(0), &mut out);
        assert_eq!(out, "> a1b21");
        let literal = feed.bind(&plain).unwrap();
        assert!(literal.is_literal());
        assert!(matches!(literal.render(feed.row(0)), Cow::Borrowed(_)));
        let alone = feed.bind(&template("url", "{{y}}")).unwrap();
        assert!(matches!(alone.render(feed.row(0)), Cow::Borrowed("2")));
        assert_eq!(
            feed.bind(&template("url", "")).unwrap().render(feed.row(0)),
            ""
        );
        // A closing brace beside a placeholder is text: a JSON body's own braces stay.
        let json = feed
            .bind(&template("body", "{\"o\":{\"x\":{{x}}}}"))
            .unwrap();
        assert_eq!(json.render(feed.row(0)), "{\"o\":{\"x\":1}}");
    }

    #[test]
    fn malformed_placeholders_are_refused_naming_the_field_and_where() {
        let error = |text: &str| {
            Template::parse("requests[1].body", text)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            error("héllo {{user"),
            "requests[1].body: the '{{' at character 7 opens a placeholder that no '}}' closes; a placeholder \
             is written {{column}}, and every '{{' opens one"
        );
        assert!(
            error("{{a}} and {{").contains("character 11"),
            "{}",
            error("{{a}} and {{")
        );
        assert_eq!(
            error("x{{ }}"),
            "requests[1].body: the placeholder at character 2 names no column; write it {{column}}, with a \
             column of the feed"
        );
        assert_eq!(
            error("{{{id}}}"),
            "requests[1].body: the placeholder at character 1 is '{{{id}}'; a column name between '{{' and '}}' \
             holds no brace"
        );
    }

    #[test]
    fn a_placeholder_naming_no_column_is_refused_with_the_columns() {
        let feed = load("users.csv", &users_csv(3)).unwrap();
        let error = feed
            .bind(&template("requests[1].headers.x-user", "{{nmae}}"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            format!(
                "requests[1].headers.x-user: the placeholder {{{{nmae}}}} names no column of the feed {}; did you \
                 mean {{{{name}}}}? (its columns: id, name)",
                feed.path().display()
            )
        );
        let error = feed
            .bind(&template("url", "http://h/{{zzz}}"))
            .unwrap_err()
            .to_string();
        let expected = format!(
            "names no column of the feed {} (its columns: id, name)",
            feed.path().display()
        );
        assert!(error.ends_with(&expected), "{error}");
    }

    #[test]
    fn a_header_value_refuses_a_value_with_a_line_break() {
        let feed = load("h.csv", "token,note\nabc,fine\n\"x\r\nInjected: 1\",ok\n").unwrap();
        let header = template("requests[0].headers.authorization", "Bearer {{token}}");
        // In a body the same value is fine.
        assert!(feed.bind(&header).is_ok());
        assert_eq!(
            feed.bind_header_value(&header).unwrap_err().to_string(),
            format!(
                "requests[0].headers.authorization: the placeholder {{{{token}}}} takes line 3 of {}'s value, which \
                 holds a line break or control character that a header value cannot hold",
                feed.path().display()
            )
        );
        let note = template("requests[0].headers.x-note", "{{note}}\t!");
        assert_eq!(
            feed.bind_header_value(&note).unwrap().render(feed.row(1)),
            "ok\t!"
        );
    }

    #[test]
    fn an_unknown_order_is_refused_with_the_closest_name() {
        assert_eq!(FeedOrder::parse(" Random ").unwrap(), FeedOrder::Random);
        assert_eq!(
            FeedOrder::parse("sequential").unwrap(),
            FeedOrder::Sequential
        );
        assert_eq!(
            FeedOrder::parse("sequental").unwrap_err().to_string(),
            "feed.order: unknown order 'sequental'; did you mean 'sequential'? (one of sequential, random)"
        );
        assert_eq!(
            FeedOrder::parse("shuffle").unwrap_err().to_string(),
            "feed.order: unknown order 'shuffle' (one of sequential, random)"
        );
        assert_eq!(FeedOrder::Random.name(), "random");
    }

    #[test]
    fn what_is_not_a_feed_file_is_refused_naming_feed_file() {
        let dir = tempfile::tempdir().unwrap();
        let load_path = |path: &Path| {
            Feed::load(path, FeedOrder::Sequential, 0)
                .unwrap_err()
                .to_string()
        };
        let missing = dir.path().join("missing.csv");
        assert_eq!(
            load_path(&missing),
            format!("feed.file: file not found: {}", missing.display())
        );
        assert_eq!(
            load_path(dir.path()),
            format!(
                "feed.file: {} is a directory, not a file",
                dir.path().display()
            )
        );
        let fifo = dir.path().join("fifo.csv");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo failed");
        // Refused from its metadata: opening a FIFO would block until a writer came.
        assert_eq!(
            load_path(&fifo),
            format!(
                "feed.file: {} is not a regular file (a device, FIFO or socket); pass the path of a file",
                fifo.display()
            )
        );
        let big = dir.path().join("big.csv");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(FEED_MAX_BYTES + 1)
            .unwrap();
        assert_eq!(
            load_path(&big),
            format!(
                "feed.file: {} is 67108865 bytes or more, over a feed's limit of 64 MiB (67108864 bytes)",
                big.display()
            )
        );
        let latin1 = dir.path().join("latin1.csv");
        std::fs::write(&latin1, b"name\nb\xe9a\n").unwrap();
        assert!(load_path(&latin1).contains("not valid UTF-8 (first bad byte on line 2)"));
    }

    #[test]
    fn a_feed_without_a_data_row_is_refused() {
        for (name, text) in [
            ("empty.csv", ""),
            ("header.csv", "id,name\n\n"),
            ("blank.jsonl", "\n  \n"),
            ("empty.txt", ""),
        ] {
            let (_dir, path) = file(name, text);
            let error = Feed::load(&path, FeedOrder::Random, 1)
                .unwrap_err()
                .to_string();
            assert_eq!(
                error,
                format!(
                    "feed.file: {} has no data row; a CSV feed takes a header row and at least one row under it, \
                     a JSON lines feed at least one object",
                    path.display()
                ),
                "{name}"
            );
        }
    }

    #[test]
    fn malformed_rows_are_refused_with_their_line() {
        let error = refused("users.csv", "id,name\n1,ann\n\n2,bob,extra\n");
        assert!(
            error.ends_with(
                "line 4 has 3 fields where the header has 2; a field that holds a comma is quoted (\"a, b\"), \
                 a quote inside it doubled (\"say \"\"hi\"\"\")"
            ),
            "{error}"
        );
        assert!(error.starts_with("feed.file: "), "{error}");
        let error = refused("users.csv", "id,name\n1\n");
        assert!(
            error.contains("line 2 has 1 fields where the header has 2"),
            "{error}"
        );
        // Lines count the blank ones and those inside a quoted field.
        let error = refused("users.csv", "\nid,name\r\n1,\"two\nlines\"\r\n\r\n\n2\n");
        assert!(
            error.contains("line 7 has 1 fields where the header has 2"),
            "{error}"
        );
        let error = refused("dup.csv", "id, name,id\n1,2,3\n");
        assert!(
            error.ends_with("'s header names column 'id' twice (columns 1 and 3); each column takes a name of its own"),
            "{error}"
        );

        let error = refused("users.jsonl", "{\"a\": 1}\n\n[1, 2]\n");
        assert!(
            error.ends_with(
                " line 3 is an array, not a JSON object; each line of a JSON lines feed holds one object, e.g. \
                 {\"user\": \"ann\"}"
            ),
            "{error}"
        );
        assert!(
            refused("users.jsonl", "\"ann\"\n").contains("line 1 is a string, not a JSON object")
        );
        let error = refused("users.jsonl", "{\"a\": 1}\n{\"a\": }\n");
        assert!(
            error.contains(" line 2 is not JSON (expected value at column 7); each line"),
            "{error}"
        );
        // Told by its first character, a .txt feed's stray line is a JSON error too.
        assert!(refused("users.txt", "{\"a\": 1}\nplain\n").contains("line 2 is not JSON"));
    }

    #[test]
    fn a_feed_of_too_many_values_is_refused() {
        // Each line adds a key: held densely, 4,097 lines of 4,097 keys would be over the limit.
        let mut text = String::new();
        for line in 0..4_097 {
            text.push_str(&format!("{{\"k{line}\": 1}}\n"));
        }
        let error = refused("wide.jsonl", &text);
        assert!(
            error.ends_with(
                " has 4097 rows of 4097 columns, over a feed's limit of 16777216 values"
            ),
            "{error}"
        );
    }
}
