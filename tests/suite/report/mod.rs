//! The reports: figures, charts (PNG, standalone HTML, in a browser), merged results and the published schemas.

pub mod charts;
mod charts_browser;
mod charts_html;
pub mod figures;
mod merge;
mod result_schemas;
