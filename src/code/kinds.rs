//! Which syntax nodes the search for functions visits, derived from data: the node kinds where a query pattern
//! starts (read from the pattern's own text) and the kinds that may hold a definition somewhere below them (from
//! the grammar's `node-types.json`, which lists what each kind may contain). The search runs the query only at
//! the first and descends only into the second (or into a node with a syntax error, where anything may be), so a
//! Python expression or a Rust token tree is never entered, while JavaScript, where functions are expressions,
//! is entered wherever a function may be.

use std::collections::{HashMap, HashSet};

use tree_sitter::Query;

/// Per node kind id of one grammar: whether a pattern starts there, and whether a definition may lie below.
pub(crate) struct WalkKinds {
    starts_a_pattern: Vec<bool>,
    may_hold_a_definition: Vec<bool>,
    /// Whether a node of this kind may be captured `@attached` (a pattern capturing it starts there).
    may_be_attached: Vec<bool>,
    /// The words every definition's text holds (`fn`, `def`, `func`), when each definition pattern names its
    /// own with `(#set! definition.contains "word")`: a node whose text holds none of them holds no definition.
    definition_words: Option<Vec<String>>,
}

impl WalkKinds {
    /// `query` compiled from `query_source`; `node_types` is the grammar's `node-types.json`. A pattern counts as
    /// a definition pattern when it captures `@definition`. Whatever cannot be read exactly widens the walk (a
    /// pattern whose start is not a named node kind is tried everywhere).
    pub(crate) fn new(
        grammar: &tree_sitter::Language,
        query: &Query,
        query_source: &str,
        node_types: &str,
    ) -> Result<Self, String> {
        let mut starts: HashSet<&str> = HashSet::new();
        let mut definition_starts: HashSet<&str> = HashSet::new();
        let mut attached_starts: HashSet<&str> = HashSet::new();
        let (mut starts_anywhere, mut definitions_anywhere) = (false, false);
        let mut attached_anywhere = false;
        let mut definition_words: Option<Vec<String>> = Some(Vec::new());
        for pattern in 0..query.pattern_count() {
            let text = query_source
                .get(query.start_byte_for_pattern(pattern)..query.end_byte_for_pattern(pattern))
                .unwrap_or_default();
            let is_definition = text.contains("@definition");
            let is_attached = text.contains("@attached");
            if is_definition {
                let word = query
                    .property_settings(pattern)
                    .iter()
                    .find(|p| &*p.key == "definition.contains")
                    .and_then(|p| p.value.as_deref())
                    .filter(|word| !word.is_empty());
                definition_words = match (definition_words, word) {
                    (Some(mut words), Some(word)) => {
                        if !words.iter().any(|known| known == word) {
                            words.push(word.to_owned());
                        }
                        Some(words)
                    }
                    _ => None,
                };
            }
            match pattern_roots(text) {
                Some(roots) => {
                    if is_definition {
                        definition_starts.extend(roots.iter().copied());
                    }
                    if is_attached {
                        attached_starts.extend(roots.iter().copied());
                    }
                    starts.extend(roots);
                }
                None => {
                    starts_anywhere = true;
                    definitions_anywhere |= is_definition;
                    attached_anywhere |= is_attached;
                }
            }
        }
        let holders = holders_of(&definition_starts, node_types)?;
        let count = grammar.node_kind_count();
        let by_id = |is_in: &dyn Fn(&str) -> bool, everywhere: bool| -> Vec<bool> {
            (0..count)
                .map(|id| {
                    let id = id as u16;
                    everywhere
                        || (grammar.node_kind_is_named(id)
                            && grammar.node_kind_for_id(id).is_some_and(is_in))
                })
                .collect()
        };
        Ok(Self {
            starts_a_pattern: by_id(&|kind| starts.contains(kind), starts_anywhere),
            may_hold_a_definition: by_id(&|kind| holders.contains(kind), definitions_anywhere),
            may_be_attached: by_id(&|kind| attached_starts.contains(kind), attached_anywhere),
            definition_words,
        })
    }

    /// A node of this kind may be captured `@attached`, to join the definition after it.
    pub(crate) fn may_be_attached(&self, kind: u16) -> bool {
        self.may_be_attached
            .get(usize::from(kind))
            .copied()
            .unwrap_or(true)
    }

