//! The scenario reports as an MCP App (`io.modelcontextprotocol/ui`): one `ui://` resource, the view, that
//! a host which declared the extension renders in a sandboxed frame for the scenario tools' results. The view
//! is the standalone page's styles and script without any report in it; each result carries what to show
//! (the charts and the report, in `_meta`) and its figures (`structuredContent`). Nothing is fetched.

use rmcp::model::{ClientCapabilities, MetaObject};
use serde_json::json;

use super::page::{self, SCRIPT};

/// The extension's identifier, as a client declares it.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MIME type of an MCP App view.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The view's resource.
pub const VIEW_URI: &str = "ui://fault/report";
/// The key of a tool result's `_meta` that holds what the view shows.
pub const VIEW_META_KEY: &str = "io.github.fault/view";

const APP_SCRIPT: &str = include_str!("app.js");

/// Whether `capabilities` declare MCP Apps with HTML views.
pub fn declared(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .extensions
        .as_ref()
        .and_then(|extensions| extensions.get(EXTENSION))
        .and_then(|settings| settings.get("mimeTypes"))
        .and_then(|types| types.as_array())
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(MIME_TYPE)))
}

/// The view's HTML document.
pub fn view_html() -> String {
    let script = format!("{SCRIPT}\n{APP_SCRIPT}");
    page::document(
        "fault report",
        "<p>The report appears here when the scenario ends.</p>\n",
        &script,
        "",
    )
}

/// A tool's `_meta` naming the view.
pub fn tool_meta() -> MetaObject {
    let mut meta = MetaObject::new();
    meta.0
        .insert("ui".into(), json!({ "resourceUri": VIEW_URI }));
    meta
}

/// A result's `_meta` holding what the view shows: `body`, a report's [`page::impact_body`] or
/// [`page::chaos_body`].
pub fn result_meta(kind: &str, body: String) -> MetaObject {
    let mut meta = MetaObject::new();
    meta.0
        .insert(VIEW_META_KEY.into(), json!({ "kind": kind, "body": body }));
    meta
}
