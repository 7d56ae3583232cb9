//! Asking the model for a task's answer: its prompt rendered, JSON under the task's schema, one repair round.

use serde_json::Value;

use super::{AdviceError, ProgressReporter, prompts};
use crate::llm::{self, AnswerCheck, ChatModel, JsonAnswer, Message};

/// The system message of every task.
const SYSTEM: &str = "You are a senior site reliability engineer reviewing code. You answer with a single \
JSON object with exactly the fields you are asked for, and nothing else.";

/// Renders the task's prompt and asks the model, with one repair round.
pub(super) async fn ask(
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
