//! Finding function definitions with the language's query files.

use std::ops::Range;

// Keyed by node ids (addresses): a multiplicative hash is enough, and these maps are hot on large files.
use rustc_hash::FxHashMap as HashMap;

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Parser, Query, QueryCursor, Tree};

use super::{
    CodeError, FunctionBlock, FunctionInfo, FunctionKind, Language, kinds::WalkKinds,
    language::CompiledQueries,
};

/// Parses `source`; an error only when the grammar cannot be loaded (a build problem).
pub(crate) fn parse(language: Language, source: &str) -> Result<Tree, CodeError> {
    #[cfg(test)]
    PARSES.with(|parses| parses.set(parses.get() + 1));
    parse_part(language, source, None)
}

/// Parses `source`, or only the `included` range of it (node positions are the source's own).
fn parse_part(
    language: Language,
    source: &str,
    included: Option<tree_sitter::Range>,
) -> Result<Tree, CodeError> {
    let internal = |message: String| CodeError::Internal {
        language: language.name().to_owned(),
        message,
    };
    let mut parser = Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|e| internal(e.to_string()))?;
    if let Some(range) = included {
        parser.set_included_ranges(&[range]).map_err(|_| {
            internal(format!(
                "bytes {}..{} cannot be parsed on their own",
                range.start_byte, range.end_byte
            ))
        })?;
    }
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

