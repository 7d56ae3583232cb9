//! `fault_suggest_better_function_{performance,reliability}`: the model rewrites the function, we diff.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::context::{IndexContext, Related};
use super::{
    AdviceError, Aspect, ProgressReporter,
    answer::{match_final_newline, string_field, strip_code_fence, syntax_problems},
    ask::ask,
    diff,
    input::{check_score, check_snippet, lang_label},
    prompts::Task,
};
use crate::{code::Language, llm::ChatModel};

/// An improved version of a function, as a diff against the original.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Suggestion {
    /// Unified diff from the given snippet to `new_code` (`--- a/snippet.<ext>` / `+++ b/snippet.<ext>`);
    /// empty when the model changed nothing.
    pub diff: String,
    /// The complete improved code.
    pub new_code: String,
    /// What changed and why.
    pub explanation: String,
    /// Which indexed code, if any, was sent to the model as context.
    pub index_context: IndexContext,
}

/// What the user asked for.
#[derive(Debug, Clone, Copy)]
pub struct SuggestRequest<'a> {
    pub snippet: &'a str,
    pub lang: &'a str,
    pub score: f64,
    pub target_score: f64,
}

pub async fn suggest(
    model: &dyn ChatModel,
    aspect: Aspect,
    request: SuggestRequest<'_>,
    context: &Related,
    progress: &ProgressReporter,
) -> Result<Suggestion, AdviceError> {
    check_snippet(request.snippet)?;
    check_score("score", request.score)?;
    check_score("target_score", request.target_score)?;
    let task = match aspect {
        Aspect::Performance => Task::SuggestPerformance,
        Aspect::Reliability => Task::SuggestReliability,
    };
    // The new code must parse when the language is known and the original parses: a broken rewrite is sent
    // back once with the parser's complaint.
    let language = Language::from_name(request.lang)
        .filter(|language| syntax_problems(*language, request.snippet).is_none());
    let check = move |answer: &Value| -> Result<(), String> {
        let code = answer
            .get("new_code")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match language.and_then(|language| syntax_problems(language, strip_code_fence(code))) {
            Some(problem) => Err(format!("`new_code` is not valid: {problem}")),
            None => Ok(()),
        }
    };
    let lang = lang_label(request.lang);
    let score = format!("{:.2}", request.score);
    let target = format!("{:.2}", request.target_score);
    let rendered = super::context::render(&context.chunks);
    let answer = ask(
        model,
        task,
        &[
            ("lang", &lang),
            ("snippet", request.snippet),
            ("score", &score),
            ("target_score", &target),
            ("context", &rendered),
        ],
        Some(&check),
        progress,
    )
    .await?;
    let new_code = match_final_newline(
        request.snippet,
        strip_code_fence(&string_field(&answer, "new_code")?),
    );
    let name = format!(
        "snippet.{}",
        language
            .or_else(|| Language::from_name(request.lang))
            .and_then(|l| l.extensions().first().copied())
            .unwrap_or("txt")
    );
    Ok(Suggestion {
        diff: diff::unified_diff(request.snippet, &new_code, &name),
        new_code,
        explanation: string_field(&answer, "explanation")?,
        index_context: context.report.clone(),
    })
}
