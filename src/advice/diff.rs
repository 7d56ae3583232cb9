//! Unified diffs computed locally, so that what we return always applies to what we were given.

use similar::TextDiff;

/// The unified diff turning `old` into `new`, with `--- a/<name>` / `+++ b/<name>` headers and three lines
/// of context. Empty when the texts are equal. A last line without a newline gets the usual
/// `\ No newline at end of file` marker, so `patch` and `git apply` reproduce `new` byte for byte.
pub fn unified_diff(old: &str, new: &str, name: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

/// `diff` in a markdown ```` ```diff ```` code block.
pub fn markdown_block(diff: &str) -> String {
    let mut block = String::from("```diff\n");
    block.push_str(diff);
    if !diff.is_empty() && !diff.ends_with('\n') {
        block.push('\n');
    }
    block.push_str("```");
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_give_an_empty_diff() {
        assert_eq!(unified_diff("a\n", "a\n", "x.py"), "");
    }

    #[test]
    fn headers_name_the_file() {
        let diff = unified_diff("a\nb\n", "a\nc\n", "app.py");
        assert!(diff.starts_with("--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n"));
        assert!(diff.contains("-b\n+c\n"));
    }

    #[test]
    fn missing_final_newline_is_marked() {
        let diff = unified_diff("a\nb", "a\nc", "s.py");
        assert!(diff.contains("\\ No newline at end of file"), "{diff}");
    }
}
