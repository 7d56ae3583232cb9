//! Tools with planted defects, listed with `--defects`: a known target for `fault mcp-scan`. Each tool is
//! listed whenever `--defects` is given; only the defects it names misbehave, the others answer as a correct
//! server would, so a scan before and after "fixing" one can be compared.
//!
//! - `set_volume` (`lenient-range`): takes `level` 0 to 10 and accepts any number.
//! - `lookup_user` (`null-crash`): a null `name` ends in an internal error instead of a refusal.
//! - `export_report` (`holds-others`): while it runs (100 ms) every other call of the server waits.
//! - `search_docs` (`saturates`): 4 calls in flight at most, 40 ms each; the others queue.
//! - `get_price` (`wrong-output`): its result breaks its own `outputSchema`.

use std::{collections::BTreeSet, str::FromStr, sync::Arc, time::Duration};

use rmcp::{
    ErrorData,
    model::{CallToolResult, ErrorCode, JsonObject},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{RwLock, Semaphore};

use super::{TestServer, arguments::ArgumentError, input_schema, invalid_arguments};
use crate::serve::{json_and_structured, output_schema};

/// How long `export_report` runs.
pub const EXPORT_MS: u64 = 100;
/// How long one `search_docs` call works, and how many it works on at once.
pub const SEARCH_MS: u64 = 40;
pub const SEARCH_IN_FLIGHT: usize = 4;

/// One planted defect, by the name `--defects` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Defect {
    LenientRange,
    NullCrash,
    HoldsOthers,
    Saturates,
    WrongOutput,
}

impl Defect {
    pub const ALL: [Self; 5] = [
        Self::LenientRange,
        Self::NullCrash,
        Self::HoldsOthers,
        Self::Saturates,
        Self::WrongOutput,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::LenientRange => "lenient-range",
            Self::NullCrash => "null-crash",
            Self::HoldsOthers => "holds-others",
            Self::Saturates => "saturates",
            Self::WrongOutput => "wrong-output",
        }
    }

    /// The tool that carries it.
    pub fn tool(self) -> &'static str {
        match self {
            Self::LenientRange => "set_volume",
            Self::NullCrash => "lookup_user",
            Self::HoldsOthers => "export_report",
            Self::Saturates => "search_docs",
            Self::WrongOutput => "get_price",
        }
    }
}

/// The defects `--defects` plants: `all`, `none`, or names separated by commas.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Defects(BTreeSet<Defect>);

impl Defects {
    pub fn has(&self, defect: Defect) -> bool {
        self.0.contains(&defect)
    }
}

impl FromStr for Defects {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut planted = BTreeSet::new();
        for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "all" => planted.extend(Defect::ALL),
                "none" => {}
                _ => {
                    let defect = Defect::ALL
                        .into_iter()
                        .find(|d| d.name() == name)
                        .ok_or_else(|| {
                            let names: Vec<&str> = Defect::ALL.iter().map(|d| d.name()).collect();
                            format!(
                                "no defect is named '{name}'; accepted: all, none or {}",
                                names.join(", ")
                            )
                        })?;
                    planted.insert(defect);
                }
            }
        }
        Ok(Self(planted))
    }
}

/// What the defect tools share across the server's sessions.
#[derive(Clone)]
pub struct DefectState {
    pub planted: Defects,
    /// Held for reading by every call, for writing by `export_report` when it holds the others.
    pub hold: Arc<RwLock<()>>,
    search_slots: Arc<Semaphore>,
}

impl DefectState {
    pub fn new(planted: Defects) -> Self {
        Self {
            planted,
            hold: Arc::default(),
            search_slots: Arc::new(Semaphore::new(SEARCH_IN_FLIGHT)),
        }
    }
}

/// Arguments of `set_volume`.
#[derive(Debug, JsonSchema)]
pub struct SetVolumeInput {
    /// The volume, 0 (mute) to 10.
    #[schemars(range(min = 0, max = 10))]
    pub level: i64,
}

/// Arguments of `lookup_user`.
#[derive(Debug, JsonSchema)]
pub struct LookupUserInput {
    /// The user's name.
    pub name: String,
}

/// Arguments of `export_report`, `search_docs` and `get_price`.
#[derive(Debug, JsonSchema)]
pub struct QueryInput {
    /// What to look for.
    #[schemars(length(min = 1, max = 200))]
    pub query: String,
}

/// `structuredContent` of `get_price`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PriceOutput {
    /// The price in `currency`.
    pub price: f64,
    /// ISO 4217 code.
    pub currency: String,
}

/// `structuredContent` of the other defect tools.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DoneOutput {
    /// What was done.
    pub done: String,
}

fn done(text: String) -> CallToolResult {
    json_and_structured(&json!({"done": text}), &DoneOutput { done: text.clone() })
}

