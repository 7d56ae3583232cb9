//! What a user gives a task, checked and named for the prompt.

use super::AdviceError;
use crate::code::{self, Language};

/// The lowest score, given or answered (poor).
pub const SCORE_MIN: f64 = 0.0;
/// The highest score, given or answered (excellent).
pub const SCORE_MAX: f64 = 1.0;

/// A score given by a user (`name` is its field): on the scale the scores tools answer on.
pub(super) fn check_score(name: &str, value: f64) -> Result<(), AdviceError> {
    // Written so that NaN is refused too.
    if (SCORE_MIN..=SCORE_MAX).contains(&value) {
        Ok(())
    } else {
        Err(AdviceError::Input(format!(
            "{name}: {value} is out of range; accepted: {SCORE_MIN} to {SCORE_MAX}"
        )))
    }
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
