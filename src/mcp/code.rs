//! MCP tools of the code family: list the functions of a file, extract one.

use rustc_hash::FxHashSet;
use serde_json::Value;

use rmcp::{
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ContentBlock},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{FaultServer, json_and_structured, output_schema, tool_error};
use crate::code::{self, CodeError, Extracted, FunctionBlock, FunctionInfo, Language};

/// A `file` field naming a source file, with every extension the language registry reads.
pub(super) fn source_file_description() -> String {
    format!(
        "Absolute path (or file:// URI) of a source file: {}.",
        Language::extensions_by_language()
    )
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListFunctionsInput {
    #[schemars(description = source_file_description(), length(max = super::MAX_PATH_CHARS))]
    pub file: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExtractInput {
    #[schemars(description = source_file_description(), length(max = super::MAX_PATH_CHARS))]
    pub file: String,
    /// The function's name, plain (`handle`) or qualified to pick among several (`Server.handle`,
    /// `Server::handle`). With several matches, the first in the file with a body is returned.
    #[schemars(length(max = super::MAX_NAME_CHARS))]
    pub func: String,
}

/// `structuredContent` of `fault_list_function_names`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListFunctionsOutput<'a> {
    /// Every function-like definition, in document order (nested functions after their parent).
    pub functions: Vec<&'a FunctionInfo>,
}

/// The text content of `fault_extract_code_block`: exactly these two keys.
#[derive(Serialize)]
struct FullAndBody<'a> {
    full: &'a str,
    body: &'a str,
}

#[tool_router(router = code_router, vis = "pub(super)")]
impl FaultServer {
    #[tool(
        name = "fault_list_function_names",
        description = format!(
            "List the functions defined in a source file ({}). The text result is a JSON array of the names \
            in document order, each once; the structured result gives each function's qualified name \
            (Class.method, Type::method), kind (function|method|signature) and 1-based start/end lines. \
            `file` must be an absolute path.",
            Language::titles()
        ),
        output_schema = output_schema::<ListFunctionsOutput<'static>>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_function_names(
        &self,
        Parameters(input): Parameters<ListFunctionsInput>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let outcome = run_blocking(move || {
            let file = code::parsed_file(&input.file)?;
            tracing::debug!(file = %file.path.display(), language = %file.language, count = file.blocks.len(), "listed functions");
            // Built for each call: building the answer costs about what copying a kept one would.
            Ok(listing_answer(&file.blocks))
        })
        .await;
        Ok(match outcome {
            Ok((text, structured)) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(structured);
                result
            }
            Err(message) => tool_error(message),
        })
    }

    #[tool(
        name = "fault_extract_code_block",
        description = format!(
            "Extract one function from a source file ({}). The text result is the JSON object \
            {{\"full\": ..., \"body\": ...}}: `full` is the whole definition from its first decorator \
            (Python, TypeScript), attribute or doc comment (Rust) or doc comment (Go) to its end, `body` the \
            body without the signature. `func` may be plain (`handle`) or qualified (`Server.handle`, \
            `Server::handle`, `Type.Method`); for an ambiguous plain name the first with a body is returned, \
            and the structured result says which (lines) and how many others matched. `file` must be an \
            absolute path.",
            Language::titles()
        ),
        output_schema = output_schema::<Extracted>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn extract_code_block(
        &self,
        Parameters(input): Parameters<ExtractInput>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let outcome = run_blocking(move || {
            let file = code::parsed_file(&input.file)?;
            code::select_function(&file, &input.func)
        })
        .await;
        Ok(match outcome {
            Ok(extracted) => json_and_structured(
                &FullAndBody {
                    full: &extracted.full,
                    body: &extracted.body,
                },
                &extracted,
            ),
            Err(message) => tool_error(message),
        })
    }
}

/// The answer of `fault_list_function_names`: the names in document order, each once, as a JSON array (text),
/// and every function (structured content).
fn listing_answer(blocks: &[FunctionBlock]) -> (String, Value) {
    let mut seen = FxHashSet::default();
    let names: Vec<&str> = blocks
        .iter()
        .map(|block| block.info.name.as_str())
        .filter(|name| seen.insert(*name))
        .collect();
    let text = serde_json::to_string(&names).unwrap_or_else(|_| "[]".to_owned());
    let functions: Vec<&FunctionInfo> = blocks.iter().map(|block| &block.info).collect();
    let structured = serde_json::to_value(ListFunctionsOutput { functions })
        .unwrap_or_else(|e| serde_json::json!({"error": format!("cannot encode the result: {e}")}));
    (text, structured)
}

/// Runs file reading and parsing off the async workers; any failure becomes the message of a tool error.
async fn run_blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, CodeError> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(error.to_string()),
        Err(join_error) => {
            tracing::error!(%join_error, "code tool task failed");
            Err(format!(
                "internal error while reading the file: {join_error}"
            ))
        }
    }
}
