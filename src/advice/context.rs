//! Context for the suggestion prompts: the indexed chunks most related to the code under review.
//!
//! The single seam between the advice tools and the source index: [`related_chunks`] asks the index
//! (when one exists) and every suggestion prompt gets its `{{context}}` section filled.

use std::path::{Path, PathBuf};

use crate::cli::AgentOptions;

/// How many chunks a prompt gets at most.
pub const CONTEXT_CHUNKS: usize = 4;

/// Longest wait for the index lookup (it embeds the query): context must never stall a suggestion.
const CONTEXT_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

/// One indexed piece of code related to the query.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextChunk {
    pub path: PathBuf,
    pub start_line: usize,
    pub end_line: usize,
    pub function: Option<String>,
    pub text: String,
    pub score: f32,
}

/// The `k` indexed chunks most related to `query` (code under review), from the index covering
/// `hint_path` when given. Empty when there is no index; context is a bonus, never a reason to fail.
pub async fn related_chunks(
    options: &AgentOptions,
    hint_path: Option<&Path>,
    query: &str,
    k: usize,
) -> Vec<ContextChunk> {
    let lookup = crate::index::retrieve_context(options, hint_path, query, k);
    match tokio::time::timeout(CONTEXT_BUDGET, lookup).await {
        Ok(Ok(chunks)) => chunks
            .into_iter()
            .map(|chunk| ContextChunk {
                path: chunk.path,
                start_line: chunk.start_line as usize,
                end_line: chunk.end_line as usize,
                function: Some(chunk.qualified_name).filter(|name| !name.is_empty()),
                text: chunk.text,
                score: chunk.score,
            })
            .collect(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "no index context for this prompt");
            Vec::new()
        }
        Err(_) => {
            tracing::warn!(budget = ?CONTEXT_BUDGET, "index lookup too slow; prompt sent without context");
            Vec::new()
        }
    }
}

/// The `{{context}}` section of a prompt: nothing when there are no chunks.
pub fn render(chunks: &[ContextChunk]) -> String {
    if chunks.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("Related code from the same project, for context (do not rewrite it):\n");
    for chunk in chunks {
        let name = chunk
            .function
            .as_deref()
            .map(|f| format!(" ({f})"))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n{}:{}-{}{name}\n````\n{}\n````\n",
            chunk.path.display(),
            chunk.start_line,
            chunk.end_line,
            chunk.text.trim_end()
        ));
    }
    out
}
