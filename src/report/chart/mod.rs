//! Charts of both reports, drawn from the report models (the values the markdown and `structuredContent`
//! show): [`impact`] (latency over time with the fault's window, the latency distribution, errors and timeouts
//! per second, the SLO lines) and [`chaos`] (the per-tool call timeline, availability and correctness per tool,
//! time to detect and recover). Each chart is drawn once per backend: a PNG for a tool result's image block
//! ([`png`]), SVG for the HTML views. Text is drawn in the embedded font ([`font`]), so a chart looks the same
//! on every machine; a long run is drawn from at most one point per pixel column ([`columns`]).

pub mod app;
pub mod capacity;
pub mod chaos;
mod columns;
mod error;
mod figure;
mod font;
mod header;
pub mod impact;
mod impact_figure;
mod impact_rate;
mod impact_requests;
mod impact_text;
mod layout;
mod legend;
pub mod page;
pub mod page_file;
mod palette;
pub mod png;
pub mod proxy;
mod series;
mod value_axis;

pub use error::ChartError;
pub use figure::{Figure, PlotFrame, svg};

/// Width of every chart, in pixels: readable as is in a chat window.
pub const WIDTH: u32 = 800;
