//! The scan's result: one model, written as the versioned JSON, the markdown the tool answers with and the
//! command prints, the fix guide and the JUnit file.

use serde::{Deserialize, Serialize};

use super::{
    Phase,
    contract::ContractTally,
    finding::Finding,
    load::{Latency, Saturation},
    verdict::Verdict,
};

/// Version of the result's JSON; a previous result of another version is refused.
pub const SCHEMA_VERSION: u32 = 1;
/// What the result is, for readers holding several kinds of result.
pub const KIND: &str = "mcp-scan";

/// A scanned tool's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolFigures {
    pub name: String,
    pub read_only: bool,
    /// Where its valid arguments came from: "given" or "built from the input schema".
    pub arguments_from: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Latency>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saturation: Option<Saturation>,
    /// Contract cases run on it.
    pub contract_cases: u64,
}

/// A listed tool the scan did not call, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LeftOut {
    pub tool: String,
    pub reason: String,
}

/// One phase as it ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseRun {
    pub phase: Phase,
    pub ran: bool,
    pub calls: u64,
    pub seconds: f64,
    /// Why it did not run, or where it stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What changed since the previous scan, by finding id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SinceLast {
    pub previous_started_at: String,
    pub fixed: Vec<Finding>,
    pub new: Vec<String>,
    pub unchanged: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScanReport {
    pub schema_version: u32,
    pub kind: String,
    /// The server as the scan names it (a command line, or a URL with header names only).
    pub server: String,
    pub started_at: String,
    pub ended_at: String,
    pub seconds: f64,
    /// Every call the scan made.
    pub calls: u64,
    pub tools_listed: usize,
    pub tools: Vec<ToolFigures>,
    pub left_out: Vec<LeftOut>,
    pub phases: Vec<PhaseRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract: Option<ContractTally>,
    /// Each tool's calls in the faults phase.
    #[serde(default)]
    pub faults: Vec<super::faults::FaultFigures>,
    /// Worst first.
    pub findings: Vec<Finding>,
    pub verdict: Verdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since_last: Option<SinceLast>,
    /// Why the scan stopped before its end (`scan_timeout`), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// The result's JSON Schema, published in the book (`docs/src/schemas/scan-result.json`) and given as the tool's
/// `outputSchema`.
pub fn result_schema() -> serde_json::Value {
    serde_json::Value::Object(
        (*rmcp::handler::server::common::schema_for_output::<ScanReport>()).clone(),
    )
}

fn ms(value: Option<f64>) -> String {
    value.map_or("n/a".to_owned(), |v| format!("{v:.1}"))
}

impl ScanReport {
    /// The report as markdown: verdict, phases, tools, findings.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let verdict = &self.verdict;
        out.push_str(&format!("# MCP scan: {}\n\n", self.server));
        out.push_str(&format!(
            "**Verdict: {}**{} (policy `{}`, pass at {}). {} calls in {:.1} s; {} tools listed, {} scanned.\n\n",
            verdict.outcome.name().to_uppercase(),
            verdict
                .score
                .map_or(String::new(), |s| format!(", score {s:.0}/100")),
            verdict.policy.name,
            verdict.policy.pass_score,
            self.calls,
            self.seconds,
            self.tools_listed,
            self.tools.len()
        ));
        for reason in &verdict.reasons {
            out.push_str(&format!("- {reason}\n"));
        }
        if let Some(stopped) = &self.stopped {
            out.push_str(&format!("- stopped early: {stopped}\n"));
        }
        out.push_str(
            "\n| dimension | weight | score | threshold | on what |\n|---|---|---|---|---|\n",
        );
        for d in &verdict.dimensions {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                d.name,
                d.weight,
                d.score.map_or("n/a".to_owned(), |s| format!("{s:.0}")),
                match d.passed {
                    Some(true) => "met",
                    Some(false) => "missed",
                    None => "—",
                },
                d.reason
            ));
        }
        out.push_str(
            "\n## Phases\n\n| phase | ran | calls | seconds | note |\n|---|---|---|---|---|\n",
        );
        for p in &self.phases {
            out.push_str(&format!(
                "| {} | {} | {} | {:.1} | {} |\n",
                p.phase.name(),
                if p.ran { "yes" } else { "no" },
                p.calls,
                p.seconds,
                p.note.as_deref().unwrap_or("")
            ));
        }
        if !self.tools.is_empty() {
            out.push_str("\n## Tools\n\n| tool | baseline calls (ok) | p50 ms | p95 ms | p99 ms | peak in flight | goodput/s | knee | contract cases |\n|---|---|---|---|---|---|---|---|---|\n");
            for t in &self.tools {
                let b = t.baseline.clone().unwrap_or_default();
                let (peak, goodput, knee) = match &t.saturation {
                    Some(s) => (
                        format!("{}{}", s.peak_in_flight, if s.plateau { "" } else { "+" }),
                        format!("{:.0}", s.peak_goodput),
                        s.knee_in_flight.map_or("none".into(), |k| k.to_string()),
                    ),
                    None => ("—".into(), "—".into(), "—".into()),
                };
                out.push_str(&format!(
                    "| `{}` | {} ({}) | {} | {} | {} | {peak} | {goodput} | {knee} | {} |\n",
                    t.name,
                    b.calls,
                    b.ok,
                    ms(b.p50_ms),
                    ms(b.p95_ms),
                    match b.p99_ms {
                        Some(v) if b.ok >= verdict.policy.min_p99_samples => format!("{v:.1}"),
                        _ => format!("n/a (< {} ok)", verdict.policy.min_p99_samples),
                    },
                    t.contract_cases
                ));
            }
        }
        if !self.faults.is_empty() {
            out.push_str("\n## Faults\n\n| tool | logical calls | attempts | replies lost | recovered | failed untouched | effects verified | duplicate effects |\n|---|---|---|---|---|---|---|---|\n");
            for f in &self.faults {
                out.push_str(&format!(
                    "| `{}` | {} | {} | {} | {} | {} | {} | {} |\n",
                    f.tool,
                    f.logical_calls,
                    f.attempts,
                    f.lost_replies,
                    f.recovered,
                    f.failed_unfaulted,
                    f.verified,
                    f.duplicate_effects
                ));
            }
        }
        if !self.left_out.is_empty() {
            out.push_str("\n## Left out\n\n");
            for l in &self.left_out {
                out.push_str(&format!("- `{}`: {}\n", l.tool, l.reason));
            }
        }
        out.push_str(&format!("\n## Findings ({})\n\n", self.findings.len()));
        if self.findings.is_empty() {
            out.push_str("None.\n");
        }
        for f in &self.findings {
            out.push_str(&format!(
                "- **{}** `{}`: {}\n",
                f.severity.name(),
                f.id,
                f.title
            ));
        }
        if let Some(since) = &self.since_last {
            out.push_str(&format!(
                "\n## Since the scan of {}\n\nFixed: {}. New: {}. Unchanged: {}.\n",
                since.previous_started_at,
                list(since.fixed.iter().map(|f| f.id.as_str())),
                list(since.new.iter().map(String::as_str)),
                list(since.unchanged.iter().map(String::as_str)),
            ));
        }
        out
    }
}

/// `a`, `b` — or "none".
pub fn list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<String> = items.map(|i| format!("`{i}`")).collect();
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}
