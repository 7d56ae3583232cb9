//! The calls of a run as marks on a per-tool timeline, for the chart: each call a mark coloured by how it
//! ended. A long run has more calls than a chart has pixels, so calls are grouped per tool and per column of
//! [`COLUMNS`] across the run, and a group keeps its most severe call: the size stays bounded whatever the
//! run's length or rate.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::record::{CallOutcome, CallRecord};
use crate::report::round2;

/// Columns across the run: about one per 2 pixels of an 800-pixel-wide chart.
pub const COLUMNS: usize = 320;
/// Tools with a row of their own; the calls of any further tool share the last row.
pub const MAX_TOOLS: usize = 12;
/// The row name of the calls of tools beyond [`MAX_TOOLS`].
pub const OTHER_TOOLS: &str = "(other tools)";

/// How a call ended, as the timeline colours it; ordered from the least to the most severe.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MarkKind {
    /// A valid result at the first attempt.
    Ok,
    /// A valid result after one or more retries.
    OkAfterRetry,
    /// A result invalid against the tool's `outputSchema`.
    SchemaInvalid,
    /// An error (isError, JSON-RPC error, malformed answer) no fault was injected into.
    Error,
    /// An error the proxy injected.
    InjectedError,
    /// No answer in time, and nothing released it.
    Timeout,
    /// A hang released by the client's cancel.
    Cancelled,
    /// Due while every in-flight slot of its client was busy: never sent.
    NotStarted,
}

impl MarkKind {
    fn of(record: &CallRecord) -> Self {
        let retried = record.logical.as_ref().is_some_and(|l| l.attempt > 1);
        match record.outcome {
            CallOutcome::Ok if retried => MarkKind::OkAfterRetry,
            CallOutcome::Ok => MarkKind::Ok,
            CallOutcome::SchemaInvalid => MarkKind::SchemaInvalid,
            CallOutcome::ToolError | CallOutcome::ProtocolError | CallOutcome::Malformed => {
                if record.fault.is_some() {
                    MarkKind::InjectedError
                } else {
                    MarkKind::Error
                }
            }
            CallOutcome::Timeout if record.cancel_after_ms.is_some() => MarkKind::Cancelled,
            CallOutcome::Timeout => MarkKind::Timeout,
            CallOutcome::NotStarted => MarkKind::NotStarted,
        }
    }

    /// Every kind, in order of severity.
    pub const ALL: [MarkKind; 8] = [
        MarkKind::Ok,
        MarkKind::OkAfterRetry,
        MarkKind::SchemaInvalid,
        MarkKind::Error,
        MarkKind::InjectedError,
        MarkKind::Timeout,
        MarkKind::Cancelled,
        MarkKind::NotStarted,
    ];

    /// The legend's words.
    pub fn label(self) -> &'static str {
        match self {
            MarkKind::Ok => "ok",
            MarkKind::OkAfterRetry => "ok after retry",
            MarkKind::SchemaInvalid => "schema-invalid",
            MarkKind::Error => "error",
            MarkKind::InjectedError => "injected error",
            MarkKind::Timeout => "timeout",
            MarkKind::Cancelled => "hang released by cancel",
            MarkKind::NotStarted => "not started",
        }
    }
}

/// One mark: a call, or the most severe of the calls of one tool in one column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallMark {
    /// Index into [`CallTimeline::tools`].
    pub tool: usize,
    /// When the call was due, from the start of the run.
    pub start_ms: f64,
    pub latency_ms: f64,
    pub kind: MarkKind,
    /// Calls of this tool in this column (the mark shows the most severe).
    pub calls: u64,
}

/// The per-tool timeline of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallTimeline {
    /// Row names, in order: tools by name, then [`OTHER_TOOLS`] when there were more than [`MAX_TOOLS`].
    pub tools: Vec<String>,
    /// At most one mark per tool row and column, in start order.
    pub marks: Vec<CallMark>,
}

/// The timeline of `records` over a run of `duration_ms`.
pub fn timeline(records: &[CallRecord], duration_ms: f64) -> CallTimeline {
    let mut names: Vec<&str> = records.iter().map(|r| r.tool.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let mut tools: Vec<String> = names
        .iter()
        .take(MAX_TOOLS)
        .map(|s| (*s).to_owned())
        .collect();
    if names.len() > MAX_TOOLS {
        tools.push(OTHER_TOOLS.to_owned());
    }
    let row = |name: &str| names.binary_search(&name).map_or(0, |i| i.min(MAX_TOOLS));
    let span = records
        .iter()
        .map(|r| r.start_ms)
        .fold(duration_ms, f64::max)
        .max(1.0);
    let column = |start: f64| ((start.max(0.0) / span * COLUMNS as f64) as usize).min(COLUMNS - 1);
    let mut cells: BTreeMap<(usize, usize), CallMark> = BTreeMap::new();
    for r in records {
        let kind = MarkKind::of(r);
        let mark = CallMark {
            tool: row(&r.tool),
            start_ms: round2(r.start_ms),
            latency_ms: round2(r.latency_ms),
            kind,
            calls: 1,
        };
        cells
            .entry((column(r.start_ms), mark.tool))
            .and_modify(|kept| {
                let calls = kept.calls + 1;
                if (mark.kind, mark.latency_ms) > (kept.kind, kept.latency_ms) {
                    *kept = mark.clone();
                }
                kept.calls = calls;
            })
            .or_insert(mark);
    }
    CallTimeline {
        tools,
        marks: cells.into_values().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, start_ms: f64, outcome: CallOutcome) -> CallRecord {
        CallRecord::of(tool, start_ms, outcome)
    }

    #[test]
    fn an_hour_of_calls_keeps_at_most_one_mark_per_tool_and_column() {
        // 1 h at 100 calls per second over 3 tools, one timeout in the middle.
        let mut records: Vec<CallRecord> = (0..360_000u64)
            .map(|i| {
                call(
                    ["a", "b", "c"][(i % 3) as usize],
                    i as f64 * 10.0,
                    CallOutcome::Ok,
                )
            })
            .collect();
        records[180_001].outcome = CallOutcome::Timeout;
        let t = timeline(&records, 3_600_000.0);
        assert_eq!(t.tools, ["a", "b", "c"]);
        assert!(t.marks.len() <= 3 * COLUMNS, "{}", t.marks.len());
        assert_eq!(t.marks.iter().map(|m| m.calls).sum::<u64>(), 360_000);
        let worst: Vec<&CallMark> = t.marks.iter().filter(|m| m.kind != MarkKind::Ok).collect();
        assert_eq!(worst.len(), 1);
        assert_eq!((worst[0].kind, worst[0].tool), (MarkKind::Timeout, 1));
    }

    #[test]
    fn tools_beyond_the_cap_share_one_row() {
        let records: Vec<CallRecord> = (0..20)
            .map(|i| call(&format!("tool{i:02}"), f64::from(i), CallOutcome::Ok))
            .collect();
        let t = timeline(&records, 20.0);
        assert_eq!(t.tools.len(), MAX_TOOLS + 1);
        assert_eq!(t.tools.last().map(String::as_str), Some(OTHER_TOOLS));
        assert!(t.marks.iter().all(|m| m.tool <= MAX_TOOLS));
    }
}
