//! What a language attaches before a definition (doc comments, attributes, decorators): one generic rule,
//! driven by the `@attached` captures of the query files and their `attached.*` properties.

// Keyed by node ids (addresses): a multiplicative hash is enough, and these maps are hot on large files.
use rustc_hash::FxHashMap as HashMap;

use tree_sitter::{Node, Query};

/// How a node captured `@attached` joins the definition that follows it (pattern properties).
#[derive(Clone, Copy, Default)]
pub(super) struct AttachRule {
    /// `attached.adjacent`: no blank line between it and what follows (Go doc comments).
    adjacent: bool,
    /// `attached.own_line`: not when it ends a line of code (a trailing comment of the previous statement).
    own_line: bool,
}

impl AttachRule {
    pub(super) fn of_pattern(query: &Query, pattern: usize) -> Self {
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
struct Sibling {
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
    siblings: Vec<Sibling>,
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
        for sibling in self.siblings.iter().rev() {
            if let Some(rule) = sibling.rule {
                if rule.adjacent && next_row > sibling.end_row + 1 {
                    break;
                }
                if rule.own_line && sibling.ends_a_line_of_code {
                    break;
                }
                start = sibling.start_byte;
            }
            next_row = sibling.start_row;
        }
        start
    }

    fn push(&mut self, node: Node<'_>, rule: Option<AttachRule>) {
        let start_row = node.start_position().row;
        let is_extra = node.is_extra();
        if rule.is_some() || is_extra {
            self.siblings.push(Sibling {
                start_byte: node.start_byte(),
                start_row,
                end_row: node.end_position().row,
                rule,
                ends_a_line_of_code: self
                    .previous
                    .is_some_and(|(extra, end_row)| !extra && end_row == start_row),
            });
        } else {
            self.siblings.clear();
        }
        self.previous = Some((is_extra, node.end_position().row));
    }
}

/// Sets where each of `definitions` starts (`starts`, in the same order) with what is attached before it, in
/// one walk of the tree that enters only nodes holding a definition (siblings are visited in order, so no
/// sibling is looked up backwards).
pub(super) fn set_attached_starts(
    root: Node<'_>,
    definitions: &[Node<'_>],
    starts: &mut [usize],
    attached: &HashMap<usize, AttachRule>,
) {
    let mut by_node: HashMap<usize, Vec<usize>> = HashMap::default();
    for (index, definition) in definitions.iter().enumerate() {
        by_node.entry(definition.id()).or_default().push(index);
    }
    let mut definition_starts: Vec<usize> = definitions.iter().map(Node::start_byte).collect();
    definition_starts.sort_unstable();
    // A definition starting where the node starts has nothing before it at its level: only one starting
    // further in makes the node worth entering (a leaf function is not entered).
    let holds_a_definition = |node: Node<'_>| {
        let first = definition_starts.partition_point(|&start| start <= node.start_byte());
        definition_starts
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
                    starts[index] = start;
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
