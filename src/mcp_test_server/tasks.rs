//! Task-capable tools (the MCP Tasks extension, [`crate::mcp_wire::tasks`]): `slow_job` (runs for some
//! seconds, saying how far it is, and can be cancelled), `fails_late` (runs, then fails with a JSON-RPC error)
//! and `needs_input` (asks the client for a value). Called by a request that declares the extension, each is
//! answered at once with a task, kept on the store `fault agent tool` keeps its long runs on
//! ([`crate::serve::tasks::Tasks`]); called without it, each is a plain tool.
//!
//! `needs_input` asks with an `elicitation/create` form of one string field, `value`:
//! - in a task, as the task's `inputRequests` (status `input_required`), answered with `tasks/update`;
//! - in a plain call of protocol 2026-07-28 or later, as an `InputRequiredResult` (multi round-trip requests),
//!   answered by retrying the call with `inputResponses`;
//! - in a plain call of an older protocol, as a server-to-client `elicitation/create` request.
//!
//! A client that did not declare elicitation cannot be asked: the call is refused with `-32021` (missing
//! required client capability).

use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer,
    handler::server::tool::InputResponses as RetriedResponses,
    model::{
        CallToolResponse, CallToolResult, ClientCapabilities, ClientResult, ElicitRequest,
        ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
        ElicitationSchema, ErrorCode, InputRequest, InputRequests, InputRequiredResult,
        InputResponses, JsonObject, ProtocolVersion, ServerRequest,
    },
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{
    CANCELLED_CODE, TestServer,
    arguments::{ArgumentError, Arguments, in_range},
    input_schema, invalid_arguments, read_arguments,
};
use crate::serve::tasks::{TaskLimits, TaskStatusLine};
use crate::serve::{json_and_structured, output_schema, tool_error};

/// Longest run of `slow_job` and `fails_late`, in seconds.
pub const MAX_SECONDS: i64 = 600;
/// Longest question `needs_input` asks, in characters.
pub const MAX_QUESTION_CHARS: usize = 500;
/// The key of `needs_input`'s request for the value (`inputRequests` / `inputResponses`).
const INPUT_KEY: &str = "value";
/// Rounds a task of `needs_input` asks again after answers it cannot read, before it gives up.
const MAX_INPUT_ROUNDS: u32 = 5;
/// How the JSON-RPC error of `fails_late` is numbered: JSON-RPC's internal error.
const FAILS_LATE_CODE: i32 = -32603;

/// The test server's tasks: short jobs polled often, many kept (a load test starts one per call), for ten
/// minutes.
pub(super) fn limits() -> TaskLimits {
    TaskLimits {
        ttl: Duration::from_secs(10 * 60),
        poll_interval: Duration::from_millis(250),
        max_tasks: 10_000,
    }
}

/// Arguments of `slow_job`.
#[derive(Debug, JsonSchema)]
pub struct SlowJobInput {
    /// How long the job runs, in whole seconds, 0 to 600 (default 10).
    pub seconds: Option<i64>,
}

/// `structuredContent` of `slow_job`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SlowJobOutput {
    /// The seconds the job ran.
    pub seconds: u64,
}

/// Arguments of `fails_late`.
#[derive(Debug, JsonSchema)]
pub struct FailsLateInput {
    /// How long the job runs before it fails, in whole seconds, 0 to 600 (default 2).
    pub seconds: Option<i64>,
    /// The error message (default "fails_late: failed after N s, as asked").
    pub message: Option<String>,
}

/// Arguments of `needs_input`.
#[derive(Debug, JsonSchema)]
pub struct NeedsInputInput {
    /// The question shown to the user, at most 500 characters (default "Which value should needs_input
    /// return?").
    pub question: Option<String>,
}

/// `structuredContent` of `needs_input`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NeedsInputOutput {
    /// The value the client sent back.
    pub value: String,
    /// How it was asked for: "task" (the task's inputRequests, answered with tasks/update), "mrtr" (an
    /// InputRequiredResult, answered by retrying the call) or "elicitation" (an elicitation/create request
    /// to the client, before protocol 2026-07-28).
    pub asked_by: String,
}

/// A validated call of one of the task tools.
#[derive(Debug, Clone)]
pub(super) enum Job {
    Slow { seconds: u64 },
    FailsLate { seconds: u64, message: String },
    NeedsInput { question: String },
}

impl Job {
    /// Reads the arguments of task tool `tool`; `None` for a tool that is not one.
    pub(super) fn read(tool: &str, raw: JsonObject) -> Option<Result<Job, ArgumentError>> {
        Some(match tool {
            "slow_job" => read_slow_job(raw).map(|seconds| Job::Slow { seconds }),
            "fails_late" => {
                read_fails_late(raw).map(|(seconds, message)| Job::FailsLate { seconds, message })
            }
            "needs_input" => read_needs_input(raw).map(|question| Job::NeedsInput { question }),
            _ => return None,
        })
    }

