//! Markdown rendering of a [`CapacityReport`]: the verdict first, then each side's steps.

use std::fmt::Write;

use super::report::CapacityReport;
use super::sides::SideFigures;
use super::steps::{MAX_SHORTFALL_PERCENT, StepPart};

fn rate(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |rate| format!("{rate} req/s"))
}

fn side_section(out: &mut String, side: &SideFigures) {
    let _ = writeln!(out, "## {}\n", capitalised(&side.name));
    let _ = writeln!(
        out,
        "| Capacity | First break | Knee (p99 ×2) | Steps |\n|---|---|---|---|\n| {} | {} | {} | {} |\n",
        side.capacity_text(),
        rate(side.first_break_rps),
        rate(side.knee_rps),
        side.steps.len()
    );
    let _ = writeln!(out, "{}\n", side.stopped);
    if side.steps.is_empty() {
        return;
    }
    out.push_str(
        "| Step | Part | Offered (req/s) | Achieved (req/s) | p50 (ms) | p95 (ms) | p99 (ms) | Errors | SLOs | Verdict |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for step in &side.steps {
        let slos = step
            .slos
            .iter()
            .map(|slo| format!("{} {}", if slo.passed { "✅" } else { "❌" }, slo.name))
            .collect::<Vec<_>>()
            .join(", ");
        let verdict = if step.held() {
            "held".to_owned()
        } else {
            format!(
                "broke: {}",
                step.breaks
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        };
        let part = match step.part {
            StepPart::Climb => "climb",
            StepPart::Refine => "refine",
        };
        let _ = writeln!(
            out,
            "| {} | {part} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} ({:.2}%) | {slos} | {verdict} |",
            step.number,
            step.offered_rps,
            step.achieved_rps,
            step.p50_ms,
            step.p95_ms,
            step.p99_ms,
            step.errors,
            step.error_percent,
        );
    }
    out.push('\n');
}

/// `value` with at most two decimals and no trailing zeros: "2", "1.5".
fn trimmed(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// The report as markdown.
pub fn render(report: &CapacityReport) -> String {
    let mut out = String::with_capacity(4096);
    let _ = writeln!(out, "# {}\n", report.title);
    let _ = writeln!(out, "**{}**\n", report.summary());
    let call = &report.call;
    let _ = writeln!(
        out,
        "{} {} · timeout {} ms · from {} to {}\n",
        call.method, call.url, call.timeout_ms, report.started_at, report.ended_at
    );
    let search = &report.search;
    let _ = writeln!(
        out,
        "Search: from {} req/s, ×{} per step, up to {} req/s; {} s per step; refined until the first break is \
         within {}% of the last rate that held; error budget {}%.\n",
        search.start_rps,
        trimmed(search.growth),
        search.max_rps,
        search.step_duration_s,
        search.precision_percent,
        search.error_budget_percent,
    );
    let slos = report
        .slos
        .iter()
        .map(|slo| slo.name())
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(out, "SLOs: {slos}.\n");
    if report.faults.is_empty() {
        out.push_str("Faults: none.\n\n");
    } else {
        out.push_str("Faults, held for the whole of each step with them:\n\n");
        for fault in &report.faults {
            let _ = writeln!(out, "- {}: {}", fault.kind, fault.description);
        }
        out.push('\n');
    }
    for side in report.sides() {
        side_section(&mut out, side);
    }
    for note in &report.notes {
        let _ = writeln!(out, "> {note}\n");
    }
    let _ = writeln!(
        out,
        "A step breaks when an SLO is missed, its errors are over the budget, or the rate achieved (answers \
         per second, from the step's second second on) falls more than {MAX_SHORTFALL_PERCENT}% short of the \
         rate offered. The capacity is the highest rate that held below the lowest that broke; the knee, the \
         first step (by rate) whose p99 is at least twice the first step's."
    );
    out
}
