//! How drawing a chart fails, whatever the backend.

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("the chart font cannot be loaded")]
    Font,
    #[error("cannot draw the chart: {0}")]
    Draw(String),
    #[error("cannot encode the chart as PNG: {0}")]
    Encode(String),
}

/// A drawing error of any backend, as a [`ChartError`].
pub(crate) fn drawing<E: std::error::Error + Send + Sync>(
    error: plotters::drawing::DrawingAreaErrorKind<E>,
) -> ChartError {
    ChartError::Draw(error.to_string())
}
