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

mod error;
mod format;
mod order;
mod read;
mod rows;
mod template;
#[cfg(test)]
mod test_feeds;

pub use error::FeedError;
pub use format::FeedFormat;
pub use order::FeedOrder;
pub use rows::{Feed, Row};
pub use template::{BoundTemplate, Template};

/// The largest feed file read (64 MiB).
pub const FEED_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The most values (rows × columns) a feed holds: each takes 8 bytes of index beside its text, and a JSON
/// lines file whose lines each add a new key would otherwise need rows × keys of them.
pub const FEED_MAX_VALUES: u64 = 16 * 1024 * 1024;
