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
    kinds::WordStarts,
    language::CompiledQueries,
    lines::LineIndex,
    parse::{LARGE_SOURCE, cut_changes_nothing, cut_line, on_two_threads, parse_part},
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
    let compile = || {
        language.queries().map_err(|message| CodeError::Internal {
            language: language.name().to_owned(),
            message,
        })
    };
    // A grammar's first use: its queries are compiled on a second thread while this one parses a large source
    // whole (compiling takes about as long as that parse: 30 ms for TypeScript's), and no cut is tried.
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
    let words = queries.walk_kinds.definition_words_in(source, range);
    let mut search = Search::new(queries, source, words.as_ref());
    search.walk(root);
    search.finish(root)
}

/// [`run_query`] on a large tree parsed whole, shared by two threads when the tree splits near its middle
/// (see [`SearchSplit`]): the second searches the later children of the split node, this one the rest.
fn run_query_on_two_threads<'tree>(
    queries: &CompiledQueries,
    root: Node<'tree>,
    source: &str,
) -> (Vec<Found<'tree>>, Vec<Scope>) {
    let Some(split) = SearchSplit::of(root) else {
        return run_query(queries, root, source, 0..source.len());
    };
    let words = queries
        .walk_kinds
        .definition_words_in(source, 0..source.len());
    let words = words.as_ref();
    let searched = on_two_threads(
        || {
            let mut search = Search::new(queries, source, words);
            split.search_first_share(&mut search);
            search
        },
        || {
            let mut search = Search::new(queries, source, words);
            split.search_second_share(&mut search);
            search
        },
    );
    match searched {
        Some((mut first, second)) => {
            first.absorb(second);
            first.finish(root)
        }
        // No second thread to be had, or it failed: searched here.
        None => run_query(queries, root, source, 0..source.len()),
    }
}

/// Where the search of a tree parsed whole is cut in two: a chain of nodes from the root, each but the last
/// holding the source's middle in a child too large to leave to one thread (a class body, a module wrapped in a
/// function), and the last one's children from `second` on, the second thread's share.
struct SearchSplit<'tree> {
    chain: Vec<Node<'tree>>,
    second: usize,
}

impl<'tree> SearchSplit<'tree> {
    /// The split of `root`, when its middle lies between two children small enough (an eighth of the tree at
    /// most) for the shares to be about even.
    fn of(root: Node<'tree>) -> Option<Self> {
        let total = root.byte_range().len();
        let middle = root.start_byte() + total / 2;
        let mut chain = vec![root];
        let mut cursor = root.walk();
        loop {
            let node = *chain.last()?;
            let children: Vec<Node<'tree>> = node.children(&mut cursor).collect();
            let holding = children
                .iter()
                .position(|child| child.end_byte() > middle)?;
            let child = children[holding];
            if child.byte_range().len() > total / 8 {
                if chain.len() >= 64 {
                    return None;
                }
                chain.push(child);
                continue;
            }
            // The child boundary nearest the middle, with children on both sides.
            let second = if middle - child.start_byte() < child.end_byte() - middle {
                holding
            } else {
                holding + 1
            };
            return (1..children.len())
                .contains(&second)
                .then_some(Self { chain, second });
        }
    }

    /// Everything but the second share: the chain's own nodes and every subtree hanging off it, but the last
    /// node's children from `second` on.
    fn search_first_share(&self, search: &mut Search<'_, 'tree>) {
        let mut cursor = self.chain[0].walk();
        for (depth, &node) in self.chain.iter().enumerate() {
            search.visit(node);
            let next = self.chain.get(depth + 1);
            for (index, child) in node.children(&mut cursor).enumerate() {
                let is_next = next.is_some_and(|next| next.id() == child.id());
                let is_second_share = next.is_none() && index >= self.second;
                if !is_next && !is_second_share {
                    search.walk(child);
                }
            }
        }
    }

    /// The last chain node's children from `second` on.
    fn search_second_share(&self, search: &mut Search<'_, 'tree>) {
        let Some(&last) = self.chain.last() else {
            return;
        };
        let mut cursor = last.walk();
        for child in last.children(&mut cursor).skip(self.second) {
            search.walk(child);
        }
    }
}

