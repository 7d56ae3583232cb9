//! The advice tools (review, SLOs, whole-file changes) through real MCP clients against a stand-in model.

mod examples;
mod tools;
