//! Choosing one function of a file by name: qualified or plain, a body over a signature, and the closest
//! names when none matches.

use std::{ops::Range, path::Path};

use super::{CodeError, Extracted, FunctionBlock, FunctionInfo, ParsedFile, parsed_path};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::{chunk, parse};

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
}
