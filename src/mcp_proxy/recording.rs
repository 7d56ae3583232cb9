//! What a session of the proxy did to its client, as report records: the relay shows the [`ReportObserver`]
//! every line it sends to the client (to learn output schemas from `tools/list` and to judge results) and
//! every finished call. A live `fault mcp-proxy --report FILE` session renders its report from them, at exit or
//! on demand; the chaos scenario joins them with what its client saw.

use std::{
    collections::{HashMap, VecDeque},
    path::Path,
    time::Instant,
};

use serde_json::Value;

use super::{
    events::{CallEvent, CallObserver},
    plan::{Gates, Plan},
};
use crate::mcp_wire::{
    jsonrpc::{Envelope, Outcome, id_key},
    tasks::{self, TaskStatus},
};
use crate::report::chaos::{
    self as report, ChaosReport, PlannedFaultInfo,
    mcp_tasks::{McpTaskFigures, TaskEnd, TaskLedger},
    record::{CallOutcome, CallRecord, Schemas, retry_after_ms},
};

/// Results kept until their call's event arrives (it follows at once; the bound only guards odd servers).
const MAX_HELD_RESULTS: usize = 4_096;

/// The faults of `plan`, as the report lists them.
pub fn planned_faults(plan: &Plan) -> Vec<PlannedFaultInfo> {
    plan.faults
        .iter()
        .enumerate()
        .map(|(index, f)| {
            let mut description = f.spec.inner().describe();
            if f.trigger.probability < 1.0 {
                description.push_str(&format!(", probability {}", f.trigger.probability));
            }
            PlannedFaultInfo {
                index,
                fault_type: f.spec.type_name().to_owned(),
                tools: f.trigger.tools.clone(),
                description,
            }
        })
        .collect()
}

/// What a live session has seen so far.
pub struct ReportObserver {
    server: String,
    seed: u64,
    faults: Vec<PlannedFaultInfo>,
    gates: Gates,
    started: Instant,
    started_at: String,
    schemas: Schemas,
    /// tools/call results sent to the client, by request id, until their event.
    results: HashMap<String, Value>,
    result_order: VecDeque<String>,
    /// The waits JSON-RPC errors sent to the client asked for (`data.retryAfterSeconds`), by request id,
    /// until their event.
    retry_after: HashMap<String, f64>,
    records: Vec<CallRecord>,
    /// Task handles sent to the client (`resultType: "task"`), by request id, until their call's event.
    task_handles: HashMap<String, String>,
    tasks: TaskLedger,
}

impl ReportObserver {
    pub fn new(plan: &Plan, command: &[String]) -> Self {
        Self {
            server: command.join(" "),
            seed: plan.seed,
            faults: planned_faults(plan),
            gates: plan.gates.clone(),
            started: Instant::now(),
            started_at: now(),
            schemas: Schemas::default(),
            results: HashMap::new(),
            result_order: VecDeque::new(),
            retry_after: HashMap::new(),
            records: Vec::new(),
            task_handles: HashMap::new(),
            tasks: TaskLedger::default(),
        }
    }

    /// The report of everything seen so far, its gates judged.
    pub fn report(&self) -> ChaosReport {
        let duration_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let mut run = report::figures(self.records.clone(), duration_ms, self.schemas.hints());
        run.mcp_tasks = self.tasks.figures();
        ChaosReport {
            schema_version: report::SCHEMA_VERSION,
            gates: report::gates::evaluate(&self.gates, &run),
            title: "MCP Chaos Report".into(),
            started_at: self.started_at.clone(),
            ended_at: now(),
            server: self.server.clone(),
            seed: self.seed,
            faults: self.faults.clone(),
            client: None,
            run,
            baseline: None,
            comparison: None,
            sessions: None,
        }
    }

    /// The records so far, each with its request id, leaving none behind.
    pub fn take_records(&mut self) -> Vec<CallRecord> {
        std::mem::take(&mut self.records)
    }

    /// The MCP tasks seen so far, per tool.
    pub fn mcp_tasks(&self) -> Vec<McpTaskFigures> {
        self.tasks.figures()
    }

    /// Writes the report to `path`: JSON when it ends in `.json`, a self-contained HTML page with the charts
    /// when it ends in `.html` or `.htm`, else markdown.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let report = self.report();
        let extension = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase());
        let text = match extension.as_deref() {
            Some("json") => serde_json::to_string_pretty(&report).map_err(std::io::Error::other)?,
            Some("html" | "htm") => {
                crate::report::chart::page::chaos_page(&report).map_err(std::io::Error::other)?
            }
            _ => report::render(&report),
        };
        std::fs::write(path, text)
    }
}

