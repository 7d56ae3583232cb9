//! Shaping a model's validated answer: code without its fence, with the original's final newline and
//! checked to parse; scores kept within 0..1; string fields read.

use serde_json::Value;

use super::AdviceError;
use crate::code::{self, Language};

/// Syntax problems of `source` in `language`, as one line for a repair request; `None` when it parses.
pub(super) fn syntax_problems(language: Language, source: &str) -> Option<String> {
    let errors = code::parse_errors(language, source);
    if errors.is_empty() {
        return None;
    }
    let listed: Vec<String> = errors
        .iter()
        .take(3)
        .map(|e| format!("line {} column {}: {}", e.line, e.column, e.message))
        .collect();
    Some(format!(
        "the code does not parse as {language}: {}{}",
        listed.join("; "),
        if errors.len() > 3 { "; ..." } else { "" }
    ))
}

/// Code written by a model without the markdown fence it sometimes adds around it.
pub(super) fn strip_code_fence(code: &str) -> &str {
    let trimmed = code.trim();
    if let Some(after) = trimmed.strip_prefix("```")
        && let Some(body_start) = after.find('\n')
        && let Some(body) = after[body_start + 1..].strip_suffix("```")
    {
        return body.strip_suffix('\n').unwrap_or(body);
    }
    code
}

/// `new` with its final newline matching `old`'s, so a diff does not churn the last line.
pub(super) fn match_final_newline(old: &str, new: &str) -> String {
    let mut new = new.trim_end_matches(['\n', '\r']).to_owned();
    if old.ends_with("\r\n") {
        new.push_str("\r\n");
    } else if old.ends_with('\n') {
        new.push('\n');
    }
    new
}

/// A score as given by the model, kept within 0..1. Only numbers reach here (the schema says so).
pub(super) fn clamp_score(value: &Value) -> Option<f64> {
    value
        .as_f64()
        .map(|s| s.clamp(super::SCORE_MIN, super::SCORE_MAX))
}

/// A string field of a validated answer.
pub(super) fn string_field(value: &Value, key: &str) -> Result<String, AdviceError> {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| AdviceError::Internal(format!("validated answer lacks `{key}`")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_around_code_are_stripped() {
        assert_eq!(
            strip_code_fence("```python\ndef f():\n    pass\n```"),
            "def f():\n    pass"
        );
        assert_eq!(strip_code_fence("def f(): pass"), "def f(): pass");
    }

    #[test]
    fn final_newline_follows_the_original() {
        assert_eq!(match_final_newline("a\n", "b"), "b\n");
        assert_eq!(match_final_newline("a", "b\n\n"), "b");
    }

    #[test]
    fn scores_are_clamped_only_when_numeric() {
        assert_eq!(clamp_score(&serde_json::json!(1.7)), Some(1.0));
        assert_eq!(clamp_score(&serde_json::json!("0.5")), None);
    }
}
