//! Finding function definitions with the language's query files.

use std::ops::Range;

// Keyed by node ids (addresses): a multiplicative hash is enough, and these maps are hot on large files.
use rustc_hash::FxHashMap as HashMap;

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, QueryCursor, Tree};

#[cfg(test)]
use super::parse::PARSES;
use super::{
    CodeError, FunctionBlock, FunctionInfo, FunctionKind, Language,
    attached::{AttachRule, set_attached_starts},
    language::CompiledQueries,
    lines::LineIndex,
    parse::{cut_changes_nothing, cut_line, on_two_threads, parse_part},
};

/// A class-like container (class, impl, trait, named object literal) that qualifies what it contains.
struct Scope {
    range: Range<usize>,
    name: String,
}

/// One function as the query found it, before qualification.
pub(super) struct Found<'tree> {
    name: Node<'tree>,
    pub(super) definition_node: Node<'tree>,
    definition: Range<usize>,
    /// Start of what the language attaches before the definition (doc comments, attributes, decorators).
    pub(super) full_start: usize,
    body: Option<Node<'tree>>,
    qualifier: Option<String>,
    kind: Option<FunctionKind>,
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
    let queries = language.queries().map_err(|message| CodeError::Internal {
        language: language.name().to_owned(),
        message,
    })?;
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
    if let Some(cut) = cut {
        let halves = on_two_threads(cut, source.len(), parse_and_search).map(|(first, second)| {
            match (first, second) {
                (Ok(first), Ok(second)) => Ok((first, second)),
                (Err(e), _) | (_, Err(e)) => Err(e),
            }
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
    let tree = parse_part(language, source, None)?;
    let blocks = search(&tree, 0..source.len());
    trees.push(tree);
    Ok((blocks, trees))
}

/// The listing of what one search found, in document order.
fn blocks_of(
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

/// Runs the combined query once: the functions (with what `merge` kept of several matches of one function)
/// in document order, and the scopes.
fn run_query<'tree>(
    queries: &CompiledQueries,
    root: Node<'tree>,
    source: &str,
    range: Range<usize>,
) -> (Vec<Found<'tree>>, Vec<Scope>) {
    let query = &queries.query;
    let index = |name: &str| query.capture_index_for_name(name);
    let (name_ix, definition_ix, body_ix, function_ix, attached_ix, qualifier_ix) = (
        index("name"),
        index("definition"),
        index("body"),
        index("function"),
        index("attached"),
        index("qualifier"),
    );
    let (terminated_ix, terminator_ix) = (index("terminated"), index("terminator"));
    let (scope_ix, scope_name_ix) = (index("scope"), index("scope.name"));
    let mut attached: HashMap<usize, AttachRule> = HashMap::default();
    // Definition node → end of the token that ends it.
    let mut terminators: HashMap<usize, usize> = HashMap::default();
    // Keyed by the scope node; the earliest pattern (the most specific) names it.
    let mut scopes: HashMap<usize, (usize, Scope)> = HashMap::default();
    // Keyed by the name node: several patterns may match one function (plain, decorated, exported);
    // the widest definition wins.
    let mut by_name: HashMap<usize, Found<'tree>> = HashMap::default();
    // The query runs at each node where a pattern can start, and the walk enters only nodes that may hold a
    // definition (see `WalkKinds`): the same matches as a search of the whole tree, for the ones that matter.
    let kinds = &queries.walk_kinds;
    let definition_words = kinds.definition_words_in(source, range);
    let mut cursor = QueryCursor::new();
    cursor.set_max_start_depth(Some(0));
    let mut walk = root.walk();
    'search: loop {
        let node = walk.node();
        let kind = node.kind_id();
        let mut defined_here = false;
        if kinds.starts_a_pattern(kind) {
            let mut matches = cursor.matches(query, node, source.as_bytes());
            while let Some(m) = matches.next() {
                let node_of = |ix: Option<u32>| {
                    m.captures()
                        .iter()
                        .find(|c| Some(c.index) == ix)
                        .map(|c| c.node)
                };
                if m.pattern_index >= queries.first_scope_pattern {
                    if let (Some(scope), Some(name)) = (node_of(scope_ix), node_of(scope_name_ix)) {
                        match scopes.get(&scope.id()) {
                            Some((pattern, _)) if *pattern <= m.pattern_index => {}
                            _ => {
                                let entry = Scope {
                                    range: scope.byte_range(),
                                    name: clean_qualifier(node_text(name, source)),
                                };
                                scopes.insert(scope.id(), (m.pattern_index, entry));
                            }
                        }
                    }
                    continue;
                }
                if let (Some(terminated), Some(terminator)) =
                    (node_of(terminated_ix), node_of(terminator_ix))
                {
                    terminators.insert(terminated.id(), terminator.end_byte());
                    continue;
                }
                let mut name = None;
                let mut definition = None;
                let mut body = None;
                let mut qualifier = None;
                for capture in m.captures() {
                    let ix = Some(capture.index);
                    let node = capture.node;
                    if ix == name_ix {
                        name = Some(node);
                    } else if ix == definition_ix {
                        definition = Some(node);
                    } else if ix == body_ix {
                        body = Some(node);
                    } else if ix == function_ix {
                        body = queries
                            .body_field
                            .and_then(|field| node.child_by_field_id(field.get()));
                    } else if ix == attached_ix {
                        attached.insert(node.id(), AttachRule::of_pattern(query, m.pattern_index));
                    } else if ix == qualifier_ix {
                        qualifier = Some(clean_qualifier(node_text(node, source)));
                    }
                }
                let (Some(name), Some(definition_node)) = (name, definition) else {
                    continue;
                };
                let definition =
                    definition_node.start_byte()..end_without_trailing_comments(definition_node);
                let kind = query
                    .property_settings(m.pattern_index)
                    .iter()
                    .find(|p| &*p.key == "kind")
                    .and_then(|p| p.value.as_deref())
                    .and_then(FunctionKind::from_label);
                defined_here = true;
                let candidate = Found {
                    name,
                    definition_node,
                    full_start: definition.start,
                    definition,
                    body,
                    qualifier,
                    kind,
                };
                match by_name.get_mut(&name.id()) {
                    Some(existing) => merge(existing, candidate),
                    None => {
                        by_name.insert(name.id(), candidate);
                    }
                }
            }
        }
        // A definition found here holds one of the words itself: a nested one needs another.
        let words_needed = if defined_here { 2 } else { 1 };
        let may_hold = (kinds.may_hold_a_definition(kind) || node.has_error())
            && definition_words
                .as_ref()
                .is_none_or(|words| words.at_least_in(words_needed, node.byte_range()));
        if may_hold && walk.goto_first_child() {
            continue;
        }
        while !walk.goto_next_sibling() {
            if !walk.goto_parent() {
                break 'search;
            }
        }
    }
    let mut found: Vec<Found<'tree>> = by_name.into_values().collect();
    for function in &mut found {
        if let Some(&end) = terminators.get(&function.definition_node.id()) {
            function.definition.end = function.definition.end.max(end);
        }
    }
    if !attached.is_empty() {
        set_attached_starts(root, &mut found, &attached);
    }
    found.sort_by_key(|f| (f.name.start_byte(), f.definition.start));
    let scopes = scopes.into_values().map(|(_, scope)| scope).collect();
    (found, scopes)
}

/// Keeps the widest definition of one function and whatever either match knew.
fn merge<'tree>(existing: &mut Found<'tree>, other: Found<'tree>) {
    existing.kind = existing.kind.or(other.kind);
    existing.body = existing.body.or(other.body);
    if existing.qualifier.is_none() {
        existing.qualifier = other.qualifier.clone();
    }
    if other.definition.len() > existing.definition.len() {
        existing.definition_node = other.definition_node;
        existing.definition = other.definition;
        existing.full_start = other.full_start;
    }
}

