//! The code tools: function listing and extraction, against each language's own parser and over MCP.

mod reference_parsers;
mod tools;
