//! Load generator benchmark against `wrk` on the same loopback target, in one run.
//!
//! `cargo bench --bench load` starts a small HTTP/1.1 target in a child process (one runtime thread), then
//! alternates `wrk -t1` and this crate's generator (one runtime thread) against it, in short rounds whose
//! order is swapped every round (the machine's speed drifts within a run):
//! - maximum request rate: closed loop with C connections (wrk -c C vs `Pace::Saturate` with C clients);
//! - latency at p50 for the same endpoint: one connection, back to back (wrk -c1 --latency vs 1 client);
//! - rate accuracy: open model at a fixed target rate (requests started vs planned, achieved rate);
//! - memory: the resident size of `fault agent tool` idle after `initialize`, then sampled every 5 s through a
//!   long latency scenario (50 clients × 100 req/s, proxy in front of the target) called over MCP.
//!
//! Env: BENCH_SECONDS (default 3), BENCH_CONNECTIONS (default 16), BENCH_RATE (default 5000),
//! BENCH_SCENARIO_SECONDS (default 60; 0 skips the memory part).

use std::{
    io::{BufRead, BufReader, Write},
    process::{Command, Stdio},
    sync::Arc,
    time::Duration,
};

#[path = "support/mcp_stdio.rs"]
mod mcp_stdio;

use fault::load::{self, LoadPlan, LoadProgress, Mix, Pace, Target};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The target: "hello world" on every path, kept-alive connections, one runtime thread.
fn serve() {
    use http_body_util::Full;
    use hyper::{Response, server::conn::http1, service::service_fn};
    use hyper_util::rt::TokioIo;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        println!("{}", listener.local_addr().expect("addr").port()); // stdout-ok: port for the parent
        std::io::stdout().flush().ok();
        // The parent closes our stdin when it is done.
        tokio::spawn(async {
            let mut line = String::new();
            let _ =
                tokio::task::spawn_blocking(move || std::io::stdin().read_line(&mut line)).await;
            std::process::exit(0);
        });
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let service = service_fn(|_req| async {
                    Ok::<_, std::convert::Infallible>(Response::new(Full::new(
                        bytes::Bytes::from_static(b"hello world"),
                    )))
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
}

struct WrkResult {
    rps: f64,
    p50_us: f64,
}

fn parse_duration_us(text: &str) -> Option<f64> {
    let text = text.trim();
    let (number, scale) = if let Some(v) = text.strip_suffix("us") {
        (v, 1.0)
    } else if let Some(v) = text.strip_suffix("ms") {
        (v, 1000.0)
    } else if let Some(v) = text.strip_suffix('s') {
        (v, 1_000_000.0)
    } else {
        (text, 1.0)
    };
    number.parse::<f64>().ok().map(|v| v * scale)
}

fn wrk(url: &str, connections: u64, seconds: u64) -> Option<WrkResult> {
    let output = Command::new("wrk")
        .args([
            "-t1",
            &format!("-c{connections}"),
            &format!("-d{seconds}s"),
            "--latency",
            url,
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let rps = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse::<f64>().ok())?;
    let p50_us = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("50%"))
        .and_then(parse_duration_us)?;
    Some(WrkResult { rps, p50_us })
}

struct OursResult {
    rps: f64,
    p50_us: f64,
    requests: u64,
    planned: Option<u64>,
    errors: u64,
}

fn ours(url: &str, num_clients: u32, pace: Pace, seconds: u64) -> OursResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let plan = LoadPlan {
        mix: Mix::single(Target::parse(url, "GET", &[], "").expect("url")),
        connect_to: None,
        proxy_originates_tls: false,
        num_clients,
        pace,
        duration: Duration::from_secs(seconds),
        timeout: Duration::from_secs(5),
        max_in_flight: None,
    };
    let report = runtime
        .block_on(load::run(
            &plan,
            &CancellationToken::new(),
            Arc::new(LoadProgress::default()),
        ))
        .expect("load run");
    let requests = report.samples.requests();
    OursResult {
        // Rate over the scheduled duration, as wrk reports it.
        rps: requests as f64 / seconds as f64,
        p50_us: report.samples.all_us.value_at_quantile(0.5) as f64,
        requests,
        planned: report.planned,
        errors: report.samples.errors(),
    }
}

/// Runs both measurements, the first one first in even rounds and second in odd rounds, so a drift
/// in machine speed hits both alike.
fn in_turn<A, B>(round: usize, a: impl FnOnce() -> A, b: impl FnOnce() -> B) -> (A, B) {
    if round.is_multiple_of(2) {
        let a = a();
        (a, b())
    } else {
        let b = b();
        (a(), b)
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--serve") {
        serve();
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    // Every figure here is a ratio to wrk: without it there is nothing to compare, so say so and fail.
    if Command::new("wrk").arg("--version").output().is_err() {
        eprintln!("wrk is not installed: this bench compares against it (apt-get install -y wrk)");
        std::process::exit(2);
    }
    let seconds = env_u64("BENCH_SECONDS", 3);
    let connections = env_u64("BENCH_CONNECTIONS", 16);
    let rate = env_u64("BENCH_RATE", 5000);

    let exe = std::env::current_exe().expect("bench executable");
    let mut server = Command::new(exe)
        .arg("--serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn target");
    let mut port = String::new();
    BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut port)
        .expect("port");
    let url = format!("http://127.0.0.1:{}/", port.trim());
    eprintln!("target {url}; {seconds}s per run, {connections} connections");
    let load_average = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();

    // Maximum rate: short rounds, the order swapped every round; the ratio is the median of per-round ratios.
    let mut wrk_max = Vec::new();
    let mut ours_max = Vec::new();
    let mut max_ratios = Vec::new();
    for round in 0..7 {
        let (w, o) = in_turn(
            round,
            || wrk(&url, connections, seconds).expect("wrk (apt-get install -y wrk)"),
            || ours(&url, connections as u32, Pace::Saturate, seconds),
        );
        eprintln!(
            "round {round}: wrk {:.0} req/s, fault {:.0} req/s ({} errors)",
            w.rps, o.rps, o.errors
        );
        wrk_max.push(w.rps);
        ours_max.push(o.rps);
        max_ratios.push(o.rps / w.rps);
    }
    // Latency on one connection.
    let mut wrk_p50 = Vec::new();
    let mut ours_p50 = Vec::new();
    // Short rounds, the order swapped every round.
    for round in 0..9 {
        let (w, o) = in_turn(
            round,
            || wrk(&url, 1, 2).expect("wrk"),
            || ours(&url, 1, Pace::Saturate, 2),
        );
        eprintln!(
            "round {round}: p50 wrk {:.1} µs, fault {:.1} µs",
            w.p50_us, o.p50_us
        );
        wrk_p50.push(w.p50_us);
        ours_p50.push(o.p50_us);
    }
    // Rate accuracy, open model.
    let clients = 10u32;
    let per_client = (rate / u64::from(clients)).max(1) as u32;
    let accuracy = ours(&url, clients, Pace::Open { rps: per_client }, seconds);

    let (wrk_max, ours_max) = (median(wrk_max), median(ours_max));
    let (wrk_p50, ours_p50) = (median(wrk_p50), median(ours_p50));
    let planned = accuracy.planned.unwrap_or(0);
    println!(
        "Load average at the start: {}\n",
        load_average
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    ); // stdout-ok
    println!("| Measure | wrk 4.1 (-t1) | fault load (1 thread) | Ratio |"); // stdout-ok
    println!("|---|---|---|---|"); // stdout-ok
    println!(
        "| Max rate, {connections} connections (median of 7 × {seconds} s; ratio: median per round) | {wrk_max:.0} req/s | {ours_max:.0} req/s | {:.2} |",
        median(max_ratios.clone())
    ); // stdout-ok
    println!(
        "| p50 latency, 1 connection (median of 9 × 2 s) | {:.1} µs | {:.1} µs | {:.2} |",
        wrk_p50,
        ours_p50,
        ours_p50 / wrk_p50
    ); // stdout-ok
    println!(
        "| Open model at {} req/s for {seconds}s: started / planned | – | {} / {planned} ({} errors), {:.1} req/s | {:.4} |",
        u64::from(clients) * u64::from(per_client),
        accuracy.requests,
        accuracy.errors,
        accuracy.rps,
        accuracy.requests as f64 / planned.max(1) as f64
    ); // stdout-ok
    let rate_ratio = median(max_ratios.clone());
    let p50_ratio = ours_p50 / wrk_p50;
    let verdict = |ok: bool| if ok { "met" } else { "NOT MET" };
    println!(
        "\nTargets: max rate ≥ 0.95× wrk's: {} ({rate_ratio:.2}); p50 within 5% of wrk's: {} ({p50_ratio:.2})",
        verdict(rate_ratio >= 0.95),
        verdict((p50_ratio - 1.0).abs() <= 0.05)
    ); // stdout-ok

    let scenario_seconds = env_u64("BENCH_SCENARIO_SECONDS", 60);
    if scenario_seconds > 0 {
        memory_through_a_long_scenario(&url, scenario_seconds);
    }

    drop(server.stdin.take());
    let _ = server.kill();
    let _ = server.wait();
}

/// Resident set size of a process, in MB.
fn rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1000.0)
}