/// One search with the combined query: what its matches found, before it is put in document order.
struct Search<'q, 'tree> {
    queries: &'q CompiledQueries,
    source: &'q str,
    words: Option<&'q WordStarts>,
    cursor: QueryCursor,
    captures: Captures,
    attached: HashMap<usize, AttachRule>,
    /// Definition node → end of the token that ends it.
    terminators: HashMap<usize, usize>,
    /// Keyed by the scope node; the earliest pattern (the most specific) names it.
    scopes: HashMap<usize, (usize, Scope)>,
    /// Keyed by the name node: several patterns may match one function (plain, decorated, exported);
    /// the widest definition wins.
    by_name: HashMap<usize, Found<'tree>>,
}

/// The capture indices of the combined query.
struct Captures {
    name: Option<u32>,
    definition: Option<u32>,
    body: Option<u32>,
    function: Option<u32>,
    attached: Option<u32>,
    qualifier: Option<u32>,
    terminated: Option<u32>,
    terminator: Option<u32>,
    scope: Option<u32>,
    scope_name: Option<u32>,
}

impl<'q, 'tree> Search<'q, 'tree> {
    fn new(queries: &'q CompiledQueries, source: &'q str, words: Option<&'q WordStarts>) -> Self {
        let query = &queries.query;
        let index = |name: &str| query.capture_index_for_name(name);
        let mut cursor = QueryCursor::new();
        cursor.set_max_start_depth(Some(0));
        Self {
            queries,
            source,
            words,
            cursor,
            captures: Captures {
                name: index("name"),
                definition: index("definition"),
                body: index("body"),
                function: index("function"),
                attached: index("attached"),
                qualifier: index("qualifier"),
                terminated: index("terminated"),
                terminator: index("terminator"),
                scope: index("scope"),
                scope_name: index("scope.name"),
            },
            attached: HashMap::default(),
            terminators: HashMap::default(),
            scopes: HashMap::default(),
            by_name: HashMap::default(),
        }
    }

    /// Searches the subtree of `root`. The query runs at each node where a pattern can start, and the walk
    /// enters only nodes that may hold a definition (see `WalkKinds`): the same matches as a search of the
    /// whole tree, for the ones that matter.
    fn walk(&mut self, root: Node<'tree>) {
        let mut walk = root.walk();
        loop {
            if self.visit(walk.node()) && walk.goto_first_child() {
                continue;
            }
            while !walk.goto_next_sibling() {
                if !walk.goto_parent() {
                    return;
                }
            }
        }
    }

