//! Inputs of the impact-scenario tools: the fields every scenario takes (declared in
//! [`super::scenario_fields`]), where a TCP fault acts, and the fault's own fields, which are its spec
//! ([`TcpFaultSpec`]). Every field is read by its declaration, so a bad value is a tool error naming the field
//! and what it accepts, and the tools' JSON Schema comes from the same declarations.

mod checks;
mod common;
mod engine;
mod faults;
mod files;
mod schema;
mod traffic;

use crate::fields::FieldError;

pub(super) use checks::duration;
pub(super) use faults::{compound_spec, impact_spec};
pub(crate) use files::RunFiles;
pub(super) use files::report_page;
pub(super) use schema::{compound_schema, input_schema};

#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub(crate) struct InputError {
    field: String,
    message: String,
}

pub(super) fn bad(field: impl Into<String>, message: impl Into<String>) -> InputError {
    InputError {
        field: field.into(),
        message: message.into(),
    }
}

impl From<FieldError> for InputError {
    fn from(e: FieldError) -> Self {
        bad(e.field, e.message)
    }
}
