//! Input fields declared once. A [`Field`] names a value and says what it accepts, its default and its help;
//! every face is generated from it: a tool's JSON Schema property ([`Field::schema`]), a command-line flag
//! ([`Field::arg`]), a row of the reference ([`Field::accepts`], [`Field::default_text`]), and the one reader
//! both faces go through ([`FieldInput`]). A value one face accepts, the other accepts too, with the same
//! default; a face may only rename a field (upstream's `--latency-stddev` for the tool's `deviation`).
//!
//! [`declare`] holds the declaration, [`faces`] the faces generated from it, [`input`] the one reader, and
//! [`names`] the answer to a name nobody declared.

mod declare;
mod faces;
mod input;
mod names;

pub use declare::{Field, Kind, Presence, Unit, parses_as};
pub use faces::object_schema;
pub use input::{Face, FieldError, FieldInput};
pub use names::{closest, unknown_field};

#[cfg(test)]
mod tests;
