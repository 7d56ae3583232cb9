//! The syntax errors a parser finds in a source.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Language, parse, search};

/// A syntax error found by the parser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SyntaxError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in bytes.
    pub column: usize,
    pub message: String,
}

/// Syntax errors in `source` (empty when it parses cleanly), at most 100.
pub fn parse_errors(language: Language, source: &str) -> Vec<SyntaxError> {
    const LIMIT: usize = 100;
    let tree = match parse::parse(language, source) {
        Ok(tree) => tree,
        Err(e) => {
            return vec![SyntaxError {
                line: 1,
                column: 1,
                message: e.to_string(),
            }];
        }
    };
    let mut errors = Vec::new();
    let mut cursor = tree.walk();
    let mut visited_children = false;
    loop {
        let node = cursor.node();
        if !visited_children && (node.is_error() || node.is_missing()) {
            let position = node.start_position();
            let message = if node.is_missing() {
                format!("missing `{}`", node.kind())
            } else {
                let text = search::node_text(node, source);
                let first_line = text.lines().next().unwrap_or_default();
                let excerpt: String = first_line.chars().take(40).collect();
                format!("unexpected `{}`", excerpt.trim())
            };
            errors.push(SyntaxError {
                line: position.row + 1,
                column: position.column + 1,
                message,
            });
            if errors.len() >= LIMIT {
                break;
            }
            // Do not descend into an error: one report per broken region.
            visited_children = true;
            continue;
        }
        if !visited_children && node.has_error() && cursor.goto_first_child() {
            continue;
        }
        if cursor.goto_next_sibling() {
            visited_children = false;
        } else if cursor.goto_parent() {
            visited_children = true;
        } else {
            break;
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_are_located() {
        let python = Language::from_name("python").unwrap();
        assert!(parse_errors(python, "def f():\n    return 1\n").is_empty());
        let errors = parse_errors(python, "def f(:\n    return 1\n");
        assert!(!errors.is_empty());
        assert_eq!(errors[0].line, 1);
        let rust = Language::from_name("rust").unwrap();
        assert!(!parse_errors(rust, "fn f() { let x = 1 }\nfn g( {}").is_empty());
    }
}
