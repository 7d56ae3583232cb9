//! Context for the suggestion prompts: the indexed chunks most related to the code under review.
//!
//! The single seam between the advice tools and the source index: [`related_chunks`] asks the index
//! (when one exists) and every suggestion prompt gets its `{{context}}` section filled.

use std::path::Path;

use crate::{index::RetrievedChunk, llm::LlmSettings};

/// How many chunks a prompt gets at most.
pub const CONTEXT_CHUNKS: usize = 4;

/// Longest wait for the index lookup (it embeds the query): context must never stall a suggestion.
const CONTEXT_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

/// The `k` indexed chunks most related to `query` (code under review), from the index covering
/// `hint_path` when given. Empty when there is no index; context is a bonus, never a reason to fail.
pub async fn related_chunks(
    llm: &LlmSettings,
    hint_path: Option<&Path>,
    query: &str,
    k: usize,
) -> Vec<RetrievedChunk> {
    let lookup = crate::index::retrieve_context(llm, hint_path, query, k);
    match tokio::time::timeout(CONTEXT_BUDGET, lookup).await {
        Ok(Ok(chunks)) => chunks,
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
pub fn render(chunks: &[RetrievedChunk]) -> String {
    if chunks.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("Related code from the same project, for context (do not rewrite it):\n");
    for chunk in chunks {
        let name = match chunk.qualified_name.as_str() {
            "" => String::new(),
            qualified => format!(" ({qualified})"),
        };
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
