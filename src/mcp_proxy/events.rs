//! The events file: one JSON line per call the proxy tracked (every `tools/call`, and the calls of any
//! method a fault watches), with the decision's inputs so a run can be replayed.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::Path,
};

use serde::Serialize;
use serde_json::Value;

use super::decide::DecisionRecord;
use crate::mcp_wire::jsonrpc::{Envelope, Outcome};

/// The fault that fired on a call.
#[derive(Debug, Clone, Serialize)]
pub struct FiredFault {
    pub index: usize,
    #[serde(rename = "type")]
    pub fault_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub roll: f64,
    /// The key the roll was made for (the tool, or `arguments.call_id`).
    pub roll_key: String,
    pub action: String,
}

/// The client's cancellation of a call.
#[derive(Debug, Clone, Serialize)]
pub struct CancelRecord {
    /// When the cancellation arrived, from the call's start.
    pub after_ms: f64,
    /// Whether it ended a wait the proxy had injected (a delay or a hang).
    pub ended_injected_wait: bool,
    /// How long after the cancellation the injected wait was released.
    pub released_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CallEvent {
    pub time: String,
    pub id: Value,
    pub method: String,
    pub tool: String,
    pub ordinal: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_hash: Option<String>,
    /// The task a `tasks/*` request named, when the proxy saw the call that made it (`tool` is that call's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub seed: u64,
    pub decisions: Vec<DecisionRecord>,
    pub fault: Option<FiredFault>,
    /// Under `policy: all`, the faults applied after `fault`, in plan order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_applied: Vec<FiredFault>,
    /// What the server answered (`none`: it was not called; `pending`: no answer yet).
    pub upstream: Outcome,
    /// What the client received (`none`: nothing).
    pub client: Outcome,
    /// From the call's arrival to what the client received.
    pub latency_ms: f64,
    /// From forwarding the request to the server's answer (absent when it was not called or did not answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_ms: Option<f64>,
    pub cancel: Option<CancelRecord>,
}

/// Watches a session besides the events file (e.g. the `--report` recorder).
pub trait CallObserver: Send {
    /// A line the proxy sent to the client.
    fn client_line(&mut self, line: &[u8]) {
        if let Some(answer) = Envelope::parse(line).filter(Envelope::is_response) {
            self.client_answer(answer);
        }
    }
    /// An answer the proxy sent to the client, parsed.
    fn client_answer(&mut self, answer: Envelope);
    /// A call the client got its answer to (or none, for good).
    fn call(&mut self, event: &CallEvent);
    /// The call `id` was answered with an HTTP status carrying `Retry-After` (a wait in ms), before its
    /// event.
    fn retry_after(&mut self, _id: &Value, _wait_ms: f64) {}
}

/// Appends events to a file, one flushed line each, so a killed run keeps what it saw.
pub struct EventLog {
    out: BufWriter<File>,
}

impl EventLog {
    /// Refuses what cannot be written to at once (a directory, a FIFO, a missing directory).
    pub fn create(path: &Path) -> Result<Self, crate::files::FileError> {
        Ok(Self {
            out: BufWriter::new(crate::files::create_output(path)?),
        })
    }

    pub fn write(&mut self, event: &CallEvent) {
        let written = serde_json::to_writer(&mut self.out, event)
            .map_err(std::io::Error::other)
            .and_then(|()| self.out.write_all(b"\n"))
            .and_then(|()| self.out.flush());
        if let Err(e) = written {
            tracing::warn!("mcp-proxy: cannot write an event: {e}");
        }
    }
}
