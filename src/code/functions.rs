//! Finding function definitions with the language's query files.

use std::{collections::HashMap, ops::Range};

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Parser, Query, QueryCursor, Tree};

use super::{CodeError, FunctionBlock, FunctionInfo, FunctionKind, Language};

/// Parses `source`; `None` only when the grammar cannot be loaded (a build problem).
pub(crate) fn parse(language: Language, source: &str) -> Result<Tree, CodeError> {
    let internal = |message: String| CodeError::Internal {
        language: language.name().to_owned(),
        message,
    };
    #[cfg(test)]
    PARSES.with(|parses| parses.set(parses.get() + 1));
    let mut parser = Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|e| internal(e.to_string()))?;
    parser
        .parse(source, None)
        .ok_or_else(|| internal("the parser returned no tree".to_owned()))
}

#[cfg(test)]
thread_local! {
    /// Parses made by this thread, for tests of the parse cache.
    pub(crate) static PARSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A class-like container (class, impl, trait, named object literal) that qualifies what it contains.
struct Scope {
    range: Range<usize>,
    name: String,
}

/// One function as the query found it, before qualification.
struct Found<'tree> {
    name: Node<'tree>,
    definition_node: Node<'tree>,
    definition: Range<usize>,
    /// Start of what the language attaches before the definition (doc comments, attributes, decorators).
    full_start: usize,
    body: Option<Node<'tree>>,
    qualifier: Option<String>,
    kind: Option<FunctionKind>,
}

/// Every function in `tree`, in document order.
pub(crate) fn find_functions(
    language: Language,
    source: &str,
    tree: &Tree,
) -> Result<Vec<FunctionBlock>, CodeError> {
    let queries = language.queries().map_err(|message| CodeError::Internal {
        language: language.name().to_owned(),
        message,
    })?;
    let root = tree.root_node();
    let scopes = find_scopes(&queries.scopes, root, source);
    let found = run_functions_query(&queries.functions, root, source);

    // Functions are scopes for what they contain (nested functions), next to the class-like ones.
    let function_scopes: Vec<(Range<usize>, String)> = found
        .iter()
        .map(|f| (f.definition.clone(), node_text(f.name, source).to_owned()))
        .collect();

    let separator = language.separator();
    let lines = LineIndex::new(source);
    let mut blocks = Vec::with_capacity(found.len());
    for function in &found {
        let name = node_text(function.name, source).to_owned();
        let name = unquote(&name).to_owned();
        // Enclosing containers, outermost first: (start, is_function, name).
        let mut enclosing: Vec<(usize, usize, bool, &str)> = Vec::new();
        for scope in &scopes {
            if strictly_contains(&scope.range, &function.definition) {
                enclosing.push((scope.range.start, scope.range.end, false, &scope.name));
            }
        }
        for (range, scope_name) in &function_scopes {
            if strictly_contains(range, &function.definition) {
                enclosing.push((range.start, range.end, true, scope_name));
            }
        }
        // Outermost first; on equal starts the wider one is outer.
        enclosing.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));

        let qualified_name = match &function.qualifier {
            Some(qualifier) => format!("{qualifier}{separator}{name}"),
            None => enclosing
                .iter()
                .map(|(_, _, _, scope_name)| unquote(scope_name))
                .chain(std::iter::once(name.as_str()))
                .collect::<Vec<_>>()
                .join(separator),
        };
        let kind = if function.body.is_none() {
            FunctionKind::Signature
        } else if let Some(kind) = function.kind {
            kind
        } else if enclosing
            .last()
            .is_some_and(|(_, _, is_function, _)| !is_function)
        {
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
            full_text: source[full.clone()].to_owned(),
            body_text: body
                .as_ref()
                .map(|b| source[b.clone()].to_owned())
                .unwrap_or_default(),
            full,
            body,
        });
    }
    Ok(blocks)
}

/// How a node captured `@attached` joins the definition that follows it (pattern properties).
#[derive(Clone, Copy, Default)]
struct AttachRule {
    /// `attached.adjacent`: no blank line between it and what follows (Go doc comments).
    adjacent: bool,
    /// `attached.own_line`: not when it ends a line of code (a trailing comment of the previous statement).
    own_line: bool,
}

impl AttachRule {
    fn of_pattern(query: &Query, pattern: usize) -> Self {
        let set = |key: &str| {
            query
                .property_settings(pattern)
                .iter()
                .any(|p| &*p.key == key && p.value.as_deref() != Some("false"))
        };
        Self {
            adjacent: set("attached.adjacent"),
            own_line: set("attached.own_line"),
        }
    }
}

/// Where the definition really starts: the generic "attached preceding siblings" rule. Walking back from
/// the definition, a sibling captured `@attached` (by its rule) joins it, another comment is passed over
/// (it joins only when something attached lies above it), anything else stops the walk.
fn attached_start(definition: Node<'_>, attached: &HashMap<usize, AttachRule>) -> usize {
    let mut start = definition.start_byte();
    let mut next_row = definition.start_position().row;
    let mut sibling = definition.prev_sibling();
    while let Some(node) = sibling {
        sibling = node.prev_sibling();
        if !node.is_named() {
            continue;
        }
        match attached.get(&node.id()) {
            Some(rule) => {
                if rule.adjacent && next_row > node.end_position().row + 1 {
                    break;
                }
                if rule.own_line && ends_a_line_of_code(node) {
                    break;
                }
                start = node.start_byte();
            }
            None if node.is_extra() => {}
            None => break,
        }
        next_row = node.start_position().row;
    }
    start
}

