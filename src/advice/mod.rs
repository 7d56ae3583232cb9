//! LLM advice on code: scores, improved functions (as diffs we compute), SLOs, whole-file changes and
//! in-depth reviews. Each task renders its prompt from `prompts/`, asks the model for JSON under the task's
//! schema, validates it (one repair round), and shapes the result.

pub mod context;
pub mod diff;
pub mod prompts;

mod answer;
mod ask;
mod deep_analysis;
mod error;
mod file_changes;
mod input;
mod progress;
mod score;
mod slo;
mod suggest;

pub use deep_analysis::{Concern, ConcernReport, DeepAnalysis, Finding, deep_analysis};
pub use error::AdviceError;
pub use file_changes::{FileChanges, file_changes, read_exact};
pub use input::{SCORE_MAX, SCORE_MIN};
pub use progress::ProgressReporter;
pub use score::{Score, score};
pub use slo::{Sli, SloKind, SuggestedSlo, slos};
pub use suggest::{SuggestRequest, Suggestion, suggest};

/// Which quality a score or suggestion is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aspect {
    Performance,
    Reliability,
}
