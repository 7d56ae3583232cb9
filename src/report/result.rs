//! An impact scenario's result as a file: the [`Report`] as JSON, as the tools return it in
//! `structuredContent`. [`write_result`] writes one; [`read_result`] reads one back, refusing with the file's
//! name and what is wrong a file that is missing, not JSON, cut short, not a result, or of another version.

use std::{
    io::Write,
    path::{Path, PathBuf},
};

use serde_json::Value;

use super::impact::{Report, SCHEMA_VERSION};
use crate::files::{FileError, create_output, read_text};

/// The largest result file read: a 1 h run at the load generator's highest rate stays well below it.
pub const MAX_RESULT_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error(
        "{path}: truncated: the JSON ends at line {line}, column {column}, before the result does (a copy or \
         a write cut short?)"
    )]
    Truncated {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    #[error("{path}: not JSON ({reason}); give the JSON result of an impact scenario")]
    NotJson { path: PathBuf, reason: String },
    #[error("{path}: not an impact scenario result: {reason}")]
    NotResult { path: PathBuf, reason: String },
    #[error(
        "{path}: schema_version {found}, but this fault reads results of schema_version {SCHEMA_VERSION}; \
         use the fault that wrote it"
    )]
    Version { path: PathBuf, found: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot encode the result: {0}")]
    Encode(#[from] serde_json::Error),
}

/// Writes `report` to `path` as JSON (what `fault report merge` reads): a regular file or a new one in an
/// existing directory.
pub fn write_result(report: &Report, path: &Path) -> Result<(), ResultError> {
    let json = serde_json::to_vec_pretty(report)?;
    let mut file = create_output(path)?;
    let failed = |source| ResultError::Write {
        path: path.to_owned(),
        source,
    };
    file.write_all(&json).map_err(failed)?;
    file.write_all(b"\n").map_err(failed)?;
    file.sync_data().map_err(failed)
}

/// The impact result in the file `path`.
pub fn read_result(path: &Path) -> Result<Report, ResultError> {
    let text = read_text(path, MAX_RESULT_BYTES)?;
    parse_result(path, &text)
}

/// The impact result in `text`, read from `path`.
pub fn parse_result(path: &Path, text: &str) -> Result<Report, ResultError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        if e.is_eof() {
            ResultError::Truncated {
                path: path.to_owned(),
                line: e.line(),
                column: e.column(),
            }
        } else {
            ResultError::NotJson {
                path: path.to_owned(),
                reason: e.to_string(),
            }
        }
    })?;
    let not_result = |reason: String| ResultError::NotResult {
        path: path.to_owned(),
        reason,
    };
    let Value::Object(fields) = &value else {
        return Err(not_result(format!(
            "it is a JSON {}, where a result is an object",
            kind(&value)
        )));
    };
    if fields.contains_key("server") && fields.contains_key("seed") {
        return Err(not_result(
            "it is an MCP chaos scenario's result; only impact results are merged".into(),
        ));
    }
    match fields.get("schema_version") {
        None => {
            return Err(not_result(
                "it has no schema_version (an impact result has one, with its run, data and verdicts)".into(),
            ));
        }
        Some(Value::Number(n)) if n.as_u64() == Some(u64::from(SCHEMA_VERSION)) => {}
        Some(other) => {
            return Err(ResultError::Version {
                path: path.to_owned(),
                found: other.to_string(),
            });
        }
    }
    serde_path_to_error::deserialize::<_, Report>(value).map_err(|e| {
        let field = e.path().to_string();
        let error = e.into_inner();
        if field == "." {
            not_result(error.to_string())
        } else {
            not_result(format!("{field}: {error}"))
        }
    })
}

/// What a JSON value is, in words.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
