//! One record per tool call, and how a result is judged: an answer is correct when it is not an error and
//! its payload validates against the tool's `outputSchema` (as `tools/list` advertised it), so drift coming
//! from the server itself counts as much as drift the proxy injects.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the client ended up with for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// A result, valid against the tool's `outputSchema` (or the tool has none).
    Ok,
    /// A tool result with `isError: true`.
    ToolError,
    /// A JSON-RPC error (or the connection closed under the call).
    ProtocolError,
    /// No answer in time: the client cancelled, or nothing ever came.
    Timeout,
    /// A line that is not a JSON-RPC response reached the client instead of the answer.
    Malformed,
    /// A result whose payload does not validate against the tool's `outputSchema`.
    SchemaInvalid,
    /// Due while its client had every in-flight slot busy: never sent. It counts with the client's timeout
    /// as its latency, as a request that could not start does in the impact report.
    NotStarted,
}

impl CallOutcome {
    /// An answer the client can read as a result (correct or not): what availability counts.
    pub fn answered(self) -> bool {
        matches!(self, CallOutcome::Ok | CallOutcome::SchemaInvalid)
    }

    /// An outcome a client sees as a failure and may retry (a schema-invalid result is taken as it is).
    pub fn retryable(self) -> bool {
        matches!(
            self,
            CallOutcome::ToolError
                | CallOutcome::ProtocolError
                | CallOutcome::Timeout
                | CallOutcome::Malformed
        )
    }
}

/// Which logical call an attempt belongs to, when the caller knows (the scenario tool's driver does; in a
/// proxy session it is inferred from identical calls, see [`infer_logical`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Logical {
    /// Index of the logical call (one entry of `calls`, one repetition).
    pub index: u64,
    /// 1 for the first attempt, 2 for the first retry, ...
    pub attempt: u32,
    /// The task the call belongs to (its own index when none was given).
    pub task: String,
}

/// One `tools/call` as the client lived it.
#[derive(Debug, Clone)]
pub struct CallRecord {
    pub tool: String,
    /// Hash of the arguments (identical calls share it).
    pub args_hash: Option<String>,
    /// When the call was due (a retry: when the backoff after the attempt before it ended), from the start
    /// of the run; for a call the proxy saw, when it was sent.
    pub start_ms: f64,
    /// From when it was due to the answer, or to the client's cancel.
    pub latency_ms: f64,
    /// Of the latency, the queueing delay: from when the call was due to when it was sent (a call that could
    /// not start: all of it). `None` for a call the proxy saw, whose client's schedule it does not know.
    pub queueing_ms: Option<f64>,
    /// Of the latency, the service time: from when the call was sent to the answer or the cancel. `None`
    /// for a call never sent, or one the proxy saw.
    pub service_ms: Option<f64>,
    /// The fault the proxy injected, by type.
    pub fault: Option<String>,
    pub outcome: CallOutcome,
    /// The server received the call (so a retry may run it twice).
    pub reached_server: bool,
    /// The client cancelled the call this long after sending it.
    pub cancel_after_ms: Option<f64>,
    pub logical: Option<Logical>,
    /// The client session the call was made on (0 with one client).
    pub session: u32,
    /// The JSON-RPC request id (its key: `1` and `"1"` differ), when the call was sent.
    pub request_id: Option<String>,
    /// How long the answer asked the client to wait before trying again (`data.retryAfterSeconds` of a
    /// JSON-RPC error, or an HTTP answer's `Retry-After`).
    pub retry_after_ms: Option<f64>,
}

/// Records for tests: a call answered in 10 ms that reached the server, on session 0, with nothing else
/// known; the setters change one part each.
#[cfg(test)]
impl CallRecord {
    pub(crate) fn of(tool: &str, start_ms: f64, outcome: CallOutcome) -> Self {
        Self {
            tool: tool.into(),
            args_hash: None,
            start_ms,
            latency_ms: 10.0,
            queueing_ms: None,
            service_ms: None,
            fault: None,
            outcome,
            reached_server: true,
            cancel_after_ms: None,
            logical: None,
            session: 0,
            request_id: None,
            retry_after_ms: None,
        }
    }

    pub(crate) fn args_hash(mut self, hash: &str) -> Self {
        self.args_hash = Some(hash.into());
        self
    }

    pub(crate) fn latency_ms(mut self, ms: f64) -> Self {
        self.latency_ms = ms;
        self
    }

    /// The latency's two parts: waiting to be sent, then served.
    pub(crate) fn queueing_and_service_ms(mut self, queueing: f64, service: f64) -> Self {
        self.queueing_ms = Some(queueing);
        self.service_ms = Some(service);
        self
    }

    pub(crate) fn fault(mut self, fault: Option<&str>) -> Self {
        self.fault = fault.map(str::to_owned);
        self
    }

    pub(crate) fn cancel_after_ms(mut self, ms: Option<f64>) -> Self {
        self.cancel_after_ms = ms;
        self
    }