    /// Where the definition words occur in `range` of `source`; `None` when the grammar's patterns do not
    /// name them.
    pub(crate) fn definition_words_in(
        &self,
        source: &str,
        range: std::ops::Range<usize>,
    ) -> Option<WordStarts> {
        self.definition_words
            .as_deref()
            .map(|words| WordStarts::find(words, source, range))
    }

    /// A pattern may start at a node of this kind.
    pub(crate) fn starts_a_pattern(&self, kind: u16) -> bool {
        self.starts_a_pattern
            .get(usize::from(kind))
            .copied()
            .unwrap_or(true)
    }

    /// A node of this kind may hold (below it) a node where a definition pattern starts.
    pub(crate) fn may_hold_a_definition(&self, kind: u16) -> bool {
        self.may_hold_a_definition
            .get(usize::from(kind))
            .copied()
            .unwrap_or(true)
    }
}

/// Byte offsets where one of a few words starts in a source, as whole words (not inside a longer identifier),
/// in order. Occurrences in strings and comments are kept: they only make the search enter a node in vain.
pub(crate) struct WordStarts(Vec<usize>);

impl WordStarts {
    fn find(words: &[String], source: &str, range: std::ops::Range<usize>) -> Self {
        let is_word_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let bytes = source.as_bytes();
        let offset = range.start;
        let text = source.get(range).unwrap_or_default();
        let mut starts: Vec<usize> = words
            .iter()
            .flat_map(|word| {
                text.match_indices(word.as_str()).filter_map(|(at, _)| {
                    let at = offset + at;
                    let before = at.checked_sub(1).map(|i| bytes[i]);
                    let after = bytes.get(at + word.len()).copied();
                    let whole =
                        !before.is_some_and(is_word_byte) && !after.is_some_and(is_word_byte);
                    whole.then_some(at)
                })
            })
            .collect();
        starts.sort_unstable();
        Self(starts)
    }

    /// Whether at least `count` (≥ 1) words start inside `range`.
    pub(crate) fn at_least_in(&self, count: usize, range: std::ops::Range<usize>) -> bool {
        let first = self.0.partition_point(|&start| start < range.start);
        self.0
            .get(first + count.saturating_sub(1))
            .is_some_and(|&start| start < range.end)
    }
}

/// The node kinds a pattern may start at (`(kind ...)`, a group `((kind) ...)`, an alternation `[(a) (b)]`);
/// `None` when it may start anywhere (a wildcard, an anonymous node, or text not understood here).
fn pattern_roots(text: &str) -> Option<Vec<&str>> {
    let text = skip_blank(text);
    if let Some(inside) = text.strip_prefix('[') {
        // Each top-level element of the alternation.
        let mut roots = Vec::new();
        let mut rest = skip_blank(inside);
        while !rest.starts_with(']') {
            roots.extend(pattern_roots(rest)?);
            rest = skip_blank(&rest[element_len(rest)?..]);
            // Captures and quantifiers after an element.
            while let Some(after) = rest
                .strip_prefix('@')
                .map(|r| r.trim_start_matches(|c: char| c.is_alphanumeric() || "._-".contains(c)))
                .or_else(|| rest.strip_prefix(['?', '*', '+']))
            {
                rest = skip_blank(after);
            }
            if rest.is_empty() {
                return None;
            }
        }
        return Some(roots);
    }
    let inside = skip_blank(text.strip_prefix('(')?);
    if inside.starts_with(['(', '[']) {
        // A group: the pattern starts at its first element.
        return pattern_roots(inside);
    }
    let kind_len = inside
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(inside.len());
    let kind = &inside[..kind_len];
    if kind.is_empty() || kind == "_" {
        return None;
    }
    Some(vec![kind])
}

/// Whitespace and `;` comments skipped.
fn skip_blank(mut text: &str) -> &str {
    loop {
        text = text.trim_start();
        match text.strip_prefix(';') {
            Some(comment) => text = comment.split_once('\n').map_or("", |(_, rest)| rest),
            None => return text,
        }
    }
}

