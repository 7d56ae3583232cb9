//! MCP tools of the index family: `fault_index_source_code`.

use std::path::PathBuf;

use futures::{FutureExt, future::BoxFuture};
use rmcp::{
    ErrorData, Peer, RoleServer,
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ProgressNotificationParam, ProgressToken},
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;

use super::{FaultServer, output_schema, text_and_structured, tool_error};
use crate::{
    code::Language,
    index::{self, IndexSummary, ProgressSink},
    serve::tasks::TaskStatusLine,
};

/// `lang`: one language, `auto`, or a list.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum LangSpec {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct IndexSourceCodeInput {
    /// Absolute path of the top-level directory of the source tree to index.
    #[schemars(length(max = super::MAX_PATH_CHARS))]
    pub source_dir: String,
    #[schemars(description = format!(
        "Which files to index: a language ({}), a list of them, or `auto` for every supported language. \
         Defaults to `auto`.",
        Language::canonical_names()
    ))]
    #[serde(default)]
    pub lang: Option<LangSpec>,
}

/// Sends an MCP progress notification after each committed batch.
struct McpProgress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
}

impl ProgressSink for McpProgress {
    fn batch_committed(&self, embedded: u64, total: u64, message: String) -> BoxFuture<'_, ()> {
        async move {
            let notification = ProgressNotificationParam::new(self.token.clone(), embedded as f64)
                .with_total(total as f64)
                .with_message(message);
            if let Err(e) = self.peer.notify_progress(notification).await {
                tracing::debug!(error = %e, "progress notification not delivered");
            }
        }
        .boxed()
    }
}

/// A task's status message after each committed batch.
impl ProgressSink for TaskStatusLine {
    fn batch_committed(&self, _embedded: u64, _total: u64, message: String) -> BoxFuture<'_, ()> {
        self.set(message);
        futures::future::ready(()).boxed()
    }
}

#[tool_router(router = index_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(
        name = "fault_index_source_code",
        description = "Index a source tree so the LLM tools get context from your own code. Walks `source_dir` \
        (absolute path; .gitignore and hidden files respected), chunks each file by function, embeds changed \
        chunks with the configured embedding model and stores them (embedded store by default, or Qdrant). \
        Incremental: unchanged chunks are not re-embedded; chunks of changed or deleted files are removed. \
        Returns the text `done`; structuredContent has the store used and the counts.",
        output_schema = output_schema::<IndexSummary>(),
        // Writes only its own index (a re-run of an unchanged tree changes nothing); sends code to the
        // embeddings provider.
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn fault_index_source_code(
        &self,
        Parameters(input): Parameters<IndexSourceCodeInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let names = match input.lang {
            None => Vec::new(),
            Some(LangSpec::One(name)) => vec![name],
            Some(LangSpec::Many(names)) => names,
        };
        let languages = match index::parse_languages(&names) {
            Ok(languages) => languages,
            Err(e) => return Ok(tool_error(e)),
        };
        let source_dir = PathBuf::from(input.source_dir.trim());
        let progress: Option<Box<dyn ProgressSink>> =
            match context.extensions.get::<TaskStatusLine>().cloned() {
                Some(status) => Some(Box::new(status)),
                None => context.meta.get_progress_token().map(|token| {
                    Box::new(McpProgress {
                        peer: context.peer.clone(),
                        token,
                    }) as Box<dyn ProgressSink>
                }),
            };
        let settings = self.settings();
        let outcome = index::index_source(
            &settings.llm,
            &settings.store,
            &settings.index,
            &source_dir,
            &languages,
            progress.as_deref(),
            &context.ct,
        )
        .await;
        match outcome {
            Ok(summary) => Ok(text_and_structured("done", &summary)),
            Err(e) => {
                tracing::warn!(error = %e, source_dir = %source_dir.display(), "indexing failed");
                Ok(tool_error(e))
            }
        }
    }
}
