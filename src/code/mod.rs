//! Source code understanding with tree-sitter: which functions a file defines, one function's text, syntax
//! errors, and function-sized chunks for indexing.
//!
//! Languages come from a registry ([`Language`]) driven by the query files in `grammars/<language>/`.
//! Nothing is parsed or compiled until a function here is called.

pub mod allocator;
mod attached;
mod cache;
pub mod chunk;
mod definitions;
mod error;
mod functions;
mod kinds;
mod language;
mod lines;
mod parse;
mod search;
mod select;
mod source;
mod syntax_errors;

pub use cache::{CACHE_BYTES, ParsedFile, parsed_file, parsed_path, parsed_source};
pub use definitions::{Extracted, FunctionBlock, FunctionInfo, FunctionKind};
pub use error::{CodeError, MAX_SOURCE_BYTES};
pub use functions::functions_in_source;
pub(crate) use functions::functions_in_source_checked;
pub use language::{Language, UnknownLanguage};
pub use select::{extract_function, list_functions, select_function};
pub use source::{
    check_source_file, read_source, read_source_exact, read_source_file, resolve_path,
};
pub use syntax_errors::{SyntaxError, parse_errors};
