//! `numeric_drift`: every number of the result is multiplied by one factor, drawn per call from the seeded
//! roll between 1 − `max_drift` and 1 + `max_drift` (at least `min_drift` away from 1), in `structuredContent`
//! and in JSON text alike. An integer stays an integer (rounded) and a sign never changes, so the result still
//! validates against an `outputSchema` that constrains types and signs; only meaning tells.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use super::{Action, CallContext, FaultError, McpFaultSpec, edit_payloads};

fn half() -> f64 {
    0.5
}

fn tenth() -> f64 {
    0.1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NumericDrift {
    /// The largest relative change, above 0 and below 1 (0.5: a factor between 0.5 and 1.5).
    #[serde(default = "half")]
    pub max_drift: f64,
    /// The smallest relative change, 0 to `max_drift` (0.1).
    #[serde(default = "tenth")]
    pub min_drift: f64,
}

impl NumericDrift {
    /// The call's factor: a drift between `min_drift` and `max_drift`, up or down, from its seeded rolls.
    fn factor(&self, call: &CallContext<'_>) -> f64 {
        let size =
            self.min_drift + (self.max_drift - self.min_drift) * call.roll_for("numeric_drift");
        if call.roll_for("numeric_drift/sign") < 0.5 {
            1.0 - size
        } else {
            1.0 + size
        }
    }
}

fn drift(value: &mut Value, factor: f64) {
    match value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                *n = Number::from((i as f64 * factor).round() as i64);
            } else if let Some(u) = n.as_u64() {
                *n = Number::from((u as f64 * factor).round() as u64);
            } else if let Some(scaled) = n.as_f64().and_then(|f| Number::from_f64(f * factor)) {
                *n = scaled;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| drift(v, factor)),
        Value::Object(map) => map.values_mut().for_each(|v| drift(v, factor)),
        _ => {}
    }
}

impl McpFaultSpec for NumericDrift {
    fn wire() -> &'static str {
        "every number in `structuredContent` and JSON text times one factor per call, 1 ± a drift between \
        `min_drift` (0.1) and `max_drift` (0.5) from the seeded roll; integers stay integers, signs stay"
    }

    fn validate(&self) -> Result<(), FaultError> {
        if !(self.max_drift > 0.0 && self.max_drift < 1.0) {
            return Err(FaultError::Value {
                field: "max_drift",
                rule: "be above 0 and below 1",
                got: self.max_drift.to_string(),
            });
        }
        if !(0.0..=self.max_drift).contains(&self.min_drift) {
            return Err(FaultError::Value {
                field: "min_drift",
                rule: "be between 0 and max_drift",
                got: self.min_drift.to_string(),
            });
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "multiply every number by 1 ± {}..{}",
            self.min_drift, self.max_drift
        )
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Rewrite
    }

    fn rewrite(&self, response: &mut Value, call: &CallContext<'_>) {
        let factor = self.factor(call);
        edit_payloads(response, |payload| drift(payload, factor));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_drift_by_one_factor_keeping_integers_and_signs() {
        let fault = NumericDrift {
            max_drift: 0.5,
            min_drift: 0.5,
        };
        let call = CallContext::for_tool("get_item", 1).seed(1);
        let factor = fault.factor(&call);
        assert!(factor == 0.5 || factor == 1.5, "{factor}");
        let mut response = json!({"result": {"structuredContent": {"id": 10, "price": 2.0, "delta": -4, "name": "x"}}});
        fault.rewrite(&mut response, &call);
        let drifted = &response["result"]["structuredContent"];
        assert_eq!(drifted["id"], json!((10.0 * factor).round() as u64));
        assert_eq!(drifted["price"], json!(2.0 * factor));
        assert_eq!(drifted["delta"], json!((-4.0 * factor).round() as i64));
        assert_eq!(drifted["name"], "x");
    }
}
