//! Report figures and markdown from known samples (no network).

use std::time::Duration;

use fault::{
    load::{LoadReport, RequestOutcome, RequestSamples, Samples, Timing, phase_of, phases},
    report::impact::{
        self as report, ActiveWindow, CallInfo, FaultInfo, LatencySlo, Recovery, ReportInput,
        Status, StrategyInfo, UpstreamCounts, UpstreamTally,
    },
};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// A request sent when it was due that ended `latency_ms` later.
fn on_time(latency_ms: u64) -> Timing {
    let due = tokio::time::Instant::now();
    Timing {
        due,
        sent: Some(due),
        ended: due + ms(latency_ms),
    }
}

/// 100 requests over 2 seconds: 90 fast successes (100 ms), 5 slow successes (400 ms), 2 HTTP 500 (50 ms),
/// 3 timeouts (1000 ms). The second second is the slow one.
fn samples() -> Samples {
    let mut s = Samples::new(2);
    for _ in 0..90 {
        s.record(0, &on_time(100), RequestOutcome::Success, 10);
    }
    for _ in 0..5 {
        s.record(1, &on_time(400), RequestOutcome::Success, 10);
    }
    for _ in 0..2 {
        s.record(1, &on_time(50), RequestOutcome::HttpError(500), 3);
    }
    for _ in 0..3 {
        s.record(1, &on_time(1000), RequestOutcome::Timeout, 0);
    }
    s
}

fn load(samples: Samples) -> LoadReport {
    let now = chrono::Utc::now();
    LoadReport {
        started_at: now,
        ended_at: now,
        elapsed: ms(2010),
        planned: Some(100),
        connections_opened: 3,
        cut_short: false,
        offered_per_second: Vec::new(),
        per_request: vec![RequestSamples {
            name: "GET /".into(),
            samples: samples.clone(),
        }],
        samples,
    }
}

fn input(slos: Vec<LatencySlo>) -> ReportInput {
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
            duration_s: 2.0,
            num_clients: 5,
            rps: 10,
        },
        faults: vec![FaultInfo {
            kind: "latency".into(),
            description: "Latency: mean 300.00ms".into(),
            sched: None,
            windows: vec![ActiveWindow {
                from_s: 0.0,
                until_s: 2.0,
            }],
            applied_on: "proxy 127.0.0.1:34000 → 127.0.0.1:7070".into(),
            applications: Some(100),
        }],
        slos,
        recovery_seconds: 3,
        upstream: None,
    }
}

#[test]
fn figures_count_every_outcome_and_use_the_true_mean() {
    let report = report::build(input(LatencySlo::defaults()), &load(samples()), None);
    let run = &report.run;
    assert_eq!(run.requests, 100);
    assert_eq!(run.errors, 5);
    assert_eq!(run.outcomes.timeout, 3);
    assert_eq!(run.outcomes.http_error, 2);
    assert_eq!(run.outcomes.http_error_by_status["500"], 2);
    assert_eq!(run.outcomes.success, 95);
    // (90×100 + 5×400 + 2×50 + 3×1000) / 100 = 141 ms, not the p50.
    assert!((run.mean_ms - 141.0).abs() < 0.01, "{}", run.mean_ms);
    assert!((run.max_ms - 1000.0).abs() < 1.0);
    assert_eq!(run.per_second[0].requests, 90);
    assert_eq!(run.per_second[1].errors, 5);
    assert_eq!(run.sparkline_p50.chars().count(), 2);
    assert_eq!(run.sparkline_p95.chars().last(), Some('█'));
}

#[test]
fn only_successes_within_the_threshold_count_towards_an_slo() {
    let slos = vec![
        LatencySlo {
            objective: 90.0,
            threshold_ms: 200.0,
            request: None,
        },
        LatencySlo {
            objective: 91.0,
            threshold_ms: 200.0,
            request: None,
        },
        LatencySlo {
            objective: 95.0,
            threshold_ms: 500.0,
            request: None,
        },
    ];
    let report = report::build(input(slos), &load(samples()), None);
    let verdicts = &report.run.slos;
    // 90 fast successes; the fast HTTP 500s do not count.
    assert_eq!(verdicts[0].good_requests, 90);
    assert!(verdicts[0].passed);
    assert!(!verdicts[1].passed);
    // 95 successes within 500 ms: exactly 95%.
    assert_eq!(verdicts[2].good_requests, 95);
    assert!(verdicts[2].passed);
    assert_eq!(report.run.slo_failures, 1);
    assert_eq!(report.status, Status::Failed);
}

#[test]
fn markdown_has_the_guide_layout_and_the_breakdown() {
    let baseline = {
        let mut s = Samples::new(2);
        for _ in 0..100 {
            s.record(0, &on_time(20), RequestOutcome::Success, 10);
        }
        load(s)
    };
    let report = report::build(
        input(LatencySlo::defaults()),
        &load(samples()),
        Some(&baseline),
    );
    let markdown = report::render(&report);
    for needle in [
        "# Scenarios Report",
        "Start: ",
        "## Scenario: Evaluating runtime performance of http://127.0.0.1:9090/ (items: 1)",
        "### 🎯 `GET` http://127.0.0.1:9090/ | Failed",
        "- Timeout: 1000ms",
        "**Strategy**: load for 2s with 5 clients @ 10 RPS",
        "| latency | 0% `xxxxxxxxxx` 100% |",
        "| 100 | 5 (5.0%) |",
        "| 141.00 |",
        "| HTTP error status | 2 (2.0%) — 500×2 |",
        "| Timeout | 3 (3.0%) |",
        "| p50 |",
        "| 99% @ 350ms | ❌ | 99% < 350ms |",
        "| Baseline (no fault) | 20.0",
        "```text\np50 ",
    ] {
        assert!(
            markdown.contains(needle),
            "missing {needle:?} in\n{markdown}"
        );
    }
    let comparison = report.comparison.as_ref().unwrap();
    assert_eq!(comparison.baseline_errors, 0);
    assert_eq!(comparison.fault_errors, 5);
}