/// The one argument `field` of `raw`, a string of 1 to 200 characters; any other argument refused.
fn only_text(raw: &JsonObject, field: &'static str) -> Result<String, ArgumentError> {
    if let Some(name) = raw.keys().find(|k| k.as_str() != field) {
        return Err(ArgumentError::Unknown {
            name: name.clone(),
            known: field.to_owned(),
        });
    }
    match raw.get(field) {
        None | Some(Value::Null) => Err(ArgumentError::Missing { field }),
        Some(Value::String(text)) if (1..=200).contains(&text.chars().count()) => Ok(text.clone()),
        Some(Value::String(text)) => Err(ArgumentError::OutOfRange {
            field,
            rule: "1 to 200 characters".to_owned(),
            got: format!("{} characters", text.chars().count()),
        }),
        Some(other) => Err(ArgumentError::WrongType {
            field,
            expected: "a string",
            got: other.to_string(),
        }),
    }
}

#[tool_router(router = defects_router, vis = "pub(super)")]
impl TestServer {
    #[tool(
        name = "set_volume",
        description = "Set the speaker volume, 0 (mute) to 10: {\"done\"}.",
        input_schema = input_schema::<SetVolumeInput>(),
        output_schema = output_schema::<DoneOutput>(),
        annotations(read_only_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn set_volume(&self, raw: JsonObject) -> Result<CallToolResult, ErrorData> {
        let lenient = self.defects.planted.has(Defect::LenientRange);
        let level = match raw.get("level") {
            Some(Value::Number(n)) if lenient => n.as_f64(),
            Some(Value::Number(n)) => n
                .as_i64()
                .filter(|l| (0..=10).contains(l))
                .map(|l| l as f64),
            _ => None,
        };
        if let Some(name) = raw.keys().find(|k| k.as_str() != "level") {
            return Ok(invalid_arguments(ArgumentError::Unknown {
                name: name.clone(),
                known: "level".to_owned(),
            }));
        }
        Ok(match level {
            Some(level) => done(format!("volume set to {level}")),
            None => invalid_arguments(ArgumentError::OutOfRange {
                field: "level",
                rule: "a whole number from 0 to 10".to_owned(),
                got: raw
                    .get("level")
                    .map_or("nothing".to_owned(), Value::to_string),
            }),
        })
    }

    #[tool(
        name = "lookup_user",
        description = "Look a user up by name: {\"done\"}.",
        input_schema = input_schema::<LookupUserInput>(),
        output_schema = output_schema::<DoneOutput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn lookup_user(&self, raw: JsonObject) -> Result<CallToolResult, ErrorData> {
        if self.defects.planted.has(Defect::NullCrash) && raw.get("name") == Some(&Value::Null) {
            // What an unchecked `name.lower()` on a null does to a server: an internal error.
            return Err(ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                "internal error: 'NoneType' object has no attribute 'lower'",
                None,
            ));
        }
        Ok(match only_text(&raw, "name") {
            Ok(name) => done(format!("user {name} found")),
            Err(refusal) => invalid_arguments(refusal),
        })
    }

    #[tool(
        name = "export_report",
        description = "Export a report matching `query` (takes 100 ms): {\"done\"}.",
        input_schema = input_schema::<QueryInput>(),
        output_schema = output_schema::<DoneOutput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn export_report(&self, raw: JsonObject) -> Result<CallToolResult, ErrorData> {
        let query = match only_text(&raw, "query") {
            Ok(query) => query,
            Err(refusal) => return Ok(invalid_arguments(refusal)),
        };
        if self.defects.planted.has(Defect::HoldsOthers) {
            let _everyone_waits = self.defects.hold.write().await;
            tokio::time::sleep(Duration::from_millis(EXPORT_MS)).await;
        } else {
            tokio::time::sleep(Duration::from_millis(EXPORT_MS)).await;
        }
        Ok(done(format!("report on {query} exported")))
    }

    #[tool(
        name = "search_docs",
        description = "Search the documents for `query` (40 ms a call): {\"done\"}.",
        input_schema = input_schema::<QueryInput>(),
        output_schema = output_schema::<DoneOutput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn search_docs(&self, raw: JsonObject) -> Result<CallToolResult, ErrorData> {
        let query = match only_text(&raw, "query") {
            Ok(query) => query,
            Err(refusal) => return Ok(invalid_arguments(refusal)),
        };
        let _slot = if self.defects.planted.has(Defect::Saturates) {
            self.defects.search_slots.acquire().await.ok()
        } else {
            None
        };
        tokio::time::sleep(Duration::from_millis(SEARCH_MS)).await;
        Ok(done(format!("3 documents match {query}")))
    }

    #[tool(
        name = "get_price",
        description = "The price of the product named `query`: {\"price\", \"currency\"}.",
        input_schema = input_schema::<QueryInput>(),
        output_schema = output_schema::<PriceOutput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_price(&self, raw: JsonObject) -> Result<CallToolResult, ErrorData> {
        if let Err(refusal) = only_text(&raw, "query") {
            return Ok(invalid_arguments(refusal));
        }
        let price = if self.defects.planted.has(Defect::WrongOutput) {
            // The price as text, against the schema's number.
            json!({"price": "12.50", "currency": "EUR"})
        } else {
            json!({"price": 12.5, "currency": "EUR"})
        };
        Ok(json_and_structured(&price, &price))
    }
}
