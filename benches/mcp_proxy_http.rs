//! `fault mcp-proxy --upstream` overhead: the `tools/call` round trip over Streamable HTTP through the proxy vs.
//! direct to the same server, in the same run. The server is a minimal in-process Streamable HTTP endpoint
//! (hyper) answering each POST with one SSE event, as FastMCP does, so the figures are the proxy's own cost.
//!
//! `cargo bench --bench mcp_proxy_http` (release build). `MCP_PROXY_HTTP_BENCH_CALLS` sets the calls per side
//! (default 10,000). Three sides, interleaved in batches: direct; through the proxy with no plan (bodies
//! streamed untouched); through the proxy with a plan whose fault never fires (every call decided, its SSE
//! answer read event by event and recorded).

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    time::Instant,
};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, body::Incoming};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::{TokioExecutor, TokioIo},
};

const FAULT: &str = env!("CARGO_BIN_EXE_fault");

/// The server: every POST gets its request's answer as one SSE event, with a session header.
async fn serve(listener: tokio::net::TcpListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(|req: Request<Incoming>| async move {
                let body = req.into_body().collect().await?.to_bytes();
                let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let answer = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "result": {"content": [{"type": "text", "text": "hello"}], "isError": false},
                });
                let event = format!("event: message\ndata: {answer}\n\n");
                Ok::<_, hyper::Error>(
                    Response::builder()
                        .header("content-type", "text/event-stream")
                        .header("mcp-session-id", "bench")
                        .body(Full::new(Bytes::from(event)))
                        .unwrap(),
                )
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

struct Proxy {
    child: Child,
    url: String,
}

impl Proxy {
    fn spawn(upstream: &str, args: &[&str]) -> Proxy {
        let mut child = Command::new(FAULT)
            .args(["--log-level", "warn", "mcp-proxy", "--upstream", upstream])
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn fault mcp-proxy");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let url = loop {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "the proxy exited");
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.split(" -> ").next().unwrap().to_owned();
            }
        };
        Proxy { child, url }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn round_trips(
    client: &Client<HttpConnector, Full<Bytes>>,
    url: &str,
    calls: u64,
    next_id: &mut u64,
) -> Histogram<u64> {
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    for _ in 0..calls {
        *next_id += 1;
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{next_id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}}}}}}"#
        );
        let request = Request::post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", "bench")
            .header("mcp-protocol-version", "2025-06-18")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let started = Instant::now();
        let response = client.request(request).await.expect("request");
        let answer = response.into_body().collect().await.unwrap().to_bytes();
        histogram.saturating_record(started.elapsed().as_nanos() as u64);
        assert!(
            answer.windows(7).any(|w| w == b"\"hello\""),
            "{}",
            String::from_utf8_lossy(&answer)
        );
    }
    histogram
}

fn us(nanos: u64) -> f64 {
    nanos as f64 / 1000.0
}

#[tokio::main]
async fn main() {
    let calls: u64 = std::env::var("MCP_PROXY_HTTP_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let direct = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(serve(listener));
    let plan =
        std::env::temp_dir().join(format!("mcp-proxy-http-bench-{}.yaml", std::process::id()));
    std::fs::write(
        &plan,
        "faults:\n  - type: latency\n    tools: [echo]\n    ms: 100\n    probability: 0\n",
    )
    .unwrap();
    let events = plan.with_extension("jsonl");
    let bare = Proxy::spawn(&direct, &[]);
    let engine = Proxy::spawn(
        &direct,
        &[
            "--plan",
            plan.to_str().unwrap(),
            "--events",
            events.to_str().unwrap(),
        ],
    );
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let sides = [
        ("direct to the server", direct.clone()),
        ("through fault mcp-proxy, no plan", bare.url.clone()),
        ("through fault mcp-proxy, plan + events", engine.url.clone()),
    ];
    let mut next_id = 0;
    for (_, url) in &sides {
        round_trips(&client, url, 1000, &mut next_id).await;
    }
    let mut histograms =
        vec![Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap(); sides.len()];
    let batch = 1000.min(calls).max(1);
    for _ in 0..calls.div_ceil(batch) {
        for ((_, url), histogram) in sides.iter().zip(histograms.iter_mut()) {
            histogram
                .add(round_trips(&client, url, batch, &mut next_id).await)
                .unwrap();
        }
    }
    println!(
        "tools/call echo round trip over Streamable HTTP (SSE answer), {} calls per side (interleaved batches of {batch}):",
        histograms[0].len()
    ); // stdout-ok
    let d50 = histograms[0].value_at_quantile(0.5);
    let d99 = histograms[0].value_at_quantile(0.99);
    for ((name, _), histogram) in sides.iter().zip(&histograms) {
        let (p50, p99) = (
            histogram.value_at_quantile(0.5),
            histogram.value_at_quantile(0.99),
        );
        println!(
            // stdout-ok
            "  {name:<40} p50 {:8.1} µs  p99 {:8.1} µs  added p50 {:+8.1} µs  p99 {:+8.1} µs",
            us(p50),
            us(p99),
            us(p50) - us(d50),
            us(p99) - us(d99)
        );
    }
    println!("  goal: added p50 < 200 µs"); // stdout-ok
    drop((bare, engine));
    let _ = std::fs::remove_file(&plan);
    let _ = std::fs::remove_file(&events);
}
