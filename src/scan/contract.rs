//! The contract phase's judgement of one case: what the server did with input its schema forbids (or with
//! an oversized text), and the finding when that was wrong.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{
    Phase,
    calls::{Call, INTERNAL_ERROR, Reply, names_field},
    cases::{Case, CaseKind},
    finding::{Finding, Kind, Severity},
};

/// What the server did with one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CaseOutcome {
    /// Refused, naming the field.
    Refused,
    /// Refused without naming the field.
    RefusedUnnamed,
    /// Accepted input its schema forbids.
    AcceptedInvalid,
    /// Answered input within its schema (an oversized text, an undeclared field the schema allows), taken or
    /// refused.
    Accepted,
    /// An internal error, or the session ended under the call.
    Crashed,
    /// No answer within the call timeout.
    Hung,
}

/// The contract phase's counts, over every case of every tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContractTally {
    pub cases: u64,
    /// Cases whose input the schema forbids.
    pub invalid_cases: u64,
    pub refused: u64,
    pub refused_unnamed: u64,
    pub accepted_invalid: u64,
    pub crashed: u64,
    pub hung: u64,
}

impl ContractTally {
    pub fn add(&mut self, case: &Case, outcome: CaseOutcome) {
        self.cases += 1;
        self.invalid_cases += u64::from(case.invalid);
        match outcome {
            CaseOutcome::Refused => self.refused += 1,
            CaseOutcome::RefusedUnnamed => self.refused_unnamed += 1,
            CaseOutcome::AcceptedInvalid => self.accepted_invalid += 1,
            CaseOutcome::Accepted => {}
            CaseOutcome::Crashed => self.crashed += 1,
            CaseOutcome::Hung => self.hung += 1,
        }
    }

    /// Cases that went wrong in a way a client cannot recover from: invalid input taken, a crash, a hang.
    pub fn failures(&self) -> u64 {
        self.accepted_invalid + self.crashed + self.hung
    }
}

/// The outcome of `case` on `tool`, and its finding when it went wrong.
pub fn judge(
    tool: &str,
    case: &Case,
    made: &Call,
    timeout: Duration,
    reproduce: &str,
) -> (CaseOutcome, Option<Finding>) {
    let field = case.field.as_str();
    let answer = made.reply.describe(timeout);
    let finding = |kind, severity, title: String, fix: String| {
        Finding::new(Phase::Contract, kind, severity, Some(tool), Some(field))
            .title(title)
            .fix(fix)
            .evidence(&made.params, answer.clone())
            .with_reproduce(reproduce)
    };
    match &made.reply {
        Reply::Hang => (
            CaseOutcome::Hung,
            Some(finding(
                Kind::Hang,
                Severity::Critical,
                format!(
                    "`{tool}` hangs on {} in `{field}` ({})",
                    case.kind.name(),
                    case.what
                ),
                format!(
                    "Check `{field}` before doing any work and answer a bad value at once with a tool error naming `{field}`; bound the work a large input can cause."
                ),
            )),
        ),
        Reply::Closed => (
            CaseOutcome::Crashed,
            Some(finding(
                Kind::Crash,
                Severity::Critical,
                format!(
                    "`{tool}` ends the session on {} in `{field}` ({})",
                    case.kind.name(),
                    case.what
                ),
                format!(
                    "Catch the failure `{field}` causes in the handler and answer a tool error naming `{field}`: the server must outlive any input."
                ),
            )),
        ),
        Reply::Error { code, .. } if *code == INTERNAL_ERROR => (
            CaseOutcome::Crashed,
            Some(finding(
                Kind::Crash,
                Severity::Critical,
                format!(
                    "`{tool}` fails with an internal error on {} in `{field}` ({})",
                    case.kind.name(),
                    case.what
                ),
                format!(
                    "Validate `{field}` against the input schema before using it, and refuse a bad value with a tool error (isError) that names `{field}` and what it accepts, instead of failing inside the handler."
                ),
            )),
        ),
        _ if made.reply.is_success() && case.invalid => (
            CaseOutcome::AcceptedInvalid,
            Some(finding(
                Kind::InvalidAccepted,
                Severity::Major,
                format!(
                    "`{tool}` accepts {} in `{field}`: {}",
                    case.kind.name(),
                    case.what
                ),
                fix_for_accepted(field, case.kind),
            )),
        ),
        // Input within the schema (an oversized text, an undeclared member of an open schema) may be taken or
        // refused for the server's own reasons: only a crash or a hang is wrong.
        _ if made.reply.is_success() || !case.invalid => (CaseOutcome::Accepted, None),
        _ if case.kind == CaseKind::Undeclared || names_field(&made.reply.said(), field) => {
            (CaseOutcome::Refused, None)
        }
        _ => (
            CaseOutcome::RefusedUnnamed,
            Some(finding(
                Kind::RefusalNamesNoField,
                Severity::Minor,
                format!(
                    "`{tool}` refuses {} in `{field}` without naming the field",
                    case.kind.name()
                ),
                format!(
                    "Say which field was wrong and what it accepts, e.g. \"`{field}`: {}\": an agent can only correct a call whose error names what to change.",
                    case.what
                ),
            )),
        ),
    }
}

