//! The policy a scan is scored by: each dimension's weight, the thresholds a pass needs, and the evidence a
//! score needs before it is given. Its keys are declared once ([`crate::fields`]), so a policy file's
//! unknown key is refused with the closest declared one, and the book's table comes from here.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    fields::{Field, FieldError, FieldInput, Unit, unknown_field},
    lenient::Number,
};

const WEIGHT: Number = Number::from_to(0.0, 1.0);

pub const W_HYGIENE: Field = Field::number(
    "hygiene",
    "Weight of hygiene: tools whose schemas strict clients read as declared",
    WEIGHT,
    Unit::None,
)
.default("0.15");
pub const W_CONTRACT: Field = Field::number(
    "contract",
    "Weight of the contract: invalid input refused, naming its field, without a crash or a hang",
    WEIGHT,
    Unit::None,
)
.default("0.3");
pub const W_LATENCY: Field = Field::number(
    "latency",
    "Weight of the baseline's latency against the thresholds",
    WEIGHT,
    Unit::None,
)
.default("0.15");
pub const W_CAPACITY: Field = Field::number(
    "capacity",
    "Weight of capacity: calls in flight before goodput stops rising, and no call held up by another",
    WEIGHT,
    Unit::None,
)
.default("0.15");
pub const W_OUTPUT: Field = Field::number(
    "output",
    "Weight of output: successes whose result meets the tool's outputSchema",
    WEIGHT,
    Unit::None,
)
.default("0.15");
pub const W_RESILIENCE: Field = Field::number(
    "resilience",
    "Weight of resilience: calls whose reply was lost succeed when retried, and writes take effect once",
    WEIGHT,
    Unit::None,
)
.default("0.1");
const WEIGHT_FIELDS: &[Field] = &[
    W_HYGIENE,
    W_CONTRACT,
    W_LATENCY,
    W_CAPACITY,
    W_OUTPUT,
    W_RESILIENCE,
];

pub const P95_MS: Field = Field::millis(
    "p95_ms",
    "The slowest p95 a tool's baseline may have",
    Number::above_zero(3_600_000.0, " (ms)"),
)
.default("1000");
pub const P99_MS: Field = Field::millis(
    "p99_ms",
    "The slowest p99 a tool's baseline may have (judged only over enough samples)",
    Number::above_zero(3_600_000.0, " (ms)"),
)
.default("2000");
pub const MIN_IN_FLIGHT: Field = Field::number(
    "min_in_flight",
    "The fewest calls in flight a tool must take before its goodput stops rising (judged for tools \
     slower than 5 ms; faster ones measure the transport)",
    Number::from_to(1.0, 256.0).whole(),
    Unit::None,
)
.default("8");
pub const CONTRACT_FAILURES: Field = Field::number(
    "contract_failures",
    "The most contract cases that may go wrong (invalid input accepted, a crash, a hang)",
    Number::from_to(0.0, 1_000_000.0).whole(),
    Unit::None,
)
.default("0");
const THRESHOLD_FIELDS: &[Field] = &[P95_MS, P99_MS, MIN_IN_FLIGHT, CONTRACT_FAILURES];

