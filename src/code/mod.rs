//! Source code understanding with tree-sitter: which functions a file defines, one function's text, syntax
//! errors, and function-sized chunks for indexing.
//!
//! Languages come from a registry ([`Language`]) driven by the query files in `grammars/<language>/`.
//! Nothing is parsed or compiled until a function here is called.

pub mod allocator;
mod attached;
mod cache;
pub mod chunk;
mod error;
mod functions;
mod kinds;
mod language;
mod lines;
mod parse;
mod search;
mod source;

use std::{ops::Range, path::Path};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use cache::{CACHE_BYTES, ParsedFile, parsed_file, parsed_path, parsed_source};
pub use error::{CodeError, MAX_SOURCE_BYTES};
pub use language::{Language, UnknownLanguage};
pub use source::{
    check_source_file, read_source, read_source_exact, read_source_file, resolve_path,
};

/// What kind of function-like definition was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FunctionKind {
    /// A free function, or a function nested in another one.
    Function,
    /// A function defined in a class, impl, trait or object literal, or a Go method.
    Method,
    /// A declaration without a body (Rust trait or extern fn, Go function implemented elsewhere).
    Signature,
}

impl FunctionKind {
    pub(crate) fn from_label(label: &str) -> Option<Self> {
        match label {
            "function" => Some(Self::Function),
            "method" => Some(Self::Method),
            "signature" => Some(Self::Signature),
            _ => None,
        }
    }
}

/// One function-like definition of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionInfo {
    /// The function's own name, e.g. `handle`.
    pub name: String,
    /// The name with its containers, e.g. `Server.handle` (Python, Go, JavaScript) or `Server::handle` (Rust).
    pub qualified_name: String,
    /// `function`, `method` or `signature` (no body).
    pub kind: FunctionKind,
    /// First line of the definition (its first decorator, attribute or doc comment), 1-based.
    pub start_line: usize,
    /// Last line of the definition, 1-based, inclusive.
    pub end_line: usize,
}

/// A function with its location and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionBlock {
    pub info: FunctionInfo,
    /// Byte range of the whole definition, with what the language attaches to it (decorators, attributes,
    /// Rust and Go doc comments).
    pub full: Range<usize>,
    /// Byte range of the body; `None` for a signature.
    pub body: Option<Range<usize>>,
}

/// One function extracted from a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Extracted {
    /// The whole definition with what the language attaches to it: Python decorators, Rust outer attributes
    /// and doc comments, Go doc comment; a JavaScript declaration as written (with its `export`).
    pub full: String,
    /// The body without the signature (empty for a signature).
    pub body: String,
    /// Which function this is.
    pub function: FunctionInfo,
    /// How many other functions matched the requested name (the first one with a body, in document order,
    /// is returned; a body-less signature only when no match has a body).
    pub other_matches: usize,
}

/// A syntax error found by the parser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SyntaxError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in bytes.
    pub column: usize,
    pub message: String,
}

/// Every function of `source`, in document order (nested functions after their parent).
pub fn functions_in_source(language: Language, source: &str) -> Vec<FunctionBlock> {
    match functions_in_source_checked(language, source) {
        Ok(blocks) => blocks,
        Err(e) => {
            tracing::error!("{e}");
            Vec::new()
        }
    }
}

pub(crate) fn functions_in_source_checked(
    language: Language,
    source: &str,
) -> Result<Vec<FunctionBlock>, CodeError> {
    let (blocks, trees) = functions::find_functions(language, source)?;
    free_off_the_callers_path(trees, source.len());
    Ok(blocks)
}

/// Frees the trees of a large source on a thread of its own: freeing takes about a tenth of the parse, and
/// the caller is waiting for an answer that no longer needs them. The thread runs at the lowest priority,
/// so that it takes no CPU from the answer, nor from the client reading it, on a busy machine.
fn free_off_the_callers_path(trees: Vec<tree_sitter::Tree>, source_len: usize) {
    if source_len < parse::LARGE_SOURCE {
        return;
    }
    let freeing = std::thread::Builder::new()
        .name("tree-free".to_owned())
        .spawn(move || {
            // On Linux the calling thread's own priority (no other thread's); a refusal leaves it as it was.
            let _ = rustix::process::setpriority_process(None, 19);
            drop(trees)
        });
    if let Err(e) = freeing {
        // The trees were moved into the closure that failed to start, and freed with it.
        tracing::debug!(error = %e, "freed a syntax tree on the caller's thread");
    }
}

