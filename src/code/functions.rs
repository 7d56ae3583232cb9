//! Finding function definitions with the language's query files: parse (whole or in two halves), search,
//! and the listing, qualified by what encloses each definition.

use std::ops::Range;

use tree_sitter::Tree;

#[cfg(test)]
use super::parse::PARSES;
use super::{
    CodeError, FunctionBlock, FunctionInfo, FunctionKind, Language,
    lines::LineIndex,
    parse::{self, LARGE_SOURCE, cut_changes_nothing, cut_line, on_two_threads, parse_part},
    search::{
        Found, Scope, end_without_trailing_comments, node_text, run_query, run_query_on_two_threads,
    },
};

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
    let (blocks, trees) = find_functions(language, source)?;
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

/// Every function of `source`, in document order, and the syntax trees they were found in (the caller frees
/// them). A large source that can be cut in two at a top-level line is parsed and searched as two halves on two
/// threads; the cut stands only when it changes nothing, else the source is parsed whole.
pub(crate) fn find_functions(
    language: Language,
    source: &str,
) -> Result<(Vec<FunctionBlock>, Vec<Tree>), CodeError> {
    let lines = LineIndex::new(source);
    let cut = cut_line(source, &lines);
    find_functions_cut_at(language, source, &lines, cut)
}

/// [`find_functions`] with the line to cut at given (`None`: parsed whole).
pub(super) fn find_functions_cut_at(
    language: Language,
    source: &str,
    lines: &LineIndex,
    cut: Option<usize>,
) -> Result<(Vec<FunctionBlock>, Vec<Tree>), CodeError> {
    let compile = || {
        language.queries().map_err(|message| CodeError::Internal {
            language: language.name().to_owned(),
            message,
        })
    };
    // A grammar's first use: its queries are compiled on a second thread while this one parses a large source
    // whole (compiling takes about as long as that parse: 20 ms for TypeScript's), and no cut is tried.
    let mut parsed_whole = None;
    let queries = if source.len() >= LARGE_SOURCE && !language.queries_compiled() {
        match on_two_threads(|| parse_part(language, source, None), compile) {
            Some((tree, queries)) => {
                parsed_whole = Some(tree?);
                queries?
            }
            None => compile()?,
        }
    } else {
        compile()?
    };
    let search = |tree: &Tree, range: Range<usize>| -> Vec<FunctionBlock> {
        let (found, scopes) = run_query(queries, tree.root_node(), source, range);
        blocks_of(language, &found, &scopes, source, lines)
    };
    let parse_and_search = |range: Range<usize>| -> Result<(Tree, Vec<FunctionBlock>), CodeError> {
        let tree = parse_part(language, source, Some(lines.range(range.clone())))?;
        let blocks = search(&tree, range);
        Ok((tree, blocks))
    };
    #[cfg(test)]
    PARSES.with(|parses| parses.set(parses.get() + 1));
    let mut trees = Vec::new();
    if let Some(cut) = cut.filter(|_| parsed_whole.is_none()) {
        let halves = on_two_threads(
            || parse_and_search(0..cut),
            || parse_and_search(cut..source.len()),
        )
        .map(|(first, second)| match (first, second) {
            (Ok(first), Ok(second)) => Ok((first, second)),
            (Err(e), _) | (_, Err(e)) => Err(e),
        });
        match halves {
            Some(Ok(((first, mut blocks), (second, rest)))) => {
                let stands = cut_changes_nothing(&first, &second, &queries.walk_kinds);
                trees.extend([first, second]);
                if stands {
                    blocks.extend(rest);
                    return Ok((blocks, trees));
                }
            }
            Some(Err(e)) => return Err(e),
            // No second thread to be had, or it failed: the source is parsed whole here.
            None => {}
        }
    }
    let tree = match parsed_whole {
        Some(tree) => tree,
        None => parse_part(language, source, None)?,
    };
    let blocks = if source.len() >= LARGE_SOURCE {
        let (found, scopes) = run_query_on_two_threads(queries, tree.root_node(), source);
        blocks_of(language, &found, &scopes, source, lines)
    } else {
        search(&tree, 0..source.len())
    };
    trees.push(tree);
    Ok((blocks, trees))
}