/// From this size on, a source is parsed on two threads when it can be cut, and its trees are freed off the
/// caller's path: below it, a thread costs about what it would save.
pub(crate) const LARGE_SOURCE: usize = 64 * 1024;

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
fn find_functions_cut_at(
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
        let halves = std::thread::scope(|scope| {
            let own_cpu = current_cpu();
            let second_half = std::thread::Builder::new()
                .name("second-half".to_owned())
                .spawn_scoped(scope, move || {
                    leave_cpu(own_cpu);
                    parse_and_search(cut..source.len())
                })
                .ok()?;
            // The new thread may be queued on this CPU, behind this one: let it run first, to move off.
            std::thread::yield_now();
            let first = parse_and_search(0..cut);
            let second = second_half.join().ok()?;
            Some(match (first, second) {
                (Ok(first), Ok(second)) => Ok((first, second)),
                (Err(e), _) | (_, Err(e)) => Err(e),
            })
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

/// The CPU this thread runs on (`None` where that cannot be known).
fn current_cpu() -> Option<usize> {
    #[cfg(target_os = "linux")]
    return Some(rustix::thread::sched_getcpu());
    #[cfg(not(target_os = "linux"))]
    return None;
}

/// Moves this thread off `taken`, the CPU of the thread that made it. A new thread is often queued on its
/// maker's CPU until the scheduler next balances the load a tick later (4 ms here, most of a half's parse):
/// the two halves then ran one after the other in about a third of the first calls. The mask is widened again
/// at once; the move stands, as threads are not moved back without cause.
fn leave_cpu(taken: Option<usize>) {
    #[cfg(target_os = "linux")]
    {
        use rustix::thread::{sched_getaffinity, sched_getcpu, sched_setaffinity};
        if taken != Some(sched_getcpu()) {
            return;
        }
        let (Some(taken), Ok(allowed)) = (taken, sched_getaffinity(None)) else {
            return;
        };
        let mut others = allowed;
        others.unset(taken);
        if others.count() > 0 && sched_setaffinity(None, &others).is_ok() {
            // Failing to widen leaves the thread on the other CPUs, which is no harm for one parse.
            let _ = sched_setaffinity(None, &allowed);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = taken;
}

/// Where a large source may be cut in two to be parsed on two threads: the start of a line past the middle
/// that begins with a letter, after one or more blank lines, below a line that is not a comment, attribute or
/// decorator (its first character is a letter, a digit, `_` or a closing bracket). Such a line almost always
/// starts a top-level item; [`cut_changes_nothing`] checks that it did.
fn cut_line(source: &str, lines: &LineIndex) -> Option<usize> {
    if source.len() < LARGE_SOURCE {
        return None;
    }
    let bytes = source.as_bytes();
    let text_of = |line: usize| {
        let start = lines.starts[line];
        let end = lines.starts.get(line + 1).map_or(bytes.len(), |&next| next);
        &bytes[start..end]
    };
    let first_visible = |line: usize| text_of(line).iter().find(|b| !b.is_ascii_whitespace());
    // 0-based lines, from the middle of the source to three quarters of it.
    let first = lines.line_of(source.len() / 2);
    let last = lines.line_of(source.len() * 3 / 4);
    (first.max(2)..last).find_map(|line| {
        let starts_with_letter = text_of(line).first().is_some_and(u8::is_ascii_alphabetic);
        if !starts_with_letter || first_visible(line - 1).is_some() {
            return None;
        }
        let above = (0..line - 1).rev().find_map(first_visible)?;
        let code_above =
            above.is_ascii_alphanumeric() || matches!(above, b'_' | b'}' | b')' | b']');
        code_above.then(|| lines.starts[line])
    })
}

/// Whether two halves parsed apart are what the whole source parses to: neither has a syntax error (a cut
/// inside a string, a comment or brackets leaves one), their root is no pattern's start, and the first does not
/// end with something the second's first definition could take as attached (a doc comment, an attribute).
fn cut_changes_nothing(first: &Tree, second: &Tree, kinds: &WalkKinds) -> bool {
    let (first, second) = (first.root_node(), second.root_node());
    let ends_with_attachable = {
        let mut cursor = first.walk();
        first
            .named_children(&mut cursor)
            .last()
            .is_some_and(|last| last.is_extra() || kinds.may_be_attached(last.kind_id()))
    };
    !first.has_error()
        && !second.has_error()
        && !kinds.starts_a_pattern(first.kind_id())
        && !ends_with_attachable
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
        open.push(container);
    }
    enclosing
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

/// A named sibling that may join the definition after it: captured `@attached` (`rule`), or an extra
/// (a comment) passed over.
struct Link {
    start_byte: usize,
    start_row: usize,
    end_row: usize,
    rule: Option<AttachRule>,
    /// It starts on the line where the previous named sibling, a piece of code, ends.
    ends_a_line_of_code: bool,
}

/// The named siblings seen so far at one level of the walk, since the last one that stops attachment.
#[derive(Default)]
struct Level {
    links: Vec<Link>,
    /// The previous named sibling: whether it is an extra, and its last row.
    previous: Option<(bool, usize)>,
}

impl Level {
    /// Where a definition starting at `start` really starts: the generic "attached preceding siblings" rule.
    /// Walking back from the definition, a sibling captured `@attached` joins it (when its rule allows), a
    /// comment not captured is passed over (it joins only when something attached lies above it), anything
    /// else has already ended the walk (see [`Level::push`]).
    fn attached_start(&self, start: usize, start_row: usize) -> usize {
        let mut start = start;
        let mut next_row = start_row;
        for link in self.links.iter().rev() {
            if let Some(rule) = link.rule {
                if rule.adjacent && next_row > link.end_row + 1 {
                    break;
                }
                if rule.own_line && link.ends_a_line_of_code {
                    break;
                }
                start = link.start_byte;
            }
            next_row = link.start_row;
        }
        start
    }

    fn push(&mut self, node: Node<'_>, rule: Option<AttachRule>) {
        let start_row = node.start_position().row;
        let is_extra = node.is_extra();
        if rule.is_some() || is_extra {
            self.links.push(Link {
                start_byte: node.start_byte(),
                start_row,
                end_row: node.end_position().row,
                rule,
                ends_a_line_of_code: self
                    .previous
                    .is_some_and(|(extra, end_row)| !extra && end_row == start_row),
            });
        } else {
            self.links.clear();
        }
        self.previous = Some((is_extra, node.end_position().row));
    }
}

/// Sets each function's `full_start` with what is attached before it, in one walk of the tree that enters
/// only nodes holding a definition (siblings are visited in order, so no sibling is looked up backwards).
fn set_attached_starts(
    root: Node<'_>,
    found: &mut [Found<'_>],
    attached: &HashMap<usize, AttachRule>,
) {
    let mut by_node: HashMap<usize, Vec<usize>> = HashMap::default();
    for (index, function) in found.iter().enumerate() {
        by_node
            .entry(function.definition_node.id())
            .or_default()
            .push(index);
    }
    let mut starts: Vec<usize> = found
        .iter()
        .map(|f| f.definition_node.start_byte())
        .collect();
    starts.sort_unstable();
    // A definition starting where the node starts has nothing before it at its level: only one starting
    // further in makes the node worth entering (a leaf function is not entered).
    let holds_a_definition = |node: Node<'_>| {
        let first = starts.partition_point(|&start| start <= node.start_byte());
        starts
            .get(first)
            .is_some_and(|&start| start < node.end_byte())
    };

    let mut cursor = root.walk();
    let mut levels = vec![Level::default()];
    loop {
        let node = cursor.node();
        if let Some(level) = levels.last_mut().filter(|_| node.is_named()) {
            if let Some(indices) = by_node.get(&node.id()) {
                let start = level.attached_start(node.start_byte(), node.start_position().row);
                for &index in indices {
                    found[index].full_start = start;
                }
            }
            level.push(node, attached.get(&node.id()).copied());
        }
        if holds_a_definition(node) && cursor.goto_first_child() {
            levels.push(Level::default());
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
            levels.pop();
        }
    }
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
    let (name_ix, definition_ix, body_ix, attached_ix, qualifier_ix) = (
        index("name"),
        index("definition"),
        index("body"),
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

    /// Row and column (0-based, in bytes) of a byte offset.
    fn point_of(&self, byte: usize) -> tree_sitter::Point {
        let row = self.line_of(byte).saturating_sub(1);
        let column = byte - self.starts.get(row).copied().unwrap_or(0);
        tree_sitter::Point { row, column }
    }

    /// A byte range with its points, for the parser.
    fn range(&self, bytes: Range<usize>) -> tree_sitter::Range {
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

#[cfg(test)]
mod tests {
    use std::{collections::BTreeMap, path::PathBuf, process::Command};

    use super::{
        LARGE_SOURCE, LineIndex, clean_qualifier, cut_line, find_functions, find_functions_cut_at,
    };
    use crate::code::Language;

    /// Directories of real code on this machine: Python's standard library, Go's (when Go is installed) and
    /// the crate sources Cargo downloaded to build this one.
    fn real_code_roots() -> Vec<PathBuf> {
        let output = |program: &str, args: &[&str]| {
            Command::new(program)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        };
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
        [
            output(
                "python3",
                &[
                    "-c",
                    "import sysconfig; print(sysconfig.get_path('stdlib'))",
                ],
            ),
            output("go", &["env", "GOROOT"]).map(|root| root.join("src")),
            cargo_home.map(|home| home.join("registry").join("src")),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Every large real source found, cut where the search would cut it, lists exactly what it lists parsed
    /// whole (names, kinds, lines, full and body ranges); and the cut stands in most of them.
    #[test]
    fn a_large_source_cut_in_two_lists_what_it_lists_whole() {
        const PER_LANGUAGE: usize = 25;
        // language → (files compared, cuts that stood)
        let mut seen: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for root in real_code_roots() {
            for entry in ignore::WalkBuilder::new(root)
                .standard_filters(false)
                .build()
            {
                let Ok(entry) = entry else { continue };
                let path = entry.path();
                let Some(language) = Language::from_path(path) else {
                    continue;
                };
                let count = seen.entry(language.name()).or_default();
                if count.0 >= PER_LANGUAGE {
                    continue;
                }
                let Ok(source) = std::fs::read_to_string(path) else {
                    continue;
                };
                if source.len() < LARGE_SOURCE {
                    continue;
                }
                let lines = LineIndex::new(&source);
                if cut_line(&source, &lines).is_none() {
                    continue;
                }
                let (cut, trees) = find_functions(language, &source).unwrap();
                let (whole, _) = find_functions_cut_at(language, &source, &lines, None).unwrap();
                assert!(
                    cut == whole,
                    "{}: the cut changed the listing",
                    path.display()
                );
                count.0 += 1;
                count.1 += usize::from(trees.len() == 2);
            }
        }
        eprintln!("large sources compared (files, cuts that stood): {seen:?}");
        for language in ["python", "rust"] {
            let (files, stood) = seen.get(language).copied().unwrap_or_default();
            assert_eq!(
                files, PER_LANGUAGE,
                "{language}: too few large sources found"
            );
            assert!(
                stood * 2 > files,
                "{language}: the cut stood in {stood} of {files}"
            );
        }
    }

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
