//! The faults of a scenario: one fault's tool, or the compound tool's `faults` list, each item read by the
//! reader of the fault its `type` names.

use rmcp::model::JsonObject;

use serde_json::Value;

use crate::{
    fields::{FieldInput, closest},
    impact::{ImpactSpec, Limits},
    proxy::{
        TcpFault,
        faults::{self, EachFault, TcpFaultSpec},
    },
};

use super::common::read_common;
use super::*;

/// The scenario of a call of fault `S`'s tool: the fault's fields first (read by the fault's own reader, as
/// `fault run` reads its flags), then the common fields.
pub(in crate::mcp) fn impact_spec<S: TcpFaultSpec>(
    args: &JsonObject,
    limits: &Limits,
) -> Result<(ImpactSpec, RunFiles), InputError> {
    let input = FieldInput::from_arguments(&faults::fields::<S>(), args);
    let fault: TcpFault = faults::read_fault::<S>(&input).map_err(|e| bad(e.field, e.message))?;
    read_common(args, vec![fault], |_| "sched".to_owned(), limits)
}

/// Faults the compound tool takes at most.
pub(in crate::mcp) const MAX_FAULTS: usize = 10;

/// The kinds of every registered TCP fault, in registration order.
pub(in crate::mcp) fn kinds() -> Vec<&'static str> {
    struct Kinds(Vec<&'static str>);
    impl EachFault for Kinds {
        fn fault<S: TcpFaultSpec>(&mut self) {
            self.0.push(S::KIND);
        }
    }
    let mut kinds = Kinds(Vec::new());
    faults::for_each(&mut kinds);
    kinds.0
}

/// Reads one item of `faults` with the reader of the fault its `type` names.
pub(in crate::mcp) struct ReadItem<'a> {
    kind: &'a str,
    item: &'a JsonObject,
    read: Option<Result<TcpFault, crate::fields::FieldError>>,
}

impl EachFault for ReadItem<'_> {
    fn fault<S: TcpFaultSpec>(&mut self) {
        if self.read.is_none() && S::KIND == self.kind {
            let input = FieldInput::from_arguments(&faults::fields::<S>(), self.item);
            self.read = Some(faults::read_fault::<S>(&input));
        }
    }
}

/// The scenario of a call of the compound tool: each item of `faults` read by the reader of its `type` (the
/// fault's own fields and where and when it acts, as its own tool reads them), then the common fields.
pub(in crate::mcp) fn compound_spec(
    args: &JsonObject,
    limits: &Limits,
) -> Result<(ImpactSpec, RunFiles), InputError> {
    let items = match args.get("faults") {
        Some(Value::Array(items)) if (1..=MAX_FAULTS).contains(&items.len()) => items,
        Some(Value::Array(items)) => {
            return Err(bad(
                "faults",
                format!(
                    "{} faults; give between 1 and {MAX_FAULTS}, e.g. [{{\"type\": \"latency\", \"latency\": 300}}]",
                    items.len()
                ),
            ));
        }
        _ => {
            return Err(bad(
                "faults",
                "is required: a list of faults, each an object whose `type` is one of the TCP faults, e.g. \
                 [{\"type\": \"latency\", \"latency\": 300, \"sched\": \"start:2s,duration:3s\"}]",
            ));
        }
    };
    let known = kinds();
    let mut faults = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = format!("faults[{index}]");
        let Value::Object(item) = item else {
            return Err(bad(
                at,
                "expected an object with `type` (the fault) and its fields",
            ));
        };
        let kind = match item.get("type") {
            Some(Value::String(kind)) if !kind.trim().is_empty() => kind.trim(),
            _ => {
                return Err(bad(
                    format!("{at}.type"),
                    format!("is required: one of {}", known.join(", ")),
                ));
            }
        };
        let mut reader = ReadItem {
            kind,
            item,
            read: None,
        };
        faults::for_each(&mut reader);
        let Some(read) = reader.read else {
            let hint = closest(kind, known.iter().copied())
                .map(|name| format!("; did you mean '{name}'?"))
                .unwrap_or_default();
            return Err(bad(
                format!("{at}.type"),
                format!("unknown fault '{kind}'{hint} (one of {})", known.join(", ")),
            ));
        };
        faults.push(read.map_err(|e| bad(format!("{at}.{}", e.field), e.message))?);
    }
    read_common(
        args,
        faults,
        |index| format!("faults[{index}].sched"),
        limits,
    )
}