pub const MIN_LATENCY_SAMPLES: Field = Field::number(
    "latency_samples",
    "Successful baseline calls a tool needs before its latency is scored",
    Number::from_to(1.0, 1_000_000.0).whole(),
    Unit::None,
)
.default("20");
pub const MIN_P99_SAMPLES: Field = Field::number(
    "p99_samples",
    "Successful baseline calls a p99 needs before it is judged",
    Number::from_to(1.0, 1_000_000.0).whole(),
    Unit::None,
)
.default("100");
pub const MIN_CONTRACT_CASES: Field = Field::number(
    "contract_cases",
    "Invalid-input cases the contract needs before it is scored",
    Number::from_to(1.0, 1_000_000.0).whole(),
    Unit::None,
)
.default("10");
pub const MIN_OUTPUT_SAMPLES: Field = Field::number(
    "output_samples",
    "Results checked against an outputSchema before the output is scored",
    Number::from_to(1.0, 1_000_000.0).whole(),
    Unit::None,
)
.default("10");
pub const MIN_LOST_REPLIES: Field = Field::number(
    "lost_replies",
    "Replies the faults phase must have lost before resilience is scored",
    Number::from_to(1.0, 1_000_000.0).whole(),
    Unit::None,
)
.default("5");
pub const MIN_SCORED_WEIGHT: Field = Field::number(
    "scored_weight",
    "The share of the weights the scored dimensions must hold for a score to be given at all",
    Number::from_to(0.0, 1.0),
    Unit::None,
)
.default("0.5");
const EVIDENCE_FIELDS: &[Field] = &[
    MIN_LATENCY_SAMPLES,
    MIN_P99_SAMPLES,
    MIN_CONTRACT_CASES,
    MIN_OUTPUT_SAMPLES,
    MIN_LOST_REPLIES,
    MIN_SCORED_WEIGHT,
];

pub const NAME: Field = Field::text("name", "The policy's name in reports").default("default");
pub const PASS_SCORE: Field = Field::number(
    "pass_score",
    "The lowest score (0 to 100) that passes",
    Number::from_to(0.0, 100.0),
    Unit::None,
)
.default("75");
pub const WEIGHTS: Field = Field::object(
    "weights",
    "Each dimension's weight in the score; they sum to 1",
    WEIGHT_FIELDS,
)
.optional("hygiene 0.15, contract 0.3, latency 0.15, capacity 0.15, output 0.15, resilience 0.1");
pub const THRESHOLDS: Field = Field::object(
    "thresholds",
    "What a pass needs beside the score",
    THRESHOLD_FIELDS,
)
.optional("the defaults of its members");
pub const EVIDENCE: Field = Field::object(
    "evidence",
    "How much a score needs to rest on; a dimension with less is n/a with its reason",
    EVIDENCE_FIELDS,
)
.optional("the defaults of its members");

/// The keys of a policy file, in the order the book lists them.
pub const FIELDS: &[Field] = &[NAME, PASS_SCORE, WEIGHTS, THRESHOLDS, EVIDENCE];

/// A policy, read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Policy {
    pub name: String,
    pub pass_score: f64,
    /// hygiene, contract, latency, capacity, output, resilience.
    pub weights: [f64; 6],
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub min_in_flight: u64,
    pub contract_failures: u64,
    pub min_latency_samples: u64,
    pub min_p99_samples: u64,
    pub min_contract_cases: u64,
    pub min_output_samples: u64,
    pub min_lost_replies: u64,
    pub min_scored_weight: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("policy: cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("policy: {path} is not YAML or JSON: {error}")]
    Syntax { path: String, error: String },
    #[error("policy: {path}: {error}")]
    Field { path: String, error: FieldError },
}

impl Policy {
    /// The built-in policy.
    pub fn builtin() -> Self {
        Self::from_value(&Value::Object(Default::default())).unwrap_or_else(|_| {
            unreachable!("the built-in policy's defaults are read by the same reader")
        })
    }

