//! What a function-like definition is: as listed, as located in its source, and as extracted.

use std::ops::Range;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What kind of function-like definition was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FunctionKind {
    /// A free function, or a function nested in another one.
    Function,
    /// A function defined in a class, impl, trait or object literal, or a Go method.
    Method,
    /// A declaration without a body (Rust trait or extern fn, Go function implemented elsewhere).
    Signature,
}

impl FunctionKind {
    pub(crate) fn from_label(label: &str) -> Option<Self> {
        match label {
            "function" => Some(Self::Function),
            "method" => Some(Self::Method),
            "signature" => Some(Self::Signature),
            _ => None,
        }
    }
}

/// One function-like definition of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionInfo {
    /// The function's own name, e.g. `handle`.
    pub name: String,
    /// The name with its containers, e.g. `Server.handle` (Python, Go, JavaScript) or `Server::handle` (Rust).
    pub qualified_name: String,
    /// `function`, `method` or `signature` (no body).
    pub kind: FunctionKind,
    /// First line of the definition (its first decorator, attribute or doc comment), 1-based.
    pub start_line: usize,
    /// Last line of the definition, 1-based, inclusive.
    pub end_line: usize,
}

/// A function with its location and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionBlock {
    pub info: FunctionInfo,
    /// Byte range of the whole definition, with what the language attaches to it (decorators, attributes,
    /// Rust and Go doc comments).
    pub full: Range<usize>,
    /// Byte range of the body; `None` for a signature.
    pub body: Option<Range<usize>>,
}

/// One function extracted from a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Extracted {
    /// The whole definition with what the language attaches to it: Python decorators, Rust outer attributes
    /// and doc comments, Go doc comment; a JavaScript declaration as written (with its `export`).
    pub full: String,
    /// The body without the signature (empty for a signature).
    pub body: String,
    /// Which function this is.
    pub function: FunctionInfo,
    /// How many other functions matched the requested name (the first one with a body, in document order,
    /// is returned; a body-less signature only when no match has a body).
    pub other_matches: usize,
}
