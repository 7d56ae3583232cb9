//! Head-of-line blocking: whether calls of a fast tool wait behind calls of a slower one. A call of tool T
//! is *behind* a slower call when, at its start, a call of another tool whose p50 is more than
//! [`SLOWER_FACTOR`] × T's p50 was still in flight: on the same client session, or only on another one.
//! Each group's latency is compared with T's calls that started with no such call in flight ("clear").
//! Blocking is called when a group's p50 is [`BLOCKED_RATIO`] × the clear p50 and longer by
//! [`BLOCKED_SHARE`] of the slower tool's p50 at least: a call that waited behind a slower one waits for part of
//! it, and on a loaded machine a fast tool's p50 of a few milliseconds moves by half from noise alone.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::latency::{LatencyFigures, latency};
use super::record::{CallOutcome, CallRecord};
use crate::report::round4;

/// A tool is "slower" than T when its p50 exceeds T's by this factor.
pub const SLOWER_FACTOR: f64 = 2.0;
/// Blocking is reported when calls behind a slower call have a p50 at least this many times the clear p50.
pub const BLOCKED_RATIO: f64 = 1.5;
/// ... and when they took at least this share of the slower tool's p50 longer than the clear calls.
pub const BLOCKED_SHARE: f64 = 0.1;
/// Calls each group needs before a ratio is judged.
pub const MIN_CALLS: u64 = 5;

/// One tool's calls by what was in flight when they started.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ToolHeadOfLine {
    pub tool: String,
    /// Started while a slower tool's call was in flight on the same session.
    pub behind_same_session: LatencyFigures,
    /// Started while a slower tool's call was in flight on another session only.
    pub behind_other_session: LatencyFigures,
    /// Started with no slower call in flight anywhere.
    pub clear: LatencyFigures,
    /// p50 behind a slower call on the same session / clear p50.
    pub same_session_ratio: Option<f64>,
    /// p50 behind a slower call on another session / clear p50.
    pub other_session_ratio: Option<f64>,
}

/// The run's verdict and the figures behind it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct HeadOfLine {
    /// true: slow calls delayed others; false: they did not; null: not measurable in this run.
    pub blocked: Option<bool>,
    /// The verdict in words, with the figure it rests on.
    pub verdict: String,
    /// Tools that have a slower tool to wait behind.
    pub tools: Vec<ToolHeadOfLine>,
}

/// Intervals (start, end) of one tool on one session, sorted by start, with the running maximum end.
struct Intervals {
    starts: Vec<f64>,
    max_end: Vec<f64>,
}

impl Intervals {
    fn new(mut spans: Vec<(f64, f64)>) -> Self {
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut running = f64::MIN;
        let max_end = spans
            .iter()
            .map(|&(_, end)| {
                running = running.max(end);
                running
            })
            .collect();
        Self {
            starts: spans.into_iter().map(|(start, _)| start).collect(),
            max_end,
        }
    }

    /// Whether one of these calls started before `at` and had not ended by then.
    fn in_flight_at(&self, at: f64) -> bool {
        let before = self.starts.partition_point(|&start| start < at);
        before > 0 && self.max_end[before - 1] > at
    }
}

pub fn head_of_line(records: &[CallRecord], p50_by_tool: &HashMap<&str, f64>) -> HeadOfLine {
    if p50_by_tool.len() < 2 {
        return HeadOfLine {
            blocked: None,
            verdict:
                "not measured: one tool was called; mix a fast and a slow tool to see whether slow \
                      calls delay others"
                    .into(),
            tools: Vec::new(),
        };
    }
    // Only calls that were sent can wait behind others.
    let sent: Vec<&CallRecord> = records
        .iter()
        .filter(|r| r.outcome != CallOutcome::NotStarted)
        .collect();
    // (tool, session) → that tool's call intervals on that session.
    let mut spans: BTreeMap<(&str, u32), Vec<(f64, f64)>> = BTreeMap::new();
    for r in &sent {
        spans
            .entry((r.tool.as_str(), r.session))
            .or_default()
            .push((r.start_ms, r.start_ms + r.latency_ms));
    }
    let intervals: Vec<((&str, u32), Intervals)> = spans
        .into_iter()
        .map(|(key, spans)| (key, Intervals::new(spans)))
        .collect();
    let mut tools: Vec<&str> = p50_by_tool.keys().copied().collect();
    tools.sort_unstable();
    // Each tool's figures, with the p50 of the fastest tool slower than it.
    let mut figures = Vec::new();
    for tool in tools {
        let own_p50 = p50_by_tool[tool];
        let slower: Vec<&((&str, u32), Intervals)> = intervals
            .iter()
            .filter(|((other, _), _)| {
                *other != tool && p50_by_tool[other] > SLOWER_FACTOR * own_p50
            })
            .collect();
        let Some(slower_p50) = slower
            .iter()
            .map(|((other, _), _)| p50_by_tool[other])
            .min_by(f64::total_cmp)
        else {
            continue;
        };
        let (mut same, mut other, mut clear) = (Vec::new(), Vec::new(), Vec::new());
        for r in sent.iter().copied().filter(|r| r.tool == tool) {
            let mut on_same = false;
            let mut elsewhere = false;
            for ((_, session), spans) in &slower {
                if spans.in_flight_at(r.start_ms) {
                    if *session == r.session {
                        on_same = true;
                    } else {
                        elsewhere = true;
                    }
                }
            }
            match (on_same, elsewhere) {
                (true, _) => same.push(r),
                (false, true) => other.push(r),
                (false, false) => clear.push(r),
            }
        }
        let behind_same_session = latency(same.into_iter());
        let behind_other_session = latency(other.into_iter());
        let clear = latency(clear.into_iter());
        figures.push((
            ToolHeadOfLine {
                tool: tool.to_owned(),
                same_session_ratio: p50_ratio(&behind_same_session, &clear),
                other_session_ratio: p50_ratio(&behind_other_session, &clear),
                behind_same_session,
                behind_other_session,
                clear,
            },
            slower_p50,
        ));
    }
    verdict(figures)
}