/// The functions of a file (absolute path), in document order. The parse is cached ([`parsed_path`]).
pub fn list_functions(path: &Path) -> Result<Vec<FunctionInfo>, CodeError> {
    Ok(parsed_path(path)?
        .blocks
        .iter()
        .map(|block| block.info.clone())
        .collect())
}

/// One function of a file, by plain (`handle`) or qualified name (`Server.handle`, `Server::handle`).
/// With several matches, the first with a body in document order is returned and `other_matches` counts
/// the rest.
pub fn extract_function(path: &Path, func: &str) -> Result<Extracted, CodeError> {
    select_function(&*parsed_path(path)?, func)
}

/// Picks `func` among `blocks`: an exact qualified name first, then a qualified suffix
/// (`Class.method` matches `module.Class.method`), then the plain name. `.` and `::` are both accepted.
/// Among several matches, a definition with a body wins over body-less signatures (a trait's declaration,
/// an `extern` item, an overload signature), also when the signature matches more closely: a top-level Go
/// assembly stub `call` does not hide the method `Value.call`. `other_matches` counts every other match of
/// the tiers looked at.
pub fn select_function(file: &ParsedFile, func: &str) -> Result<Extracted, CodeError> {
    let (path, blocks) = (file.path.as_path(), file.blocks.as_slice());
    let wanted = func.trim().trim_end_matches("()");
    if wanted.is_empty() {
        return Err(CodeError::EmptyFunctionName);
    }
    let wanted_parts = split_qualified(wanted);
    let tiers: [&dyn Fn(&FunctionBlock) -> bool; 3] = [
        &|b| {
            b.info.qualified_name == wanted
                || split_qualified(&b.info.qualified_name) == wanted_parts
        },
        &|b| {
            wanted_parts.len() > 1
                && split_qualified(&b.info.qualified_name).ends_with(&wanted_parts)
        },
        &|b| b.info.name == wanted,
    ];
    // The matches of each tier in turn, each block once, until one has a body.
    let mut matching: Vec<&FunctionBlock> = Vec::new();
    for matches_tier in tiers {
        for block in blocks.iter().filter(|b| matches_tier(b)) {
            if !matching.iter().any(|seen| std::ptr::eq(*seen, block)) {
                matching.push(block);
            }
        }
        if matching.iter().any(|b| b.body.is_some()) {
            break;
        }
    }
    let with_body = matching.iter().find(|b| b.body.is_some());
    if let Some(first) = with_body.or(matching.first()) {
        let text = |range: &Range<usize>| file.source.get(range.clone()).unwrap_or_default();
        return Ok(Extracted {
            full: text(&first.full).to_owned(),
            body: first.body.as_ref().map(text).unwrap_or_default().to_owned(),
            function: first.info.clone(),
            other_matches: matching.len() - 1,
        });
    }
    Err(CodeError::FunctionNotFound {
        func: wanted.to_owned(),
        path: path.to_owned(),
        closest: closest_names(wanted, blocks, 5),
        total: blocks.len(),
    })
}

fn split_qualified(name: &str) -> Vec<&str> {
    name.split("::")
        .flat_map(|part| part.split('.'))
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect()
}

