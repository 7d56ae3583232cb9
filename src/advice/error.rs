//! What can go wrong giving advice.

use crate::{code::CodeError, llm::LlmError};

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
