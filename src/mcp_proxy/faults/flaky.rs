//! `flaky` (alias `error_injection`): fail a seeded share of calls. The share is the trigger's `probability`
//! (the plan's `fail_rate` or `rate`); the roll is the call's keyed roll, or the roll of `arguments.call_id`
//! when the call carries one, so the same inputs fail on every machine.

use serde::{Deserialize, Serialize};

use super::{Action, CallContext, Failure, Fault};

pub const DEFAULT_CODE: i64 = -32000;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Flaky {
    #[serde(flatten)]
    pub failure: Failure,
}

impl Flaky {
    pub const KEYS: &[&str] = &["as", "code", "message", "category"];
}

impl Fault for Flaky {
    fn describe(&self) -> String {
        "fail the calls whose seeded roll is below the rate".into()
    }

    fn action(&self, call: &CallContext<'_>) -> Action {
        let default_message = format!("flaky failure (roll={:.4})", call.roll);
        Action::Reply {
            after: std::time::Duration::ZERO,
            reply: self.failure.reply(DEFAULT_CODE, &default_message),
            call_upstream: false,
        }
    }
}
