//! `fault_score_performance` / `fault_score_reliability`: a 0..1 score with an explanation.

use schemars::JsonSchema;
use serde::Serialize;

use super::{
    AdviceError, Aspect, ProgressReporter,
    answer::{clamp_score, string_field},
    ask::ask,
    input::{check_snippet, lang_label},
    prompts::Task,
};
use crate::llm::ChatModel;

/// A score and the reasons for it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Score {
    /// The highest is excellent.
    #[schemars(range(min = super::SCORE_MIN, max = super::SCORE_MAX))]
    pub score: f64,
    /// The main reasons for the score.
    pub explanation: String,
}

pub async fn score(
    model: &dyn ChatModel,
    aspect: Aspect,
    snippet: &str,
    lang: &str,
    progress: &ProgressReporter,
) -> Result<Score, AdviceError> {
    check_snippet(snippet)?;
    let task = match aspect {
        Aspect::Performance => Task::ScorePerformance,
        Aspect::Reliability => Task::ScoreReliability,
    };
    let lang = lang_label(lang);
    let answer = ask(
        model,
        task,
        &[("lang", &lang), ("snippet", snippet)],
        None,
        progress,
    )
    .await?;
    let score = answer
        .get("score")
        .and_then(clamp_score)
        .ok_or_else(|| AdviceError::Internal("validated answer lacks a numeric `score`".into()))?;
    Ok(Score {
        score,
        explanation: string_field(&answer, "explanation")?,
    })
}
