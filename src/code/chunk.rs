//! Function-sized chunks of a source file, for indexing: one chunk per outermost function-like definition
//! (a method is its own chunk, a nested function stays in its parent), the code between them grouped into
//! top-level chunks, and every chunk longer than a limit split.

use serde::{Deserialize, Serialize};

use std::path::Path;

use super::{CodeError, FunctionBlock, Language, functions_in_source, parsed_path, parsed_source};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkKind {
    /// A function-like definition (or a piece of one, when it was split).
    Function,
    /// Code outside every function: imports, constants, class headers, statements.
    TopLevel,
}

impl ChunkKind {
    /// The kind's name, as serialized: `function` or `top_level`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Function => "function",
            Self::TopLevel => "top_level",
        }
    }
}

/// A function-sized piece of a source file, as indexed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceChunk {
    pub kind: ChunkKind,
    /// The function's name, for function chunks.
    pub name: Option<String>,
    /// The function's qualified name (`Class.method`), for function chunks.
    pub qualified_name: Option<String>,
    /// 1-based, inclusive.
    pub start_line: usize,
    /// 1-based, inclusive.
    pub end_line: usize,
    /// The chunk's lines, each with its line ending.
    pub text: String,
}

/// Splits `source` into chunks in document order. `max_lines` = 0 means no limit.
pub fn chunk_source(language: Language, source: &str, max_lines: usize) -> Vec<SourceChunk> {
    chunk_blocks(source, &functions_in_source(language, source), max_lines)
}

/// [`chunk_source`] of a file (absolute path), through the parse cache ([`parsed_path`]).
pub fn chunk_file(path: &Path, max_lines: usize) -> Result<Vec<SourceChunk>, CodeError> {
    let file = parsed_path(path)?;
    Ok(chunk_blocks(&file.source, &file.blocks, max_lines))
}

/// [`chunk_source`] of `source`, the text just read from the file at `path`, through the parse cache
/// ([`parsed_source`]): a file listed or extracted before is not parsed again, nor one listed after.
pub fn chunk_read_file(
    path: &Path,
    language: Language,
    source: &str,
    max_lines: usize,
) -> Vec<SourceChunk> {
    match parsed_source(path, language, source) {
        Ok(file) => chunk_blocks(&file.source, &file.blocks, max_lines),
        Err(e) => {
            tracing::error!("{e}");
            chunk_blocks(source, &[], max_lines)
        }
    }
}

fn chunk_blocks(source: &str, blocks: &[FunctionBlock], max_lines: usize) -> Vec<SourceChunk> {
    let lines: Vec<&str> = source.split_inclusive('\n').collect();
    if lines.is_empty() {
        return Vec::new();
    }

    // Outermost definitions only: a function inside another one stays in it.
    let mut roots: Vec<SourceChunk> = Vec::new();
    for block in blocks {
        let nested = blocks.iter().any(|outer| {
            outer.full.start <= block.full.start
                && block.full.end <= outer.full.end
                && outer.full != block.full
        });
        if nested {
            continue;
        }
        let (start, end) = (block.info.start_line, block.info.end_line);
        match roots.last_mut() {
            // Two definitions sharing a line (minified code): one chunk.
            Some(previous) if start <= previous.end_line => {
                previous.end_line = previous.end_line.max(end);
            }
            _ => roots.push(SourceChunk {
                kind: ChunkKind::Function,
                name: Some(block.info.name.clone()),
                qualified_name: Some(block.info.qualified_name.clone()),
                start_line: start,
                end_line: end,
                text: String::new(),
            }),
        }
    }

    // Top-level runs: the lines between function chunks, blank lines trimmed at both ends.
    let mut chunks = Vec::new();
    let mut next_line = 1;
    let push_top_level = |from: usize, to: usize, chunks: &mut Vec<SourceChunk>| {
        let is_blank = |line: usize| lines[line - 1].trim().is_empty();
        let (mut from, mut to) = (from, to.min(lines.len()));
        while from <= to && is_blank(from) {
            from += 1;
        }
        while to >= from && to > 0 && is_blank(to) {
            to -= 1;
        }
        if from <= to {
            chunks.push(SourceChunk {
                kind: ChunkKind::TopLevel,
                name: None,
                qualified_name: None,
                start_line: from,
                end_line: to,
                text: String::new(),
            });
        }
    };
    for root in roots {
        if root.start_line > next_line {
            push_top_level(next_line, root.start_line - 1, &mut chunks);
        }
        next_line = root.end_line + 1;
        chunks.push(root);
    }
    if next_line <= lines.len() {
        push_top_level(next_line, lines.len(), &mut chunks);
    }

    // Split long chunks, then fill in the text.
    let limit = if max_lines == 0 {
        usize::MAX
    } else {
        max_lines
    };
    let mut result = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let mut start = chunk.start_line;
        while start <= chunk.end_line {
            let end = chunk.end_line.min(start.saturating_add(limit - 1));
            result.push(SourceChunk {
                start_line: start,
                end_line: end,
                text: lines[start - 1..end].concat(),
                ..chunk.clone()
            });
            start = end + 1;
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    const PYTHON: &str = "import os\n\nX = 1\n\nclass A:\n    y = 2\n\n    def m(self):\n        def inner():\n            pass\n        return inner\n\n@deco\ndef f():\n    return 1\n\nprint(f())\n";

    #[test]
    fn methods_are_chunks_nested_functions_stay_inside() {
        let python = Language::from_name("python").unwrap();
        let chunks = chunk_source(python, PYTHON, 0);
        let summary: Vec<(ChunkKind, Option<&str>, usize, usize)> = chunks
            .iter()
            .map(|c| {
                (
                    c.kind,
                    c.qualified_name.as_deref(),
                    c.start_line,
                    c.end_line,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (ChunkKind::TopLevel, None, 1, 6),
                (ChunkKind::Function, Some("A.m"), 8, 11),
                (ChunkKind::Function, Some("f"), 13, 15),
                (ChunkKind::TopLevel, None, 17, 17),
            ]
        );
        assert!(chunks[1].text.contains("def inner"));
        assert!(chunks[2].text.starts_with("@deco\n"));
    }

    #[test]
    fn long_chunks_are_split() {
        let python = Language::from_name("python").unwrap();
        let body: String = (0..25).map(|i| format!("    x{i} = {i}\n")).collect();
        let source = format!("def big():\n{body}");
        let chunks = chunk_source(python, &source, 10);
        let ranges: Vec<(usize, usize)> =
            chunks.iter().map(|c| (c.start_line, c.end_line)).collect();
        assert_eq!(ranges, vec![(1, 10), (11, 20), (21, 26)]);
        assert!(chunks.iter().all(|c| c.name.as_deref() == Some("big")));
        assert_eq!(
            chunks.iter().map(|c| c.text.as_str()).collect::<String>(),
            source
        );
    }

    #[test]
    fn empty_source_has_no_chunks() {
        let rust = Language::from_name("rust").unwrap();
        assert!(chunk_source(rust, "", 50).is_empty());
        assert!(chunk_source(rust, "\n\n", 50).is_empty());
    }
}