    /// Runs the query at `node` when a pattern can start there; whether a definition may lie below it.
    #[inline]
    fn visit(&mut self, node: Node<'tree>) -> bool {
        let (query, source, ix) = (&self.queries.query, self.source, &self.captures);
        let kinds = &self.queries.walk_kinds;
        let kind = node.kind_id();
        let mut defined_here = false;
        if kinds.starts_a_pattern(kind) {
            let mut matches = self.cursor.matches(query, node, source.as_bytes());
            while let Some(m) = matches.next() {
                let node_of = |ix: Option<u32>| {
                    m.captures()
                        .iter()
                        .find(|c| Some(c.index) == ix)
                        .map(|c| c.node)
                };
                if m.pattern_index >= self.queries.first_scope_pattern {
                    if let (Some(scope), Some(name)) = (node_of(ix.scope), node_of(ix.scope_name)) {
                        match self.scopes.get(&scope.id()) {
                            Some((pattern, _)) if *pattern <= m.pattern_index => {}
                            _ => {
                                let entry = Scope {
                                    range: scope.byte_range(),
                                    name: clean_qualifier(node_text(name, source)),
                                };
                                self.scopes.insert(scope.id(), (m.pattern_index, entry));
                            }
                        }
                    }
                    continue;
                }
                if let (Some(terminated), Some(terminator)) =
                    (node_of(ix.terminated), node_of(ix.terminator))
                {
                    self.terminators
                        .insert(terminated.id(), terminator.end_byte());
                    continue;
                }
                let mut name = None;
                let mut definition = None;
                let mut body = None;
                let mut qualifier = None;
                for capture in m.captures() {
                    let index = Some(capture.index);
                    let node = capture.node;
                    if index == ix.name {
                        name = Some(node);
                    } else if index == ix.definition {
                        definition = Some(node);
                    } else if index == ix.body {
                        body = Some(node);
                    } else if index == ix.function {
                        body = self
                            .queries
                            .body_field
                            .and_then(|field| node.child_by_field_id(field.get()));
                    } else if index == ix.attached {
                        self.attached
                            .insert(node.id(), AttachRule::of_pattern(query, m.pattern_index));
                    } else if index == ix.qualifier {
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
                match self.by_name.get_mut(&name.id()) {
                    Some(existing) => merge(existing, candidate),
                    None => {
                        self.by_name.insert(name.id(), candidate);
                    }
                }
            }
        }
        // A definition found here holds one of the words itself: a nested one needs another.
        let words_needed = if defined_here { 2 } else { 1 };
        (kinds.may_hold_a_definition(kind) || node.has_error())
            && self
                .words
                .is_none_or(|words| words.at_least_in(words_needed, node.byte_range()))
    }

    /// Takes in what another search of the same tree found (another share of it).
    fn absorb(&mut self, other: Self) {
        self.attached.extend(other.attached);
        self.terminators.extend(other.terminators);
        for (id, (pattern, scope)) in other.scopes {
            match self.scopes.get(&id) {
                Some((known, _)) if *known <= pattern => {}
                _ => {
                    self.scopes.insert(id, (pattern, scope));
                }
            }
        }
        for (id, found) in other.by_name {
            match self.by_name.get_mut(&id) {
                Some(existing) => merge(existing, found),
                None => {
                    self.by_name.insert(id, found);
                }
            }
        }
    }

    /// The functions in document order, with what attaches before each (a walk of the tree from `root`), and
    /// the scopes.
    fn finish(self, root: Node<'tree>) -> (Vec<Found<'tree>>, Vec<Scope>) {
        let mut found: Vec<Found<'tree>> = self.by_name.into_values().collect();
        for function in &mut found {
            if let Some(&end) = self.terminators.get(&function.definition_node.id()) {
                function.definition.end = function.definition.end.max(end);
            }
        }
        if !self.attached.is_empty() {
            set_attached_starts(root, &mut found, &self.attached);
        }
        found.sort_by_key(|f| (f.name.start_byte(), f.definition.start));
        let scopes = self.scopes.into_values().map(|(_, scope)| scope).collect();
        (found, scopes)
    }
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
    use super::{
        LARGE_SOURCE, LineIndex, SearchSplit, blocks_of, clean_qualifier, run_query,
        run_query_on_two_threads,
    };
    use crate::code::{Language, parse::parse, parse::tests::real_code_roots};

    /// Lists `source` with one search and with a search shared by two threads: the same listing; whether the
    /// tree was split.
    fn shared_search_lists_the_same(language: Language, source: &str, what: &str) -> bool {
        let queries = language.queries().unwrap();
        let tree = parse(language, source).unwrap();
        let lines = LineIndex::new(source);
        let (found, scopes) = run_query(queries, tree.root_node(), source, 0..source.len());
        let one = blocks_of(language, &found, &scopes, source, &lines);
        let (found, scopes) = run_query_on_two_threads(queries, tree.root_node(), source);
        let two = blocks_of(language, &found, &scopes, source, &lines);
        assert!(one == two, "{what}: the shared search changed the listing");
        SearchSplit::of(tree.root_node()).is_some()
    }

    /// A class too large for the cut (excalidraw's `App.tsx` is one 13,000-line class) is searched by two
    /// threads, each taking about half of its members, and lists what one search lists; so do large real
    /// sources of every language found on this machine.
    #[test]
    fn a_search_shared_by_two_threads_lists_what_one_search_lists() {
        let mut class =
            String::from("import { Base } from \"./base\";\n\nexport class App extends Base {\n");
        for i in 0..800 {
            class.push_str(&format!(
                "  /** Doc {i}. */\n  @logged\n  method{i}(a: number): number {{\n    function nested{i}() {{\n      \
                 return a;\n    }}\n    return nested{i}();\n  }}\n\n  handler{i} = () => {{\n    const inner = \
                 (b: number) => b + {i};\n    return <p onClick={{() => inner(1)}}>{{inner({i})}}</p>;\n  }};\n\n"
            ));
        }
        class.push_str("}\n\nexport const after = () => 1;\n");
        assert!(class.len() > LARGE_SOURCE);
        let tsx = Language::from_name("tsx").unwrap();
        assert!(
            shared_search_lists_the_same(tsx, &class, "a large class"),
            "the class is split"
        );

        let mut compared = std::collections::BTreeMap::<&str, usize>::new();
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
                let count = compared.entry(language.name()).or_default();
                if *count >= 10 {
                    continue;
                }
                let Ok(source) = std::fs::read_to_string(path) else {
                    continue;
                };
                if source.len() < LARGE_SOURCE {
                    continue;
                }
                shared_search_lists_the_same(language, &source, &path.display().to_string());
                *count += 1;
            }
        }
        eprintln!("large sources compared: {compared:?}");
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