    /// Runs the job as the task of a request that declared the extension: the status line says how far it
    /// is, the input is asked for in the task, `cancel` stops it.
    pub(super) async fn run_as_task(
        self,
        cancel: CancellationToken,
        status: TaskStatusLine,
    ) -> Result<CallToolResult, ErrorData> {
        match self {
            Job::Slow { seconds } => slow_job(seconds, &cancel, Some(&status)).await,
            Job::FailsLate { seconds, message } => {
                fails_late(seconds, message, &cancel, Some(&status)).await
            }
            Job::NeedsInput { question } => ask_in_task(&question, &cancel, &status).await,
        }
    }
}

/// `slow_job`'s seconds.
fn read_slow_job(raw: JsonObject) -> Result<u64, ArgumentError> {
    let input = read_arguments(raw, |a| {
        Ok(SlowJobInput {
            seconds: seconds(a)?,
        })
    })?;
    Ok(input.seconds.unwrap_or(10).unsigned_abs())
}

/// `fails_late`'s seconds and message.
fn read_fails_late(raw: JsonObject) -> Result<(u64, String), ArgumentError> {
    let input = read_arguments(raw, |a| {
        Ok(FailsLateInput {
            seconds: seconds(a)?,
            message: a.optional_string("message")?,
        })
    })?;
    let seconds = input.seconds.unwrap_or(2).unsigned_abs();
    let message = input
        .message
        .unwrap_or_else(|| format!("fails_late: failed after {seconds} s, as asked"));
    Ok((seconds, message))
}

/// `needs_input`'s question.
fn read_needs_input(raw: JsonObject) -> Result<String, ArgumentError> {
    let input = read_arguments(raw, |a| {
        Ok(NeedsInputInput {
            question: question(a)?,
        })
    })?;
    Ok(input
        .question
        .unwrap_or_else(|| "Which value should needs_input return?".to_owned()))
}

/// `slow_job`: waits its seconds (saying how far on the status line of a task).
async fn slow_job(
    seconds: u64,
    cancel: &CancellationToken,
    status: Option<&TaskStatusLine>,
) -> Result<CallToolResult, ErrorData> {
    count_seconds(seconds, cancel, status).await?;
    let output = SlowJobOutput { seconds };
    Ok(json_and_structured(&output, &output))
}

/// `fails_late`: waits its seconds, then fails with `message`.
async fn fails_late(
    seconds: u64,
    message: String,
    cancel: &CancellationToken,
    status: Option<&TaskStatusLine>,
) -> Result<CallToolResult, ErrorData> {
    count_seconds(seconds, cancel, status).await?;
    if let Some(status) = status {
        status.set(format!("failed after {seconds} s"));
    }
    Err(ErrorData::new(ErrorCode(FAILS_LATE_CODE), message, None))
}

fn seconds(a: &mut Arguments) -> Result<Option<i64>, ArgumentError> {
    a.optional_integer("seconds")?
        .map(|s| in_range("seconds", s, 0, MAX_SECONDS))
        .transpose()
}

fn question(a: &mut Arguments) -> Result<Option<String>, ArgumentError> {
    match a.optional_string("question")? {
        None => Ok(None),
        Some(text) if text.chars().count() > MAX_QUESTION_CHARS => Err(ArgumentError::OutOfRange {
            field: "question",
            rule: format!("at most {MAX_QUESTION_CHARS} characters"),
            got: format!("{} characters", text.chars().count()),
        }),
        Some(text) => Ok(Some(text)),
    }
}

/// Waits `total` seconds, one at a time, saying "i s of n s" on the task's status line; a cancelled run
/// ends with the cancellation error (a task then ends `cancelled`).
async fn count_seconds(
    total: u64,
    cancel: &CancellationToken,
    status: Option<&TaskStatusLine>,
) -> Result<(), ErrorData> {
    for done in 0..total {
        if let Some(status) = status {
            status.set(format!("{done} s of {total} s"));
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
            () = cancel.cancelled() => {
                tracing::info!(done, total, "task tool: cancelled by the client");
                return Err(cancelled());
            }
        }
    }
    if let Some(status) = status {
        status.set(format!("{total} s of {total} s"));
    }
    Ok(())
}

fn cancelled() -> ErrorData {
    ErrorData::new(ErrorCode(CANCELLED_CODE), "request cancelled", None)
}