/// The listing of what one search found, in document order.
pub(super) fn blocks_of(
    language: Language,
    found: &[Found<'_>],
    scopes: &[Scope],
    source: &str,
    lines: &LineIndex,
) -> Vec<FunctionBlock> {
    let enclosing = enclosing_containers(found, scopes, source);
    let separator = language.separator();
    let mut blocks = Vec::with_capacity(found.len());
    for (function, enclosing) in found.iter().zip(enclosing) {
        let name = unquote(node_text(function.name, source)).to_owned();
        let qualified_name = match &function.qualifier {
            Some(qualifier) => format!("{qualifier}{separator}{name}"),
            None => enclosing
                .iter()
                .map(|container| unquote(container.name))
                .chain(std::iter::once(name.as_str()))
                .collect::<Vec<_>>()
                .join(separator),
        };
        let kind = if function.body.is_none() {
            FunctionKind::Signature
        } else if let Some(kind) = function.kind {
            kind
        } else if enclosing.last().is_some_and(|c| !c.is_function) {
            FunctionKind::Method
        } else {
            FunctionKind::Function
        };

        let full = function.full_start..function.definition.end;
        let body = function
            .body
            .map(|b| b.start_byte()..end_without_trailing_comments(b));
        blocks.push(FunctionBlock {
            info: FunctionInfo {
                name,
                qualified_name,
                kind,
                start_line: lines.line_of(full.start),
                end_line: lines.end_line_of(full.clone()),
            },
            full,
            body,
        });
    }
    blocks
}

/// A container that qualifies the functions inside it: a scope, or a function (for nested functions).
#[derive(Clone, Copy)]
struct Container<'s> {
    start: usize,
    end: usize,
    is_function: bool,
    name: &'s str,
}

/// For each function of `found`, the containers strictly enclosing its definition, outermost first (on equal
/// starts the wider one is outer). One sweep over the containers in document order with a stack of the open
/// ones: syntax nodes nest, so the open containers that contain a definition are all that enclose it.
fn enclosing_containers<'s>(
    found: &[Found<'_>],
    scopes: &'s [Scope],
    source: &'s str,
) -> Vec<Vec<Container<'s>>> {
    // (container, index in `found` for a function)
    let mut containers: Vec<(Container<'s>, Option<usize>)> = scopes
        .iter()
        .map(|scope| {
            let container = Container {
                start: scope.range.start,
                end: scope.range.end,
                is_function: false,
                name: &scope.name,
            };
            (container, None)
        })
        .chain(found.iter().enumerate().map(|(index, function)| {
            let container = Container {
                start: function.definition.start,
                end: function.definition.end,
                is_function: true,
                name: node_text(function.name, source),
            };
            (container, Some(index))
        }))
        .collect();
    // Scopes before functions on equal ranges, functions in `found` order: as listed before sorting.
    containers.sort_by(|(a, a_index), (b, b_index)| {
        (a.start, std::cmp::Reverse(a.end), a.is_function, a_index).cmp(&(
            b.start,
            std::cmp::Reverse(b.end),
            b.is_function,
            b_index,
        ))
    });
    let mut enclosing = vec![Vec::new(); found.len()];
    let mut open: Vec<Container<'s>> = Vec::new();
    for (container, function_index) in containers {
        while open.last().is_some_and(|top| top.end < container.end) {
            open.pop();
        }
        if let Some(index) = function_index {
            enclosing[index] = open
                .iter()
                .filter(|outer| (outer.start, outer.end) != (container.start, container.end))
                .copied()
                .collect();
        }
        // One definition under a second name (`a.x = a.y = function`): what it holds is qualified once.
        let second_name = container.is_function
            && open.last().is_some_and(|top| {
                top.is_function && (top.start, top.end) == (container.start, container.end)
            });
        if !second_name {
            open.push(container);
        }
    }
    enclosing
}

/// `'name'` / `"name"` (JavaScript string keys) without quotes.
fn unquote(name: &str) -> &str {
    let bytes = name.as_bytes();
    if bytes.len() >= 2 {
        let (first, last) = (bytes[0], bytes[bytes.len() - 1]);
        if first == last && matches!(first, b'"' | b'\'' | b'`') {
            return &name[1..name.len() - 1];
        }
    }
    name
}
