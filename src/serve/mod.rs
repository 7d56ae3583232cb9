//! How our MCP servers (`fault agent tool`, `fault mcp-test-server`) are served: on stdio, or over Streamable
//! HTTP ([`http`], behind the flags of [`options`]), the result shaping their tools share, and their calls run as
//! tasks ([`tasks`]). The HTTP accept loop ([`accept`]) is also `fault mcp-proxy`'s.

pub mod accept;
pub mod http;
mod options;
pub(crate) mod tasks;

use std::sync::Arc;

use base64::Engine;
use rmcp::{
    ServerHandler, ServiceExt,
    model::{CallToolResult, ContentBlock},
};
use serde::Serialize;
use url::Url;

use crate::report::chart::{self, ChartError, Figure, page_file::PageFile};

pub use http::terminated;
pub use options::{DEFAULT_LISTEN, DEFAULT_PATH, Transport, TransportArgs};

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("MCP session failed to start: {0}")]
    Start(String),
    #[error("MCP session ended with an error: {0}")]
    Run(String),
    #[error("{0} needs --transport http")]
    HttpFlagWithStdio(&'static str),
    #[error(transparent)]
    Http(#[from] http::HttpServeError),
}

/// Serves `server` on the transport of `transport`. Over HTTP every session gets a clone of `server`, so
/// what its clones share (e.g. the one impact-scenario slot) is shared by all sessions.
pub async fn serve_on<S>(name: &str, transport: &TransportArgs, server: S) -> Result<(), ServeError>
where
    S: ServerHandler + Clone + Send + Sync + 'static,
{
    match transport.transport {
        Transport::Stdio => match transport.http_only_flag_given() {
            Some(flag) => Err(ServeError::HttpFlagWithStdio(flag)),
            None => serve_stdio(server).await,
        },
        Transport::Http => Ok(http::serve(name, transport, move || server.clone()).await?),
    }
}

/// A large file's function listing is a few hundred KiB on one line: through the default 64 KiB pipe the
/// server writes it in turns with the client's reads. With 1 MiB (Linux's default maximum without privileges) it goes out
/// in one write. Stdout that is not a pipe, or a refusal, leaves things as they are.
fn widen_stdout_pipe() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::pipe::fcntl_setpipe_size(std::io::stdout(), 1 << 20) {
        tracing::debug!(error = %e, "stdout keeps its pipe size");
    }
}

/// Serves `server` over MCP on stdin/stdout until the client closes stdin.
pub async fn serve_stdio<S: ServerHandler>(server: S) -> Result<(), ServeError> {
    widen_stdout_pipe();
    let service = match server.serve(rmcp::transport::stdio()).await {
        Ok(service) => service,
        // The client went away before the handshake (e.g. a config check): a clean end, not a failure.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(when)) => {
            tracing::info!(%when, "stdin closed before the MCP handshake");
            return Ok(());
        }
        Err(e) => return Err(ServeError::Start(e.to_string())),
    };
    let reason = service
        .waiting()
        .await
        .map_err(|e| ServeError::Run(e.to_string()))?;
    tracing::info!(?reason, "MCP session closed");
    Ok(())
}

/// A tool result flagged `isError`, with a message a person or a model can act on.
pub(crate) fn tool_error(message: impl std::fmt::Display) -> CallToolResult {
    let message = message.to_string();
    tracing::debug!(%message, "tool error");
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A successful result whose text content is `text` and whose `structuredContent` is `structured`.
pub(crate) fn text_and_structured(
    text: impl Into<String>,
    structured: &impl Serialize,
) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    match serde_json::to_value(structured) {
        Ok(value) => result.structured_content = Some(value),
        Err(e) => return tool_error(format!("internal error: cannot encode the result: {e}")),
    }
    result
}

