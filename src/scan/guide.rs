//! What the scan writes for others to act on: the fix guide a coding agent reads (AGENTS.md form, one entry
//! per finding, worst first), what changed since an earlier scan, and the JUnit file CI systems read.

use std::path::Path;

use super::{
    ScanError,
    finding::Finding,
    report::{KIND, SCHEMA_VERSION, ScanReport, SinceLast, list},
    spec::ScanSpec,
};

#[derive(Debug, thiserror::Error)]
pub enum PreviousError {
    #[error("previous: cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("previous: {path} is not the result of a scan: {error}")]
    NotAScan { path: String, error: String },
    #[error(
        "previous: {path} is a result of schema version {found}; this scan writes version {SCHEMA_VERSION}: scan again to compare"
    )]
    Version { path: String, found: u64 },
    #[error("previous: {path} is the scan of another server ({found}); this scan is of {expected}")]
    OtherServer {
        path: String,
        found: String,
        expected: String,
    },
}

/// The previous result in `path`, checked to be a scan of `server` of this schema version.
pub fn read_previous(path: &Path, server: &str) -> Result<ScanReport, PreviousError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| PreviousError::Read {
        path: shown.clone(),
        error,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| PreviousError::NotAScan {
            path: shown.clone(),
            error: e.to_string(),
        })?;
    if value.get("kind").and_then(|k| k.as_str()) != Some(KIND) {
        return Err(PreviousError::NotAScan {
            path: shown,
            error: format!("its `kind` is not \"{KIND}\""),
        });
    }
    let version = value
        .get("schema_version")
        .and_then(|v| v.as_u64())
        .unwrap_or(0);
    if version != u64::from(SCHEMA_VERSION) {
        return Err(PreviousError::Version {
            path: shown,
            found: version,
        });
    }
    let found = value
        .get("server")
        .and_then(|s| s.as_str())
        .unwrap_or_default();
    if found != server {
        return Err(PreviousError::OtherServer {
            path: shown,
            found: found.to_owned(),
            expected: server.to_owned(),
        });
    }
    let previous: ScanReport =
        serde_json::from_value(value).map_err(|e| PreviousError::NotAScan {
            path: shown.clone(),
            error: e.to_string(),
        })?;
    Ok(previous)
}

/// What changed between `previous` and `findings`, by finding id.
pub fn since(previous: &ScanReport, findings: &[Finding]) -> SinceLast {
    let now: Vec<&str> = findings.iter().map(|f| f.id.as_str()).collect();
    let before: Vec<&str> = previous.findings.iter().map(|f| f.id.as_str()).collect();
    SinceLast {
        previous_started_at: previous.started_at.clone(),
        fixed: previous
            .findings
            .iter()
            .filter(|f| !now.contains(&f.id.as_str()))
            .cloned()
            .collect(),
        new: now
            .iter()
            .filter(|id| !before.contains(id))
            .map(|id| id.to_string())
            .collect(),
        unchanged: now
            .iter()
            .filter(|id| before.contains(id))
            .map(|id| id.to_string())
            .collect(),
    }
}

