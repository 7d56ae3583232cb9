//! The load generator against real servers on 127.0.0.1. Each test runs 1-2 s of load.

use crate::support::common;
use crate::support::scenario;

use std::{sync::Arc, time::Duration};

use fault::{
    load::{self, LoadPlan, LoadProgress, Mix, Pace, Target},
    report::impact as report,
};
use scenario::run_load;
use tokio_util::sync::CancellationToken;

fn plan(url: &str, num_clients: u32, rps: u32, duration_ms: u64, timeout_ms: u64) -> LoadPlan {
    LoadPlan {
        mix: Mix::single(Target::parse(url, "GET", &[], "").unwrap()),
        connect_to: None,
        proxy_originates_tls: false,
        num_clients,
        pace: Pace::Open { rps },
        duration: Duration::from_millis(duration_ms),
        timeout: Duration::from_millis(timeout_ms),
        max_in_flight: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_exactly_the_planned_requests_and_reuses_connections() {
    let upstream = scenario::upstream().await;
    let report = run_load(&plan(&upstream.url("/todos/1"), 4, 50, 2000, 2000)).await;
    let samples = &report.samples;
    assert_eq!(samples.requests(), 400);
    assert_eq!(samples.success, 400);
    assert_eq!(upstream.served(), 400);
    assert_eq!(samples.body_bytes, 400 * scenario::TODO.len() as u64);
    // A fast service: each client keeps about one connection.
    assert!(
        report.connections_opened <= 12,
        "{}",
        report.connections_opened
    );
    // Open model: the run lasts about the schedule.
    assert!(
        report.elapsed < Duration::from_millis(2500),
        "{:?}",
        report.elapsed
    );
    assert_eq!(samples.per_second.len(), 2);
    assert_eq!(samples.per_second[0].requests, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_service_shows_up_as_latency_not_as_fewer_requests() {
    let upstream = scenario::upstream().await;
    // 500 ms per answer, 20 requests per second: ten in flight at any time.
    let report = run_load(&plan(&upstream.url("/delay/500"), 2, 10, 2000, 5000)).await;
    let samples = &report.samples;
    assert_eq!(samples.requests(), 40);
    assert_eq!(samples.success, 40);
    let p50_ms = samples.all_us.value_at_quantile(0.5) as f64 / 1000.0;
    assert!((500.0..560.0).contains(&p50_ms), "p50 {p50_ms}");
    assert!(
        report.connections_opened >= 8,
        "{}",
        report.connections_opened
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outcomes_are_counted_apart() {
    let upstream = scenario::upstream().await;
    let report = run_load(&plan(&upstream.url("/hang"), 1, 5, 1000, 300)).await;
    assert_eq!(report.samples.timeouts, 5);
    let max_ms = report.samples.all_us.max() as f64 / 1000.0;
    assert!((300.0..400.0).contains(&max_ms), "{max_ms}");

    let report = run_load(&plan(&upstream.url("/status/503"), 1, 5, 1000, 1000)).await;
    assert_eq!(report.samples.http_errors.get(&503), Some(&5));

    let closed = common::free_port();
    let report = run_load(&plan(
        &format!("http://127.0.0.1:{closed}/"),
        1,
        5,
        1000,
        1000,
    ))
    .await;
    assert_eq!(report.samples.transport_errors, 5);
    assert!(report.samples.transport_error_examples[0].contains("connect"));
}

/// The impact report of `load`: its figures and its markdown.
fn impact_report(plan: &LoadPlan, load: &load::LoadReport) -> (report::RunFigures, String) {
    let input = report::ReportInput {
        call: report::CallInfo {
            url: format!("http://{}:{}/", plan.target().host(), plan.target().port()),
            method: "GET".into(),
            timeout_ms: plan.timeout.as_millis() as u64,
            headers: vec![],
            has_body: false,
        },
        requests: Vec::new(),
        strategy: report::StrategyInfo {
            duration_s: plan.duration.as_secs_f64(),
            num_clients: plan.num_clients,
            rps: 10,
            stages: Vec::new(),
        },
        faults: vec![],
        slos: vec![],
        recovery_seconds: report::DEFAULT_RECOVERY_SECONDS,
        upstream: None,
    };
    let built = report::build(input, load, None);
    (built.run.clone(), report::render(&built))
}

/// The report's queueing and service row, as the markdown shows it.
fn part_row(markdown: &str, name: &str) -> String {
    markdown
        .lines()
        .find(|line| line.starts_with(&format!("| {name} |")))
        .unwrap_or_else(|| panic!("no {name} row in\n{markdown}"))
        .to_owned()
}

/// One request in flight at 10 requests per second: a target answering in 250 ms is slower than the
/// schedule, so the requests due while one is out wait (unsent, their whole timeout): the report's queueing
/// delay is the timeout at p99 and its service time the target's 250 ms. A target answering at once leaves
/// the queueing delay near zero (the timer's millisecond).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queueing_delay_shows_a_target_slower_than_the_schedule() {
    let upstream = scenario::upstream().await;
    let one_at_a_time = |path: &str| LoadPlan {
        max_in_flight: Some(1),
        ..plan(&upstream.url(path), 1, 10, 2000, 1000)
    };
    let slow_plan = one_at_a_time("/delay/250");
    let (slow, markdown) = impact_report(&slow_plan, &run_load(&slow_plan).await);
    assert_eq!(slow.requests, 20, "{markdown}");
    assert!(slow.outcomes.not_started >= 8, "{markdown}");
    assert_eq!(slow.queueing.requests, 20, "{markdown}");
    assert!(slow.queueing.p99_ms >= 999.0, "{markdown}");
    assert_eq!(slow.service.requests, slow.outcomes.success, "{markdown}");
    assert!((250.0..300.0).contains(&slow.service.p50_ms), "{markdown}");
    let row = part_row(&markdown, "Queueing delay");
    assert!(
        row.contains(&format!("| {:.2} |", slow.queueing.p99_ms)),
        "{row}"
    );

    let fast_plan = one_at_a_time("/todos/1");
    let (fast, markdown) = impact_report(&fast_plan, &run_load(&fast_plan).await);
    assert_eq!(fast.outcomes.success, 20, "{markdown}");
    // Sent on time, but for the time the system takes to wake the generator: a few milliseconds at most on a
    // busy machine, against the slow target's second (the benchmarks measure how close to its due time).
    assert!(fast.queueing.p50_ms <= 10.0, "{markdown}");
    assert!(fast.queueing.max_ms < 200.0, "{markdown}");
    eprintln!(
        "queueing delay p50/p99/max: slow target {:.2}/{:.2}/{:.2} ms, fast target {:.2}/{:.2}/{:.2} ms",
        slow.queueing.p50_ms,
        slow.queueing.p99_ms,
        slow.queueing.max_ms,
        fast.queueing.p50_ms,
        fast.queueing.p99_ms,
        fast.queueing.max_ms
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_stops_at_once() {
    let upstream = scenario::upstream().await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = std::time::Instant::now();
    let result = load::run(
        &plan(&upstream.url("/hang"), 2, 10, 10_000, 10_000),
        &cancel,
        Arc::new(LoadProgress::default()),
    )
    .await;
    assert!(matches!(result, Err(load::LoadError::Cancelled)));
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[test]
fn bad_targets_are_named() {
    for (url, method, needle) in [
        ("not a url", "GET", "url"),
        ("ftp://x/", "GET", "scheme"),
        ("http://127.0.0.1/", "G E T", "method"),
    ] {
        let err = Target::parse(url, method, &[], "").unwrap_err().to_string();
        assert!(err.contains(needle), "{err}");
    }
}
