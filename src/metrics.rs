//! Prometheus's text exposition format (0.0.4) on `/metrics`, for `fault run --metrics` and `fault mcp-proxy
//! --metrics`. The figures are a view of the counters the proxies and the MCP recorder already keep, rendered
//! at each scrape: nothing is counted twice. A writer of our own rather than `prometheus-client`: that crate's
//! model owns its metric objects (counters registered up front, updated at each event), where ours are read
//! at scrape time from what is already kept; the text format is small enough to write here.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;

use hdrhistogram::Histogram;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Upper bounds (seconds) of the latency histograms' buckets, as Prometheus's client libraries choose them,
/// from 1 ms to 10 s.
pub const LATENCY_BUCKETS_S: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("--metrics: cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// The metrics page being written: families, each with its `# HELP` and `# TYPE`, then its samples.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

/// A label value escaped as the format asks (backslash, double quote, new line).
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn labels(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs
        .iter()
        .map(|(name, value)| format!("{name}=\"{}\"", escape(value)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// A float as the format writes it.
fn number(value: f64) -> String {
    if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{value}")
    }
}

impl Exposition {
    /// Starts a family: `kind` is counter, gauge or histogram.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {}", help.replace('\n', " "));
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    pub fn sample(&mut self, name: &str, pairs: &[(&str, &str)], value: f64) {
        let _ = writeln!(self.text, "{name}{} {}", labels(pairs), number(value));
    }

    /// One histogram of a family `name` (seconds), from a histogram of µs and the exact sum of its values.
    pub fn histogram_us(
        &mut self,
        name: &str,
        pairs: &[(&str, &str)],
        histogram: &Histogram<u64>,
        sum_us: u128,
    ) {
        let bucket = format!("{name}_bucket");
        for le in LATENCY_BUCKETS_S {
            let count = if histogram.is_empty() {
                0
            } else {
                histogram.count_between(0, (le * 1e6) as u64)
            };
            let le = number(le);
            let mut with_le = pairs.to_vec();
            with_le.push(("le", &le));
            self.sample(&bucket, &with_le, count as f64);
        }
        let mut with_le = pairs.to_vec();
        with_le.push(("le", "+Inf"));
        self.sample(&bucket, &with_le, histogram.len() as f64);
        self.sample(&format!("{name}_sum"), pairs, sum_us as f64 / 1e6);
        self.sample(&format!("{name}_count"), pairs, histogram.len() as f64);
    }

    pub fn into_text(self) -> String {
        self.text
    }
}

/// What renders the page at each scrape.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Binds the metrics address now, so that one in use is refused before anything starts.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, MetricsError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| MetricsError::Bind { addr, source })
}

/// Serves `render`'s page on `GET /metrics` until `cancel`.
pub fn serve(listener: TcpListener, render: Render, cancel: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => { tokio::spawn(answer(stream, render.clone())); }
                    Err(e) => {
                        tracing::warn!("metrics: accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
        }
    })
}

/// Largest request head read from a scraper.
const MAX_REQUEST: usize = 8 * 1024;

async fn answer(mut stream: TcpStream, render: Render) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    let read = async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        true
    };
    match tokio::time::timeout(std::time::Duration::from_secs(10), read).await {
        Ok(true) => {}
        _ => return,
    }
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut parts = line.split(|&b| b == b' ');
    let (method, target) = (parts.next(), parts.next());
    let path = target.map(|t| t.split(|&b| b == b'?').next().unwrap_or_default());
    let (status, content_type, body) = match (method, path) {
        (Some(b"GET"), Some(b"/metrics")) => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            render(),
        ),
        _ => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "metrics are on GET /metrics\n".to_owned(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_is_cumulative_buckets_sum_and_count_in_seconds() {
        let mut page = Exposition::default();
        let mut h = crate::load::histogram(3);
        for us in [500, 2_000, 40_000] {
            crate::load::record_us(&mut h, us);
        }
        page.family("fault_x_seconds", "histogram", "x");
        page.histogram_us("fault_x_seconds", &[("group", "GET \"/a\"")], &h, 42_500);
        let text = page.into_text();
        assert!(
            text.contains("fault_x_seconds_bucket{group=\"GET \\\"/a\\\"\",le=\"0.001\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("le=\"0.05\"} 3\n"), "{text}");
        assert!(text.contains("le=\"+Inf\"} 3\n"), "{text}");
        assert!(
            text.contains("fault_x_seconds_sum{group=\"GET \\\"/a\\\"\"} 0.0425\n"),
            "{text}"
        );
    }
}
