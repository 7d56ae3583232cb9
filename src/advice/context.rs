//! Context for the suggestion prompts: the indexed chunks most related to the code under review.
//!
//! The single seam between the advice tools and the source index: [`related_chunks`] asks the index for the
//! project the user works in (the file's project, or the client's MCP roots), never another, and says what
//! it sent so the result can tell the user.

use schemars::JsonSchema;
use serde::Serialize;

use crate::{
    index::{ContextScope, RetrievedChunk},
    llm::LlmSettings,
};

/// How many chunks a prompt gets at most.
pub const CONTEXT_CHUNKS: usize = 4;

/// Longest wait for the index lookup (it embeds the query): context must never stall a suggestion.
const CONTEXT_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

/// Environment variable overriding [`CONTEXT_BUDGET`], in seconds (a slow local embedding model).
pub const CONTEXT_BUDGET_ENV: &str = "FAULT_INDEX_CONTEXT_TIMEOUT_SECS";

fn context_budget() -> std::time::Duration {
    std::env::var(CONTEXT_BUDGET_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|secs| *secs > 0)
        .map_or(CONTEXT_BUDGET, std::time::Duration::from_secs)
}

/// What index context went to the model with the prompt.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct IndexContext {
    /// Whether chunks of indexed code were sent with the prompt.
    pub used: bool,
    /// Where context was looked for: `file` (the project containing the file), `roots` (the client's MCP
    /// roots) or `none`.
    pub scope: String,
    /// Roots of the indexed projects searched.
    pub projects: Vec<String>,
    /// The chunks sent, as `path:start-end`.
    pub chunks: Vec<String>,
    /// Why no context was sent, when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl IndexContext {
    /// No lookup was allowed: nothing ties the code to an indexed project.
    pub fn none(reason: impl Into<String>) -> Self {
        Self {
            used: false,
            scope: "none".into(),
            projects: Vec::new(),
            chunks: Vec::new(),
            reason: Some(reason.into()),
        }
    }

    /// One line for a tool's text result.
    pub fn summary(&self) -> String {
        match &self.reason {
            Some(reason) if !self.used => format!("index context: none ({reason})"),
            _ => format!(
                "index context: {} chunk(s) from {}",
                self.chunks.len(),
                self.projects.join(", ")
            ),
        }
    }
}

/// Chunks for a prompt and the account of them.
#[derive(Debug, Clone)]
pub struct Related {
    pub chunks: Vec<RetrievedChunk>,
    pub report: IndexContext,
}

impl Related {
    /// No context, for `reason`.
    pub fn none(reason: impl Into<String>) -> Self {
        Self {
            chunks: Vec::new(),
            report: IndexContext::none(reason),
        }
    }
}

/// The `k` indexed chunks most related to `query` (code under review) within `scope`. No context when
/// nothing in scope is indexed; context is a bonus, never a reason to fail.
pub async fn related_chunks(
    llm: &LlmSettings,
    scope: &ContextScope,
    query: &str,
    k: usize,
) -> Related {
    let scope_name = match scope {
        ContextScope::File(_) => "file",
        ContextScope::Roots(_) => "roots",
    };
    let lookup = crate::index::retrieve_scoped(llm, scope, query, k);
    let budget = context_budget();
    let found = match tokio::time::timeout(budget, lookup).await {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "no index context for this prompt");
            return Related::none(format!("index lookup failed: {e}"));
        }
        Err(_) => {
            tracing::warn!(
                ?budget,
                "index lookup too slow; prompt sent without context"
            );
            return Related::none(format!(
                "index lookup took longer than {} s ({CONTEXT_BUDGET_ENV})",
                budget.as_secs()
            ));
        }
    };
    let reason = match (scope, found.projects.is_empty(), found.chunks.is_empty()) {
        (ContextScope::File(path), true, _) => {
            Some(format!("no indexed project contains {}", path.display()))
        }
        (ContextScope::Roots(_), true, _) => {
            Some("no indexed project is under the client's roots".to_owned())
        }
        (_, false, true) => Some("the project's index is empty".to_owned()),
        _ => None,
    };
    let report = IndexContext {
        used: !found.chunks.is_empty(),
        scope: scope_name.into(),
        projects: found
            .projects
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        chunks: found.chunks.iter().map(cited).collect(),
        reason,
    };
    Related {
        chunks: found.chunks,
        report,
    }
}

fn cited(chunk: &RetrievedChunk) -> String {
    format!(
        "{}:{}-{}",
        chunk.path.display(),
        chunk.start_line,
        chunk.end_line
    )
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
