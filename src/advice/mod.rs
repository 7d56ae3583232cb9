//! LLM advice on code: scores, improved functions (as diffs we compute), SLOs, whole-file changes and
//! in-depth reviews. Each task renders its prompt from `prompts/`, asks the model for JSON under the task's
//! schema, validates it (one repair round), and shapes the result.

pub mod context;
pub mod diff;
pub mod prompts;

mod deep_analysis;
mod file_changes;
mod score;
mod slo;
mod suggest;

use serde_json::Value;

use crate::{
    code::{self, CodeError, Language},
    llm::{self, AnswerCheck, ChatModel, JsonAnswer, LlmError, Message},
};

pub use deep_analysis::{Concern, ConcernReport, DeepAnalysis, Finding, deep_analysis};
pub use file_changes::{FileChanges, file_changes, read_exact};
pub use score::{Score, score};
pub use slo::{Sli, SloKind, SuggestedSlo, slos};
pub use suggest::{SuggestRequest, Suggestion, suggest};

/// Which quality a score or suggestion is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aspect {
    Performance,
    Reliability,
}

/// What can go wrong giving advice. Messages say what to change.
#[derive(Debug, thiserror::Error)]
pub enum AdviceError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Code(#[from] CodeError),
    #[error("{0}")]
    Input(String),
    #[error("internal error: {0}")]
    Internal(String),
}

/// Sends progress messages of a long call; the MCP layer turns them into notifications.
#[derive(Debug, Clone, Default)]
pub struct ProgressReporter {
    sender: Option<tokio::sync::mpsc::UnboundedSender<String>>,
}

impl ProgressReporter {
    pub fn new(sender: tokio::sync::mpsc::UnboundedSender<String>) -> Self {
        Self {
            sender: Some(sender),
        }
    }

    pub fn report(&self, message: impl Into<String>) {
        if let Some(sender) = &self.sender {
            let _ = sender.send(message.into());
        }
    }
}

/// The system message of every task.
const SYSTEM: &str = "You are a senior site reliability engineer reviewing code. You answer with a single \
JSON object with exactly the fields you are asked for, and nothing else.";

/// Renders the task's prompt and asks the model, with one repair round.
async fn ask(
    model: &dyn ChatModel,
    task: prompts::Task,
    values: &[(&str, &str)],
    check: Option<&AnswerCheck<'_>>,
    progress: &ProgressReporter,
) -> Result<Value, AdviceError> {
    let prompt = prompts::render(task.template(), values)
        .map_err(|e| AdviceError::Internal(e.to_string()))?;
    let schema = task.schema();
    // The schema travels as the provider's structured-output setting (and in a repair request), not here:
    // the prompt names the fields, and every prompt token counts on small local models.
    let messages = [Message::system(SYSTEM), Message::user(prompt)];
    let max_tokens = model.output_limit(task.budget().tokens(values));
    progress.report(format!(
        "asking {} model '{}' (an answer of at most {max_tokens} tokens)",
        model.provider(),
        model.model()
    ));
    let on_repair = |problem: &str| {
        progress.report(format!("answer rejected ({problem}); asking for a repair"));
    };
    let JsonAnswer { value, .. } = llm::ask_json(
        model,
        &messages,
        schema,
        max_tokens,
        check,
        Some(&on_repair),
    )
    .await?;
    progress.report("answer validated");
    Ok(value)
}

/// A snippet given by a user: not blank, not huge.
fn check_snippet(snippet: &str) -> Result<(), AdviceError> {
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
fn lang_label(lang: &str) -> String {
    match Language::from_name(lang) {
        Some(language) => language.name().to_owned(),
        None if lang.trim().is_empty() => "source".to_owned(),
        None => lang.trim().to_owned(),
    }
}

/// Syntax problems of `source` in `language`, as one line for a repair request; `None` when it parses.
fn syntax_problems(language: Language, source: &str) -> Option<String> {
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
fn strip_code_fence(code: &str) -> &str {
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
fn match_final_newline(old: &str, new: &str) -> String {
    let mut new = new.trim_end_matches(['\n', '\r']).to_owned();
    if old.ends_with("\r\n") {
        new.push_str("\r\n");
    } else if old.ends_with('\n') {
        new.push('\n');
    }
    new
}

/// A score as given by the model, kept within 0..1. Only numbers reach here (the schema says so).
fn clamp_score(value: &Value) -> Option<f64> {
    value.as_f64().map(|s| s.clamp(0.0, 1.0))
}

/// A string field of a validated answer.
fn string_field(value: &Value, key: &str) -> Result<String, AdviceError> {
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