#[test]
fn an_empty_run_renders_without_panicking() {
    let report = report::build(input(LatencySlo::defaults()), &load(Samples::new(1)), None);
    assert_eq!(report.run.requests, 0);
    assert_eq!(report.status, Status::Failed);
    assert!(report::render(&report).contains("| 0 | 0 (0.0%) |"));
}

/// 10 s at 10 requests per second, a fault from 3 s to 6 s: every request in the window fails (503 in 5 ms)
/// and goes upstream twice (a retry), the first second after it is slow (400 ms), the rest is fast.
#[test]
fn a_window_is_judged_phase_by_phase_with_detection_recovery_burn_and_retries() {
    let mut samples = Samples::new(10);
    samples.phases = phases(&[ms(3000), ms(6000)], ms(10_000));
    let mut upstream = UpstreamCounts {
        requests_counted: true,
        ..UpstreamCounts::default()
    };
    for second in 0..10u64 {
        let (latency, outcome) = match second {
            3..=5 => (5, RequestOutcome::HttpError(503)),
            6 => (400, RequestOutcome::Success),
            _ => (5, RequestOutcome::Success),
        };
        for k in 0..10 {
            let at = ms(second * 1000 + k * 100);
            let phase = phase_of(&samples.phases, at).unwrap();
            samples.phases[phase].add(ms(latency), &outcome);
            samples.record(second as usize, &on_time(latency), outcome.clone(), 10);
        }
        let retried = if (3..=5).contains(&second) { 20 } else { 10 };
        upstream.per_second.push(UpstreamTally {
            connections: 1,
            requests: retried,
        });
    }
    upstream.per_phase = [(0..3), (3..6), (6..10)]
        .into_iter()
        .map(|seconds| UpstreamTally {
            connections: seconds.len() as u64,
            requests: seconds
                .map(|s: usize| upstream.per_second[s].requests)
                .sum(),
        })
        .collect();
    upstream.total = UpstreamTally {
        connections: 10,
        requests: 130,
    };
    let mut input = input(LatencySlo::defaults());
    input.strategy.duration_s = 10.0;
    input.faults[0].sched = Some("start:3s,duration:3s".into());
    input.faults[0].windows = vec![ActiveWindow {
        from_s: 3.0,
        until_s: 6.0,
    }];
    input.upstream = Some(upstream);
    let mut loaded = load(samples);
    loaded.elapsed = ms(10_000);
    let report = report::build(input, &loaded, None);

    let names: Vec<&str> = report.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["before", "during", "after"]);
    let during = &report.phases[1];
    assert_eq!((during.requests, during.errors), (30, 30));
    // Every request broke the 99% SLO, which allows 1%: a burn rate of 100, and 30 of the whole run's 1
    // allowed bad request: 3000% of the budget.
    assert_eq!(during.slos[0].burn_rate, Some(100.0));
    assert_eq!(during.slos[0].budget_spent_percent, Some(3000.0));
    let upstream = during.upstream.as_ref().unwrap();
    assert_eq!(upstream.requests_per_client_request, Some(2.0));
    let window = &report.recovery[0];
    assert_eq!(window.detect_s, Some(0.0));
    // Second 6 is slow: the three seconds in a row start at 7.
    assert_eq!(
        window.recovery,
        Recovery::Recovered {
            recover_s: 1.0,
            from_second: 7
        }
    );
    let markdown = report::render(&report);
    for needle in [
        "| latency | 0% `...xxx....` 100% | Latency: mean 300.00ms — on proxy 127.0.0.1:34000 → \
         127.0.0.1:7070 — sched `start:3s,duration:3s`: active 3–6 s — acted 100 times |",
        "Upstream: the proxies sent 130 requests (1.30 per request of the load) on 10 connections.",
        "**Phases** (requests grouped by when they were due; the faults' windows: 3–6 s):",
        "| before | 0–3 | 30 | 0 (0.0%) | 0 | 5.00 | 5.00 | 5.00 | 5.00 | 1.00 |",
        "| during | 3–6 | 30 | 30 (100.0%) | 0 | 5.00 | 5.00 | 5.00 | 5.00 | 2.00 |",
        "| 99% @ 350ms | during | ❌ | 30 (100.0%) | 100.00× | 3000.0% |",
        "| 95% @ 200ms | after | ❌ | 10 (25.0%) | 5.00× | 200.0% |",
        "- Window 3–6 s: detected 0 s after its start (second 3 broke 99% @ 350ms and 95% @ 200ms); \
         recovered 1 s after its end (seconds 7–9 held).",
        "Time to detect runs from a window's start to the start of the first second that breaks an SLO",
    ] {
        assert!(
            markdown.contains(needle),
            "missing {needle:?} in\n{markdown}"
        );
    }
}