fn input_result(value: String, asked_by: &str) -> CallToolResult {
    let output = NeedsInputOutput {
        value,
        asked_by: asked_by.to_owned(),
    };
    json_and_structured(&output, &output)
}

/// The form `needs_input` asks the client to fill: one required string, `value`.
fn value_request(question: &str) -> Result<ElicitRequestParams, ErrorData> {
    let requested_schema = ElicitationSchema::builder()
        .required_string(INPUT_KEY)
        .build()
        .map_err(|e| ErrorData::internal_error(format!("needs_input: its form: {e}"), None))?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.to_owned(),
        requested_schema,
    })
}

fn value_input_request(question: &str) -> Result<InputRequest, ErrorData> {
    Ok(InputRequest::Elicitation(ElicitRequest::new(
        value_request(question)?,
    )))
}

/// What the client answered to the form.
enum Answer {
    Value(String),
    /// Declined or cancelled: the tool ends with an `isError` result saying so.
    Refused(ElicitationAction),
}

/// Reads an `ElicitResult` for the form; `Err` says what was wrong with it.
fn read_answer(response: &Value) -> Result<Answer, String> {
    let result: ElicitResult = serde_json::from_value(response.clone()).map_err(|e| {
        format!(
            "inputResponses.{INPUT_KEY}: expected an elicitation result {{\"action\": \"accept\", \"content\": \
             {{\"{INPUT_KEY}\": \"...\"}}}}: {e}"
        )
    })?;
    match result.action {
        ElicitationAction::Accept => result
            .content
            .as_ref()
            .and_then(|content| content.get(INPUT_KEY))
            .and_then(Value::as_str)
            .map(|value| Answer::Value(value.to_owned()))
            .ok_or_else(|| {
                format!(
                    "inputResponses.{INPUT_KEY}.content.{INPUT_KEY}: expected a string, got {}",
                    result
                        .content
                        .map_or("nothing".to_owned(), |c| c.to_string())
                )
            }),
        other => Ok(Answer::Refused(other)),
    }
}

fn refused(action: ElicitationAction) -> CallToolResult {
    let said = match action {
        ElicitationAction::Decline => "declined",
        _ => "cancelled",
    };
    tool_error(format!("needs_input: the client {said} the input"))
}

/// Whether the client of `context` can be sent a form elicitation (declared `elicitation`, with `form` or
/// with no mode, which means form).
fn declared_form_elicitation(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none())
}

/// The refusal of a call of `needs_input` from a client that cannot be asked for the value.
pub(super) fn missing_elicitation() -> ErrorData {
    let mut required = ClientCapabilities::default();
    required.elicitation = Some(ElicitationCapability::new());
    let mut error = ErrorData::missing_required_client_capability(required);
    error.message =
        "needs_input asks the client for a value with an elicitation form: declare the \
        `elicitation` capability (form mode) to call it"
            .into();
    error
}

/// Whether a `needs_input` call from `context` can be asked for its value.
pub(super) fn can_ask(context: &RequestContext<RoleServer>) -> bool {
    declared_form_elicitation(context)
}

/// `needs_input` in a task: the form as the task's `inputRequests` until the client answers it with
/// `tasks/update`, asked again under a new key after an answer it cannot read.
async fn ask_in_task(
    question: &str,
    cancel: &CancellationToken,
    status: &TaskStatusLine,
) -> Result<CallToolResult, ErrorData> {
    let mut problem = String::new();
    for round in 1..=MAX_INPUT_ROUNDS {
        let key = if round == 1 {
            INPUT_KEY.to_owned()
        } else {
            format!("{INPUT_KEY}-{round}")
        };
        status.set(if problem.is_empty() {
            "waiting for the value".to_owned()
        } else {
            format!("waiting for the value again ({problem})")
        });
        let response = tokio::select! {
            response = status.request_input(&key, value_input_request(question)?) => response,
            () = cancel.cancelled() => return Err(cancelled()),
        };
        let Ok(response) = response else {
            // The task was cancelled while it waited (its pending request was dropped): the task ends
            // `cancelled` once its runner has seen the cancel and cancelled `cancel` too.
            cancel.cancelled().await;
            return Err(cancelled());
        };
        match read_answer(&response) {
            Ok(Answer::Value(value)) => {
                status.set("got the value".to_owned());
                return Ok(input_result(value, "task"));
            }
            Ok(Answer::Refused(action)) => return Ok(refused(action)),
            Err(wrong) => problem = wrong,
        }
    }
    Ok(tool_error(format!(
        "needs_input: no readable value after {MAX_INPUT_ROUNDS} rounds; the last: {problem}"
    )))
}

