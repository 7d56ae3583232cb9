//! `fault mcp-proxy` overhead: the `tools/call` round trip through the proxy with an empty plan vs. direct to
//! `fault mcp-test-server` and vs. `socat STDIO EXEC:…` (a relay that only copies bytes, when installed), in the
//! same run, with the CPU time each relay process spends per call (from /proc); what recording the session for its report (the judgements'
//! bookkeeping, `--report`) adds to a call; and the proxy's memory over many calls.
//!
//! `cargo bench --bench mcp_proxy` (release build); `cargo bench --bench mcp_proxy -- memory` runs the memory
//! runs alone. `MCP_PROXY_BENCH_CALLS` sets the calls per side for the latency figures (default 20,000) and
//! `MCP_PROXY_BENCH_MEMORY_CALLS` the calls of each memory run (default 100,000). Prints p50 and p99 of each
//! side, the added p50/p99, and the proxy's RSS (VmRSS from /proc): with no plan, after 10% of the memory run
//! and at its end; with a plan that decides every call (one error and one latency fault, each firing on 1% of
//! calls, so calls stay fast and every one passes through the relay's table of calls in flight), after 2,000
//! calls and at the end. The bookkeeping is also timed in process (CPU per call,
//! out of reach of the pipes' noise): the report's observer fed the test server's real `tools/list` and `echo`
//! answers, and each call's event, as the proxy feeds it. `MCP_PROXY_BENCH_OTHER_BUILD=/path/to/fault` adds that
//! build's proxy (bare and with `--report`) in front of the same server, interleaved in the same run, and to the
//! planned memory run: a change's cost is this build's figures against the commit before it.

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    time::Instant,
};

use fault::mcp_proxy::{
    decide::DecisionRecord,
    events::{CallEvent, CallObserver},
    plan::Plan,
    recording::ReportObserver,
};
use fault::mcp_wire::jsonrpc::Outcome;
use hdrhistogram::Histogram;
use serde_json::json;

const FAULT: &str = env!("CARGO_BIN_EXE_fault");

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl Session {
    fn spawn(program: &str, args: &[&str]) -> Session {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {program}: {e}"));
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
                assert!(!self.line.contains("\"error\":{"), "{}", self.line);
                return;
            }
        }
    }

    fn echo(&mut self) {
        self.request(
            r#""method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}"#,
        );
    }

    /// CPU time (user and system) the session's process has used so far, in clock ticks.
    fn cpu_ticks(&self) -> u64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // The fields after the command's name (which may hold spaces): utime and stime are the 12th and 13th.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map_or("", |(_, rest)| rest)
            .split_whitespace()
            .collect();
        let field = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        field(11) + field(12)
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

/// `a - b` in µs.
fn delta(a: u64, b: u64) -> f64 {
    (a as f64 - b as f64) / 1000.0
}

/// One way of reaching the test server, and its round trips.
struct Side {
    label: &'static str,
    session: Session,
    histogram: Histogram<u64>,
    /// CPU ticks the side's first process (the relay, or the server when direct) used in the measured batches.
    cpu_ticks: u64,
}

impl Side {
    fn new(label: &'static str, program: &str, args: &[&str]) -> Side {
        Side {
            label,
            session: Session::spawn(program, args),
            histogram: Histogram::new_with_bounds(1, 60_000_000, 3).unwrap(),
            cpu_ticks: 0,
        }
    }

    /// CPU µs of the side's first process per measured call.
    fn cpu_us_per_call(&self, ticks_per_second: u64) -> f64 {
        self.cpu_ticks as f64 * 1e6 / ticks_per_second as f64 / self.histogram.len().max(1) as f64
    }
}

/// The kernel's clock ticks per second, the unit of /proc's CPU times.
fn ticks_per_second() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok()?.trim().parse().ok())
        .unwrap_or(100)
}

/// `socat STDIO EXEC:…` in front of the test server, when socat is installed: a relay that only copies bytes.
fn socat_side() -> Option<Side> {
    let found = Command::new("socat")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        println!(
            "socat is not installed: no byte-copying relay to compare with (apt-get install socat)"
        ); // stdout-ok
        return None;
    }
    let exec = format!("EXEC:{FAULT} {}", SERVER.join(" "));
    Some(Side::new(
        "through socat STDIO EXEC",
        "socat",
        &["STDIO", &exec],
    ))
}

/// The test server, as each side starts it.
const SERVER: [&str; 3] = ["--log-level", "warn", "mcp-test-server"];

/// `fault mcp-proxy` in front of the test server, with `proxy_flags` before the server command.
fn proxied_args<'a>(proxy_flags: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--log-level", "warn", "mcp-proxy"];
    args.extend(proxy_flags);
    args.push("--");
    args.push(FAULT);
    args.extend(SERVER);
    args
}