fn fix_for_accepted(field: &str, kind: CaseKind) -> String {
    match kind {
        CaseKind::OutOfRange => format!(
            "Check `{field}` against the bounds the schema declares and refuse a value outside them with a tool error naming `{field}` and the range (or widen the schema, if the value is fine)."
        ),
        CaseKind::WrongType | CaseKind::Null => format!(
            "Check the type of `{field}` and refuse any other with a tool error naming `{field}` (a value coerced or ignored hides the caller's mistake)."
        ),
        CaseKind::MissingRequired => format!(
            "Refuse a call without `{field}` with a tool error naming it, or drop it from `required` if it has a default."
        ),
        CaseKind::NotInEnum => format!(
            "Refuse a `{field}` outside the declared enum with a tool error listing the accepted values."
        ),
        CaseKind::Undeclared => format!(
            "Refuse members the schema does not declare (`{field}` was taken): a misspelt argument should fail loudly, as `additionalProperties: false` promises."
        ),
        CaseKind::Oversized => format!("Bound the length of `{field}`."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn case(kind: CaseKind, invalid: bool) -> Case {
        Case {
            field: "level".into(),
            kind,
            arguments: json!({"level": 11}),
            invalid,
            what: "11 above maximum 10".into(),
        }
    }

    fn made(reply: Reply) -> Call {
        Call {
            params: json!({"name": "set_volume", "arguments": {"level": 11}}),
            reply,
            elapsed_ms: 1.0,
        }
    }

    fn outcome(kind: CaseKind, invalid: bool, reply: Reply) -> (CaseOutcome, Option<&'static str>) {
        let (outcome, finding) = judge(
            "set_volume",
            &case(kind, invalid),
            &made(reply),
            Duration::from_secs(1),
            "",
        );
        (outcome, finding.map(|f| f.kind.name()))
    }

    #[test]
    fn each_reply_is_judged() {
        let ok = Reply::Result(json!({"content": [{"type": "text", "text": "done"}]}));
        let named = Reply::Result(
            json!({"isError": true, "content": [{"type": "text", "text": "`level` must be 0 to 10"}]}),
        );
        let unnamed = Reply::Error {
            code: -32602,
            message: "invalid params".into(),
            data: None,
        };
        let internal = Reply::Error {
            code: INTERNAL_ERROR,
            message: "boom".into(),
            data: None,
        };
        assert_eq!(
            outcome(CaseKind::OutOfRange, true, ok.clone()),
            (CaseOutcome::AcceptedInvalid, Some("invalid-accepted"))
        );
        assert_eq!(
            outcome(CaseKind::Oversized, false, ok),
            (CaseOutcome::Accepted, None)
        );
        assert_eq!(
            outcome(CaseKind::Oversized, false, unnamed.clone()),
            (CaseOutcome::Accepted, None)
        );
        assert_eq!(
            outcome(CaseKind::OutOfRange, true, named),
            (CaseOutcome::Refused, None)
        );
        assert_eq!(
            outcome(CaseKind::OutOfRange, true, unnamed),
            (CaseOutcome::RefusedUnnamed, Some("refusal-names-no-field"))
        );
        assert_eq!(
            outcome(CaseKind::Null, true, internal),
            (CaseOutcome::Crashed, Some("crash"))
        );
        assert_eq!(
            outcome(CaseKind::Null, true, Reply::Closed),
            (CaseOutcome::Crashed, Some("crash"))
        );
        assert_eq!(
            outcome(CaseKind::Null, true, Reply::Hang),
            (CaseOutcome::Hung, Some("hang"))
        );
    }
}
