//! What a user gives a task, checked and named for the prompt.

use super::AdviceError;
use crate::code::{self, Language};
use crate::lenient::Number;

/// The lowest score, given or answered (poor).
pub const SCORE_MIN: f64 = 0.0;
/// The highest score, given or answered (excellent).
pub const SCORE_MAX: f64 = 1.0;

/// A score given by a user (`name` is its field): on the scale the scores tools answer on, checked as every
/// declared number is.
pub(super) fn check_score(name: &str, value: f64) -> Result<(), AdviceError> {
    Number::from_to(SCORE_MIN, SCORE_MAX)
        .check(value)
        .map(|_| ())
        .map_err(|message| AdviceError::Input(format!("{name}: {message}")))
}

/// A snippet given by a user: not blank, not huge.
pub(super) fn check_snippet(snippet: &str) -> Result<(), AdviceError> {
    if snippet.trim().is_empty() {
        return Err(AdviceError::Input(
            "snippet is empty; pass the code to review (e.g. the `full` field of fault_extract_code_block)"
                .into(),
        ));
    }
    if snippet.len() as u64 > code::MAX_SOURCE_BYTES {
        return Err(AdviceError::Input(format!(
            "snippet is {} bytes, over the {} byte limit; pass one function",
            snippet.len(),
            code::MAX_SOURCE_BYTES
        )));
    }
    Ok(())
}

/// The language label for prompts: the canonical name when known, else what the user wrote.
pub(super) fn lang_label(lang: &str) -> String {
    match Language::from_name(lang) {
        Some(language) => language.name().to_owned(),
        None if lang.trim().is_empty() => "source".to_owned(),
        None => lang.trim().to_owned(),
    }
}
