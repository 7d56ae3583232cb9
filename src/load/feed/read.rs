//! Reading a feed file: CSV or JSON lines, checked and laid out as the rows of a [`Feed`].

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::atomic::AtomicU64,
};

use super::{
    FEED_MAX_BYTES, FEED_MAX_VALUES, FeedError, FeedOrder,
    format::{FeedFormat, format_of},
    rows::{Feed, Span},
};
use crate::files::{self, FileError};
use crate::lenient::json_kind;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::feed::test_feeds::*;

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