/// How the task of a `tasks/get` answer ended, when its status says it did.
fn task_end(answer: &Value) -> Option<TaskEnd> {
    match TaskStatus::of(answer)? {
        TaskStatus::Completed => Some(TaskEnd::Completed),
        TaskStatus::Failed => Some(TaskEnd::Failed),
        TaskStatus::Cancelled => Some(TaskEnd::Cancelled),
        TaskStatus::Working | TaskStatus::InputRequired => None,
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl CallObserver for ReportObserver {
    fn client_answer(&mut self, envelope: Envelope) {
        if let (Some(id), Some(wait)) = (
            &envelope.id,
            envelope.error.as_ref().and_then(retry_after_ms),
        ) {
            // Bounded as the held results are: an entry outlives its event only on odd servers.
            if self.retry_after.len() >= MAX_HELD_RESULTS {
                self.retry_after.clear();
            }
            self.retry_after.insert(id_key(id), wait);
            return;
        }
        let (Some(id), Some(result)) = (envelope.id, envelope.result) else {
            return;
        };
        if result.get("tools").is_some() {
            self.schemas.add_list(&result);
        } else if tasks::is_task_handle(&result) {
            if let Some(task_id) = tasks::task_id(&result) {
                if self.task_handles.len() >= MAX_HELD_RESULTS {
                    self.task_handles.clear();
                }
                self.task_handles.insert(id_key(&id), task_id.to_owned());
            }
        } else if result.get(tasks::TASK_ID).is_some() {
            // A `tasks/get` answer: a terminal status ends the task.
            if let (Some(task_id), Some(end)) = (tasks::task_id(&result), task_end(&result)) {
                self.tasks.ended(task_id, end);
            }
        } else if result.get("content").is_some() {
            let key = id_key(&id);
            if self.results.len() >= MAX_HELD_RESULTS
                && let Some(old) = self.result_order.pop_front()
            {
                self.results.remove(&old);
            }
            self.result_order.push_back(key.clone());
            self.results.insert(key, result);
        }
    }

    fn retry_after(&mut self, id: &Value, wait_ms: f64) {
        if self.retry_after.len() >= MAX_HELD_RESULTS {
            self.retry_after.clear();
        }
        self.retry_after.insert(id_key(id), wait_ms);
    }

    fn call(&mut self, event: &CallEvent) {
        if tasks::is_task_method(&event.method) {
            if let (Some(task_id), Outcome::Error { code, .. }) = (&event.task_id, &event.client)
                && *code == tasks::NOT_FOUND_CODE
            {
                self.tasks.ended(task_id, TaskEnd::Lost);
            }
            return;
        }
        if event.method != "tools/call" {
            return;
        }
        let key = id_key(&event.id);
        if let Some(task_id) = self.task_handles.remove(&key) {
            self.tasks.created(&event.tool, &task_id);
        }
        let held = self.results.remove(&key);
        let retry_after_ms = self.retry_after.remove(&key);
        let outcome = match &event.client {
            Outcome::Result | Outcome::ToolError => held.as_ref().map_or(
                if event.client == Outcome::ToolError {
                    CallOutcome::ToolError
                } else {
                    CallOutcome::Ok
                },
                |result| self.schemas.judge(&event.tool, result),
            ),
            Outcome::Error { .. } => CallOutcome::ProtocolError,
            Outcome::Malformed => CallOutcome::Malformed,
            Outcome::None | Outcome::Pending => CallOutcome::Timeout,
        };
        let end_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        self.records.push(CallRecord {
            tool: event.tool.clone(),
            args_hash: event.args_hash.clone(),
            start_ms: (end_ms - event.latency_ms).max(0.0),
            latency_ms: event.latency_ms,
            // The proxy sees a call when it is sent; when it was due is the client's to know.
            queueing_ms: None,
            service_ms: None,
            fault: event.fault.as_ref().map(|f| f.fault_type.to_owned()),
            outcome,
            reached_server: event.upstream != Outcome::None,
            cancel_after_ms: event.cancel.as_ref().map(|c| c.after_ms),
            logical: None,
            session: 0,
            request_id: Some(key),
            retry_after_ms,
        });
    }
}

/// The session's metrics page: a view of what the recorder keeps (its report's figures), per tool.
pub fn metrics_page(recorder: &std::sync::Mutex<ReportObserver>) -> String {
    use crate::metrics::Exposition;
    let report = recorder
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .report();
    let tools = &report.run.tools;
    let mut page = Exposition::default();
    page.family(
        "fault_mcp_calls_total",
        "counter",
        "tools/call requests relayed, by tool and outcome.",
    );
    for tool in tools {
        let o = &tool.outcomes;
        for (outcome, count) in [
            ("ok", o.ok),
            ("tool_error", o.tool_error),
            ("protocol_error", o.protocol_error),
            ("timeout", o.timeout),
            ("malformed", o.malformed),
            ("schema_invalid", o.schema_invalid),
        ] {
            page.sample(
                "fault_mcp_calls_total",
                &[("tool", &tool.tool), ("outcome", outcome)],
                count as f64,
            );
        }
    }
    page.family(
        "fault_mcp_faults_total",
        "counter",
        "Faults the plan fired, by fault type and tool.",
    );
    for tool in tools {
        for (fault_type, count) in &tool.faults_by_type {
            page.sample(
                "fault_mcp_faults_total",
                &[("type", fault_type), ("tool", &tool.tool)],
                *count as f64,
            );
        }
    }
    page.family(
        "fault_mcp_runaways_total",
        "counter",
        "Calls a client repeated past its fault without change (runaway retries), by tool.",
    );
    for tool in tools {
        page.sample(
            "fault_mcp_runaways_total",
            &[("tool", &tool.tool)],
            tool.client.runaway as f64,
        );
    }
    page.family(
        "fault_mcp_duplicate_writes_total",
        "counter",
        "Writes a client repeated after their first had taken effect, by tool.",
    );
    for tool in tools {
        page.sample(
            "fault_mcp_duplicate_writes_total",
            &[("tool", &tool.tool)],
            tool.client.duplicates as f64,
        );
    }
    page.into_text()
}
