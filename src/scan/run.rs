//! The scan from start to end: the inputs checked before anything starts, the server reached and its tools
//! listed and chosen, the phases in order within the scan's time ([`super::phases`]), the verdict, and the
//! files written.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{
    Phase, ScanError,
    contract::ContractTally,
    faults::{FaultFigures, Verify},
    finding::{self, Finding},
    guide, hygiene,
    policy::Policy,
    report::{LeftOut, PhaseRun, ScanReport, ToolFigures},
    session::{START_TIMEOUT, Target, list_tools, tool_name},
    spec::ScanSpec,
    verdict::{self, Evidence},
};
use crate::{load::LoadProgress, mcp_chaos::Connection, mcp_proxy::plan::Plan};

/// A tool chosen for calls: its listing and valid arguments.
pub(super) struct Chosen {
    pub name: String,
    pub listing: Value,
    pub arguments: Value,
    pub figures: ToolFigures,
}

/// What the phases share while the scan runs.
pub(super) struct Scan<'a> {
    pub spec: &'a ScanSpec,
    pub policy: Policy,
    pub cancel: &'a CancellationToken,
    pub progress: Arc<LoadProgress>,
    pub deadline: Instant,
    pub target: Target<'a>,
    pub chosen: Vec<Chosen>,
    pub findings: Vec<Finding>,
    pub phases: Vec<PhaseRun>,
    /// Why the scan stopped before its end, if it did.
    pub stopped: Option<String>,
    /// Results checked against an outputSchema, and how many broke it.
    pub output: (u64, u64),
    pub tally: Option<ContractTally>,
    pub faults: Vec<FaultFigures>,
}

impl Scan<'_> {
    /// Whether the scan must stop now (its time is up, or it was cancelled); the first time, says so.
    pub fn out_of_time(&mut self, phase: Phase) -> bool {
        let over = Instant::now() >= self.deadline || self.cancel.is_cancelled();
        if over {
            self.stop(phase);
        }
        over
    }

    /// Notes that `phase` was cut short (by the scan's time, or a cancel).
    pub fn stop(&mut self, phase: Phase) {
        let reason = if self.cancel.is_cancelled() {
            format!("cancelled during the {} phase", phase.name())
        } else {
            format!(
                "`scan_timeout` ({} s) reached during the {} phase",
                self.spec.scan_timeout.as_secs_f64(),
                phase.name()
            )
        };
        self.stopped.get_or_insert(reason);
    }

    pub fn ran(&mut self, phase: Phase, calls: u64, at: Instant, note: Option<String>) {
        self.phases.push(PhaseRun {
            phase,
            ran: true,
            calls,
            seconds: at.elapsed().as_secs_f64(),
            note,
        });
    }
}

pub async fn run(
    spec: &ScanSpec,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<ScanReport, ScanError> {
    let started = Instant::now();
    let started_at = now();
    let policy = match &spec.policy {
        Some(path) => Policy::load(path)?,
        None => Policy::builtin(),
    };
    let server_line = spec.server.line();
    let previous = match &spec.previous {
        Some(path) => Some(guide::read_previous(path, &server_line)?),
        None => None,
    };
    for path in [&spec.guide, &spec.result, &spec.junit]
        .into_iter()
        .flatten()
    {
        guide::check_writable(path)?;
    }

    let opened = tokio::time::timeout(
        spec.scan_timeout.min(START_TIMEOUT * 2),
        Connection::open(&spec.server, Plan::default(), START_TIMEOUT, cancel),
    )
    .await
    .map_err(|_| ScanError::StartTimeout(spec.scan_timeout.min(START_TIMEOUT * 2)))??;
    let listed = match list_tools(&opened).await {
        Ok(listed) => listed,
        Err(e) => {
            opened.close().await;
            return Err(e);
        }
    };
    let mut target = Target {
        server: &spec.server,
        connection: Some(opened),
        cancel,
        reconnects: 0,
    };
    let Choice {
        selected,
        left_out,
        chosen,
    } = match choose(spec, &listed) {
        Ok(chosen) => chosen,
        Err(e) => {
            target.lost().await;
            return Err(e);
        }
    };

    let mut scan = Scan {
        spec,
        policy,
        cancel,
        progress,
        deadline: started + spec.scan_timeout,
        target,
        chosen,
        findings: Vec::new(),
        phases: Vec::new(),
        stopped: None,
        output: (0, 0),
        tally: None,
        faults: Vec::new(),
    };
    if spec.runs(Phase::Hygiene) {
        // Every selected tool, writes too: nothing is called.
        let at = Instant::now();
        for tool in &selected {
            let reproduce = spec.reproduce(tool_name(tool), Phase::Hygiene);
            scan.findings.extend(hygiene::check(tool, &reproduce));
        }
        scan.ran(Phase::Hygiene, 0, at, None);
    }
    if spec.runs(Phase::Baseline) {
        scan.baseline().await?;
    }
    if spec.runs(Phase::Saturation) {
        scan.saturation().await?;
    }
    if spec.runs(Phase::Contract) {
        scan.contract().await?;
    }
    if spec.runs(Phase::Faults) {
        scan.faults().await?;
    }
    for phase in Phase::ALL.into_iter().filter(|p| !spec.runs(*p)) {
        scan.phases.push(PhaseRun {
            phase,
            ran: false,
            calls: 0,
            seconds: 0.0,
            note: Some("not asked for (`phases`)".to_owned()),
        });
    }
    scan.phases.sort_by_key(|p| p.phase);
    scan.target.lost().await;

    let Scan {
        policy,
        chosen,
        mut findings,
        phases,
        stopped,
        output,
        tally,
        faults,
        ..
    } = scan;
    finding::sort(&mut findings);
    let tools: Vec<ToolFigures> = chosen.into_iter().map(|t| t.figures).collect();
    let verdict = verdict::judge(
        &policy,
        &Evidence {
            tools: selected.len(),
            findings: &findings,
            contract: tally.as_ref(),
            latency: tools
                .iter()
                .filter_map(|t| Some((t.name.as_str(), t.baseline.as_ref()?)))
                .collect(),
            saturation: tools
                .iter()
                .filter_map(|t| Some((t.name.as_str(), t.saturation.as_ref()?)))
                .collect(),
            output: spec.runs(Phase::Baseline).then_some(output),
            faults: spec.runs(Phase::Faults).then_some(faults.as_slice()),
        },
    );
    let since_last = previous.as_ref().map(|p| guide::since(p, &findings));
    let report = ScanReport {
        schema_version: super::report::SCHEMA_VERSION,
        kind: super::report::KIND.to_owned(),
        server: server_line,
        started_at,
        ended_at: now(),
        seconds: started.elapsed().as_secs_f64(),
        calls: phases.iter().map(|p| p.calls).sum(),
        tools_listed: listed.len(),
        tools,
        left_out,
        phases,
        contract: tally,
        faults,
        findings,
        verdict,
        since_last,
        stopped,
    };
    guide::write_files(spec, &report)?;
    Ok(report)
}

/// The tools of a scan: those it reads, those it leaves out and why, and those it calls.
struct Choice<'a> {
    selected: Vec<&'a Value>,
    left_out: Vec<LeftOut>,
    chosen: Vec<Chosen>,
}

