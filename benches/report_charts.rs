//! What the charts cost a report: the time and peak memory of drawing an impact report's charts (the PNG of
//! the tool result, the standalone HTML page) beside building the same report without them (figures and
//! markdown), in the same run, for a 60 s scenario at 1,000 requests per second with a baseline, its fault held
//! for the whole run and then in a window from 20 s to 40 s (phases, time to detect and to recover, burn rates
//! and retry amplification); and the size of the charts of a 1 h scenario at 1,000 requests per second, which
//! must not grow with the run (one point per pixel column). The MCP chaos report likewise (60 s and 1 h of
//! calls).
//!
//! `cargo bench --bench report_charts` (release build). `REPORT_CHARTS_BENCH_ROUNDS` sets the rounds
//! (default 7; the median is shown).

use std::{
    alloc::{GlobalAlloc, Layout, System},
    hint::black_box,
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use fault::{
    load::{LoadReport, RequestOutcome, RequestSamples, Samples, Timing, phase_of, phases},
    report::{
        chaos::{
            self,
            record::{CallOutcome, CallRecord},
        },
        chart::{
            chaos::ChaosFigure,
            impact::ImpactFigure,
            page::{chaos_page, impact_page},
            png::png,
        },
        impact::{
            ActiveWindow, CallInfo, FaultInfo, LatencySlo, Report, ReportInput, StrategyInfo,
            UpstreamCounts, UpstreamTally, build, render,
        },
    },
};

/// Counts live heap bytes and their peak, so a step's added peak memory can be read.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the layout is the caller's, passed on unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// `step`'s result, its time, and the heap it added at its peak.
fn measured<T>(step: impl FnOnce() -> T) -> (T, Duration, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let started = Instant::now();
    let value = black_box(step());
    let elapsed = started.elapsed();
    (value, elapsed, PEAK.load(Ordering::Relaxed) - before)
}

/// Deterministic noise in 0..1.
fn noise(i: u64) -> f64 {
    let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ 0xD6E8_FEB8_6659_FD93;
    (x % 10_000) as f64 / 10_000.0
}

/// The window of the windowed scenario, in seconds: a third of the run in its middle.
fn window(seconds: usize) -> ActiveWindow {
    ActiveWindow {
        from_s: seconds as f64 / 3.0,
        until_s: seconds as f64 * 2.0 / 3.0,
    }
}

/// A run of `seconds` at `rate` requests per second; `extra_ms` more latency and 2% timeouts when `faulted`,
/// for the whole run, or inside `window` only (the run then cut into phases at its edges).
fn load(seconds: usize, rate: u64, faulted: bool, window: Option<ActiveWindow>) -> LoadReport {
    let mut samples = Samples::new(seconds);
    if let Some(w) = window {
        let cuts = [
            Duration::from_secs_f64(w.from_s),
            Duration::from_secs_f64(w.until_s),
        ];
        samples.phases = phases(&cuts, Duration::from_secs(seconds as u64));
    }
    for second in 0..seconds {
        for k in 0..rate {
            let i = second as u64 * rate + k;
            let at = second as f64 + k as f64 / rate as f64;
            let active = faulted && window.is_none_or(|w| w.from_s <= at && at < w.until_s);
            let base = 2.0 + 3.0 * noise(i).powi(4);
            let (latency_ms, outcome) = match active {
                true if noise(i ^ 77) < 0.02 => (1_000.0, RequestOutcome::Timeout),
                true => (base + 120.0 + 60.0 * noise(i ^ 5), RequestOutcome::Success),
                false => (base, RequestOutcome::Success),
            };
            let due = tokio::time::Instant::now();
            let timing = Timing {
                due,
                sent: Some(due),
                ended: due + Duration::from_secs_f64(latency_ms / 1000.0),
            };
            if let Some(phase) = phase_of(&samples.phases, Duration::from_secs_f64(at)) {
                samples.phases[phase].add(timing.latency(), &outcome);
            }
            samples.record(second, &timing, outcome, 200);
        }
    }
    let now = chrono::Utc::now();
    LoadReport {
        started_at: now,
        ended_at: now,
        elapsed: Duration::from_secs(seconds as u64),
        planned: Some(seconds as u64 * rate),
        connections_opened: 10,
        cut_short: false,
        offered_per_second: Vec::new(),
        per_request: vec![RequestSamples {
            name: "GET /".into(),
            samples: samples.clone(),
        }],
        samples,
    }
}

/// What the scenario knows of a run of `seconds` at `rate`, its fault held throughout or in `window`.
fn input(seconds: usize, rate: u64, window: Option<ActiveWindow>) -> ReportInput {
    let whole = ActiveWindow {
        from_s: 0.0,
        until_s: seconds as f64,
    };
    // One upstream request per request, and a connection per second.
    let tally = |requests: u64| UpstreamTally {
        connections: requests / rate,
        requests,
    };
    let phases = match window {
        Some(w) => [w.from_s, w.until_s - w.from_s, seconds as f64 - w.until_s]
            .iter()
            .map(|length| tally((length * rate as f64) as u64))
            .collect(),
        None => Vec::new(),
    };
    ReportInput {
        call: CallInfo {
            url: "http://127.0.0.1:9090/".into(),
            method: "GET".into(),
            timeout_ms: 1000,
            headers: vec![],
            has_body: false,
        },
        requests: Vec::new(),
        strategy: StrategyInfo {
            duration_s: seconds as f64,
            num_clients: 10,
            rps: (rate / 10) as u32,
            stages: Vec::new(),
        },
        faults: vec![FaultInfo {
            kind: "latency".into(),
            description: "Latency: mean 150ms, deviation 60ms".into(),
            sched: window.map(|w| format!("start:{}s,duration:{}s", w.from_s, w.length_s())),
            windows: vec![window.unwrap_or(whole)],
            applied_on: "proxy".into(),
            applications: Some(seconds as u64 * rate),
        }],
        slos: LatencySlo::defaults(),
        recovery_seconds: 3,
        upstream: Some(UpstreamCounts {
            per_second: (0..seconds).map(|_| tally(rate)).collect(),
            per_phase: phases,
            total: tally(seconds as u64 * rate),
            requests_counted: true,
        }),
    }
}

fn impact_report(seconds: usize, rate: u64) -> Report {
    let (run, baseline) = (
        load(seconds, rate, true, None),
        load(seconds, rate, false, None),
    );
    build(input(seconds, rate, None), &run, Some(&baseline))
}

fn chaos_records(seconds: usize, rate: u64) -> Vec<CallRecord> {
    let tools = ["echo", "get_item", "list_items", "slow"];
    (0..seconds as u64 * rate)
        .map(|i| {
            let failed = noise(i) < 0.05;
            CallRecord {
                tool: tools[(i % 4) as usize].into(),
                args_hash: None,
                start_ms: i as f64 * 1000.0 / rate as f64,
                latency_ms: 2.0 + 40.0 * noise(i ^ 3),
                queueing_ms: Some(0.01),
                service_ms: Some(2.0 + 40.0 * noise(i ^ 3) - 0.01),
                fault: failed.then(|| "error".into()),
                outcome: if failed {
                    CallOutcome::ProtocolError
                } else {
                    CallOutcome::Ok
                },
                reached_server: true,
                cancel_after_ms: None,
                logical: None,
                session: 0,
                request_id: None,
                retry_after_ms: None,
            }
        })
        .collect()
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() {
    let rounds: usize = std::env::var("REPORT_CHARTS_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);

    // The 60 s impact scenario: report without charts, then its PNG and its HTML page; the fault held for
    // the whole run, then in a window (phases).
    for (name, window) in [
        ("fault held throughout", None),
        ("fault in a window from 20 s to 40 s", Some(window(60))),
    ] {
        let (mut report_t, mut png_t, mut page_t) = (vec![], vec![], vec![]);
        let (mut report_m, mut png_m, mut page_m) = (0, 0, 0);
        let mut png_bytes = 0;
        for _ in 0..rounds {
            let (run, baseline) = (load(60, 1000, true, window), load(60, 1000, false, None));
            let input = input(60, 1000, window);
            let ((report, _markdown), t, m) = measured(|| {
                let report = build(input, &run, Some(&baseline));
                let markdown = render(&report);
                (report, markdown)
            });
            report_t.push(t);
            report_m = report_m.max(m);
            let (image, t, m) = measured(|| png(&ImpactFigure::all(&report)).expect("png"));
            png_t.push(t);
            png_m = png_m.max(m);
            png_bytes = image.len();
            let (_, t, m) = measured(|| impact_page(&report).expect("page"));
            page_t.push(t);
            page_m = page_m.max(m);
        }
        let (report_t, png_t, page_t) = (median(report_t), median(png_t), median(page_t));
        println!(
            "impact report, 60 s at 1,000 req/s with a baseline, {name} ({rounds} rounds, medians; memory: peak added)"
        );
        println!(
            "  report without charts (figures + markdown): {:8.2} ms  {:6.2} MiB",
            ms(report_t),
            mib(report_m)
        );
        println!(
            "  PNG chart (tool result):                    {:8.2} ms  {:6.2} MiB  ({:.2}× the report's time), {} bytes",
            ms(png_t),
            mib(png_m),
            ms(png_t) / ms(report_t),
            png_bytes
        );
        println!(
            "  HTML page (report_path):                    {:8.2} ms  {:6.2} MiB  ({:.2}× the report's time)",
            ms(page_t),
            mib(page_m),
            ms(page_t) / ms(report_t)
        );
    }

    // 1 h at 1,000 req/s: the charts stay the size of the 60 s ones.
    let hour = impact_report(3600, 1000);
    let minute = impact_report(60, 1000);
    let (hour_png, hour_t, hour_m) = measured(|| png(&ImpactFigure::all(&hour)).expect("png"));
    let minute_png = png(&ImpactFigure::all(&minute)).expect("png");
    let hour_page = impact_page(&hour).expect("page");
    let minute_page = impact_page(&minute).expect("page");
    println!("impact report, 1 h at 1,000 req/s (3.6 M requests per run)");
    println!(
        "  PNG {} bytes (60 s: {}), drawn in {:.2} ms, {:.2} MiB; HTML page {} bytes (60 s: {}; the figures' per-second rows grow, the charts do not)",
        hour_png.len(),
        minute_png.len(),
        ms(hour_t),
        mib(hour_m),
        hour_page.len(),
        minute_page.len()
    );

    // The MCP chaos report: 60 s at 1,000 calls per second, and 1 h at 100 calls per second.
    for (seconds, rate) in [(60, 1000), (3600, 100)] {
        let records = chaos_records(seconds, rate);
        let (report, report_t, report_m) = measured(|| {
            let report = chaos::ChaosReport {
                schema_version: chaos::SCHEMA_VERSION,
                title: "MCP Chaos Report".into(),
                started_at: String::new(),
                ended_at: String::new(),
                server: "bench".into(),
                seed: 0,
                faults: vec![],
                client: None,
                run: chaos::figures(records, seconds as f64 * 1000.0, &Default::default()),
                baseline: None,
                comparison: None,
                gates: None,
                sessions: None,
            };
            let _ = chaos::render(&report);
            report
        });
        let (image, png_t, png_m) = measured(|| png(&ChaosFigure::all(&report)).expect("png"));
        let page = chaos_page(&report).expect("page");
        println!(
            "chaos report, {seconds} s at {rate} calls/s: report {:.2} ms {:.2} MiB; PNG {:.2} ms {:.2} MiB, {} bytes; timeline {} marks; HTML page {} bytes",
            ms(report_t),
            mib(report_m),
            ms(png_t),
            mib(png_m),
            image.len(),
            report.run.timeline.marks.len(),
            page.len()
        );
    }
}
