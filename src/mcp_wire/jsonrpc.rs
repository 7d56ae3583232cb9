//! The little of JSON-RPC the relays and clients need: reading a message's envelope, writing requests,
//! notifications and the answers faults send.

use serde::Deserialize;
use serde_json::{Value, json};

/// The largest message read whole (a stdio line, a JSON body, an SSE event): the largest answers real MCP
/// servers send (a file, a screenshot as base64) are a few MiB; beyond this a peer is broken or hostile.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// A request line `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`, newline included.
pub fn request_line(id: &Value, method: &str, params: &Value) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// A notification line, newline included.
pub fn notification_line(method: &str, params: &Value) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

fn line(message: &Value) -> Vec<u8> {
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// An answer the proxy sends in the server's place.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A JSON-RPC error object.
    Error {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// A tool result `{content:[{type:text,text}], isError:true}`.
    ToolError { text: String },
    /// Any result object.
    Result(Value),
}

impl Reply {
    /// The response line for request `id`, newline included.
    pub fn line(&self, id: &Value) -> Vec<u8> {
        let message = match self {
            Reply::Error {
                code,
                message,
                data,
            } => {
                let mut error = json!({ "code": code, "message": message });
                if let Some(data) = data {
                    error["data"] = data.clone();
                }
                json!({ "jsonrpc": "2.0", "id": id, "error": error })
            }
            Reply::ToolError { text } => json!({
                "jsonrpc": "2.0",
                "id": id,
                "result": { "content": [{ "type": "text", "text": text }], "isError": true }
            }),
            Reply::Result(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        };
        line(&message)
    }
}

/// The fields of a message the relay routes on; everything else stays in the raw line.
#[derive(Debug, Deserialize)]
pub struct Envelope {
    #[serde(default)]
    pub jsonrpc: Option<String>,
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub params: Option<Value>,
    #[serde(default)]
    pub result: Option<Value>,
    #[serde(default)]
    pub error: Option<Value>,
}

impl Envelope {
    /// Parses a line; `None` when it is not a JSON object (such lines are forwarded untouched).
    pub fn parse(line: &[u8]) -> Option<Self> {
        serde_json::from_slice(line).ok()
    }

    /// A request: a method and an id.
    pub fn is_request(&self) -> bool {
        self.method.is_some() && self.id.is_some()
    }

    /// A response: an id and no method.
    pub fn is_response(&self) -> bool {
        self.method.is_none() && self.id.is_some()
    }

    /// What faults match a request on: `params.name` (tools, prompts), `params.uri` (resources), else the
    /// method itself.
    pub fn target(&self) -> String {
        let param = |key: &str| {
            self.params
                .as_ref()
                .and_then(|p| p.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        param("name")
            .or_else(|| param("uri"))
            .or_else(|| self.method.clone())
            .unwrap_or_default()
    }

    /// How a response ended, for events.
    pub fn outcome(&self) -> Outcome {
        if let Some(error) = &self.error {
            Outcome::Error {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            }
        } else if self
            .result
            .as_ref()
            .and_then(|r| r.get("isError"))
            .and_then(Value::as_bool)
            == Some(true)
        {
            Outcome::ToolError
        } else {
            Outcome::Result
        }
    }
}

/// The key of a request id in the relay's tables (ids are numbers or strings; `1` and `"1"` differ).
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// How one side of a call ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// A result that is not an error.
    Result,
    /// A tool result with `isError: true`.
    ToolError,
    /// A JSON-RPC error.
    Error { code: i64, message: String },
    /// A line that is not a JSON-RPC response.
    Malformed,
    /// The request was never sent (upstream) or nothing was sent (client).
    None,
    /// Still waiting when the proxy stopped or forgot the call.
    Pending,
}

impl Outcome {
    /// The outcome of a response line as sent.
    pub fn of_line(line: &[u8]) -> Outcome {
        match Envelope::parse(line) {
            Some(envelope) if envelope.is_response() => envelope.outcome(),
            _ => Outcome::Malformed,
        }
    }

    /// What a client that sent request `id` got from `line`: its answer; a malformed message (not JSON, or
    /// not a JSON-RPC 2.0 response); or nothing, when the line answers another id.
    pub fn of_answer(line: &[u8], id: &Value) -> Outcome {
        match Envelope::parse(line) {
            Some(envelope)
                if envelope.is_response() && envelope.jsonrpc.as_deref() == Some("2.0") =>
            {
                if envelope.id.as_ref().map(id_key) == Some(id_key(id)) {
                    envelope.outcome()
                } else {
                    Outcome::None
                }
            }
            _ => Outcome::Malformed,
        }
    }
}
