//! `fault_suggest_service_level_objectives_slo`: SLOs for a function, validated against a schema.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    AdviceError, ProgressReporter,
    ask::ask,
    input::{check_snippet, lang_label},
    prompts::Task,
};
use crate::llm::ChatModel;

/// The kind of objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SloKind {
    Latency,
    Availability,
    Error,
}

/// One service level objective, in the guide's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "Slo")]
pub struct SuggestedSlo {
    /// latency, availability or error.
    #[serde(rename = "type")]
    pub kind: SloKind,
    /// A human-readable title.
    pub title: String,
    /// The target percentage, in [0, 100).
    pub objective: f64,
    /// Why this objective matters.
    pub explanation: String,
    /// A value suited to the type (seconds for latency, a percentage otherwise).
    pub threshold: f64,
    /// The threshold's unit.
    pub unit: String,
    /// The evaluation window, e.g. 300s.
    pub window: String,
    /// How to measure it on common platforms.
    pub sli: Sli,
}

/// Indicator definitions for Prometheus and Google Cloud (Cloud Run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sli {
    /// A PromQL expression.
    pub prometheus: String,
    /// A Google Cloud service level objective definition.
    #[serde(rename = "gcp/cloudrun")]
    pub gcp_cloudrun: Map<String, Value>,
}

pub async fn slos(
    model: &dyn ChatModel,
    snippet: &str,
    lang: &str,
    progress: &ProgressReporter,
) -> Result<Vec<SuggestedSlo>, AdviceError> {
    check_snippet(snippet)?;
    let lang = lang_label(lang);
    let answer = ask(
        model,
        Task::Slo,
        &[("lang", &lang), ("snippet", snippet)],
        None,
        progress,
    )
    .await?;
    let list = answer.get("slos").cloned().unwrap_or(Value::Null);
    serde_json::from_value(list)
        .map_err(|e| AdviceError::Internal(format!("validated SLOs do not decode: {e}")))
}