fn memory_through_a_long_scenario(url: &str, seconds: u64) {
    // 50 clients × 100 req/s is over the scenario cap a server has by default (1,000 req/s).
    let mut server = mcp_stdio::Server::spawn_with(&["--max-scenario-rps", "5000"], &[]);
    server.initialize();
    std::thread::sleep(Duration::from_millis(500));
    let pid = server.pid();
    let idle = rss_mb(pid).unwrap_or(f64::NAN);
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_secs(5));
                if let Some(mb) = rss_mb(pid) {
                    samples.push(mb);
                }
            }
            samples
        })
    };
    let answer = server.call(
        "fault_run_latency_impact_scenario",
        json!({"url": url, "latency": 1, "duration": format!("{seconds}s"),
               "num_clients": 50, "rps": 100, "timeout": 5}),
    );
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let samples = sampler.join().unwrap_or_default();
    let after = rss_mb(pid).unwrap_or(f64::NAN);
    let requests = &answer["result"]["structuredContent"]["run"]["requests"];
    server.close();
    let shown: Vec<String> = samples.iter().map(|mb| format!("{mb:.1}")).collect();
    eprintln!("RSS every 5 s (MB): {}", shown.join(", "));
    let first = samples.first().copied().unwrap_or(f64::NAN);
    let last = samples.last().copied().unwrap_or(f64::NAN);
    println!(); // stdout-ok
    println!("| Memory of `fault agent tool` | RSS |"); // stdout-ok
    println!("|---|---|"); // stdout-ok
    println!("| idle after initialize | {idle:.1} MB |"); // stdout-ok
    println!(
        "| {seconds} s latency scenario, 5,000 req/s ({requests} requests): at 5 s / at the end / after | {first:.1} / {last:.1} / {after:.1} MB |"
    ); // stdout-ok
}