    /// The policy in `path` (YAML, which covers JSON).
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| PolicyError::Read {
            path: shown.clone(),
            error,
        })?;
        let value: Value = serde_yaml_ng::from_str(&text).map_err(|e| PolicyError::Syntax {
            path: shown.clone(),
            error: e.to_string(),
        })?;
        Self::from_value(&value).map_err(|error| PolicyError::Field { path: shown, error })
    }

    fn from_value(value: &Value) -> Result<Self, FieldError> {
        let Value::Object(members) = value else {
            return Err(FieldError {
                field: "policy".into(),
                message: format!("expected a mapping of {}, got {value}", names(FIELDS)),
            });
        };
        let declared: Vec<&str> = FIELDS.iter().map(|f| f.name).collect();
        if let Some(unknown) = members.keys().find(|k| !declared.contains(&k.as_str())) {
            return Err(FieldError {
                field: unknown.clone(),
                message: unknown_field(unknown, &declared),
            });
        }
        let input = FieldInput::from_arguments(FIELDS, members);
        let empty = || FieldInput::from_arguments(&[], &Default::default());
        let weights = input.object(&WEIGHTS)?;
        let thresholds = input.object(&THRESHOLDS)?.unwrap_or_else(empty);
        let evidence = input.object(&EVIDENCE)?.unwrap_or_else(empty);
        let weights = match &weights {
            Some(given) => {
                let read = [
                    given.number(&W_HYGIENE)?,
                    given.number(&W_CONTRACT)?,
                    given.number(&W_LATENCY)?,
                    given.number(&W_CAPACITY)?,
                    given.number(&W_OUTPUT)?,
                    given.number(&W_RESILIENCE)?,
                ];
                let sum: f64 = read.iter().sum();
                if (sum - 1.0).abs() > 1e-6 {
                    return Err(input.refuse(
                        &WEIGHTS,
                        format!(
                            "sum to {} (a weight left out takes its default); make them sum to 1",
                            (sum * 1000.0).round() / 1000.0
                        ),
                    ));
                }
                read
            }
            None => {
                let defaults = empty();
                [
                    defaults.number(&W_HYGIENE)?,
                    defaults.number(&W_CONTRACT)?,
                    defaults.number(&W_LATENCY)?,
                    defaults.number(&W_CAPACITY)?,
                    defaults.number(&W_OUTPUT)?,
                    defaults.number(&W_RESILIENCE)?,
                ]
            }
        };
        Ok(Self {
            name: input.text(&NAME)?,
            pass_score: input.number(&PASS_SCORE)?,
            weights,
            p95_ms: thresholds.number(&P95_MS)?,
            p99_ms: thresholds.number(&P99_MS)?,
            min_in_flight: thresholds.whole(&MIN_IN_FLIGHT)?,
            contract_failures: thresholds.whole(&CONTRACT_FAILURES)?,
            min_latency_samples: evidence.whole(&MIN_LATENCY_SAMPLES)?,
            min_p99_samples: evidence.whole(&MIN_P99_SAMPLES)?,
            min_contract_cases: evidence.whole(&MIN_CONTRACT_CASES)?,
            min_output_samples: evidence.whole(&MIN_OUTPUT_SAMPLES)?,
            min_lost_replies: evidence.whole(&MIN_LOST_REPLIES)?,
            min_scored_weight: evidence.number(&MIN_SCORED_WEIGHT)?,
        })
    }
}

fn names(fields: &[Field]) -> String {
    fields.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_builtin_policy_is_the_declared_defaults() {
        let policy = Policy::builtin();
        assert_eq!(policy.weights, [0.15, 0.3, 0.15, 0.15, 0.15, 0.1]);
        assert_eq!(policy.pass_score, 75.0);
        assert_eq!(policy.min_p99_samples, 100);
    }

    #[test]
    fn unknown_keys_and_weights_that_do_not_sum_are_refused_by_name() {
        let error = Policy::from_value(&json!({"pass_scor": 80})).unwrap_err();
        assert!(error.to_string().contains("pass_score"), "{error}");
        let error = Policy::from_value(&json!({"thresholds": {"p95": 10}})).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("thresholds: unknown field 'p95'")
                && error.to_string().contains("p95_ms"),
            "{error}"
        );
        let error =
            Policy::from_value(&json!({"weights": {"hygiene": 0.5, "contract": 0.5}})).unwrap_err();
        assert!(
            error.to_string().contains("weights") && error.to_string().contains("sum to 1.5"),
            "{error}"
        );
        let policy = Policy::from_value(&json!({"weights": {"hygiene": 0.2, "contract": 0.2, "latency": 0.2, "capacity": 0.2, "output": 0.1, "resilience": 0.1}})).unwrap();
        assert_eq!(policy.weights, [0.2, 0.2, 0.2, 0.2, 0.1, 0.1]);
    }
}