/// Whether `node` starts on the line where the previous piece of code (not a comment) ends.
fn ends_a_line_of_code(node: Node<'_>) -> bool {
    let mut sibling = node.prev_sibling();
    while let Some(previous) = sibling {
        if previous.is_named() {
            return !previous.is_extra()
                && previous.end_position().row == node.start_position().row;
        }
        sibling = previous.prev_sibling();
    }
    false
}

fn run_functions_query<'tree>(query: &Query, root: Node<'tree>, source: &str) -> Vec<Found<'tree>> {
    let index = |name: &str| query.capture_index_for_name(name);
    let (name_ix, definition_ix, body_ix, attached_ix, qualifier_ix) = (
        index("name"),
        index("definition"),
        index("body"),
        index("attached"),
        index("qualifier"),
    );
    let (terminated_ix, terminator_ix) = (index("terminated"), index("terminator"));
    let mut attached: HashMap<usize, AttachRule> = HashMap::new();
    // Definition node → end of the token that ends it.
    let mut terminators: HashMap<usize, usize> = HashMap::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, root, source.as_bytes());
    // Keyed by the name node: several patterns may match one function (plain, decorated, exported);
    // the widest definition wins.
    let mut by_name: HashMap<usize, Found<'tree>> = HashMap::new();
    while let Some(m) = matches.next() {
        let mut name = None;
        let mut definition = None;
        let mut body = None;
        let mut qualifier = None;
        if terminated_ix.is_some() {
            let node_of = |ix| m.captures().iter().find(|c| Some(c.index) == ix);
            if let (Some(terminated), Some(terminator)) =
                (node_of(terminated_ix), node_of(terminator_ix))
            {
                terminators.insert(terminated.node.id(), terminator.node.end_byte());
                continue;
            }
        }
        for capture in m.captures() {
            let ix = Some(capture.index);
            let node = capture.node;
            if ix == name_ix {
                name = Some(node);
            } else if ix == definition_ix {
                definition = Some(node);
            } else if ix == body_ix {
                body = Some(node);
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
    let mut found: Vec<Found<'tree>> = by_name.into_values().collect();
    for function in &mut found {
        if !attached.is_empty() {
            function.full_start = attached_start(function.definition_node, &attached);
        }
        if let Some(&end) = terminators.get(&function.definition_node.id()) {
            function.definition.end = function.definition.end.max(end);
        }
    }
    found.sort_by_key(|f| (f.name.start_byte(), f.definition.start));
    found
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

fn find_scopes(query: &Query, root: Node<'_>, source: &str) -> Vec<Scope> {
    let (Some(scope_ix), Some(name_ix)) = (
        query.capture_index_for_name("scope"),
        query.capture_index_for_name("scope.name"),
    ) else {
        return Vec::new();
    };
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, root, source.as_bytes());
    // Keyed by the scope node; the earliest pattern (the most specific) names it.
    let mut by_node: HashMap<usize, (usize, Scope)> = HashMap::new();
    while let Some(m) = matches.next() {
        let scope = m.captures().iter().find(|c| c.index == scope_ix);
        let name = m.captures().iter().find(|c| c.index == name_ix);
        let (Some(scope), Some(name)) = (scope, name) else {
            continue;
        };
        let entry = (
            m.pattern_index,
            Scope {
                range: scope.node.byte_range(),
                name: clean_qualifier(node_text(name.node, source)),
            },
        );
        match by_node.get(&scope.node.id()) {
            Some((pattern, _)) if *pattern <= m.pattern_index => {}
            _ => {
                by_node.insert(scope.node.id(), entry);
            }
        }
    }
    by_node.into_values().map(|(_, scope)| scope).collect()
}

/// Where `node` really ends: comments after its last statement (Python blocks keep them) are not part of it.
fn end_without_trailing_comments(node: Node<'_>) -> usize {
    let mut current = node;
    loop {
        let mut cursor = current.walk();
        let last = current
            .children(&mut cursor)
            .filter(|child| !child.is_extra())
            .last();
        match last {
            Some(child) => current = child,
            None => return current.end_byte(),
        }
    }
}

fn strictly_contains(outer: &Range<usize>, inner: &Range<usize>) -> bool {
    outer.start <= inner.start && inner.end <= outer.end && outer != inner
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

/// Byte offset → 1-based line, by binary search over line starts.
pub(crate) struct LineIndex {
    starts: Vec<usize>,
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

    /// 1-based line of the last character of `range`.
    pub(crate) fn end_line_of(&self, range: Range<usize>) -> usize {
        self.line_of(range.end.saturating_sub(1).max(range.start))
    }
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
