//! The index's view of the code registry: languages and function-level chunks.

use std::path::Path;

/// One piece of a file to embed.
#[derive(Debug, Clone)]
pub struct SourceChunk {
    pub kind: String,
    pub name: String,
    pub qualified_name: String,
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    Python,
    Go,
    Rust,
    JavaScript,
}

pub fn all_languages() -> Vec<Lang> {
    vec![Lang::Python, Lang::Go, Lang::Rust, Lang::JavaScript]
}

pub fn language_name(lang: Lang) -> &'static str {
    match lang {
        Lang::Python => "python",
        Lang::Go => "go",
        Lang::Rust => "rust",
        Lang::JavaScript => "javascript",
    }
}

pub fn language_from_name(name: &str) -> Option<Lang> {
    all_languages()
        .into_iter()
        .find(|l| language_name(*l).eq_ignore_ascii_case(name.trim()))
}

pub fn language_for_path(path: &Path) -> Option<Lang> {
    match path.extension()?.to_str()? {
        "py" => Some(Lang::Python),
        "go" => Some(Lang::Go),
        "rs" => Some(Lang::Rust),
        "js" | "mjs" | "cjs" => Some(Lang::JavaScript),
        _ => None,
    }
}

pub fn chunk(_lang: Lang, source: &str, max_lines: usize) -> Vec<SourceChunk> {
    let lines: Vec<&str> = source.lines().collect();
    lines
        .chunks(max_lines.max(1))
        .enumerate()
        .filter(|(_, part)| part.iter().any(|l| !l.trim().is_empty()))
        .map(|(i, part)| SourceChunk {
            kind: "block".into(),
            name: part.first().map(|l| l.trim().to_string()).unwrap_or_default(),
            qualified_name: format!("block{i}"),
            start_line: (i * max_lines + 1) as u32,
            end_line: (i * max_lines + part.len()) as u32,
            text: part.join("\n"),
        })
        .collect()
}