/// Length of the parenthesized or bracketed element at the start of `text` (strings and comments inside are
/// skipped); `None` when it does not close.
fn element_len(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            '"' => {
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            ';' => {
                for (_, c) in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            _ if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

/// The named kinds that may contain, at any depth, a node of one of `targets`, by `node-types.json`: each
/// kind's children and fields, supertypes expanded to their subtypes.
fn holders_of(targets: &HashSet<&str>, node_types: &str) -> Result<HashSet<String>, String> {
    #[derive(serde::Deserialize)]
    struct NodeType {
        #[serde(rename = "type")]
        kind: String,
        named: bool,
        #[serde(default)]
        subtypes: Vec<Child>,
        #[serde(default)]
        children: Option<Children>,
        #[serde(default)]
        fields: HashMap<String, Children>,
    }
    #[derive(serde::Deserialize)]
    struct Children {
        types: Vec<Child>,
    }
    #[derive(serde::Deserialize)]
    struct Child {
        #[serde(rename = "type")]
        kind: String,
        named: bool,
    }

    let types: Vec<NodeType> = serde_json::from_str(node_types)
        .map_err(|e| format!("the grammar's node-types.json cannot be read: {e}"))?;
    let subtypes: HashMap<&str, Vec<&str>> = types
        .iter()
        .filter(|t| t.named && !t.subtypes.is_empty())
        .map(|t| {
            let named = t
                .subtypes
                .iter()
                .filter(|c| c.named)
                .map(|c| c.kind.as_str());
            (t.kind.as_str(), named.collect())
        })
        .collect();
    let expand = |kind: &str| -> Vec<String> {
        let mut out = Vec::new();
        let mut pending = vec![kind];
        let mut seen = HashSet::new();
        while let Some(kind) = pending.pop() {
            if !seen.insert(kind) {
                continue;
            }
            match subtypes.get(kind) {
                Some(subs) => pending.extend(subs.iter().copied()),
                None => out.push(kind.to_owned()),
            }
        }
        out
    };
    let contains: Vec<(&str, Vec<String>)> = types
        .iter()
        .filter(|t| t.named)
        .map(|t| {
            let children = t
                .children
                .iter()
                .chain(t.fields.values())
                .flat_map(|c| c.types.iter())
                .filter(|c| c.named)
                .flat_map(|c| expand(&c.kind));
            (t.kind.as_str(), children.collect())
        })
        .collect();
    let mut holders: HashSet<String> = HashSet::new();
    loop {
        let before = holders.len();
        for (kind, children) in &contains {
            if !holders.contains(*kind)
                && children.iter().any(|child| {
                    targets.contains(child.as_str()) || holders.contains(child.as_str())
                })
            {
                holders.insert((*kind).to_owned());
            }
        }
        if holders.len() == before {
            return Ok(holders);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_starts_are_read_from_the_pattern() {
        assert_eq!(
            pattern_roots("(function_item\n  name: (identifier) @name) @definition"),
            Some(vec!["function_item"])
        );
        assert_eq!(
            pattern_roots("((comment) @attached\n  (#set! attached.adjacent \"true\"))"),
            Some(vec!["comment"])
        );
        assert_eq!(
            pattern_roots("; note\n[(a) @x (b (c))? \"(\" ] @y"),
            None,
            "an anonymous node may start anywhere"
        );
        assert_eq!(
            pattern_roots("[(a) @x (b (c \"]\"))?] @y"),
            Some(vec!["a", "b"])
        );
        assert_eq!(pattern_roots("(_ (identifier))"), None);
    }

    #[test]
    fn python_expressions_are_not_entered_javascript_ones_are() {
        use super::super::Language;
        let kinds = |language: &str| {
            let language = Language::from_name(language).unwrap();
            let grammar = language.grammar();
            let walk = &language.queries().unwrap().walk_kinds;
            move |kind: &str| {
                let id = grammar.id_for_node_kind(kind, true);
                (walk.starts_a_pattern(id), walk.may_hold_a_definition(id))
            }
        };
        let python = kinds("python");
        assert_eq!(python("function_definition"), (true, true));
        assert_eq!(python("class_definition"), (true, true));
        assert_eq!(python("if_statement"), (false, true));
        assert_eq!(python("call"), (false, false));
        assert_eq!(python("string"), (false, false));
        let javascript = kinds("javascript");
        assert_eq!(javascript("call_expression"), (false, true));
        assert_eq!(javascript("string"), (false, false));
        let rust = kinds("rust");
        assert_eq!(rust("token_tree"), (false, false));
        assert_eq!(rust("line_comment"), (true, false));
    }
}
