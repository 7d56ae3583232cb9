//! `fault_function_reliability_deep_analysis`: findings per concern for one function, as markdown.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AdviceError, ProgressReporter, ask::ask, prompts::Task};
use crate::{
    code::{self, FunctionInfo, Language},
    llm::ChatModel,
};

/// What a deep analysis looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Concern {
    Performance,
    Reliability,
    Threat,
}

impl Concern {
    pub const ALL: [Concern; 3] = [Concern::Performance, Concern::Reliability, Concern::Threat];

    pub fn name(self) -> &'static str {
        match self {
            Concern::Performance => "performance",
            Concern::Reliability => "reliability",
            Concern::Threat => "threat",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Concern::Performance => "Performance",
            Concern::Reliability => "Reliability",
            Concern::Threat => "Threats",
        }
    }

    /// Every concern's name, for a message or a description: "performance, reliability or threat".
    pub fn names() -> String {
        let names: Vec<&str> = Concern::ALL.iter().map(|c| c.name()).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }

    /// A concern from its name, case-insensitive; the error lists the accepted names.
    pub fn parse(raw: &str) -> Result<Concern, AdviceError> {
        let wanted = raw.trim().to_ascii_lowercase();
        Concern::ALL
            .into_iter()
            .find(|c| c.name() == wanted || (wanted == "security" && *c == Concern::Threat))
            .ok_or_else(|| {
                AdviceError::Input(format!(
                    "unknown concern '{raw}'; expected {}",
                    Concern::names()
                ))
            })
    }
}

/// One problem found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    pub title: String,
    /// low, medium, high or critical.
    pub severity: String,
    pub detail: String,
    pub recommendation: String,
}

/// The findings for one concern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConcernReport {
    pub concern: Concern,
    pub summary: String,
    pub findings: Vec<Finding>,
}

/// The analysis: which function, and the findings per concern (also rendered as `markdown`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct DeepAnalysis {
    pub function: FunctionInfo,
    pub concerns: Vec<ConcernReport>,
    pub markdown: String,
}

pub async fn deep_analysis(
    model: &dyn ChatModel,
    file: &str,
    func: &str,
    lang: Option<&str>,
    concerns: &[Concern],
    progress: &ProgressReporter,
) -> Result<DeepAnalysis, AdviceError> {
    let file_owned = file.to_owned();
    let func_owned = func.to_owned();
    let (path, language, extracted) = tokio::task::spawn_blocking(move || {
        let file = code::parsed_file(&file_owned)?;
        let extracted = code::select_function(&file, &func_owned)?;
        Ok::<_, code::CodeError>((file.path.clone(), file.language, extracted))
    })
    .await
    .map_err(|e| AdviceError::Internal(format!("reading the file failed: {e}")))??;
    if let Some(lang) = lang.map(str::trim).filter(|l| !l.is_empty()) {
        let given = Language::from_name(lang).ok_or_else(|| {
            AdviceError::Input(format!(
                "unknown lang '{lang}'; expected one of {} (or leave it out)",
                Language::supported_names()
            ))
        })?;
        if given != language {
            return Err(AdviceError::Input(format!(
                "lang '{lang}' does not match {} which is {language}; leave lang out or fix it",
                path.display()
            )));
        }
    }
    let mut wanted: Vec<Concern> = Vec::new();
    for concern in if concerns.is_empty() {
        &Concern::ALL[..]
    } else {
        concerns
    } {
        if !wanted.contains(concern) {
            wanted.push(*concern);
        }
    }
    let wanted_names = wanted
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(", ");
    let required = wanted.clone();
    let check = move |answer: &Value| -> Result<(), String> {
        let present: Vec<&str> = answer
            .get("concerns")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|c| c.get("concern")?.as_str())
                    .collect()
            })
            .unwrap_or_default();
        let missing: Vec<&str> = required
            .iter()
            .map(|c| c.name())
            .filter(|name| !present.contains(name))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "`concerns` lacks an entry for: {}",
                missing.join(", ")
            ))
        }
    };
    let name = file_name(&path);
    let answer = ask(
        model,
        Task::DeepAnalysis,
        &[
            ("function", &extracted.function.qualified_name),
            ("file_name", &name),
            ("lang", language.name()),
            ("concerns", &wanted_names),
            ("snippet", &extracted.full),
        ],
        Some(&check),
        progress,
    )
    .await?;
    let reports: Vec<ConcernReport> = serde_json::from_value(
        answer.get("concerns").cloned().unwrap_or(Value::Null),
    )
    .map_err(|e| AdviceError::Internal(format!("validated analysis does not decode: {e}")))?;
    // In the order asked, each once; concerns not asked for are left out.
    let concerns: Vec<ConcernReport> = wanted
        .iter()
        .filter_map(|c| reports.iter().find(|r| r.concern == *c).cloned())
        .collect();
    let markdown = render_markdown(&extracted.function, &name, &concerns);
    Ok(DeepAnalysis {
        function: extracted.function,
        concerns,
        markdown,
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

fn render_markdown(function: &FunctionInfo, file_name: &str, concerns: &[ConcernReport]) -> String {
    let mut out = format!(
        "# Deep analysis of `{}` ({file_name}, lines {}-{})\n",
        function.qualified_name, function.start_line, function.end_line
    );
    for report in concerns {
        out.push_str(&format!(
            "\n## {}\n\n{}\n",
            report.concern.title(),
            report.summary.trim()
        ));
        if report.findings.is_empty() {
            out.push_str("\nNo findings.\n");
            continue;
        }
        out.push('\n');
        for finding in &report.findings {
            out.push_str(&format!(
                "- **{}** ({}): {}\n  - Recommendation: {}\n",
                finding.title.trim(),
                finding.severity,
                finding.detail.trim(),
                finding.recommendation.trim()
            ));
        }
    }
    out
}
