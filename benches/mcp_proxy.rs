//! `fault mcp-proxy` overhead: the `tools/call` round trip through the proxy with an empty plan vs. direct to
//! `fault mcp-test-server`, in the same run, and the proxy's memory over many calls.
//!
//! `cargo bench --bench mcp_proxy` (release build). `MCP_PROXY_BENCH_CALLS` sets the calls per side for the
//! latency figures (default 20,000) and `MCP_PROXY_BENCH_MEMORY_CALLS` the calls of the memory run
//! (default 100,000). Prints p50 and p99 of each side, the added p50/p99, and the proxy's RSS (from
//! /proc) after 10% of the memory run and at its end.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    time::Instant,
};

use hdrhistogram::Histogram;

const FAULT: &str = env!("CARGO_BIN_EXE_fault");

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl Session {
    fn spawn(args: &[&str]) -> Session {
        let mut child = Command::new(FAULT)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn fault");
        let mut session = Session {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            next_id: 1,
            line: String::new(),
        };
        session.request(r#""method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}"#);
        writeln!(
            session.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        session
    }

    /// Sends one request (`body` is the message without `jsonrpc` and `id`) and waits for its answer.
    fn request(&mut self, body: &str) {
        let id = self.next_id;
        self.next_id += 1;
        writeln!(self.stdin, r#"{{"jsonrpc":"2.0","id":{id},{body}}}"#).unwrap();
        self.stdin.flush().unwrap();
        let tag = format!("\"id\":{id},");
        loop {
            self.line.clear();
            assert!(
                self.stdout.read_line(&mut self.line).unwrap() > 0,
                "server closed stdout"
            );
            if self.line.contains(&tag) || self.line.contains(&format!("\"id\":{id}}}")) {
                assert!(!self.line.contains("\"error\""), "{}", self.line);
                return;
            }
        }
    }

    fn echo(&mut self) {
        self.request(
            r#""method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}"#,
        );
    }

    /// Resident memory of the session's process, in KiB.
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    fn close(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn env_count(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn round_trips(session: &mut Session, calls: u64) -> Histogram<u64> {
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    for _ in 0..calls {
        let started = Instant::now();
        session.echo();
        histogram.saturating_record(started.elapsed().as_nanos() as u64);
    }
    histogram
}

fn us(nanos: u64) -> f64 {
    nanos as f64 / 1000.0
}

fn main() {
    let calls = env_count("MCP_PROXY_BENCH_CALLS", 20_000);
    let memory_calls = env_count("MCP_PROXY_BENCH_MEMORY_CALLS", 100_000);
    let server = ["--log-level", "warn", "mcp-test-server"];
    let mut proxied_args = vec!["--log-level", "warn", "mcp-proxy", "--", FAULT];
    proxied_args.extend(server);

    let mut direct = Session::spawn(&server);
    let mut proxied = Session::spawn(&proxied_args);
    // Warm both, then interleave batches so both sides see the same machine load.
    round_trips(&mut direct, 1000);
    round_trips(&mut proxied, 1000);
    let mut direct_h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    let mut proxied_h = direct_h.clone();
    let batch = 1000.min(calls).max(1);
    for _ in 0..calls.div_ceil(batch) {
        direct_h.add(round_trips(&mut direct, batch)).unwrap();
        proxied_h.add(round_trips(&mut proxied, batch)).unwrap();
    }
    direct.close();
    let (d50, d99) = (
        direct_h.value_at_quantile(0.5),
        direct_h.value_at_quantile(0.99),
    );
    let (p50, p99) = (
        proxied_h.value_at_quantile(0.5),
        proxied_h.value_at_quantile(0.99),
    );
    println!(
        "tools/call echo round trip, {} calls per side (interleaved batches of {batch}):",
        direct_h.len()
    ); // stdout-ok
    println!(
        "  direct to fault mcp-test-server: p50 {:8.1} µs  p99 {:8.1} µs",
        us(d50),
        us(d99)
    ); // stdout-ok
    println!(
        "  through fault mcp-proxy (no plan): p50 {:8.1} µs  p99 {:8.1} µs",
        us(p50),
        us(p99)
    ); // stdout-ok
    println!(
        // stdout-ok
        "  added by the proxy:               p50 {:8.1} µs  p99 {:8.1} µs  (goal: p50 < 100 µs)",
        us(p50.saturating_sub(d50)),
        us(p99.saturating_sub(d99))
    );

    // Memory: the proxy's RSS early in a long run and at its end.
    let early = memory_calls / 10;
    round_trips(&mut proxied, early);
    let rss_early = proxied.rss_kib();
    round_trips(&mut proxied, memory_calls - early);
    let rss_end = proxied.rss_kib();
    println!(
        // stdout-ok
        "proxy RSS over {memory_calls} more calls: {rss_early} KiB after {early}, {rss_end} KiB at the end ({:+} KiB)",
        rss_end as i64 - rss_early as i64
    );
    proxied.close();
}