/// A plan that decides every call and rarely acts, so the calls stay fast: a 1 ms delay and an error (as a
/// tool result, which the session takes as an answer), each on 1% of calls.
const MEMORY_PLAN: &str = "seed: 1
faults:
  - type: error
    as: tool
    probability: 0.01
  - type: latency
    ms: 1
    probability: 0.01
";

fn main() {
    let memory_only = std::env::args().skip(1).any(|arg| arg == "memory");
    let other = std::env::var("MCP_PROXY_BENCH_OTHER_BUILD").ok();
    if !memory_only {
        latency(other.as_deref());
    }
    memory(other.as_deref());
}

/// The round trips of every side, interleaved, and the report's bookkeeping in process.
fn latency(other: Option<&str>) {
    let calls = env_count("MCP_PROXY_BENCH_CALLS", 20_000);
    let bare_args = proxied_args(&[]);
    let report_dir =
        std::env::temp_dir().join(format!("fault-mcp-proxy-bench-{}", std::process::id()));
    std::fs::create_dir_all(&report_dir).unwrap();
    let report_file = report_dir.join("report.json");
    let recorded_args = proxied_args(&["--report", report_file.to_str().unwrap()]);

    let mut sides = vec![
        Side::new("direct to fault mcp-test-server", FAULT, &SERVER),
        Side::new("through fault mcp-proxy (no plan)", FAULT, &bare_args),
        Side::new("through fault mcp-proxy --report", FAULT, &recorded_args),
    ];
    // The byte-copying relay, when there is one, last among this build's sides.
    let socat = socat_side()
        .map(|side| sides.push(side))
        .map(|()| sides.len() - 1);
    // Another build's proxy (e.g. the commit before a change) in front of the same server, in the same run.
    let other_report = report_dir.join("other.json");
    if let Some(other) = other {
        let other_recorded = proxied_args(&["--report", other_report.to_str().unwrap()]);
        sides.push(Side::new(
            "through the other build (no plan)",
            other,
            &bare_args,
        ));
        sides.push(Side::new(
            "through the other build --report",
            other,
            &other_recorded,
        ));
    }
    // Warm every side, then interleave batches so all see the same machine load.
    for side in &mut sides {
        round_trips(&mut side.session, 1000);
    }
    let batch = 1000.min(calls).max(1);
    for _ in 0..calls.div_ceil(batch) {
        for side in &mut sides {
            let cpu_before = side.session.cpu_ticks();
            side.histogram
                .add(round_trips(&mut side.session, batch))
                .unwrap();
            side.cpu_ticks += side.session.cpu_ticks() - cpu_before;
        }
    }
    // The server's real answers, for the in-process timing below.
    let direct = &mut sides[0].session;
    direct.request(r#""method":"tools/list","params":{}"#);
    let listing = direct.line.clone().into_bytes();
    direct.echo();
    let echo_answer = direct.line.clone().into_bytes();
    let p50 = |i: usize| sides[i].histogram.value_at_quantile(0.5);
    let p99 = |i: usize| sides[i].histogram.value_at_quantile(0.99);
    println!(
        "tools/call echo round trip, {} calls per side (interleaved batches of {batch}):",
        sides[0].histogram.len()
    ); // stdout-ok
    for (i, side) in sides.iter().enumerate() {
        let added = if i == 0 {
            String::new()
        } else {
            format!(
                "  added p50 {:+8.1} µs  p99 {:+8.1} µs",
                delta(p50(i), p50(0)),
                delta(p99(i), p99(0))
            )
        };
        println!(
            "  {:<36} p50 {:8.1} µs  p99 {:8.1} µs{added}",
            side.label,
            us(p50(i)),
            us(p99(i))
        ); // stdout-ok
    }
    println!(
        // stdout-ok
        "  added by the proxy: p50 {:+.1} µs (goal: p50 < 100 µs); by --report (the relay's core, which parses and tracks every call, and the report's bookkeeping): p50 {:+.1} µs",
        delta(p50(1), p50(0)),
        delta(p50(2), p50(1))
    );
    let ticks = ticks_per_second();
    println!("CPU per call of each side's first process (the relay; direct: the server):"); // stdout-ok
    for side in &sides {
        println!(
            "  {:<36} {:8.1} µs",
            side.label,
            side.cpu_us_per_call(ticks)
        ); // stdout-ok
    }
    if let Some(socat) = socat {
        let added = |i: usize| delta(p50(i), p50(0));
        // Below the direct side's p50 the machine's noise outweighs what a relay adds: no ratio then.
        let latency_ratio = if added(socat) > 0.0 {
            format!("{:.2}× socat's", added(1) / added(socat))
        } else {
            "not measurable (socat's added p50 is at or below 0: too noisy a machine)".to_owned()
        };
        println!(
            // stdout-ok
            "  against socat: added p50 {latency_ratio} (goal: at most 1.3×), CPU per call {:.2}× socat's (goal: at most 1.5×)",
            sides[1].cpu_us_per_call(ticks) / sides[socat].cpu_us_per_call(ticks)
        );
    }
    if let Some(first_other) = other.map(|_| sides.len() - 2) {
        println!(
            // stdout-ok
            "  this build against the other: proxy-added p50 {:+.1} µs, with --report {:+.1} µs",
            delta(p50(1), p50(first_other)),
            delta(p50(2), p50(first_other + 1))
        );
    }
    for side in sides {
        side.session.close();
    }
    let report_written = std::fs::metadata(&report_file).map_or(0, |m| m.len());
    assert!(report_written > 0, "the --report side wrote no report");
    let _ = std::fs::remove_dir_all(&report_dir);

    let per_call = bookkeeping_per_call(&listing, &echo_answer, calls.max(10_000));
    println!(
        // stdout-ok
        "  the report's bookkeeping in process: {:.2} µs per call over {} calls (goal: at most 5 µs)",
        per_call * 1e6,
        calls.max(10_000)
    );
}

/// The proxy's RSS early in a long run and at its end: bare, and with [`MEMORY_PLAN`] (this build and, when
/// given, the other one, in interleaved batches).
fn memory(other: Option<&str>) {
    let memory_calls = env_count("MCP_PROXY_BENCH_MEMORY_CALLS", 100_000);
    let mut proxied = Session::spawn(FAULT, &proxied_args(&[]));
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

    let plan_dir =
        std::env::temp_dir().join(format!("fault-mcp-proxy-bench-plan-{}", std::process::id()));
    std::fs::create_dir_all(&plan_dir).unwrap();
    let plan_file = plan_dir.join("plan.yaml");
    std::fs::write(&plan_file, MEMORY_PLAN).unwrap();
    let planned_args = proxied_args(&["--plan", plan_file.to_str().unwrap()]);
    let mut sides = vec![("this build", Session::spawn(FAULT, &planned_args))];
    if let Some(other) = other {
        sides.push(("the other build", Session::spawn(other, &planned_args)));
    }
    let early = 2_000.min(memory_calls);
    for (_, session) in &mut sides {
        round_trips(session, early);
    }
    let rss_early: Vec<u64> = sides.iter().map(|(_, s)| s.rss_kib()).collect();
    let batch = 1000;
    let mut done = early;
    while done < memory_calls {
        let n = batch.min(memory_calls - done);
        for (_, session) in &mut sides {
            round_trips(session, n);
        }
        done += n;
    }
    println!("proxy RSS with a plan (an error and a latency fault, each on 1% of calls):"); // stdout-ok
    for ((label, session), early_kib) in sides.into_iter().zip(rss_early) {
        let end_kib = session.rss_kib();
        println!(
            // stdout-ok
            "  {label:<16} {early_kib} KiB after {early} calls, {end_kib} KiB after {memory_calls} ({:+} KiB; goal: within 1024)",
            end_kib as i64 - early_kib as i64
        );
        session.close();
    }
    let _ = std::fs::remove_dir_all(&plan_dir);
}

/// Seconds per call the `--report` observer spends on a call: its answer line (parsed, its result judged against
/// the tool's output schema) and its event (recorded). `echo_answer` is an answer to request id 2.
fn bookkeeping_per_call(listing: &[u8], echo_answer: &[u8], calls: u64) -> f64 {
    let mut observer = ReportObserver::new(
        &Plan::default(),
        &["fault".into(), "mcp-test-server".into()],
    );
    observer.client_line(listing);
    let answer: serde_json::Value = serde_json::from_slice(echo_answer).unwrap();
    let event = |id: u64| CallEvent {
        time: String::new(),
        id: json!(id),
        method: "tools/call".into(),
        tool: "echo".into(),
        ordinal: id,
        args_hash: Some("0123456789abcdef".into()),
        seed: 0,
        decisions: Vec::<DecisionRecord>::new(),
        fault: None,
        also_applied: Vec::new(),
        upstream: Outcome::Result,
        client: Outcome::Result,
        latency_ms: 0.1,
        upstream_ms: Some(0.05),
        cancel: None,
        task_id: None,
    };
    // Every answer has its own id, as on the wire; the lines and events are made before the clock starts.
    let lines: Vec<(Vec<u8>, CallEvent)> = (0..calls)
        .map(|i| {
            let mut line = answer.clone();
            line["id"] = json!(i);
            let mut bytes = serde_json::to_vec(&line).unwrap();
            bytes.push(b'\n');
            (bytes, event(i))
        })
        .collect();
    let started = Instant::now();
    for (line, event) in &lines {
        observer.client_line(line);
        observer.call(event);
    }
    let elapsed = started.elapsed().as_secs_f64();
    assert_eq!(observer.take_records().len() as u64, calls);
    elapsed / calls as f64
}