    /// Attempt `attempt` (1 the first) of logical call `index`, in `task`.
    pub(crate) fn logical(mut self, index: u64, attempt: u32, task: &str) -> Self {
        self.logical = Some(Logical {
            index,
            attempt,
            task: task.into(),
        });
        self
    }

    pub(crate) fn session(mut self, session: u32) -> Self {
        self.session = session;
        self
    }
}

/// The `retryAfterSeconds` of a JSON-RPC error's `data`, in ms.
pub fn retry_after_ms(error: &Value) -> Option<f64> {
    let seconds = error.get("data")?.get("retryAfterSeconds")?.as_f64()?;
    (seconds.is_finite() && seconds >= 0.0).then_some(seconds * 1000.0)
}

/// A tool's behaviour hints, as its `tools/list` entry's `annotations` gave them; `None` where it said
/// nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolHints {
    /// Whether the listing named the tool at all.
    pub listed: bool,
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    pub idempotent: Option<bool>,
}

impl ToolHints {
    fn of(annotations: Option<&Value>) -> Self {
        let hint = |key: &str| {
            annotations
                .and_then(|a| a.get(key))
                .and_then(Value::as_bool)
        };
        Self {
            listed: true,
            read_only: hint("readOnlyHint"),
            destructive: hint("destructiveHint"),
            idempotent: hint("idempotentHint"),
        }
    }

    /// Whether running the tool twice may do its effect twice: it is neither read-only nor idempotent. An
    /// absent hint counts as false, as the MCP specification says of both.
    pub fn repeats_effect(&self) -> bool {
        !self.read_only.unwrap_or(false) && !self.idempotent.unwrap_or(false)
    }

    /// The hints as the listing gave them, e.g. "readOnlyHint false, destructiveHint true, idempotentHint
    /// absent".
    pub fn describe(&self) -> String {
        if !self.listed {
            return "not listed (no hints: taken as neither read-only nor idempotent)".to_owned();
        }
        let hint = |name: &str, value: Option<bool>| match value {
            Some(v) => format!("{name} {v}"),
            None => format!("{name} absent"),
        };
        format!(
            "{}, {}, {}",
            hint("readOnlyHint", self.read_only),
            hint("destructiveHint", self.destructive),
            hint("idempotentHint", self.idempotent)
        )
    }
}

/// Hints by tool name.
pub type Hints = HashMap<String, ToolHints>;

/// Output schemas by tool, from a `tools/list` result.
#[derive(Default)]
pub struct Schemas {
    validators: HashMap<String, jsonschema::Validator>,
    /// Every tool the listing named, in its order.
    names: Vec<String>,
    hints: Hints,
}

impl Schemas {
    /// Adds the tools of one `tools/list` result (a page); a schema that does not compile is skipped and
    /// logged, so the tool's results are not judged.
    pub fn add_list(&mut self, result: &Value) {
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return;
        };
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            if !self.names.iter().any(|n| n == name) {
                self.names.push(name.to_owned());
            }
            self.hints
                .insert(name.to_owned(), ToolHints::of(tool.get("annotations")));
            match tool.get("outputSchema") {
                Some(schema) => match jsonschema::validator_for(schema) {
                    Ok(validator) => {
                        self.validators.insert(name.to_owned(), validator);
                    }
                    Err(e) => tracing::warn!("outputSchema of `{name}` does not compile: {e}"),
                },
                None => {
                    self.validators.remove(name);
                }
            }
        }
    }

    /// The tools the listing named.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Why `result` of `tool` breaks its output schema (the first error and where), `None` when it does not.
    pub fn explain(&self, tool: &str, result: &Value) -> Option<String> {
        let validator = self.validators.get(tool)?;
        let payload = result.get("structuredContent")?;
        let error = validator.iter_errors(payload).next()?;
        Some(format!("{} at `{}`", error, error.instance_path()))
    }

    /// Whether `tool` declared an `outputSchema` that compiles.
    pub fn has_output_schema(&self, tool: &str) -> bool {
        self.validators.contains_key(tool)
    }

    /// The listed tools' annotations.
    pub fn hints(&self) -> &Hints {
        &self.hints
    }

    /// How a `tools/call` result of `tool` ends: an error, a valid payload, or an invalid one. The payload
    /// is `structuredContent`, else the JSON of the first text block; a tool with an `outputSchema` and
    /// neither is invalid.
    pub fn judge(&self, tool: &str, result: &Value) -> CallOutcome {
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            return CallOutcome::ToolError;
        }
        let Some(validator) = self.validators.get(tool) else {
            return CallOutcome::Ok;
        };
        let text_json = || {
            result
                .get("content")?
                .as_array()?
                .iter()
                .find_map(|block| block.get("text").and_then(Value::as_str))
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
        };
        let payload = result.get("structuredContent").cloned().or_else(text_json);
        match payload {
            Some(payload) if validator.is_valid(&payload) => CallOutcome::Ok,
            _ => CallOutcome::SchemaInvalid,
        }
    }
}

