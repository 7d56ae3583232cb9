//! Byte offsets to lines and points, by binary search over line starts.

use std::ops::Range;

/// Byte offset → 1-based line, by binary search over line starts.
pub(crate) struct LineIndex {
    pub(super) starts: Vec<usize>,
}

impl LineIndex {
    pub(crate) fn new(source: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self { starts }
    }

    /// 1-based line of a byte offset.
    pub(crate) fn line_of(&self, byte: usize) -> usize {
        self.starts.partition_point(|&start| start <= byte)
    }

    /// Row and column (0-based, in bytes) of a byte offset.
    fn point_of(&self, byte: usize) -> tree_sitter::Point {
        let row = self.line_of(byte).saturating_sub(1);
        let column = byte - self.starts.get(row).copied().unwrap_or(0);
        tree_sitter::Point { row, column }
    }

    /// A byte range with its points, for the parser.
    pub(super) fn range(&self, bytes: Range<usize>) -> tree_sitter::Range {
        tree_sitter::Range {
            start_byte: bytes.start,
            end_byte: bytes.end,
            start_point: self.point_of(bytes.start),
            end_point: self.point_of(bytes.end),
        }
    }

    /// 1-based line of the last character of `range`.
    pub(crate) fn end_line_of(&self, range: Range<usize>) -> usize {
        self.line_of(range.end.saturating_sub(1).max(range.start))
    }
}
