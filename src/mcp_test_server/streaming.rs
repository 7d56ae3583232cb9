//! `progress`: a call that reports its steps with `notifications/progress`.

use std::time::Duration;

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolResult, ErrorCode, JsonObject, ProgressNotificationParam},
    service::RequestContext,
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Serialize;

use super::{
    CANCELLED_CODE, TestServer, arguments::in_range, input_schema, invalid_arguments,
    read_arguments,
};
use crate::serve::{json_and_structured, output_schema};

pub const MAX_STEPS: i64 = 100;
pub const MAX_STEP_MS: i64 = 5000;

/// Arguments of `progress`.
#[derive(Debug, JsonSchema)]
pub struct ProgressInput {
    /// Number of steps, 0 to 100 (default 5).
    pub steps: Option<i64>,
    /// Milliseconds each step takes, 0 to 5000 (default 100).
    pub step_ms: Option<i64>,
}

/// `structuredContent` of `progress`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProgressOutput {
    /// Steps completed.
    pub steps: u64,
    /// `notifications/progress` sent: one per step when the request carried a progressToken, else 0.
    pub notifications: u64,
}

#[tool_router(router = streaming_router, vis = "pub(super)")]
impl TestServer {
    #[tool(
        name = "progress",
        description = "Take `steps` steps (0 to 100, default 5) of `step_ms` each (0 to 5000, default 100). After \
            each step, when the request has _meta.progressToken, send notifications/progress {progress: step, \
            total: steps, message: \"step i of n\"}. Returns {\"steps\", \"notifications\"}. Ends on cancellation.",
        input_schema = input_schema::<ProgressInput>(),
        output_schema = output_schema::<ProgressOutput>()
    )]
    async fn progress(
        &self,
        raw: JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let input = match read_arguments(raw, |a| {
            let steps = a.optional_integer("steps")?;
            let step_ms = a.optional_integer("step_ms")?;
            Ok(ProgressInput {
                steps: steps
                    .map(|s| in_range("steps", s, 0, MAX_STEPS))
                    .transpose()?,
                step_ms: step_ms
                    .map(|ms| in_range("step_ms", ms, 0, MAX_STEP_MS))
                    .transpose()?,
            })
        }) {
            Ok(input) => input,
            Err(refusal) => return Ok(invalid_arguments(refusal)),
        };
        let steps = input.steps.unwrap_or(5).unsigned_abs();
        let step = Duration::from_millis(input.step_ms.unwrap_or(100).unsigned_abs());
        let token = context.meta.get_progress_token();
        let mut notifications = 0;
        for done in 1..=steps {
            tokio::select! {
                () = tokio::time::sleep(step) => {}
                () = context.ct.cancelled() => {
                    tracing::info!(completed = done - 1, steps, "progress: cancelled by the client");
                    return Err(ErrorData::new(ErrorCode(CANCELLED_CODE), "request cancelled", None));
                }
            }
            if let Some(token) = &token {
                let param = ProgressNotificationParam::new(token.clone(), done as f64)
                    .with_total(steps as f64)
                    .with_message(format!("step {done} of {steps}"));
                match context.peer.notify_progress(param).await {
                    Ok(()) => notifications += 1,
                    Err(e) => tracing::warn!(error = %e, "progress: cannot send a notification"),
                }
            }
        }
        let output = ProgressOutput {
            steps,
            notifications,
        };
        Ok(json_and_structured(&output, &output))
    }
}