fn p50_ratio(behind: &LatencyFigures, clear: &LatencyFigures) -> Option<f64> {
    if behind.calls < MIN_CALLS || clear.calls < MIN_CALLS {
        return None;
    }
    match (behind.p50_ms, clear.p50_ms) {
        (Some(b), Some(c)) if c > 0.0 => Some(round4(b / c)),
        _ => None,
    }
}

/// One group of a tool's calls behind a slower call, against its clear calls.
struct Behind<'a> {
    tool: &'a str,
    place: &'static str,
    ratio: f64,
    /// p50 behind − p50 clear.
    longer_ms: f64,
    /// The p50 of the fastest tool slower than this one.
    slower_p50_ms: f64,
}

impl Behind<'_> {
    fn blocked(&self) -> bool {
        self.ratio >= BLOCKED_RATIO && self.longer_ms >= BLOCKED_SHARE * self.slower_p50_ms
    }
}

/// Each tool's figures with the p50 of the fastest tool slower than it.
fn verdict(figures: Vec<(ToolHeadOfLine, f64)>) -> HeadOfLine {
    let groups: Vec<Behind> = figures
        .iter()
        .flat_map(|(t, slower_p50)| {
            [
                (
                    t.same_session_ratio,
                    &t.behind_same_session,
                    "the same session",
                ),
                (
                    t.other_session_ratio,
                    &t.behind_other_session,
                    "another session",
                ),
            ]
            .into_iter()
            .filter_map(move |(ratio, behind, place)| {
                Some(Behind {
                    tool: t.tool.as_str(),
                    place,
                    ratio: ratio?,
                    longer_ms: behind.p50_ms? - t.clear.p50_ms?,
                    slower_p50_ms: *slower_p50,
                })
            })
        })
        .collect();
    let by_ratio = |a: &&Behind, b: &&Behind| a.ratio.total_cmp(&b.ratio);
    let worst_blocked = groups.iter().filter(|g| g.blocked()).max_by(by_ratio);
    let worst = groups.iter().max_by(by_ratio);
    let (blocked, verdict) = match (worst_blocked, worst) {
        (Some(g), _) => (
            Some(true),
            format!(
                "yes: `{}` calls started while a slower call was in flight on {} took {}× the p50 of its calls \
                 that started clear of one ({:.2} ms longer)",
                g.tool, g.place, g.ratio, g.longer_ms
            ),
        ),
        (None, Some(g)) if g.ratio >= BLOCKED_RATIO => (
            Some(false),
            format!(
                "no: at worst `{}` calls behind a slower call on {} took {}× the p50 of its clear calls, but \
                 only {:.2} ms longer, under {BLOCKED_SHARE} of the slower tool's p50 ({:.2} ms): too little to \
                 have waited for it",
                g.tool, g.place, g.ratio, g.longer_ms, g.slower_p50_ms
            ),
        ),
        (None, Some(g)) => (
            Some(false),
            format!(
                "no: at worst `{}` calls behind a slower call on {} took {}× the p50 of its clear calls \
                 (blocking is called from {BLOCKED_RATIO}×)",
                g.tool, g.place, g.ratio
            ),
        ),
        (None, None) if figures.is_empty() => (
            None,
            "not measured: every tool's p50 is within 2× of the others'".to_owned(),
        ),
        (None, None) => (
            None,
            format!(
                "not measured: fewer than {MIN_CALLS} calls of a faster tool started both behind a slower \
                 call and clear of one"
            ),
        ),
    };
    HeadOfLine {
        blocked,
        verdict,
        tools: figures.into_iter().map(|(tool, _)| tool).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, session: u32, start_ms: f64, latency_ms: f64) -> CallRecord {
        CallRecord::of(tool, start_ms, CallOutcome::Ok)
            .latency_ms(latency_ms)
            .session(session)
    }

    fn p50s(records: &[CallRecord]) -> HashMap<&str, f64> {
        let mut by_tool: HashMap<&str, Vec<f64>> = HashMap::new();
        for r in records {
            by_tool.entry(&r.tool).or_default().push(r.latency_ms);
        }
        by_tool
            .into_iter()
            .map(|(tool, mut v)| {
                v.sort_by(f64::total_cmp);
                (tool, v[v.len() / 2])
            })
            .collect()
    }

    /// A serial server: fast calls started during a slow call on their session wait for it.
    #[test]
    fn fast_calls_queued_behind_slow_ones_on_a_session_are_blocking() {
        let mut records = Vec::new();
        for cycle in 0..10 {
            let t = f64::from(cycle) * 1000.0;
            records.push(call("slow", 0, t, 300.0));
            records.push(call("fast", 0, t + 100.0, 202.0)); // waited until the slow call ended
            for k in 0..3 {
                records.push(call("fast", 0, t + 400.0 + f64::from(k) * 100.0, 2.0));
            }
        }
        let hol = head_of_line(&records, &p50s(&records));
        assert_eq!(hol.blocked, Some(true), "{}", hol.verdict);
        let fast = &hol.tools[0];
        assert_eq!(fast.tool, "fast");
        assert_eq!(fast.behind_same_session.calls, 10);
        assert_eq!(fast.clear.calls, 30);
        assert!(hol.verdict.starts_with("yes: `fast`"), "{}", hol.verdict);
        assert!(hol.verdict.contains("the same session"), "{}", hol.verdict);
        assert!(
            hol.verdict.ends_with("(200.05 ms longer)"),
            "{}",
            hol.verdict
        );
    }

    /// Slow calls on another session only, fast calls unaffected: no blocking, and the other-session group.
    #[test]
    fn slow_calls_elsewhere_that_do_not_delay_are_not_blocking() {
        let mut records = Vec::new();
        for cycle in 0..10 {
            let t = f64::from(cycle) * 1000.0;
            records.push(call("slow", 1, t, 300.0));
            records.push(call("fast", 0, t + 100.0, 2.1));
            for k in 0..3 {
                records.push(call("fast", 0, t + 400.0 + f64::from(k) * 100.0, 2.0));
            }
        }
        let hol = head_of_line(&records, &p50s(&records));
        assert_eq!(hol.blocked, Some(false), "{}", hol.verdict);
        assert_eq!(hol.tools[0].behind_other_session.calls, 10);
        assert_eq!(hol.tools[0].behind_same_session.calls, 0);
    }

    /// A concurrent server on a loaded machine: fast calls started during a slow call take 1.55× the clear
    /// ones' p50, but under 2 ms more, where waiting for any part of a 106 ms call would add more than 10 ms.
    #[test]
    fn a_few_milliseconds_more_behind_a_much_slower_call_are_not_blocking() {
        let mut records = Vec::new();
        for cycle in 0..10 {
            let t = f64::from(cycle) * 400.0;
            records.push(call("slow", 0, t, 106.0));
            records.push(call("fast", 0, t + 50.0, 5.22));
            for k in 0..3 {
                records.push(call("fast", 0, t + 150.0 + f64::from(k) * 50.0, 3.37));
            }
        }
        let hol = head_of_line(&records, &p50s(&records));
        assert_eq!(hol.blocked, Some(false), "{}", hol.verdict);
        assert_eq!(hol.tools[0].same_session_ratio, Some(1.549));
        assert_eq!(
            hol.verdict,
            "no: at worst `fast` calls behind a slower call on the same session took 1.549× the p50 of its \
             clear calls, but only 1.85 ms longer, under 0.1 of the slower tool's p50 (106.00 ms): too little \
             to have waited for it"
        );
    }

    #[test]
    fn one_tool_is_not_measured() {
        let records = vec![call("slow", 0, 0.0, 300.0)];
        let hol = head_of_line(&records, &p50s(&records));
        assert_eq!(hol.blocked, None);
        assert!(hol.verdict.starts_with("not measured"));
    }
}
