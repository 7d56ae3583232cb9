//! Markdown rendering of a [`Report`](super::Report), laid out as the guide's sample report.

mod cells;
mod document;
mod phase_tables;
mod request_tables;
mod run_tables;

pub use document::render;
