//! Load generator benchmark against `wrk` on the same loopback target, in one run.
//!
//! `cargo bench --bench load` starts a small HTTP/1.1 target in a child process (one runtime thread), then
//! alternates `wrk -t1` and this crate's generator (one runtime thread) against it, in short rounds whose
//! order is swapped every round (the machine's speed drifts within a run):
//! - maximum request rate: closed loop with C connections (wrk -c C vs `Pace::Saturate` with C clients);
//! - the same maximum rate with a traffic mix of three requests (weights 3:2:1, one expecting a body text)
//!   against one request, in turn in the same rounds: goal ≥ 0.95× the one request's rate;
//! - latency at p50 for the same endpoint: one connection, back to back (wrk -c1 --latency vs 1 client);
//! - rate accuracy: open model at a fixed target rate (requests started vs planned, achieved rate);
//! - memory: the resident size of `fault agent tool` idle after `initialize`, then sampled every 5 s through a
//!   long latency scenario (50 clients × 100 req/s, proxy in front of the target) called over MCP;
//! - send on time: at 100 and 1,000 req/s (open model, one client), how late each request leaves against its
//!   schedule, and the generator's CPU per request (process CPU time / requests), for this crate's generator
//!   and for the peer open-model generators `oha -q N --latency-correction` and `hey -q N` in the same run
//!   (each printed as absent when not installed). Lateness is measured at the target, the same way for every
//!   generator: request k of a schedule at rate r arrives at `t0 + k / r + late_k`, `t0` the earliest such
//!   start (the first half second, connection set-up, is left out); ours also reports its own queueing delay
//!   (due → sent), and the machine's floor is measured beside them: a bare thread's wake-ups on the same
//!   schedule. Goal: queueing delay p99 ≤ 100 µs at both rates.
//!
//! Env: BENCH_SECONDS (default 3), BENCH_CONNECTIONS (default 16), BENCH_RATE (default 5000),
//! BENCH_SCENARIO_SECONDS (default 60; 0 skips the memory part), BENCH_ON_TIME_SECONDS (default 5; 0 skips
//! the send-on-time part), BENCH_ONLY=on-time (only the send-on-time part), BENCH_ONLY=mix (only the mix
//! against one request).

use std::{
    io::{BufRead, BufReader, Write},
    process::{Command, Stdio},
    sync::Arc,
    time::Duration,
};

#[path = "support/mcp_stdio.rs"]
mod mcp_stdio;

use fault::load::{self, Expect, LoadPlan, LoadProgress, Mix, MixRequest, Pace, Target};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// When the target received each request to a path under `/on-time` since the last `/on-time-arrivals`.
static ARRIVALS: std::sync::Mutex<Vec<std::time::Instant>> = std::sync::Mutex::new(Vec::new());

/// The arrivals recorded since the last call, in µs after the first (sorted), and forgets them.
fn take_arrivals() -> String {
    let mut arrivals = std::mem::take(&mut *ARRIVALS.lock().unwrap_or_else(|p| p.into_inner()));
    arrivals.sort();
    let first = arrivals.first().copied();
    arrivals
        .iter()
        .filter_map(|at| first.map(|first| format!("{:.1}\n", (*at - first).as_secs_f64() * 1e6)))
        .collect()
}

