//! MCP tools of the advice family: LLM scores, improvement diffs, SLOs, whole-file changes, deep analysis.
//!
//! Thin: decode the input, build the chat model from the agent settings (keys are read here, at call
//! time), run the `advice` task with progress notifications and cancellation, shape the result.

use std::{future::Future, sync::Arc, time::Duration};

use rmcp::{
    RoleServer,
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ContentBlock, ProgressNotificationParam},
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{FaultServer, json_and_structured, output_schema, text_and_structured, tool_error};
use crate::{
    advice::{
        self, AdviceError, Aspect, Concern, DeepAnalysis, FileChanges, ProgressReporter, Score,
        SuggestRequest, SuggestedSlo, Suggestion,
        context::{CONTEXT_CHUNKS, Related, related_chunks},
        diff::markdown_block,
    },
    code,
    index::ContextScope,
    llm::{self, ChatModel},
};

/// A `lang` field of a snippet, with the languages the registry parses.
fn snippet_language_description() -> String {
    format!(
        "The snippet's language: {}, or any other name as a hint.",
        code::Language::canonical_names()
    )
}

/// The scale of every score, given or answered: "0 to 1".
fn score_scale() -> String {
    format!("{} to {}", advice::SCORE_MIN, advice::SCORE_MAX)
}