/// `result` with `figure` after its content as a PNG image block, whose `_meta.alt` is the figure's text
/// alternative and whose audience is the user (a model has the same figures as text). A chart that cannot be
/// drawn leaves the result as it is: the report stands without its picture.
pub(crate) fn with_chart(mut result: CallToolResult, figure: &impl Figure) -> CallToolResult {
    match chart::png::png(figure) {
        Ok(png) => {
            let mut meta = rmcp::model::MetaObject::new();
            meta.0.insert("alt".into(), figure.alt_text().into());
            let image = rmcp::model::ImageContent::new(
                base64::engine::general_purpose::STANDARD.encode(png),
                "image/png",
            )
            .with_meta(meta)
            .with_annotations(
                rmcp::model::Annotations::default().with_audience(vec![rmcp::model::Role::User]),
            );
            result.content.push(ContentBlock::Image(image));
        }
        Err(e) => tracing::warn!(error = %e, "the report's chart was not drawn"),
    }
    result
}

/// `result`, once the run's HTML page is in `page` (the tool's `report_path`) when one was asked for. A page
/// that cannot be made or written adds a text block saying so: the report itself is still the result.
pub(crate) fn with_page(
    mut result: CallToolResult,
    page: Option<PageFile>,
    render: impl FnOnce() -> Result<String, ChartError>,
) -> CallToolResult {
    let Some(page) = page else {
        return result;
    };
    let path = page.path().display().to_string();
    let written = render()
        .map_err(|e| e.to_string())
        .and_then(|html| page.write(&html).map_err(|e| e.to_string()));
    if let Err(e) = written {
        tracing::warn!(%path, error = %e, "the HTML report was not written");
        result.content.push(ContentBlock::text(format!(
            "report_path: the HTML report was not written to {path}: {e}"
        )));
    }
    result
}

/// `result`, once `report` is in `file` as JSON (the tool's `result_path`, what `fault report merge` reads) when
/// one was asked for. A file that cannot be written adds a text block saying so.
pub(crate) fn with_result_file(
    mut result: CallToolResult,
    file: Option<PageFile>,
    report: &impl serde::Serialize,
) -> CallToolResult {
    let Some(file) = file else {
        return result;
    };
    let path = file.path().display().to_string();
    let written = serde_json::to_string_pretty(report)
        .map_err(|e| e.to_string())
        .and_then(|json| file.write(&(json + "\n")).map_err(|e| e.to_string()));
    if let Err(e) = written {
        tracing::warn!(%path, error = %e, "the result was not written");
        result.content.push(ContentBlock::text(format!(
            "result_path: the result was not written to {path}: {e}"
        )));
    }
    result
}

/// `result` with what the MCP App view shows of it in its `_meta` (the charts and the report, `body`), for a
/// client that declared MCP Apps (`declared`); others get `result` as it is.
pub(crate) fn with_view(
    mut result: CallToolResult,
    declared: bool,
    kind: &str,
    body: impl FnOnce() -> Result<String, ChartError>,
) -> CallToolResult {
    if !declared {
        return result;
    }
    match body() {
        Ok(body) => result.meta = Some(chart::app::result_meta(kind, body)),
        Err(e) => tracing::warn!(error = %e, "the report's view was not drawn"),
    }
    result
}

/// A successful result whose text content is the JSON encoding of `text_value`.
pub(crate) fn json_and_structured(
    text_value: &impl Serialize,
    structured: &impl Serialize,
) -> CallToolResult {
    match serde_json::to_string(text_value) {
        Ok(text) => text_and_structured(text, structured),
        Err(e) => tool_error(format!("internal error: cannot encode the result: {e}")),
    }
}

/// The JSON Schema of `T`, for a tool's `outputSchema`.
pub(crate) fn output_schema<T: schemars::JsonSchema + 'static>() -> Arc<rmcp::model::JsonObject> {
    rmcp::handler::server::common::schema_for_output::<T>()
}

/// An `http://` or `https://` base URL given by a user (an LLM provider, Qdrant).
pub fn parse_http_url(raw: &str) -> Result<Url, String> {
    let url = Url::parse(raw.trim()).map_err(|e| {
        format!("'{raw}' is not a valid URL ({e}); expected e.g. http://localhost:11434")
    })?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(format!(
            "'{raw}' has scheme '{other}'; expected http or https"
        )),
    }
}