/// The fix guide.
pub fn guide(report: &ScanReport) -> String {
    let mut out = String::new();
    let verdict = &report.verdict;
    out.push_str("# AGENTS.md: fixes for this MCP server\n\n");
    out.push_str(&format!(
        "`fault mcp-scan` scanned `{}` at {}: **{}**{}. Work through the findings below in order (worst first); \
         after each change, run its reproduce command, then the whole scan again with `--previous` to see what \
         is fixed.\n\n",
        report.server,
        report.started_at,
        verdict.outcome.name(),
        verdict.score.map_or(String::new(), |s| format!(", score {s:.0}/100"))
    ));
    for reason in &verdict.reasons {
        out.push_str(&format!("- {reason}\n"));
    }
    if let Some(since) = &report.since_last {
        out.push_str(&format!(
            "\n## Since the scan of {}\n\n- Fixed: {}\n- New: {}\n- Unchanged: {}\n",
            since.previous_started_at,
            list(since.fixed.iter().map(|f| f.id.as_str())),
            list(since.new.iter().map(String::as_str)),
            list(since.unchanged.iter().map(String::as_str)),
        ));
    }
    out.push_str(&format!("\n## Findings ({})\n", report.findings.len()));
    if report.findings.is_empty() {
        out.push_str("\nNone: nothing to change.\n");
    }
    for (index, f) in report.findings.iter().enumerate() {
        out.push_str(&format!(
            "\n### {}. [{}] {}\n\n",
            index + 1,
            f.severity.name(),
            f.title
        ));
        let place = match (&f.tool, &f.field) {
            (Some(tool), Some(field)) => format!("tool `{tool}`, field `{field}`"),
            (Some(tool), None) => format!("tool `{tool}`"),
            _ => "the server".to_owned(),
        };
        out.push_str(&format!(
            "- Where: {place} (finding `{}`, {} phase)\n",
            f.id,
            f.phase.name()
        ));
        if let Some(evidence) = &f.evidence {
            out.push_str(&format!(
                "- Evidence: sent `{}`; got: {}\n",
                evidence.request,
                evidence.answer.replace('\n', " ")
            ));
        }
        out.push_str(&format!("- Change: {}\n", f.fix));
        out.push_str(&format!("- Reproduce: `{}`\n", f.reproduce));
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JUnit XML: one test case per dimension threshold and one per finding (a failure), in one suite.
pub fn junit(report: &ScanReport) -> String {
    let mut cases = Vec::new();
    for d in &report.verdict.dimensions {
        let body = match d.passed {
            Some(false) => format!("<failure message=\"{}\"/>", escape(&d.reason)),
            None => format!("<skipped message=\"{}\"/>", escape(&d.reason)),
            Some(true) => String::new(),
        };
        cases.push(format!(
            "  <testcase classname=\"mcp-scan.dimension\" name=\"{}\">{body}</testcase>",
            escape(&d.name)
        ));
    }
    for f in &report.findings {
        cases.push(format!(
            "  <testcase classname=\"mcp-scan.{}\" name=\"{}\"><failure type=\"{}\" message=\"{}\">{}</failure></testcase>",
            f.phase.name(),
            escape(&f.id),
            f.severity.name(),
            escape(&f.title),
            escape(&format!("{}\nReproduce: {}", f.fix, f.reproduce))
        ));
    }
    let failures = report
        .verdict
        .dimensions
        .iter()
        .filter(|d| d.passed == Some(false))
        .count()
        + report.findings.len();
    let skipped = report
        .verdict
        .dimensions
        .iter()
        .filter(|d| d.passed.is_none())
        .count();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"fault mcp-scan: {}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\" time=\"{:.3}\">\n{}\n</testsuite>\n",
        escape(&report.server),
        cases.len(),
        report.seconds,
        cases.join("\n")
    )
}

/// A file the scan will write: its directory must exist.
pub fn check_writable(path: &Path) -> Result<(), ScanError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if path.is_dir() {
        return Err(ScanError::Write {
            path: path.display().to_string(),
            error: "is a directory".to_owned(),
        });
    }
    match std::fs::metadata(parent) {
        Ok(meta) if meta.is_dir() && !meta.permissions().readonly() => Ok(()),
        Ok(_) => Err(ScanError::Write {
            path: path.display().to_string(),
            error: format!("{} is not a writable directory", parent.display()),
        }),
        Err(e) => Err(ScanError::Write {
            path: path.display().to_string(),
            error: format!("{}: {e}", parent.display()),
        }),
    }
}

/// The result, the guide and the JUnit file, where the scan was asked to write them.
pub fn write_files(spec: &ScanSpec, report: &ScanReport) -> Result<(), ScanError> {
    let write = |path: &Path, text: String| {
        std::fs::write(path, text).map_err(|e| ScanError::Write {
            path: path.display().to_string(),
            error: e.to_string(),
        })
    };
    if let Some(path) = &spec.result {
        let json = serde_json::to_string_pretty(report).map_err(|e| ScanError::Write {
            path: path.display().to_string(),
            error: e.to_string(),
        })?;
        write(path, json)?;
    }
    if let Some(path) = &spec.guide {
        write(path, guide(report))?;
    }
    if let Some(path) = &spec.junit {
        write(path, junit(report))?;
    }
    Ok(())
}