#[tool_router(router = tasks_router, vis = "pub(super)")]
impl TestServer {
    #[tool(
        name = "slow_job",
        description = "Run for `seconds` (0 to 600, default 10), then return {\"seconds\"}. Called with the tasks \
            extension (io.modelcontextprotocol/tasks) it answers at once with a task whose statusMessage says \
            \"3 s of 10 s\" as it runs; tasks/cancel ends it cancelled. A plain call ends on cancellation.",
        input_schema = input_schema::<SlowJobInput>(),
        output_schema = output_schema::<SlowJobOutput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn slow_job(
        &self,
        raw: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        match read_slow_job(raw) {
            Ok(seconds) => slow_job(seconds, &context.ct, None).await,
            Err(refusal) => Ok(invalid_arguments(refusal)),
        }
    }

    #[tool(
        name = "fails_late",
        description = "Run for `seconds` (0 to 600, default 2), then fail with a JSON-RPC error (-32603, \
            `message`). With the tasks extension: a task that works for those seconds, then ends failed with \
            that error.",
        input_schema = input_schema::<FailsLateInput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn fails_late(
        &self,
        raw: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        match read_fails_late(raw) {
            Ok((seconds, message)) => fails_late(seconds, message, &context.ct, None).await,
            Err(refusal) => Ok(invalid_arguments(refusal)),
        }
    }

    #[tool(
        name = "needs_input",
        description = "Ask the client for a string `value` with an elicitation form (its message: `question`, \
            at most 500 characters) and return {\"value\", \"asked_by\"}. With the tasks extension: a task that \
            goes input_required with the form in inputRequests under the key \"value\", answered with \
            tasks/update. Without it, on protocol 2026-07-28: an input_required result, answered by retrying \
            the call with inputResponses; on older protocols: an elicitation/create request. Needs the client's \
            elicitation capability (else error -32021).",
        input_schema = input_schema::<NeedsInputInput>(),
        output_schema = output_schema::<NeedsInputOutput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn needs_input(
        &self,
        raw: JsonObject,
        RetriedResponses(responses): RetriedResponses,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let question = match read_needs_input(raw) {
            Ok(question) => question,
            Err(refusal) => return Ok(invalid_arguments(refusal).into()),
        };
        if !can_ask(&context) {
            return Err(missing_elicitation());
        }
        let multi_round_trip = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        if multi_round_trip {
            return ask_by_retry(&question, responses);
        }
        let form = ServerRequest::ElicitRequest(ElicitRequest::new(value_request(&question)?));
        let answer = tokio::select! {
            answer = context.peer.send_request(form) => answer,
            () = context.ct.cancelled() => return Err(cancelled()),
        };
        let answer = match answer {
            Ok(ClientResult::ElicitResult(answer)) => serde_json::to_value(&answer)
                .map_err(|e| ErrorData::internal_error(format!("needs_input: {e}"), None))?,
            Ok(other) => {
                return Err(ErrorData::internal_error(
                    format!("needs_input: the client answered elicitation/create with {other:?}"),
                    None,
                ));
            }
            Err(e) => {
                return Err(ErrorData::internal_error(
                    format!("needs_input: the elicitation failed: {e}"),
                    None,
                ));
            }
        };
        Ok(match read_answer(&answer) {
            Ok(Answer::Value(value)) => input_result(value, "elicitation").into(),
            Ok(Answer::Refused(action)) => refused(action).into(),
            Err(wrong) => tool_error(format!("needs_input: {wrong}")).into(),
        })
    }
}

/// `needs_input` over multi round-trip requests: the form as an `InputRequiredResult` until a retry carries
/// a readable answer to it in `inputResponses` (a retry without one is asked again, as the pattern asks). No
/// `requestState`: the retry carries everything the tool needs.
fn ask_by_retry(
    question: &str,
    responses: Option<InputResponses>,
) -> Result<CallToolResponse, ErrorData> {
    if let Some(response) = responses.as_ref().and_then(|r| r.get(INPUT_KEY)) {
        match read_answer(response) {
            Ok(Answer::Value(value)) => return Ok(input_result(value, "mrtr").into()),
            Ok(Answer::Refused(action)) => return Ok(refused(action).into()),
            Err(wrong) => tracing::info!(%wrong, "needs_input: asking again"),
        }
    }
    let requests: InputRequests = [(INPUT_KEY.to_owned(), value_input_request(question)?)].into();
    Ok(InputRequiredResult::from_input_requests(requests).into())
}

/// Starts a validated call of a task tool as a task of `tasks`.
pub(super) fn start(
    tasks: &crate::serve::tasks::Tasks,
    job: Job,
) -> Result<CallToolResponse, ErrorData> {
    tasks.start(move |cancel, status| job.run_as_task(cancel, status))
}