/// The listed tools the scan reads (`tools`, at most `max_tools`), those it leaves out and why, and those it
/// calls with their valid arguments; every tool the inputs name must be listed.
fn choose<'a>(spec: &ScanSpec, listed: &'a [Value]) -> Result<Choice<'a>, ScanError> {
    if listed.is_empty() {
        return Err(ScanError::NoTools);
    }
    let names: Vec<&str> = listed.iter().map(tool_name).collect();
    for (index, wanted) in spec.tools.iter().enumerate() {
        if !names.contains(&wanted.as_str()) {
            return Err(ScanError::UnknownTool {
                index,
                message: crate::fields::unknown_field(wanted, &names),
            });
        }
    }
    if let Some(name) = spec
        .arguments
        .keys()
        .find(|name| !names.contains(&name.as_str()))
    {
        return Err(ScanError::Arguments(crate::fields::unknown_field(
            name, &names,
        )));
    }
    if let Some(Verify::Tool { tool, .. }) = &spec.verify
        && !names.contains(&tool.as_str())
    {
        return Err(ScanError::Verify(format!(
            "verify.tool: {}",
            crate::fields::unknown_field(tool, &names)
        )));
    }
    let mut left_out = Vec::new();
    let mut selected: Vec<&Value> = listed
        .iter()
        .filter(|t| spec.tools.is_empty() || spec.tools.iter().any(|w| w == tool_name(t)))
        .collect();
    if selected.len() > spec.max_tools {
        for tool in selected.split_off(spec.max_tools) {
            left_out.push(LeftOut {
                tool: tool_name(tool).to_owned(),
                reason: format!("beyond `max_tools` ({})", spec.max_tools),
            });
        }
    }
    let mut chosen = Vec::new();
    for tool in &selected {
        let name = tool_name(tool).to_owned();
        let read_only = tool
            .get("annotations")
            .and_then(|a| a.get("readOnlyHint"))
            .and_then(Value::as_bool)
            == Some(true);
        if !read_only && !spec.allow_writes {
            left_out.push(LeftOut {
                tool: name,
                reason: "its annotations do not say read-only (readOnlyHint true): not called, for it may \
                         write; pass `allow_writes` to include it"
                    .to_owned(),
            });
            continue;
        }
        let (arguments, arguments_from) = match spec.arguments.get(&name) {
            Some(given) => (given.clone(), "given"),
            None => {
                let schema = tool.get("inputSchema").cloned().unwrap_or(json!({}));
                (
                    super::schema::example(&schema, &schema, 0),
                    "built from the input schema",
                )
            }
        };
        chosen.push(Chosen {
            figures: ToolFigures {
                name: name.clone(),
                read_only,
                arguments_from: arguments_from.to_owned(),
                baseline: None,
                saturation: None,
                contract_cases: 0,
            },
            name,
            listing: (*tool).clone(),
            arguments,
        });
    }
    Ok(Choice {
        selected,
        left_out,
        chosen,
    })
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
