//! The ways a plan is refused. Each message names what is wrong: the file, the fault (`faults[i]` and its
//! type), the key and its line.

use std::{fmt, path::PathBuf};

use super::{MAX_FAULTS, MAX_NESTING, MAX_PLAN_BYTES, TOP_KEYS};
use crate::files::FileError;
use crate::mcp_proxy::faults::{self, FaultError, PeerValueError};
use crate::mcp_proxy::trigger::{TRIGGER_KEYS, TriggerError};
use crate::seeded::SeedError;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("cannot read the plan: {0}")]
    Read(FileError),
    #[error("plan {path} {error}")]
    Unreadable { path: PathBuf, error: PlanTextError },
    #[error("plan {path}: {error}")]
    Invalid { path: PathBuf, error: InvalidPlan },
}

impl PlanError {
    /// The error of the plan at `path` whose text was refused.
    pub fn of_text(path: PathBuf, error: PlanTextError) -> Self {
        match error {
            PlanTextError::Invalid(error) => PlanError::Invalid { path, error },
            error => PlanError::Unreadable { path, error },
        }
    }
}

/// A plan's text refused before or while it is parsed, or its content refused.
#[derive(Debug, thiserror::Error)]
pub enum PlanTextError {
    #[error("is over {MAX_PLAN_BYTES} bytes, the cap on a plan's size")]
    TooLarge,
    #[error("nests deeper than {MAX_NESTING} levels (line {line}), the cap on a plan's nesting")]
    TooDeep { line: usize },
    #[error("is not valid {format}: {message}")]
    Syntax {
        format: &'static str,
        message: String,
    },
    #[error("{0}")]
    Invalid(#[from] InvalidPlan),
}

/// `line N: ` before a message, when the line is known.
pub(super) struct Line(pub Option<usize>);

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(line) => write!(f, "line {line}: "),
            None => Ok(()),
        }
    }
}

/// A plan's content refused.
#[derive(Debug, thiserror::Error)]
pub enum InvalidPlan {
    #[error("a plan is a mapping with `faults`, or a list of faults")]
    NotAPlan,
    #[error("{}unknown key `{key}` (known: {})", Line(*line), TOP_KEYS.join(", "))]
    UnknownKey { key: String, line: Option<usize> },
    #[error("{}{message}", Line(*line))]
    BadValue {
        message: &'static str,
        line: Option<usize>,
    },
    #[error("{}{key} must be a number, got {got}", Line(*line))]
    NotANumber {
        key: String,
        got: &'static str,
        line: Option<usize>,
    },
    #[error("{}seed: {error}", Line(*line))]
    Seed {
        error: SeedError,
        line: Option<usize>,
    },
    #[error("{}{key}.command must be a list of strings", Line(*line))]
    BadCommandList { key: String, line: Option<usize> },
    #[error(
        "{}{key}.command leaves a quote or a backslash open (it is split as a shell splits a command line)",
        Line(*line)
    )]
    OpenQuote { key: String, line: Option<usize> },
    #[error(
        "{}{key} must hold `command` (a string or list); only stdio servers are supported",
        Line(*line)
    )]
    NoCommand { key: String, line: Option<usize> },
    #[error("{}{key}: {error}", Line(*line))]
    Gates {
        /// `gates`, or `agents[i].recovery` in an mcptest suite.
        key: String,
        error: String,
        line: Option<usize>,
    },
    #[error("{}agents must be a list of mcptest agents (each may hold a `recovery:` budget)", Line(*line))]
    BadAgents { line: Option<usize> },
    #[error(
        "{}agents[{agent}].inject names `{name}`, which no fault of the suite is named{}",
        Line(*line),
        closest.as_ref().map(|c| format!(" (the closest is `{c}`)")).unwrap_or_default()
    )]
    UnknownInjected {
        agent: usize,
        name: String,
        closest: Option<String>,
        line: Option<usize>,
    },
    #[error("{count} faults, over {MAX_FAULTS}, the cap on a plan's faults")]
    TooManyFaults { count: usize },
    #[error("faults[{index}] must be a mapping with a `type`")]
    NotAMapping { index: usize },
    #[error("faults[{index}]: {error}")]
    Fault {
        index: usize,
        error: Box<FaultEntryError>,
    },
}

/// One fault of a plan refused.
#[derive(Debug, thiserror::Error)]
pub enum FaultEntryError {
    #[error("missing `type` (or mcptest's `kind`)")]
    MissingType,
    #[error("{}`type` must be a string", Line(*line))]
    TypeNotAString { line: Option<usize> },
    #[error("{}`{written}`: the part after `:` must be a whole number", Line(*line))]
    BadSuffix {
        written: String,
        line: Option<usize>,
    },
    #[error("{}unknown fault type `{written}` (known: {})", Line(*line), known_types())]
    UnknownType {
        written: String,
        line: Option<usize>,
    },
    #[error(
        "{}unknown key `{written}` for {fault} (it takes: {}; and the trigger keys: {})",
        Line(*line),
        list_or_nothing(takes),
        TRIGGER_KEYS.join(", ")
    )]
    UnknownKey {
        written: String,
        fault: &'static str,
        takes: &'static [String],
        line: Option<usize>,
    },
    #[error("{}{fault}: {key} must be a number, got {got}", Line(*line))]
    NotANumber {
        fault: String,
        key: String,
        got: &'static str,
        line: Option<usize>,
    },
    #[error("{}{fault}: {key}: {message}", Line(*line))]
    KeyValue {
        fault: &'static str,
        key: String,
        message: String,
        line: Option<usize>,
    },
    #[error("{}{fault}: {error}", Line(*line))]
    PeerValue {
        fault: &'static str,
        error: PeerValueError,
        line: Option<usize>,
    },
    #[error("{fault}: trigger: {message}")]
    TriggerValue {
        fault: &'static str,
        message: String,
    },
    #[error("{fault}: {error}")]
    Trigger {
        fault: &'static str,
        error: TriggerError,
    },
    #[error("{fault}: {message}")]
    SpecValue {
        fault: &'static str,
        message: String,
    },
    #[error("{fault}: {error}")]
    Spec {
        fault: &'static str,
        error: FaultError,
    },
}

/// A fault nested in another (`recover_after`'s `then`) refused.
#[derive(Debug, thiserror::Error)]
pub enum NestedFaultError {
    #[error("then: `none` is not a fault")]
    None,
    #[error("then: unknown key `{written}` for {fault} (it takes: {})", takes.join(", "))]
    UnknownKey {
        written: String,
        fault: &'static str,
        takes: &'static [String],
    },
    #[error("{0}")]
    Entry(FaultEntryError),
    #[error("{0}")]
    Value(serde_json::Error),
    #[error("{0}")]
    Spec(FaultError),
}

fn known_types() -> String {
    faults::REGISTRY
        .iter()
        .map(|r| r.name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_or_nothing(keys: &[String]) -> String {
    if keys.is_empty() {
        "nothing".to_owned()
    } else {
        keys.join(", ")
    }
}
