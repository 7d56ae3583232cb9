//! What every scenario tool shares: the one slot they run in, the progress they report each second, and the
//! report they answer (markdown, structuredContent, the chart, the MCP App view, the HTML page, the result file).

use std::{sync::Arc, time::Duration};

use base64::Engine;
use rmcp::{
    RoleServer,
    model::{CallToolResult, ContentBlock, ProgressNotificationParam},
    service::RequestContext,
};
use tokio_util::sync::CancellationToken;

use super::{FaultServer, impact_input::RunFiles, tool_error};
use crate::{
    load,
    report::chart::{self, ChartError, Figure, page_file::PageFile},
    serve::tasks::TaskStatusLine,
};

/// What the dispatcher answers a scenario tool's call while another scenario holds the slot.
pub(super) const BUSY: &str = "another scenario is running; scenarios (impact, capacity, MCP chaos, scans) run \
one at a time, since they bind ports and measure latency. Try again when it has finished.";

/// How long a new scenario waits for a cancelled one to finish stopping (its proxies closing).
const STOPPING_WAIT: Duration = Duration::from_secs(5);

/// One scenario at a time. A second one is refused, unless the running one was cancelled: it is
/// then only closing connections and freeing ports, and the new one waits for that.
#[derive(Clone)]
pub(super) struct ScenarioSlot {
    permit: Arc<tokio::sync::Semaphore>,
    /// Cancellation of the scenario that holds the permit (the last one that took it).
    holder: Arc<std::sync::Mutex<Option<tokio_util::sync::CancellationToken>>>,
}

impl Default for ScenarioSlot {
    fn default() -> Self {
        Self {
            permit: Arc::new(tokio::sync::Semaphore::new(1)),
            holder: Arc::default(),
        }
    }
}

impl ScenarioSlot {
    /// The slot for a scenario cancelled by `cancel`, or `None` when another scenario is running.
    pub(super) async fn take(
        &self,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let holder = || self.holder.lock().unwrap_or_else(|p| p.into_inner());
        let permit = match self.permit.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let stopping = holder().as_ref().is_some_and(|c| c.is_cancelled());
                if !stopping {
                    return None;
                }
                tokio::time::timeout(STOPPING_WAIT, self.permit.clone().acquire_owned())
                    .await
                    .ok()?
                    .ok()?
            }
        };
        *holder() = Some(cancel.clone());
        Some(permit)
    }
}

/// A scenario's report as the tool answers it: markdown and structuredContent with its chart, the MCP App view
/// for a client that declared MCP Apps, and its HTML page.
pub(super) trait ScenarioReport: serde::Serialize {
    /// The tool's result: the markdown, structuredContent, the chart and, when `apps`, the App view.
    fn result(&self, apps: bool) -> CallToolResult;
    /// The self-contained HTML page (`report_path`).
    fn page(&self) -> Result<String, ChartError>;
}

