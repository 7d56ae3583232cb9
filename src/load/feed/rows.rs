//! A feed held in memory: its rows as one text with the place of every value, and which row each call
//! takes.

use std::{
    fmt,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use super::{FeedOrder, format::FeedFormat};

/// Where one value lies in [`Feed::text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) start: u32,
    pub(super) len: u32,
}

impl Span {
    /// No value: the row's line lacks the column (JSON lines only).
    pub(super) const MISSING: Span = Span {
        start: u32::MAX,
        len: 0,
    };
}

/// The rows of a data file, and which of them each call takes. Shared by reference (or `Arc`) between the
/// tasks that send requests.
pub struct Feed {
    pub(super) path: PathBuf,
    pub(super) format: FeedFormat,
    pub(super) order: FeedOrder,
    pub(super) seed: u64,
    pub(super) columns: Vec<String>,
    /// Every value's text, one after another.
    pub(super) text: String,
    /// Row-major: row `r`'s value of column `c` is `cells[r * columns.len() + c]`.
    pub(super) cells: Vec<Span>,
    /// The line each row starts on (1-based).
    pub(super) lines: Vec<u32>,
    /// For each column, the line of the first row that lacks it (JSON lines), if any does.
    pub(super) lacking: Vec<Option<u32>>,
    /// The call number [`Feed::next_row`] hands out next.
    pub(super) next_call: AtomicU64,
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

    /// Row `row`'s value of column `column`; empty where there is none.
    pub(super) fn value(&self, row: usize, column: usize) -> &str {
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
    pub(super) feed: &'a Feed,
    pub(super) index: usize,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::feed::{FeedOrder, test_feeds::*};

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
}
