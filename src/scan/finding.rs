//! What a scan finds: one record per defect, with its evidence, the change that fixes it and the command
//! that shows it again. A finding's `id` stays the same from one scan of a server to the next, so that two
//! scans can be compared.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Phase;

/// How bad a finding is, worst first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The server crashed, hung, or declares what no client can read.
    Critical,
    /// A client is misled: invalid input accepted, an answer against its schema, calls held up.
    Major,
    /// A client copes, but worse than it could: a refusal naming no field, a tool without a description.
    Minor,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Self::Critical => "critical",
            Self::Major => "major",
            Self::Minor => "minor",
        }
    }
}

/// The kinds of finding, each with its stable name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    // hygiene
    SchemaNotJsonSchema,
    NotAnObjectSchema,
    UntypedProperty,
    UnresolvedRef,
    RootUnion,
    UnsupportedKeyword,
    NoDescription,
    PropertyWithoutDescription,
    NoAnnotations,
    // baseline
    CallsFail,
    OutputAgainstSchema,
    // saturation
    Saturates,
    HeadOfLine,
    // contract
    InvalidAccepted,
    Crash,
    Hang,
    RefusalNamesNoField,
    // faults
    DuplicateEffect,
    FailsAfterFault,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Self::SchemaNotJsonSchema => "schema-not-json-schema",
            Self::NotAnObjectSchema => "not-an-object-schema",
            Self::UntypedProperty => "untyped-property",
            Self::UnresolvedRef => "unresolved-ref",
            Self::RootUnion => "root-union",
            Self::UnsupportedKeyword => "unsupported-keyword",
            Self::NoDescription => "no-description",
            Self::PropertyWithoutDescription => "property-without-description",
            Self::NoAnnotations => "no-annotations",
            Self::CallsFail => "calls-fail",
            Self::OutputAgainstSchema => "output-against-schema",
            Self::Saturates => "saturates",
            Self::HeadOfLine => "head-of-line",
            Self::InvalidAccepted => "invalid-accepted",
            Self::Crash => "crash",
            Self::Hang => "hang",
            Self::RefusalNamesNoField => "refusal-names-no-field",
            Self::DuplicateEffect => "duplicate-effect",
            Self::FailsAfterFault => "fails-after-fault",
        }
    }
}

/// The exchange that shows a finding, shortened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Evidence {
    /// The `tools/call` params sent (long strings shortened).
    pub request: Value,
    /// What came back, shortened: the result's text, the JSON-RPC error, or what happened instead.
    pub answer: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    /// `<kind>/<tool>/<field>`: the same defect has the same id in every scan.
    pub id: String,
    pub phase: Phase,
    pub kind: Kind,
    pub severity: Severity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// One line: what is wrong.
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    /// What to change.
    pub fix: String,
    /// The command that shows it again.
    pub reproduce: String,
}

impl Finding {
    pub fn new(
        phase: Phase,
        kind: Kind,
        severity: Severity,
        tool: Option<&str>,
        field: Option<&str>,
    ) -> Self {
        let id = [Some(kind.name()), tool, field]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("/");
        Self {
            id,
            phase,
            kind,
            severity,
            tool: tool.map(str::to_owned),
            field: field.map(str::to_owned),
            title: String::new(),
            evidence: None,
            fix: String::new(),
            reproduce: String::new(),
        }
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = fix.into();
        self
    }

    pub fn with_reproduce(mut self, reproduce: &str) -> Self {
        self.reproduce = reproduce.to_owned();
        self
    }

    pub fn evidence(mut self, request: &Value, answer: impl Into<String>) -> Self {
        self.evidence = Some(Evidence {
            request: shorten_value(request),
            answer: shorten(&answer.into(), ANSWER_CHARS),
        });
        self
    }
}

/// Characters of an answer a finding keeps.
const ANSWER_CHARS: usize = 300;
/// Characters of one string inside a request a finding keeps.
const REQUEST_STRING_CHARS: usize = 80;

/// `text` cut to `chars` characters, saying how many were cut.
pub fn shorten(text: &str, chars: usize) -> String {
    let count = text.chars().count();
    if count <= chars {
        return text.to_owned();
    }
    let kept: String = text.chars().take(chars).collect();
    format!("{kept}… ({} more characters)", count - chars)
}

/// `value` with every long string shortened.
pub fn shorten_value(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(shorten(text, REQUEST_STRING_CHARS)),
        Value::Array(items) => Value::Array(items.iter().map(shorten_value).collect()),
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| (k.clone(), shorten_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Findings worst first, then by phase, tool and id, one per id.
pub fn sort(findings: &mut Vec<Finding>) {
    findings.sort_by(|a, b| {
        (a.severity, a.phase, &a.tool, &a.id).cmp(&(b.severity, b.phase, &b.tool, &b.id))
    });
    findings.dedup_by(|a, b| a.id == b.id);
}