/// Which suggestions are checked to parse: those in a language of the registry.
fn parse_check_sentence() -> String {
    format!(
        "When `lang` is one of {}, the new code is checked to parse.",
        code::Language::canonical_names()
    )
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SnippetInput {
    /// The full code of a function or any code snippet (e.g. the `full` field of fault_extract_code_block).
    #[schemars(length(max = super::MAX_SNIPPET_CHARS))]
    pub snippet: String,
    #[schemars(description = snippet_language_description())]
    #[serde(default)]
    pub lang: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SuggestInput {
    /// The full code of a function or any code snippet.
    #[schemars(length(max = super::MAX_SNIPPET_CHARS))]
    pub snippet: String,
    #[schemars(description = snippet_language_description())]
    #[serde(default)]
    pub lang: String,
    /// The snippet's current score (from fault_score_* or chosen).
    #[schemars(range(min = advice::SCORE_MIN, max = advice::SCORE_MAX))]
    pub score: f64,
    /// The score the improved code should reach.
    #[schemars(range(min = advice::SCORE_MIN, max = advice::SCORE_MAX))]
    pub target_score: f64,
    /// Absolute path (or file:// URI) of the file the snippet comes from, optional: related code is then
    /// taken from the indexed project containing that file. Without it, from the projects under the
    /// client's MCP roots, if the client declares any; otherwise no indexed code is sent.
    #[serde(default)]
    pub file: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FileInput {
    /// Absolute path (or file:// URI) of the file to improve.
    #[schemars(length(max = super::MAX_PATH_CHARS))]
    pub file: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeepAnalysisInput {
    #[schemars(description = super::code::source_file_description(), length(max = super::MAX_PATH_CHARS))]
    pub file: String,
    /// The function's name, plain (`handle`) or qualified (`Server.handle`, `Server::handle`).
    #[schemars(length(max = super::MAX_NAME_CHARS))]
    pub func: String,
    /// The file's language; optional, it is taken from the extension.
    #[serde(default)]
    pub lang: Option<String>,
    #[schemars(description = format!("Which concerns to analyse: any of {} (default: all).", Concern::names()))]
    #[serde(default)]
    pub concerns: Option<Vec<String>>,
}

/// `structuredContent` of fault_suggest_service_level_objectives_slo (the text is the bare array).
#[derive(Debug, Serialize, JsonSchema)]
pub struct SloList {
    pub slos: Vec<SuggestedSlo>,
}

#[tool_router(router = advice_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(
        name = "fault_score_performance",
        description = format!(
            "Score the performance of a function or snippet with the configured LLM. The text result is the \
            JSON object {{\"score\": ..., \"explanation\": \"...\"}}, the score from {} (the highest is excellent).",
            score_scale()
        ),
        output_schema = output_schema::<Score>(),
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn score_performance(
        &self,
        Parameters(input): Parameters<SnippetInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.score_tool(Aspect::Performance, input, context).await
    }

    #[tool(
        name = "fault_score_reliability",
        description = format!(
            "Score the reliability of a function or snippet with the configured LLM. The text result is the \
            JSON object {{\"score\": ..., \"explanation\": \"...\"}}, the score from {} (the highest is very robust).",
            score_scale()
        ),
        output_schema = output_schema::<Score>(),
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn score_reliability(
        &self,
        Parameters(input): Parameters<SnippetInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.score_tool(Aspect::Reliability, input, context).await
    }

    #[tool(
        name = "fault_suggest_better_function_performance",
        description = format!(
            "Propose a faster version of a function. The LLM rewrites the code; fault computes the unified \
            diff against your snippet and returns it as a ```diff markdown block (text). The structured result \
            has `diff`, `new_code`, `explanation` and `index_context` (which indexed code went with the \
            prompt: only from the project containing `file`, or under the client's MCP roots; a second text \
            block says the same). {} `score` is the current score and `target_score` the aim, both {}.",
            parse_check_sentence(),
            score_scale()
        ),
        output_schema = output_schema::<Suggestion>(),
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn suggest_performance(
        &self,
        Parameters(input): Parameters<SuggestInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.suggest_tool(Aspect::Performance, input, context).await
    }

    #[tool(
        name = "fault_suggest_better_function_reliability",
        description = format!(
            "Propose a more reliable version of a function (timeouts, retries, error handling). The LLM \
            rewrites the code; fault computes the unified diff against your snippet and returns it as a \
            ```diff markdown block (text). The structured result has `diff`, `new_code`, `explanation` and \
            `index_context` (which indexed code went with the prompt: only from the project containing \
            `file`, or under the client's MCP roots; a second text block says the same). {}",
            parse_check_sentence()
        ),
        output_schema = output_schema::<Suggestion>(),
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn suggest_reliability(
        &self,
        Parameters(input): Parameters<SuggestInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.suggest_tool(Aspect::Reliability, input, context).await
    }

    #[tool(
        name = "fault_suggest_service_level_objectives_slo",
        description = "Suggest SLOs for the endpoint a function implements. The text result is a JSON array of \
            objects with type (latency|availability|error), title, objective (in [0, 100)), explanation, \
            threshold, unit, window and sli {prometheus, gcp/cloudrun}; each is validated.",
        output_schema = output_schema::<SloList>(),
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn suggest_slos(
        &self,
        Parameters(input): Parameters<SnippetInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let outcome = self
            .run_llm(&context, async move |model, progress| {
                advice::slos(&*model, &input.snippet, &input.lang, &progress).await
            })
            .await;
        Ok(match outcome {
            Ok(slos) => json_and_structured(&slos, &SloList { slos: slos.clone() }),
            Err(message) => tool_error(message),
        })
    }

    #[tool(
        name = "fault_make_reliability_and_perf_changes",
        description = "Review a whole file for reliability and performance and propose a new version. The text \
            result is the JSON object {score, explanation, old, new, dependencies, diff, index_context}: `old` is \
            the file as read, `new` the proposal, `dependencies` the packages it adds, `diff` a unified diff \
            computed by fault (--- a/<name> / +++ b/<name>) that `git apply` or `patch -p1` applies in the \
            file's directory, and `index_context` which indexed code of the file's own project went with the \
            prompt. The file is not modified. `file` must be an absolute path.",
        output_schema = output_schema::<FileChanges>(),
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn make_changes(
        &self,
        Parameters(input): Parameters<FileInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let file = input.file;
        let read = tokio::task::spawn_blocking(move || advice::read_exact(&file)).await;
        let (path, old) = match read {
            Ok(Ok(read)) => read,
            Ok(Err(e)) => return Ok(tool_error(e)),
            Err(e) => return Ok(tool_error(format!("internal error reading the file: {e}"))),
        };
        let settings = self.settings.clone();
        let outcome = self
            .run_llm(&context, async move |model, progress| {
                let scope = ContextScope::File(path.clone());
                let related = related_chunks(&settings.llm, &scope, &old, CONTEXT_CHUNKS).await;
                advice::file_changes(&*model, &path, old, &related, &progress).await
            })
            .await;
        Ok(match outcome {
            Ok(changes) => json_and_structured(&changes, &changes),
            Err(message) => tool_error(message),
        })
    }

    #[tool(
        name = "fault_function_reliability_deep_analysis",
        description = format!(
            "Analyse one function of a file in depth for the chosen concerns ({}; default all). The text \
            result is a markdown report with findings per concern (severity, detail, recommendation); the \
            structured result has the same findings and the function's location. `file` must be an \
            absolute path.",
            Concern::names()
        ),
        output_schema = output_schema::<DeepAnalysis>(),
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn deep_analysis(
        &self,
        Parameters(input): Parameters<DeepAnalysisInput>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let concerns: Result<Vec<Concern>, AdviceError> = input
            .concerns
            .unwrap_or_default()
            .iter()
            .map(|c| Concern::parse(c))
            .collect();
        let concerns = match concerns {
            Ok(concerns) => concerns,
            Err(e) => return Ok(tool_error(e)),
        };
        let outcome = self
            .run_llm(&context, async move |model, progress| {
                advice::deep_analysis(
                    &*model,
                    &input.file,
                    &input.func,
                    input.lang.as_deref(),
                    &concerns,
                    &progress,
                )
                .await
            })
            .await;
        Ok(match outcome {
            Ok(analysis) => text_and_structured(analysis.markdown.clone(), &analysis),
            Err(message) => tool_error(message),
        })
    }
}

impl FaultServer {
    async fn score_tool(
        &self,
        aspect: Aspect,
        input: SnippetInput,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let outcome = self
            .run_llm(&context, async move |model, progress| {
                advice::score(&*model, aspect, &input.snippet, &input.lang, &progress).await
            })
            .await;
        Ok(match outcome {
            Ok(score) => json_and_structured(&score, &score),
            Err(message) => tool_error(message),
        })
    }

    async fn suggest_tool(
        &self,
        aspect: Aspect,
        input: SuggestInput,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        // The file only locates the project, but it must be a source file the other tools could read.
        let located = input.file.as_deref().map(|file| {
            let path = code::resolve_path(file)?;
            code::check_source_file(&path)?;
            Ok::<_, code::CodeError>(path)
        });
        let file = match located.transpose() {
            Ok(file) => file,
            Err(e) => return Ok(tool_error(format!("file: {e}"))),
        };
        let scope = match file {
            Some(file) => Some(ContextScope::File(file)),
            None => client_roots(&context).await.map(ContextScope::Roots),
        };
        let settings = self.settings.clone();
        let outcome = self
            .run_llm(&context, async move |model, progress| {
                let related = match &scope {
                    Some(scope) => {
                        related_chunks(&settings.llm, scope, &input.snippet, CONTEXT_CHUNKS).await
                    }
                    None => Related::none(
                        "no `file` given and the client declares no MCP roots, so no project is known",
                    ),
                };
                let request = SuggestRequest {
                    snippet: &input.snippet,
                    lang: &input.lang,
                    score: input.score,
                    target_score: input.target_score,
                };
                advice::suggest(&*model, aspect, request, &related, &progress).await
            })
            .await;
        Ok(match outcome {
            Ok(suggestion) => {
                let mut result = text_and_structured(markdown_block(&suggestion.diff), &suggestion);
                result
                    .content
                    .push(ContentBlock::text(suggestion.index_context.summary()));
                result
            }
            Err(message) => tool_error(message),
        })
    }

    /// Runs one LLM task: builds the chat model (reading keys now), forwards progress messages as MCP
    /// progress notifications when the client asked for them (with a heartbeat while the model thinks), and
    /// stops when the client cancels the request. Errors come back as the tool error's message.
    async fn run_llm<T, F, Fut>(
        &self,
        context: &RequestContext<RoleServer>,
        task: F,
    ) -> Result<T, String>
    where
        F: FnOnce(Arc<dyn ChatModel>, ProgressReporter) -> Fut,
        Fut: Future<Output = Result<T, AdviceError>>,
    {
        let model = llm::chat_model(&self.settings.llm).map_err(|e| e.to_string())?;
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<String>();
        let progress = ProgressReporter::new(sender);
        let token = context.meta.get_progress_token();
        let peer = context.peer.clone();
        let notifier = async move {
            let mut step = 0u32;
            let mut last = String::from("working");
            let mut heartbeat = tokio::time::interval(HEARTBEAT);
            heartbeat.tick().await;
            loop {
                tokio::select! {
                    message = receiver.recv() => match message {
                        Some(message) => last = message,
                        None => return,
                    },
                    _ = heartbeat.tick() => {}
                }
                step += 1;
                if let Some(token) = &token {
                    let note = ProgressNotificationParam::new(token.clone(), f64::from(step))
                        .with_message(last.clone());
                    if let Err(e) = peer.notify_progress(note).await {
                        tracing::debug!(%e, "progress notification not sent");
                    }
                }
            }
        };
        let work = task(model, progress);
        tokio::pin!(work);
        tokio::pin!(notifier);
        let mut notifier_done = false;
        let outcome = loop {
            tokio::select! {
                outcome = &mut work => break outcome,
                _ = context.ct.cancelled() => {
                    tracing::info!("LLM tool call cancelled by the client");
                    return Err(llm::LlmError::Cancelled.to_string());
                }
                // Ends only when the task drops its progress sender, i.e. once `work` is done.
                _ = &mut notifier, if !notifier_done => notifier_done = true,
            }
        };
        // Deliver the last progress messages before the result, without waiting on a stuck client.
        if !notifier_done {
            let _ = tokio::time::timeout(Duration::from_secs(1), &mut notifier).await;
        }
        outcome.map_err(|e| e.to_string())
    }
}

/// How long a client gets to list its roots before the prompt goes without context.
const ROOTS_BUDGET: Duration = Duration::from_secs(5);

/// The local directories of the client's MCP roots, when it declares the roots capability and lists some.
#[allow(deprecated)] // MCP roots are deprecated upstream but still what clients send.
async fn client_roots(context: &RequestContext<RoleServer>) -> Option<Vec<std::path::PathBuf>> {
    let declares = context
        .peer
        .peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some());
    if !declares {
        return None;
    }
    let listed = match tokio::time::timeout(ROOTS_BUDGET, context.peer.list_roots()).await {
        Ok(Ok(listed)) => listed,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "client roots not listed; no index context");
            return None;
        }
        Err(_) => {
            tracing::warn!(budget = ?ROOTS_BUDGET, "client roots not listed in time; no index context");
            return None;
        }
    };
    let dirs: Vec<std::path::PathBuf> = listed
        .roots
        .iter()
        .filter_map(|root| code::resolve_path(&root.uri).ok())
        .collect();
    (!dirs.is_empty()).then_some(dirs)
}

/// How often a long call reports that it is still waiting for the model.
const HEARTBEAT: Duration = Duration::from_secs(5);
