//! `fault_make_reliability_and_perf_changes`: a whole file reviewed and rewritten; the diff is ours.

use std::path::Path;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::context::{IndexContext, Related};
use super::{
    AdviceError, ProgressReporter,
    answer::{clamp_score, match_final_newline, string_field, strip_code_fence, syntax_problems},
    ask::ask,
    diff,
    prompts::Task,
};
use crate::{
    code::{self, Language},
    llm::ChatModel,
};

/// The guide's result: the file as read, the proposed file, and our diff between them.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FileChanges {
    /// Reliability of the current file, 0.0 (very unreliable) to 1.0 (very reliable).
    pub score: f64,
    /// The main threats found and the changes made.
    pub explanation: String,
    /// The file exactly as read.
    pub old: String,
    /// The proposed content of the file.
    pub new: String,
    /// Third-party packages the new file needs.
    pub dependencies: Vec<String>,
    /// Unified diff from `old` to `new` (`--- a/<name>` / `+++ b/<name>`): `patch -p1` or `git apply` in
    /// the file's directory applies it.
    pub diff: String,
    /// Which indexed code, if any, was sent to the model as context.
    pub index_context: IndexContext,
}

/// Reads a user's source file exactly as it is, through the code tools' one reader (regular files of a known
/// language only, size-limited while reading).
pub fn read_exact(file: &str) -> Result<(std::path::PathBuf, String), AdviceError> {
    let (path, _language, text) = code::read_source_exact(file)?;
    Ok((path, text))
}

pub async fn file_changes(
    model: &dyn ChatModel,
    path: &Path,
    old: String,
    context: &Related,
    progress: &ProgressReporter,
) -> Result<FileChanges, AdviceError> {
    if old.trim().is_empty() {
        return Err(AdviceError::Input(format!(
            "{} is empty; there is nothing to review",
            path.display()
        )));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned());
    let language = Language::from_path(path);
    let lang = language.map_or_else(
        || {
            path.extension()
                .map_or("text".to_owned(), |e| e.to_string_lossy().into_owned())
        },
        |l| l.name().to_owned(),
    );
    let parse_language = language.filter(|l| syntax_problems(*l, &old).is_none());
    let check = move |answer: &Value| -> Result<(), String> {
        let new = answer
            .get("new")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match parse_language.and_then(|l| syntax_problems(l, strip_code_fence(new))) {
            Some(problem) => Err(format!("`new` is not valid: {problem}")),
            None => Ok(()),
        }
    };
    let rendered = super::context::render(&context.chunks);
    let answer = ask(
        model,
        Task::FileChanges,
        &[
            ("file_name", &name),
            ("lang", &lang),
            ("file", &old),
            ("context", &rendered),
        ],
        Some(&check),
        progress,
    )
    .await?;
    let new = match_final_newline(&old, strip_code_fence(&string_field(&answer, "new")?));
    let dependencies = answer
        .get("dependencies")
        .and_then(Value::as_array)
        .map(|deps| {
            deps.iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let score = answer
        .get("score")
        .and_then(clamp_score)
        .ok_or_else(|| AdviceError::Internal("validated answer lacks a numeric `score`".into()))?;
    Ok(FileChanges {
        score,
        explanation: string_field(&answer, "explanation")?,
        diff: diff::unified_diff(&old, &new, &name),
        old,
        new,
        dependencies,
        index_context: context.report.clone(),
    })
}
