//! The search for definitions in a syntax tree with the combined query: it runs at each node where a pattern
//! can start and enters only nodes that may hold a definition; a large tree parsed whole is searched by two
//! threads.

use std::ops::Range;

// Keyed by node ids (addresses): a multiplicative hash is enough, and these maps are hot on large files.
use rustc_hash::FxHashMap as HashMap;

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, QueryCursor};

use super::{
    FunctionKind,
    attached::{AttachRule, set_attached_starts},
    kinds::WordStarts,
    language::CompiledQueries,
    parse::on_two_threads,
};

/// A class-like container (class, impl, trait, named object literal) that qualifies what it contains.
pub(super) struct Scope {
    pub(super) range: Range<usize>,
    pub(super) name: String,
}

/// One function as the query found it, before qualification.
pub(super) struct Found<'tree> {
    pub(super) name: Node<'tree>,
    pub(super) definition_node: Node<'tree>,
    pub(super) definition: Range<usize>,
    /// Start of what the language attaches before the definition (doc comments, attributes, decorators).
    pub(super) full_start: usize,
    pub(super) body: Option<Node<'tree>>,
    pub(super) qualifier: Option<String>,
    pub(super) kind: Option<FunctionKind>,
}

/// Runs the combined query once: the functions (with what `merge` kept of several matches of one function)
/// in document order, and the scopes.
pub(super) fn run_query<'tree>(
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
pub(super) fn run_query_on_two_threads<'tree>(
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
            let definitions: Vec<Node<'tree>> = found.iter().map(|f| f.definition_node).collect();
            let mut starts: Vec<usize> = found.iter().map(|f| f.full_start).collect();
            set_attached_starts(root, &definitions, &mut starts, &self.attached);
            for (function, start) in found.iter_mut().zip(starts) {
                function.full_start = start;
            }
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
pub(super) fn end_without_trailing_comments(node: Node<'_>) -> usize {
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

#[cfg(test)]
mod tests {
    use super::{SearchSplit, clean_qualifier, run_query, run_query_on_two_threads};
    use crate::code::{
        Language,
        functions::blocks_of,
        lines::LineIndex,
        parse::{LARGE_SOURCE, parse, tests::real_code_roots},
    };

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