/// The names (or qualified names, when the request was qualified) most like `wanted`, best first.
fn closest_names(wanted: &str, blocks: &[FunctionBlock], limit: usize) -> Vec<String> {
    let qualified = split_qualified(wanted).len() > 1;
    let lowered = wanted.to_lowercase();
    let mut scored: Vec<(f64, &str)> = Vec::new();
    for block in blocks {
        let candidate = if qualified {
            block.info.qualified_name.as_str()
        } else {
            block.info.name.as_str()
        };
        if scored.iter().any(|(_, seen)| *seen == candidate) {
            continue;
        }
        let lowered_candidate = candidate.to_lowercase();
        let mut score = strsim::jaro_winkler(&lowered, &lowered_candidate);
        if lowered_candidate.contains(&lowered) || lowered.contains(&lowered_candidate) {
            score = score.max(0.9);
        }
        scored.push((score, candidate));
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored
        .into_iter()
        .filter(|(score, _)| *score >= 0.7)
        .take(limit)
        .map(|(_, name)| name.to_owned())
        .collect()
}

/// Syntax errors in `source` (empty when it parses cleanly), at most 100.
pub fn parse_errors(language: Language, source: &str) -> Vec<SyntaxError> {
    const LIMIT: usize = 100;
    let tree = match parse::parse(language, source) {
        Ok(tree) => tree,
        Err(e) => {
            return vec![SyntaxError {
                line: 1,
                column: 1,
                message: e.to_string(),
            }];
        }
    };
    let mut errors = Vec::new();
    let mut cursor = tree.walk();
    let mut visited_children = false;
    loop {
        let node = cursor.node();
        if !visited_children && (node.is_error() || node.is_missing()) {
            let position = node.start_position();
            let message = if node.is_missing() {
                format!("missing `{}`", node.kind())
            } else {
                let text = search::node_text(node, source);
                let first_line = text.lines().next().unwrap_or_default();
                let excerpt: String = first_line.chars().take(40).collect();
                format!("unexpected `{}`", excerpt.trim())
            };
            errors.push(SyntaxError {
                line: position.row + 1,
                column: position.column + 1,
                message,
            });
            if errors.len() >= LIMIT {
                break;
            }
            // Do not descend into an error: one report per broken region.
            visited_children = true;
            continue;
        }
        if !visited_children && node.has_error() && cursor.goto_first_child() {
            continue;
        }
        if cursor.goto_next_sibling() {
            visited_children = false;
        } else if cursor.goto_parent() {
            visited_children = true;
        } else {
            break;
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_names_and_extensions() {
        for (name, canonical) in [
            ("python", "python"),
            ("py", "python"),
            ("go", "go"),
            ("golang", "go"),
            ("Rust", "rust"),
            ("rs", "rust"),
            ("javascript", "javascript"),
            ("js", "javascript"),
            ("node", "javascript"),
            ("typescript", "typescript"),
            ("ts", "typescript"),
            ("tsx", "typescript"),
        ] {
            assert_eq!(Language::from_name(name).unwrap().name(), canonical);
        }
        assert!(Language::from_name("cobol").is_none());
        for (file, canonical) in [
            ("/a/b.py", "python"),
            ("/a/b.pyi", "python"),
            ("/a/b.go", "go"),
            ("/a/b.rs", "rust"),
            ("/a/b.js", "javascript"),
            ("/a/b.MJS", "javascript"),
            ("/a/b.cjs", "javascript"),
            ("/a/b.jsx", "javascript"),
            ("/a/b.ts", "typescript"),
            ("/a/b.mts", "typescript"),
            ("/a/b.cts", "typescript"),
            ("/a/b.tsx", "typescript"),
        ] {
            assert_eq!(
                Language::from_path(Path::new(file)).unwrap().name(),
                canonical
            );
        }
        assert!(Language::from_path(Path::new("/a/b.cob")).is_none());
        let tsx = Language::from_path(Path::new("/a/b.tsx")).unwrap();
        assert_eq!(tsx.extensions(), ["tsx"], "TSX has a grammar of its own");
        assert_eq!(Language::from_name("tsx"), Some(tsx));
        assert!(parse_errors(tsx, "const a = <p>{1}</p>;\n").is_empty());
        let names: std::collections::HashSet<&str> = Language::all().map(|l| l.name()).collect();
        assert_eq!(
            names.len(),
            Language::all().count(),
            "one entry per language"
        );
    }

    #[test]
    fn every_query_compiles() {
        for language in Language::all_grammars() {
            language.queries().unwrap();
        }
    }

    #[test]
    fn list_extract_and_chunk_of_one_file_parse_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.rs");
        std::fs::write(
            &path,
            "/// Doc.\nfn a() {}\ntrait T { fn b(); }\nimpl T for S { fn b() {} }\n",
        )
        .unwrap();
        let parses = || parse::PARSES.with(std::cell::Cell::get);
        let before = parses();
        let listed = list_functions(&path).unwrap();
        assert_eq!(listed.len(), 3);
        let extracted = extract_function(&path, "b").unwrap();
        assert_eq!(
            extracted.full, "fn b() {}",
            "the definition with a body wins"
        );
        assert_eq!(extracted.function.qualified_name, "S::b");
        assert_eq!(extracted.other_matches, 1);
        assert_eq!(
            extract_function(&path, "a").unwrap().full,
            "/// Doc.\nfn a() {}"
        );
        let chunks = chunk::chunk_file(&path, 0).unwrap();
        assert_eq!(chunks.len(), 3);
        assert_eq!(parses() - before, 1);
    }

    #[test]
    fn parse_errors_are_located() {
        let python = Language::from_name("python").unwrap();
        assert!(parse_errors(python, "def f():\n    return 1\n").is_empty());
        let errors = parse_errors(python, "def f(:\n    return 1\n");
        assert!(!errors.is_empty());
        assert_eq!(errors[0].line, 1);
        let rust = Language::from_name("rust").unwrap();
        assert!(!parse_errors(rust, "fn f() { let x = 1 }\nfn g( {}").is_empty());
    }
}
