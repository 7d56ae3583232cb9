//! Every figure of one run, from its call records: per tool and overall, tasks, each second, head-of-line
//! blocking, the call timeline and the judgement.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::head_of_line::{HeadOfLine, head_of_line};
use super::judgement::{Judgement, judge};
use super::mcp_tasks;
use super::record::{CallOutcome, CallRecord, Hints, infer_logical};
use super::task_figures::{TaskFigures, task_figures};
use super::timeline::{CallTimeline, timeline};
use super::tool_figures::{ToolFigures, tool_figures};
use crate::report::{
    SecondFigures, latency_histogram, ms, quantile, record_ms, round2, sparklines,
};

/// Every figure of one run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChaosFigures {
    pub duration_ms: f64,
    pub overall: ToolFigures,
    pub tools: Vec<ToolFigures>,
    pub tasks: TaskFigures,
    /// Calls per second of the run: `requests` are calls started that second, `errors` those that failed.
    pub per_second: Vec<SecondFigures>,
    /// p50 and p95 per second as Unicode blocks, on one scale.
    pub sparkline_p50: String,
    pub sparkline_p95: String,
    /// Calls that were due while every in-flight slot of their client was busy, so never started
    /// (open-model schedules only).
    pub not_started: u64,
    /// Whether slow calls delayed others.
    pub head_of_line: HeadOfLine,
    /// Every call as a mark per tool, coloured by how it ended (bounded: the most severe call of each tool
    /// per column of the run).
    #[serde(default)]
    pub timeline: CallTimeline,
    /// How the client handled the failures: what it did after each, a verdict per tool and for the run.
    #[serde(default)]
    pub judgement: Judgement,
    /// How the tasks of the MCP Tasks extension ended, per tool whose call made them (a proxy session's; empty
    /// when no call was answered with a task).
    #[serde(default)]
    pub mcp_tasks: Vec<mcp_tasks::McpTaskFigures>,
}

/// Every figure of a run from its records (records without [`super::record::Logical`] get one inferred),
/// judged with the tools' annotations.
pub fn figures(mut records: Vec<CallRecord>, duration_ms: f64, hints: &Hints) -> ChaosFigures {
    infer_logical(&mut records);
    let judgement = judge(&records, hints);
    let all: Vec<&CallRecord> = records.iter().collect();
    let overall = tool_figures("(all)", &all);
    let not_started = overall.outcomes.not_started;
    let mut names: Vec<&str> = records.iter().map(|r| r.tool.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let tools: Vec<ToolFigures> = names
        .iter()
        .map(|name| {
            let mine: Vec<&CallRecord> = records.iter().filter(|r| r.tool == *name).collect();
            tool_figures(name, &mine)
        })
        .collect();
    let p50_by_tool = tools
        .iter()
        .filter_map(|t| Some((t.tool.as_str(), t.latency.p50_ms?)))
        .collect();
    let head_of_line = head_of_line(&records, &p50_by_tool);
    let seconds = records
        .iter()
        .map(|r| (r.start_ms.max(0.0) / 1000.0) as usize + 1)
        .max()
        .unwrap_or(0);
    let mut buckets: Vec<(u64, u64, u64, hdrhistogram::Histogram<u64>)> = (0..seconds)
        .map(|_| (0, 0, 0, latency_histogram()))
        .collect();
    for r in &records {
        let (calls, failed, timed_out, h) = &mut buckets[(r.start_ms.max(0.0) / 1000.0) as usize];
        *calls += 1;
        *failed += u64::from(r.outcome != CallOutcome::Ok);
        *timed_out += u64::from(r.outcome == CallOutcome::Timeout);
        record_ms(h, r.latency_ms);
    }
    let per_second: Vec<SecondFigures> = buckets
        .iter()
        .enumerate()
        .map(|(second, (calls, failed, timed_out, h))| {
            let at = |q: f64| (*calls > 0).then(|| ms(quantile(h, q)));
            SecondFigures {
                second: second as u32,
                requests: *calls,
                errors: *failed,
                timeouts: *timed_out,
                p50_ms: at(0.50),
                p95_ms: at(0.95),
                p99_ms: at(0.99),
                offered: None,
                achieved: None,
            }
        })
        .collect();
    let (sparkline_p50, sparkline_p95) = sparklines(&per_second);
    ChaosFigures {
        timeline: timeline(&records, duration_ms),
        duration_ms: round2(duration_ms),
        tasks: task_figures(&records),
        overall,
        tools,
        per_second,
        sparkline_p50,
        sparkline_p95,
        not_started,
        head_of_line,
        judgement,
        mcp_tasks: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(index: u64, attempt: u32, start: f64, outcome: CallOutcome, fault: bool) -> CallRecord {
        CallRecord::of("search", start, outcome)
            .latency_ms(100.0)
            .queueing_and_service_ms(0.0, 100.0)
            .fault(fault.then_some("hang"))
            .cancel_after_ms((outcome == CallOutcome::Timeout).then_some(100.0))
            .logical(index, attempt, "t")
    }

    #[test]
    fn three_failures_then_a_success_recover_in_three_calls() {
        let records = vec![
            call(0, 1, 0.0, CallOutcome::Timeout, true),
            call(0, 2, 100.0, CallOutcome::Timeout, true),
            call(0, 3, 200.0, CallOutcome::Timeout, true),
            call(0, 4, 300.0, CallOutcome::Ok, false),
        ];
        let f = figures(records, 400.0, &Hints::new());
        let c = &f.overall.client;
        assert_eq!((c.retries, c.recoveries, c.unrecovered), (3, 1, 0));
        assert_eq!(c.recovery_max_calls, Some(3));
        assert_eq!(c.recovery_max_ms, Some(400.0));
        assert_eq!((c.runaway, c.duplicates, c.cancels), (1, 3, 3));
        assert_eq!(f.overall.availability, 0.25);
        assert_eq!(f.overall.success_after_retries, 1.0);
        assert_eq!(f.tasks.blast_radius, 0.0);
        assert_eq!(f.tasks.calls_per_task, 4.0);
        assert_eq!(f.overall.faults_by_type.get("hang"), Some(&3));
        assert_eq!(f.overall.latency_injected.calls, 3);
        assert_eq!(f.overall.latency.p50_ms, Some(100.0));
        assert_eq!(f.overall.service.p50_ms, Some(100.0));
        assert_eq!(f.overall.queueing.max_ms, Some(0.0));
        assert_eq!(f.per_second[0].p95_ms, Some(100.0));
    }
}