impl FaultServer {
    /// Runs `run` (in the scenario slot its tool's facts make the dispatcher take) with progress each second
    /// if asked (`total` of a unit), and answers its report, writing the files asked for; the files are removed
    /// when there is no report.
    pub(super) async fn run_scenario<R: ScenarioReport, E: std::fmt::Display>(
        &self,
        files: RunFiles,
        context: RequestContext<RoleServer>,
        (total, unit): (u64, &'static str),
        run: impl AsyncFnOnce(&CancellationToken, Arc<load::LoadProgress>) -> Result<R, E>,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        let progress = Arc::new(load::LoadProgress::default());
        let ticker = progress_ticker(&context, progress.clone(), total, unit);
        let apps = declared_apps(&context);
        let outcome = run(&context.ct, progress).await;
        if let Some(ticker) = ticker {
            ticker.abort();
        }
        match outcome {
            Ok(report) => {
                let result = with_result_file(report.result(apps), files.result, &report);
                Ok(with_page(result, files.page, || report.page()))
            }
            Err(e) => {
                files.discard();
                Ok(tool_error(e))
            }
        }
    }
}

/// The run's note (what it waits for), as the end of a progress message.
fn noted(progress: &load::LoadProgress) -> String {
    match progress.note() {
        note if note.is_empty() => String::new(),
        note => format!("; {note}"),
    }
}

/// "5 of 20 calls", or "5 calls" when the total is not known ahead (0).
fn of_total(done: u64, total: u64, unit: &str) -> String {
    if total == 0 {
        format!("{done} {unit}")
    } else {
        format!("{done} of {total} {unit}")
    }
}

/// Tells how far a run is each second: as the task's status message when the call runs as a task, else as
/// `notifications/progress` when the client asked for progress: `completed` of `total` `unit` done (`total`
/// 0: not known ahead), and how many failed.
pub(super) fn progress_ticker(
    context: &RequestContext<RoleServer>,
    progress: Arc<load::LoadProgress>,
    total: u64,
    unit: &'static str,
) -> Option<tokio::task::JoinHandle<()>> {
    if let Some(status) = context.extensions.get::<TaskStatusLine>().cloned() {
        return Some(tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let done = progress
                    .completed
                    .load(std::sync::atomic::Ordering::Relaxed);
                let errors = progress.errors.load(std::sync::atomic::Ordering::Relaxed);
                status.set(format!(
                    "{} s in, {} done, {errors} errors{}",
                    started.elapsed().as_secs(),
                    of_total(done, total, unit),
                    noted(&progress)
                ));
            }
        }));
    }
    let token = context.meta.get_progress_token()?;
    let peer = context.peer.clone();
    Some(tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.tick().await;
        loop {
            tick.tick().await;
            let done = progress
                .completed
                .load(std::sync::atomic::Ordering::Relaxed);
            let errors = progress.errors.load(std::sync::atomic::Ordering::Relaxed);
            let mut note =
                ProgressNotificationParam::new(token.clone(), done as f64).with_message(format!(
                    "{} done, {errors} errors{}",
                    of_total(done, total, unit),
                    noted(&progress)
                ));
            if total > 0 {
                note = note.with_total(total as f64);
            }
            if peer.notify_progress(note).await.is_err() {
                break;
            }
        }
    }))
}

/// `result` with `figure` after its content as a PNG image block, whose `_meta.alt` is the figure's text
/// alternative and whose audience is the user (a model has the same figures as text). A chart that cannot be
/// drawn leaves the result as it is: the report stands without its picture.
pub(super) fn with_chart(mut result: CallToolResult, figure: &impl Figure) -> CallToolResult {
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
pub(super) fn with_page(
    result: CallToolResult,
    page: Option<PageFile>,
    render: impl FnOnce() -> Result<String, ChartError>,
) -> CallToolResult {
    with_file(result, page, ("report_path", "the HTML report"), || {
        render().map_err(|e| e.to_string())
    })
}

/// `result`, once `report` is in `file` as JSON (the tool's `result_path`, what `fault report merge` reads) when
/// one was asked for. A file that cannot be written adds a text block saying so.
pub(super) fn with_result_file(
    result: CallToolResult,
    file: Option<PageFile>,
    report: &impl serde::Serialize,
) -> CallToolResult {
    with_file(result, file, ("result_path", "the result"), || {
        serde_json::to_string_pretty(report)
            .map(|json| json + "\n")
            .map_err(|e| e.to_string())
    })
}

/// `result`, once `file` (asked for by the field `field`, holding `what`) holds what `text` makes; a text that
/// cannot be made or written adds a block saying so.
fn with_file(
    mut result: CallToolResult,
    file: Option<PageFile>,
    (field, what): (&str, &str),
    text: impl FnOnce() -> Result<String, String>,
) -> CallToolResult {
    let Some(file) = file else {
        return result;
    };
    let path = file.path().display().to_string();
    let written = text().and_then(|text| file.write(&text).map_err(|e| e.to_string()));
    if let Err(e) = written {
        tracing::warn!(%path, error = %e, "{what} was not written");
        result.content.push(ContentBlock::text(format!(
            "{field}: {what} was not written to {path}: {e}"
        )));
    }
    result
}

/// `result` with what the MCP App view shows of it in its `_meta` (the charts and the report, `body`), for a
/// client that declared MCP Apps (`declared`); others get `result` as it is.
pub(super) fn with_view(
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

/// Whether the client of `context` declared MCP Apps with HTML views.
pub(super) fn declared_apps(context: &RequestContext<RoleServer>) -> bool {
    context
        .peer
        .peer_info()
        .is_some_and(|info| chart::app::declared(&info.capabilities))
}