/// A run of identical calls: (logical index, attempts so far, last outcome, when the last one ended, whether
/// the client cancelled it).
type Chain = (u64, u32, CallOutcome, f64, bool);

/// How long before a call's cancel reached the proxy an identical call may have started and still be its
/// retry: a client that gives up on a call may send the retry before the cancel of the first one.
pub const CANCEL_TRAIL_MS: f64 = 500.0;

/// Fills in [`Logical`] for records without it: a call identical to an earlier one (same tool and
/// arguments) that failed and had ended (or that the client cancelled at most [`CANCEL_TRAIL_MS`] after the
/// new one started) is its retry; any other call starts a logical call and its own task.
pub fn infer_logical(records: &mut [CallRecord]) {
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by(|&a, &b| records[a].start_ms.total_cmp(&records[b].start_ms));
    let mut chains: HashMap<(String, Option<String>), Chain> = HashMap::new();
    let mut next = 0u64;
    for i in order {
        let record = &records[i];
        if record.logical.is_some() {
            continue;
        }
        let key = (record.tool.clone(), record.args_hash.clone());
        let retry = chains.get(&key).filter(|(_, _, outcome, end, cancelled)| {
            let ended = *end <= record.start_ms
                || (*cancelled && *end <= record.start_ms + CANCEL_TRAIL_MS);
            *outcome != CallOutcome::Ok && ended
        });
        let (index, attempt) = match retry {
            Some((index, attempts, _, _, _)) => (*index, attempts + 1),
            None => {
                next += 1;
                (next - 1, 1)
            }
        };
        let end = record.start_ms + record.latency_ms;
        chains.insert(
            key,
            (
                index,
                attempt,
                record.outcome,
                end,
                record.cancel_after_ms.is_some(),
            ),
        );
        records[i].logical = Some(Logical {
            index,
            attempt,
            task: format!("call-{index}"),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schemas() -> Schemas {
        let mut schemas = Schemas::default();
        schemas.add_list(&json!({"tools": [{
            "name": "get_item",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "required": ["name"],
                             "properties": {"name": {"type": "string"}}}
        }, {"name": "plain", "inputSchema": {"type": "object"}}]}));
        schemas
    }

    #[test]
    fn results_are_judged_on_their_payload() {
        let s = schemas();
        let ok = json!({"content": [], "structuredContent": {"name": "a"}});
        let drifted = json!({"content": [], "structuredContent": {"title": "a"}});
        let text_only = json!({"content": [{"type": "text", "text": "{\"name\":\"a\"}"}]});
        let nothing = json!({"content": []});
        assert_eq!(s.judge("get_item", &ok), CallOutcome::Ok);
        assert_eq!(s.judge("get_item", &drifted), CallOutcome::SchemaInvalid);
        assert_eq!(s.judge("get_item", &text_only), CallOutcome::Ok);
        assert_eq!(s.judge("get_item", &nothing), CallOutcome::SchemaInvalid);
        assert_eq!(s.judge("plain", &nothing), CallOutcome::Ok);
        assert_eq!(
            s.judge("plain", &json!({"content": [], "isError": true})),
            CallOutcome::ToolError
        );
    }

    fn call(start: f64, args: &str, outcome: CallOutcome) -> CallRecord {
        CallRecord::of("t", start, outcome).args_hash(args)
    }

    #[test]
    fn identical_calls_after_a_failure_are_retries() {
        let mut records = vec![
            call(0.0, "a", CallOutcome::Timeout),
            call(20.0, "a", CallOutcome::Timeout),
            call(40.0, "a", CallOutcome::Ok),
            call(60.0, "a", CallOutcome::Ok),
            call(65.0, "b", CallOutcome::Ok),
        ];
        infer_logical(&mut records);
        let seen: Vec<(u64, u32)> = records
            .iter()
            .map(|r| r.logical.as_ref().map(|l| (l.index, l.attempt)).unwrap())
            .collect();
        assert_eq!(seen, vec![(0, 1), (0, 2), (0, 3), (1, 1), (2, 1)]);
    }

    #[test]
    fn a_retry_sent_just_before_the_cancel_of_the_call_it_repeats_is_its_retry() {
        let mut cancelled = call(0.0, "a", CallOutcome::Timeout);
        cancelled.latency_ms = 1100.0;
        cancelled.cancel_after_ms = Some(1100.0);
        let retry = call(1050.0, "a", CallOutcome::Ok);
        let mut concurrent = call(0.0, "b", CallOutcome::Timeout);
        concurrent.latency_ms = 2000.0;
        concurrent.cancel_after_ms = Some(2000.0);
        let twin = call(500.0, "b", CallOutcome::Ok);
        let mut records = vec![cancelled, retry, concurrent, twin];
        infer_logical(&mut records);
        let attempts: Vec<u32> = records
            .iter()
            .map(|r| r.logical.as_ref().unwrap().attempt)
            .collect();
        assert_eq!(attempts, [1, 2, 1, 1]);
    }
}