/// Where `node` really ends: comments after its last statement (Python blocks keep them) are not part of it.
/// Follows the last child that is not a comment down to a leaf; the cursor steps over the children in C.
fn end_without_trailing_comments(node: Node<'_>) -> usize {
    let mut cursor = node.walk();
    let mut end = node.end_byte();
    while cursor.goto_last_child() {
        while cursor.node().is_extra() {
            if !cursor.goto_previous_sibling() {
                // Only comments inside: the node ends where it ends.
                return end;
            }
        }
        end = cursor.node().end_byte();
    }
    end
}

pub(crate) fn node_text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or_default()
}

/// A qualifier or scope name as it reads in a qualified name: one line, and reduced to its base name
/// (`Foo.prototype` → `Foo`, `&'a mut fmt::Point<T>` → `Point`).
fn clean_qualifier(raw: &str) -> String {
    let one_line = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut name = one_line.strip_suffix(".prototype").unwrap_or(&one_line);
    loop {
        let trimmed = name.trim_start_matches(['&', '*', ' ']);
        let trimmed = ["mut ", "dyn ", "const "]
            .iter()
            .find_map(|prefix| trimmed.strip_prefix(prefix))
            .unwrap_or(trimmed);
        // A lifetime (`'a `).
        let trimmed = match trimmed.strip_prefix('\'') {
            Some(rest) => rest.split_once(' ').map_or(rest, |(_, after)| after),
            None => trimmed,
        };
        if trimmed == name {
            break;
        }
        name = trimmed;
    }
    if name.starts_with(['(', '[']) {
        return name.to_owned();
    }
    // A trait object's first bound (`dyn Error + Send` → `Error`).
    let name = name.split(" +").next().unwrap_or(name);
    let without_generics = name.split('<').next().unwrap_or(name);
    without_generics
        .rsplit("::")
        .next()
        .unwrap_or(without_generics)
        .trim()
        .to_owned()
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

#[cfg(test)]
mod tests {
    use super::clean_qualifier;

    #[test]
    fn qualifiers_reduce_to_base_names() {
        for (raw, clean) in [
            ("Foo.prototype", "Foo"),
            ("module.exports", "module.exports"),
            ("Point<T>", "Point"),
            ("&'a mut fmt::Point<T>", "Point"),
            ("std::vec::Vec<u8>", "Vec"),
            ("dyn Error + Send", "Error"),
            ("dyn Expected + '_", "Expected"),
            ("[T]", "[T]"),
            ("(A,\n B)", "(A, B)"),
            ("*const Node", "Node"),
        ] {
            assert_eq!(clean_qualifier(raw), clean, "{raw}");
        }
    }
}