/// The target: "hello world" on every path, kept-alive connections, one runtime thread. It notes when each
/// request under `/on-time` arrived, and answers `/on-time-arrivals` with them (see [`take_arrivals`]).
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
                let service = service_fn(|req: hyper::Request<hyper::body::Incoming>| async move {
                    let path = req.uri().path();
                    let body = if path == "/on-time-arrivals" {
                        bytes::Bytes::from(take_arrivals())
                    } else {
                        if path.starts_with("/on-time") {
                            ARRIVALS
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push(std::time::Instant::now());
                        }
                        bytes::Bytes::from_static(b"hello world")
                    };
                    Ok::<_, std::convert::Infallible>(Response::new(Full::new(body)))
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
    /// Queueing delay (due → sent) p50, p99, max, µs.
    queueing_us: [f64; 3],
    /// This process's CPU time over the run.
    cpu: Duration,
}

/// CPU time (user + system) of this process, or of its children that have ended and been waited for.
fn cpu_time(who: libc::c_int) -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

fn ours(url: &str, num_clients: u32, pace: Pace, seconds: u64) -> OursResult {
    let mix = Mix::single(Target::parse(url, "GET", &[], "").expect("url"));
    ours_with(mix, num_clients, pace, seconds)
}

/// Three requests to the target, weighted 3:2:1, the last one expecting "hello" in its body (so its body is
/// kept and searched).
fn three_requests(url: &str) -> Mix {
    let request = |name: &str, path: &str, weight: f64, expect: Expect| MixRequest {
        name: name.into(),
        target: Target::parse(&format!("{url}{path}"), "GET", &[], "").expect("url"),
        weight,
        expect,
        template: None,
    };
    let body = Expect {
        statuses: vec![200],
        body_contains: Some(bytes::Bytes::from_static(b"hello")),
    };
    Mix::new(
        vec![
            request("search", "search", 3.0, Expect::default()),
            request("profile", "profile", 2.0, Expect::default()),
            request("checkout", "checkout", 1.0, body),
        ],
        7,
    )
    .expect("a mix")
}

fn ours_with(mix: Mix, num_clients: u32, pace: Pace, seconds: u64) -> OursResult {
    let cpu_before = cpu_time(libc::RUSAGE_SELF);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let plan = LoadPlan {
        mix,
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
    drop(runtime);
    let cpu = cpu_time(libc::RUSAGE_SELF).saturating_sub(cpu_before);
    let requests = report.samples.requests();
    let queueing = &report.samples.queueing_us;
    OursResult {
        queueing_us: [
            queueing.value_at_quantile(0.5) as f64,
            queueing.value_at_quantile(0.99) as f64,
            queueing.max() as f64,
        ],
        cpu,
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
    let seconds = env_u64("BENCH_SECONDS", 3);
    let connections = env_u64("BENCH_CONNECTIONS", 16);
    let rate = env_u64("BENCH_RATE", 5000);
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    let only_on_time = only == "on-time";
    // Every figure of the first parts is a ratio to wrk: without it there is nothing to compare, so say so
    // and fail.
    if !only_on_time && Command::new("wrk").arg("--version").output().is_err() {
        eprintln!("wrk is not installed: this bench compares against it (apt-get install -y wrk)");
        std::process::exit(2);
    }

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
    println!(
        "Load average at the start: {}\n",
        load_average
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    ); // stdout-ok
    if only == "mix" {
        mix_against_one(&url, seconds, connections);
    } else if !only_on_time {
        against_wrk(&url, seconds, connections, rate);
        mix_against_one(&url, seconds, connections);
        let scenario_seconds = env_u64("BENCH_SCENARIO_SECONDS", 60);
        if scenario_seconds > 0 {
            memory_through_a_long_scenario(&url, scenario_seconds);
        }
    }
    let on_time_seconds = env_u64("BENCH_ON_TIME_SECONDS", 5);
    if on_time_seconds > 0 {
        send_on_time(&url, on_time_seconds);
    }

    drop(server.stdin.take());
    let _ = server.kill();
    let _ = server.wait();
}

/// Maximum rate with a traffic mix of three requests against one request, in turn, in the same rounds.
fn mix_against_one(url: &str, seconds: u64, connections: u64) {
    let mut ratios = Vec::new();
    let (mut one_rates, mut mix_rates) = (Vec::new(), Vec::new());
    for round in 0..7 {
        let (one, mix) = in_turn(
            round,
            || ours(url, connections as u32, Pace::Saturate, seconds),
            || {
                ours_with(
                    three_requests(url),
                    connections as u32,
                    Pace::Saturate,
                    seconds,
                )
            },
        );
        eprintln!(
            "round {round}: one request {:.0} req/s, a mix of three {:.0} req/s ({} errors)",
            one.rps, mix.rps, mix.errors
        );
        assert_eq!(mix.errors, 0, "the mix's requests must all succeed");
        one_rates.push(one.rps);
        mix_rates.push(mix.rps);
        ratios.push(mix.rps / one.rps);
    }
    let ratio = median(ratios);
    println!("\n| Measure | one request | a mix of three (3:2:1, one body searched) | Ratio |"); // stdout-ok
    println!("|---|---|---|---|"); // stdout-ok
    println!(
        "| Max rate, {connections} connections (median of 7 × {seconds} s; ratio: median per round) | {:.0} req/s | {:.0} req/s | {ratio:.2} |",
        median(one_rates),
        median(mix_rates)
    ); // stdout-ok
    println!(
        "\nTarget: a mix's max rate ≥ 0.95× one request's: {} ({ratio:.2})",
        if ratio >= 0.95 { "met" } else { "NOT MET" }
    ); // stdout-ok
}

/// Maximum rate, latency on one connection and open-model rate accuracy, against wrk.
fn against_wrk(url: &str, seconds: u64, connections: u64, rate: u64) {
    // Maximum rate: short rounds, the order swapped every round; the ratio is the median of per-round ratios.
    let mut wrk_max = Vec::new();
    let mut ours_max = Vec::new();
    let mut max_ratios = Vec::new();
    for round in 0..7 {
        let (w, o) = in_turn(
            round,
            || wrk(url, connections, seconds).expect("wrk (apt-get install -y wrk)"),
            || ours(url, connections as u32, Pace::Saturate, seconds),
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
            || wrk(url, 1, 2).expect("wrk"),
            || ours(url, 1, Pace::Saturate, 2),
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
    let accuracy = ours(url, clients, Pace::Open { rps: per_client }, seconds);

    let (wrk_max, ours_max) = (median(wrk_max), median(ours_max));
    let (wrk_p50, ours_p50) = (median(wrk_p50), median(ours_p50));
    let planned = accuracy.planned.unwrap_or(0);
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

// ---------- send on time

/// A peer open-model generator: its name, and its command for `rate` req/s over `seconds` on one connection.
struct Peer {
    name: &'static str,
    command: fn(url: &str, rate: u64, seconds: u64) -> Command,
}

const PEERS: [Peer; 2] = [
    Peer {
        name: "oha -q N --latency-correction",
        command: |url, rate, seconds| {
            let mut command = Command::new("oha");
            command.args([
                "--no-tui",
                "-c1",
                &format!("-q{rate}"),
                "--latency-correction",
                &format!("-z{seconds}s"),
                url,
            ]);
            command
        },
    },
    Peer {
        name: "hey -q N",
        command: |url, rate, seconds| {
            let mut command = Command::new("hey");
            command.args([
                "-c",
                "1",
                "-q",
                &rate.to_string(),
                "-z",
                &format!("{seconds}s"),
                url,
            ]);
            command
        },
    },
];

/// Whether `program` can be started.
fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// The target's arrivals under `/on-time` since the last call, µs after the first.
fn arrivals(url: &str) -> Vec<f64> {
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let Ok(mut stream) = std::net::TcpStream::connect(&addr) else {
        return Vec::new();
    };
    let request =
        format!("GET /on-time-arrivals HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return Vec::new();
    }
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut stream, &mut answer);
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    body.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// How late each request arrived against a schedule of `rate` per second (µs, sorted): request k arrives at
/// `t0 + k / rate + late`, `t0` the earliest start; the first half second (connection set-up) is left out.
fn lateness_us(arrivals: &[f64], rate: u64) -> Vec<f64> {
    let interval = 1e6 / rate as f64;
    let skip = (rate / 2) as usize;
    let starts: Vec<f64> = arrivals
        .iter()
        .enumerate()
        .skip(skip)
        .map(|(k, at)| at - k as f64 * interval)
        .collect();
    let t0 = starts.iter().copied().fold(f64::INFINITY, f64::min);
    let mut late: Vec<f64> = starts.iter().map(|start| start - t0).collect();
    late.sort_by(f64::total_cmp);
    late
}

/// p50, p99 and max of sorted values.
fn spread(sorted: &[f64]) -> [f64; 3] {
    if sorted.is_empty() {
        return [f64::NAN; 3];
    }
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    [at(0.5), at(0.99), sorted[sorted.len() - 1]]
}

/// One generator's run at one rate.
struct OnTime {
    requests: usize,
    /// The generator's own queueing delay (due → sent) p50/p99/max, µs, where it reports one.
    queueing_us: Option<[f64; 3]>,
    /// Lateness at the target, p50/p99/max, µs.
    late_us: [f64; 3],
    cpu_per_request_us: f64,
}

fn ours_on_time(url: &str, rate: u64, seconds: u64) -> OnTime {
    arrivals(url);
    let result = ours(
        &format!("{url}on-time"),
        1,
        Pace::Open { rps: rate as u32 },
        seconds,
    );
    let arrived = arrivals(url);
    OnTime {
        requests: arrived.len(),
        queueing_us: Some(result.queueing_us),
        late_us: spread(&lateness_us(&arrived, rate)),
        cpu_per_request_us: result.cpu.as_secs_f64() * 1e6 / (result.requests.max(1) as f64),
    }
}

fn peer_on_time(peer: &Peer, url: &str, rate: u64, seconds: u64) -> Result<OnTime, String> {
    arrivals(url);
    let before = cpu_time(libc::RUSAGE_CHILDREN);
    let output = (peer.command)(&format!("{url}on-time"), rate, seconds)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    // The peer has ended and been waited for: its CPU time is now in our children's.
    let cpu = cpu_time(libc::RUSAGE_CHILDREN).saturating_sub(before);
    if !output.status.success() {
        return Err(format!(
            "exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let arrived = arrivals(url);
    Ok(OnTime {
        requests: arrived.len(),
        queueing_us: None,
        late_us: spread(&lateness_us(&arrived, rate)),
        cpu_per_request_us: cpu.as_secs_f64() * 1e6 / (arrived.len().max(1) as f64),
    })
}

/// The machine's floor for waking on time: a bare thread sleeping until each due time of the schedule
/// (`nanosleep`, its timer slack lowered to 1 µs), how late it woke (p50/p99/max, µs). No generator can send
/// earlier than its thread wakes, so on a busy machine this, not the generator, sets what p99 can be.
fn floor_on_time(rate: u64, seconds: u64) -> [f64; 3] {
    let woke = std::thread::spawn(move || {
        let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1_000));
        let interval = Duration::from_secs_f64(1.0 / rate as f64);
        let start = std::time::Instant::now() + interval;
        let mut late = Vec::new();
        for k in 0..rate * seconds {
            let due = start + interval.mul_f64(k as f64);
            std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
            late.push(due.elapsed().as_secs_f64() * 1e6);
        }
        late.sort_by(f64::total_cmp);
        late
    })
    .join()
    .unwrap_or_default();
    spread(&woke)
}

/// Send on time: ours and the installed peers, in turns (the order rotated every round), at 100 and 1,000
/// req/s; each figure is the median over rounds.
fn send_on_time(url: &str, seconds: u64) {
    let rounds = 3;
    let peers: Vec<&Peer> = PEERS
        .iter()
        .filter(|peer| installed(peer.name.split(' ').next().unwrap_or(peer.name)))
        .collect();
    println!(); // stdout-ok
    println!(
        "Send on time: open model, one client / connection, {seconds} s runs, median of {rounds} rounds (order rotated); \
         lateness at the target (request k due at t0 + k / rate, the first 0.5 s left out); CPU = process CPU time / requests\n"
    ); // stdout-ok
    println!(
        "| Generator | rate | requests | queueing delay p50 / p99 / max µs (its own) | lateness at the target p50 / p99 / max µs | CPU per request µs |"
    ); // stdout-ok
    println!("|---|---|---|---|---|---|"); // stdout-ok
    let mut verdicts = Vec::new();
    let mut floor_p99 = Vec::new();
    for rate in [100u64, 1000] {
        let mut runs: Vec<Vec<OnTime>> = (0..=peers.len()).map(|_| Vec::new()).collect();
        let mut floors = Vec::new();
        for round in 0..rounds {
            floors.push(floor_on_time(rate, seconds));
            for turn in 0..=peers.len() {
                let which = (turn + round) % (peers.len() + 1);
                if which == 0 {
                    let run = ours_on_time(url, rate, seconds);
                    eprintln!(
                        "round {round}, {rate} req/s: fault queueing p99 {:.0} µs, late p99 {:.0} µs, {:.1} µs CPU per request",
                        run.queueing_us.map_or(f64::NAN, |q| q[1]),
                        run.late_us[1],
                        run.cpu_per_request_us
                    );
                    runs[0].push(run);
                } else {
                    let peer = peers[which - 1];
                    match peer_on_time(peer, url, rate, seconds) {
                        Ok(run) => {
                            eprintln!(
                                "round {round}, {rate} req/s: {} late p99 {:.0} µs, {:.1} µs CPU per request",
                                peer.name, run.late_us[1], run.cpu_per_request_us
                            );
                            runs[which].push(run);
                        }
                        Err(e) => {
                            eprintln!("round {round}, {rate} req/s: {} failed: {e}", peer.name)
                        }
                    }
                }
            }
        }
        let mid =
            |runs: &[OnTime], f: &dyn Fn(&OnTime) -> f64| median(runs.iter().map(f).collect());
        let three =
            |values: [f64; 3]| format!("{:.0} / {:.0} / {:.0}", values[0], values[1], values[2]);
        for (index, runs) in runs.iter().enumerate() {
            let name = if index == 0 {
                "fault load (1 thread)"
            } else {
                peers[index - 1].name
            };
            if runs.is_empty() {
                println!("| {name} | {rate} req/s | failed | | | |"); // stdout-ok
                continue;
            }
            let queueing = if index == 0 {
                three([0, 1, 2].map(|i| mid(runs, &|r| r.queueing_us.map_or(f64::NAN, |q| q[i]))))
            } else {
                "–".into()
            };
            println!(
                "| {name} | {rate} req/s | {:.0} | {queueing} | {} | {:.1} |",
                mid(runs, &|r| r.requests as f64),
                three([0, 1, 2].map(|i| mid(runs, &|r| r.late_us[i]))),
                mid(runs, &|r| r.cpu_per_request_us),
            ); // stdout-ok
            if index == 0 {
                verdicts.push((
                    rate,
                    mid(runs, &|r| r.queueing_us.map_or(f64::NAN, |q| q[1])),
                ));
            }
        }
        let floor = [0, 1, 2].map(|i| median(floors.iter().map(|f| f[i]).collect()));
        floor_p99.push(format!("{rate} req/s {:.0} µs", floor[1]));
        println!(
            "| the machine's floor: a bare thread's wake-ups (nanosleep, slack 1 µs) | {rate} req/s | {} | {} | – | – |",
            rate * seconds,
            three(floor)
        ); // stdout-ok
    }
    for peer in &PEERS {
        if !peers.iter().any(|p| p.name == peer.name) {
            println!("| {} | – | absent (not installed) | | | |", peer.name); // stdout-ok
        }
    }
    let shown: Vec<String> = verdicts
        .iter()
        .map(|(rate, p99)| {
            format!(
                "{rate} req/s {}",
                if *p99 <= 100.0 {
                    format!("met ({p99:.0} µs)")
                } else {
                    format!("NOT MET ({p99:.0} µs)")
                }
            )
        })
        .collect();
    println!(
        "\nTarget: queueing delay p99 ≤ 100 µs: {} (the machine's floor, p99: {})",
        shown.join(", "),
        floor_p99.join(", ")
    ); // stdout-ok
}
