//! Report figures and markdown from known samples (no network).

use std::time::Duration;

use fault::{
    load::{LoadReport, RequestOutcome, RequestSamples, Samples, Timing, phase_of, phases},
    report::impact::{
        self as report, ActiveWindow, CallInfo, FaultInfo, LatencySlo, Recovery, ReportInput,
        RequestInfo, Status, StrategyInfo, UpstreamCounts, UpstreamTally,
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
            stages: Vec::new(),
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

/// The requests of a three-request mix: checkout, search and home.
const MIX: [&str; 3] = ["checkout", "search", "home"];

fn slo(request: Option<&str>, objective: f64, threshold_ms: f64) -> LatencySlo {
    LatencySlo {
        objective,
        threshold_ms,
        request: request.map(str::to_owned),
    }
}

/// 10 s of a three-request mix, 10 calls of each per second, a fault from 3 s to 6 s: checkout (which
/// calls the faulted upstream) takes 400 ms from second 3 to second 6 (a second of hold-down), the rest of
/// its calls and every call of search and home 5 ms; one home call in second 1 fails with a 503. With
/// `slow` false, every checkout call is fast (the baseline).
fn mixed_run(slow: bool) -> LoadReport {
    let cuts = [ms(3000), ms(6000)];
    let mut all = Samples::new(10);
    all.phases = phases(&cuts, ms(10_000));
    let mut each: Vec<Samples> = MIX
        .iter()
        .map(|_| {
            let mut s = Samples::new(10);
            s.phases = phases(&cuts, ms(10_000));
            s
        })
        .collect();
    for second in 0..10u64 {
        for (index, name) in MIX.iter().enumerate() {
            for k in 0..10u64 {
                let at = ms(second * 1000 + k * 100 + index as u64 * 10);
                let (latency, outcome) = match (*name, second, k) {
                    ("checkout", 3..=6, _) if slow => (400, RequestOutcome::Success),
                    ("home", 1, 0) => (5, RequestOutcome::HttpError(503)),
                    _ => (5, RequestOutcome::Success),
                };
                for samples in [&mut all, &mut each[index]] {
                    let phase = phase_of(&samples.phases, at).unwrap();
                    samples.phases[phase].add(ms(latency), &outcome);
                    samples.record(second as usize, &on_time(latency), outcome.clone(), 10);
                }
            }
        }
    }
    // Answers end when they end: checkout's slow ones of second 6 in second 7.
    for (second, slot) in all.per_second.iter_mut().enumerate() {
        slot.answered = match second {
            6 if slow => 20,
            7 if slow => 40,
            _ => 30,
        };
    }
    let mut loaded = load(all);
    loaded.elapsed = ms(10_000);
    loaded.planned = Some(300);
    loaded.offered_per_second = vec![30; 10];
    loaded.per_request = MIX
        .iter()
        .zip(each)
        .map(|(name, samples)| RequestSamples {
            name: (*name).to_owned(),
            samples,
        })
        .collect();
    loaded
}

/// What the scenario knows of the mix, its fault active from 3 s to 6 s, judged on `slos`.
fn mixed_input(slos: Vec<LatencySlo>) -> ReportInput {
    let mut input = input(slos);
    input.strategy.duration_s = 10.0;
    input.faults[0].sched = Some("start:3s,duration:3s".into());
    input.faults[0].windows = vec![ActiveWindow {
        from_s: 3.0,
        until_s: 6.0,
    }];
    input.requests = MIX
        .iter()
        .map(|name| RequestInfo {
            name: (*name).to_owned(),
            method: if *name == "checkout" { "POST" } else { "GET" }.into(),
            url: format!("http://127.0.0.1:9090/{name}"),
            weight: 1.0,
            expect: "a status below 400".into(),
            headers: if *name == "checkout" {
                vec!["content-type".into()]
            } else {
                vec![]
            },
            has_body: *name == "checkout",
        })
        .collect();
    input
}

/// checkout's SLO, search's, and one over all traffic that the slow checkout calls (40 of 300) do not break.
fn mixed_slos() -> Vec<LatencySlo> {
    vec![
        slo(Some("checkout"), 99.0, 350.0),
        slo(Some("search"), 99.0, 350.0),
        slo(None, 80.0, 350.0),
    ]
}

#[test]
fn an_slo_that_names_a_request_is_judged_on_that_request_alone_in_the_run() {
    let report = report::build(mixed_input(mixed_slos()), &mixed_run(true), None);
    let verdicts: Vec<(&str, bool, u64, u64)> = report
        .run
        .slos
        .iter()
        .map(|v| (v.name.as_str(), v.passed, v.good_requests, v.bad_requests))
        .collect();
    assert_eq!(
        verdicts,
        [
            // checkout's 100 calls, 40 of them slow.
            ("checkout: 99% @ 350ms", false, 60, 40),
            // search's 100 calls, all fast.
            ("search: 99% @ 350ms", true, 100, 0),
            // All 300 calls: 40 slow and one 503, 259 good (86%).
            ("80% @ 350ms", true, 259, 41),
        ]
    );
    assert_eq!(report.run.slos[0].request.as_deref(), Some("checkout"));
    assert_eq!(report.run.slos[2].request, None);
    assert_eq!(report.status, Status::Failed);

    // Each request its own figures, with the verdicts of the SLOs that name it.
    let rows: Vec<(&str, u64, u64, f64)> = report
        .requests
        .iter()
        .map(|r| (r.name.as_str(), r.requests, r.errors, r.share_percent))
        .collect();
    assert_eq!(
        rows,
        [
            ("checkout", 100, 0, 33.33),
            ("search", 100, 0, 33.33),
            ("home", 100, 1, 33.33),
        ]
    );
    let checkout = &report.requests[0];
    assert_eq!(
        (checkout.method.as_str(), checkout.has_body),
        ("POST", true)
    );
    assert!((checkout.p50_ms - 5.0).abs() < 0.01, "{}", checkout.p50_ms);
    assert!((checkout.p99_ms - 400.0).abs() < 1.0, "{}", checkout.p99_ms);
    assert!(
        (checkout.mean_ms - 163.0).abs() < 0.01,
        "{}",
        checkout.mean_ms
    );
    let names = |r: &report::RequestFigures| -> Vec<(String, bool)> {
        r.slos.iter().map(|v| (v.name.clone(), v.passed)).collect()
    };
    assert_eq!(names(checkout), [("checkout: 99% @ 350ms".into(), false)]);
    assert_eq!(
        names(&report.requests[1]),
        [("search: 99% @ 350ms".into(), true)]
    );
    assert!(report.requests[2].slos.is_empty());
    assert_eq!(report.requests[2].outcomes.http_error_by_status["503"], 1);
    assert!((report.requests[2].p99_ms - 5.0).abs() < 0.01);

    // In the model as structuredContent carries it: the SLO names its request; an unnamed one has no field.
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["requests"][0]["slos"][0]["request"], "checkout");
    assert!(json["run"]["slos"][2].get("request").is_none(), "{json}");
    let parsed: LatencySlo =
        serde_json::from_value(serde_json::json!({"objective": 99, "threshold_ms": 350})).unwrap();
    assert_eq!(parsed.request, None);
}

#[test]
fn an_slo_that_names_a_request_is_judged_on_that_request_alone_in_phases_and_recovery() {
    let report = report::build(mixed_input(mixed_slos()), &mixed_run(true), None);
    let names: Vec<&str> = report.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["before", "during", "after"]);
    let verdicts = |phase: usize| -> Vec<(bool, u64)> {
        report.phases[phase]
            .slos
            .iter()
            .map(|s| (s.passed, s.bad_requests))
            .collect()
    };
    // Before: all met (the 503 is one of 90 calls, within the 80%).
    assert_eq!(verdicts(0), [(true, 0), (true, 0), (true, 1)]);
    // During: checkout's 30 calls all slow; search untouched; all traffic 30 of 90 slow (67% good).
    assert_eq!(verdicts(1), [(false, 30), (true, 0), (false, 30)]);
    // During, checkout's burn rate is over checkout's calls alone: 100% bad over the 1% allowed.
    assert_eq!(report.phases[1].slos[0].burn_rate, Some(100.0));
    assert_eq!(report.phases[1].slos[2].burn_rate, Some(1.67));
    // After: second 6 (hold-down) keeps 10 of checkout's 40 calls slow; all traffic 10 of 120.
    assert_eq!(verdicts(2), [(false, 10), (true, 0), (true, 10)]);
    // Budget: checkout's 30 bad calls of the 1 its 100 calls allow.
    assert_eq!(report.phases[1].slos[0].budget_spent_percent, Some(3000.0));

    let window = &report.recovery[0];
    assert_eq!(window.detect_s, Some(0.0));
    // Second 3: checkout's p99 and all traffic's are 400 ms; search's second holds.
    assert_eq!(
        window.broken_slos,
        ["checkout: 99% @ 350ms".to_owned(), "80% @ 350ms".to_owned()]
    );
    assert_eq!(
        window.recovery,
        Recovery::Recovered {
            recover_s: 1.0,
            from_second: 7
        }
    );

    // Judged on search alone, nothing broke: the slow seconds were checkout's.
    let search_only = report::build(
        mixed_input(vec![slo(Some("search"), 99.0, 350.0)]),
        &mixed_run(true),
        None,
    );
    assert_eq!(search_only.recovery[0].detect_s, None);
    assert!(search_only.recovery[0].broken_slos.is_empty());
    assert_eq!(search_only.status, Status::Passed);
    // Judged on all traffic with the same objective, second 3 breaks it.
    let all_traffic = report::build(
        mixed_input(vec![slo(None, 99.0, 350.0)]),
        &mixed_run(true),
        None,
    );
    assert_eq!(all_traffic.recovery[0].detect_s, Some(0.0));
}

#[test]
fn the_markdown_has_a_row_per_request_and_its_slo_verdicts() {
    let report = report::build(
        mixed_input(mixed_slos()),
        &mixed_run(true),
        Some(&mixed_run(false)),
    );
    // The baseline judged per request too: checkout's SLO holds without the fault.
    let baseline = report.baseline.as_ref().unwrap();
    assert!(
        baseline.slos.iter().all(|v| v.passed),
        "{:?}",
        baseline.slos
    );
    let comparison = report.comparison.as_ref().unwrap();
    let checkout = &comparison.requests[0];
    assert_eq!(checkout.name, "checkout");
    assert!((checkout.baseline_p99_ms - 5.0).abs() < 0.01);
    assert!((checkout.fault_p99_ms - 400.0).abs() < 1.0);
    assert_eq!(comparison.requests[2].baseline_errors, 1);

    let markdown = report::render(&report);
    for needle in [
        "## Scenario: Evaluating runtime performance of http://127.0.0.1:9090/ (items: 3)",
        "### 🎯 a mix of 3 requests (checkout, search, home) | Failed",
        "**Traffic mix** (each call picks a request by weight; timeout 1000ms):",
        "| checkout | `POST` | http://127.0.0.1:9090/checkout | 1 | a status below 400 | content-type | Yes |",
        "| search | `GET` | http://127.0.0.1:9090/search | 1 | a status below 400 | - | No |",
        "**Requests** (each request of the mix over the run; its SLOs judged on its requests alone):",
        "| Request | Share | Requests | Errors | Errors by kind | p50 (ms) | p95 (ms) | p99 (ms) | Max (ms) | Mean (ms) | SLOs |",
        "| checkout | 33.3% | 100 | 0 (0.0%) | – | 5.00 | 400.",
        "| 163.00 | ❌ checkout: 99% @ 350ms |",
        "| search | 33.3% | 100 | 0 (0.0%) | – | 5.00 | 5.00 | 5.00 | 5.00 | 5.00 | ✅ search: 99% @ 350ms |",
        "| home | 33.3% | 100 | 1 (1.0%) | HTTP 503×1 | 5.00 | 5.00 | 5.00 | 5.00 | 5.00 | – |",
        "| checkout: 99% @ 350ms | ❌ | 99% < 350ms |",
        "| search: 99% @ 350ms | ✅ | 99% < 350ms |",
        "| 80% @ 350ms | ✅ | 80% < 350ms |",
        "| checkout: 99% @ 350ms | during | ❌ | 30 (100.0%) | 100.00× | 3000.0% |",
        "| search: 99% @ 350ms | during | ✅ | 0 (0.0%) | 0.00× | 0.0% |",
        "second 3 broke checkout: 99% @ 350ms and 80% @ 350ms",
        "**Impact per request** (baseline → with the fault):",
        "| checkout | 5.00 → 5.00 (+0.00) |",
        "| search | 5.00 → 5.00 (+0.00) | 5.00 → 5.00 (+0.00) | 5.00 → 5.00 (+0.00) | 0 → 0 (+0) |",
        "SLOs without the fault: ✅ checkout: 99% @ 350ms, ✅ search: 99% @ 350ms, ✅ 80% @ 350ms.",
        "an SLO that names a request is judged on that request's requests alone",
    ] {
        assert!(
            markdown.contains(needle),
            "missing {needle:?} in\n{markdown}"
        );
    }
    // The SLO table counts a named SLO's bad calls against its own request's.
    assert!(
        markdown.contains(
            "| checkout: 99% @ 350ms | ❌ | 99% < 350ms | Above by 50.0ms | 40 (40.0%) |"
        ),
        "{markdown}"
    );
    assert!(!markdown.contains("**Call**:"), "{markdown}");
    std::fs::write(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-mix.md"),
        &markdown,
    )
    .unwrap();
}

#[test]
fn with_one_request_the_markdown_stays_as_it_was_and_says_why() {
    let report = report::build(input(LatencySlo::defaults()), &load(samples()), None);
    assert_eq!(report.requests.len(), 1);
    assert_eq!(report.requests[0].requests, 100);
    let markdown = report::render(&report);
    assert!(markdown.contains("**Call**:"), "{markdown}");
    assert!(!markdown.contains("**Requests**"), "{markdown}");
    assert!(
        markdown.contains("The traffic is one request, so its figures are the run's"),
        "{markdown}"
    );
}

/// The mix's report with its baseline: checkout slow in the fault's window, search and home fast.
pub(crate) fn mixed_report() -> report::Report {
    report::build(
        mixed_input(mixed_slos()),
        &mixed_run(true),
        Some(&mixed_run(false)),
    )
}

#[test]
fn the_charts_draw_each_request_against_its_slos_and_the_offered_and_achieved_rate() {
    use fault::report::chart::{
        Figure,
        impact::{ImpactChart, ImpactFigure},
        page, png,
    };
    let report = mixed_report();
    assert_eq!(
        ImpactChart::of(&report),
        [
            ImpactChart::LatencyOverTime,
            ImpactChart::Requests,
            ImpactChart::Distribution,
            ImpactChart::ErrorsOverTime,
            ImpactChart::Rate,
        ]
    );
    let series: Vec<String> = ImpactChart::Requests
        .series_of(&report)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(series, MIX);
    let figure = ImpactFigure::all(&report);
    let image = png::png(&figure).unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report_charts");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("impact-mix.png"), &image).unwrap();
    assert_eq!(&image[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(image[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(image[20..24].try_into().unwrap());
    assert_eq!(width, 800);
    assert!((1000..=2000).contains(&height), "height {height}");
    let alt = figure.alt_text();
    for needle in [
        "Per request of the mix: checkout (100 requests, 0 errors) p50 5 ms, p95 400",
        "SLO checkout: 99% @ 350ms missed",
        "search (100 requests, 0 errors) p50 5 ms, p95 5 ms, p99 5 ms, SLO search: 99% @ 350ms met;",
        "Rate per second: 300 requests offered (at most 30 in a second), 300 answers achieved (at most 40 in a \
         second).",
    ] {
        assert!(alt.contains(needle), "missing {needle:?} in {alt}");
    }

    // The page and the App view's body: a chart per request, the rate, and the Requests table's rows.
    let html = page::impact_page(&report).unwrap();
    let body = page::impact_body(&report).unwrap();
    for text in [&html, &body] {
        for needle in [
            "id=\"chart-requests\"",
            "id=\"chart-rate\"",
            "<th>Request</th><th>Share</th>",
            "<td>checkout</td><td>33.3%</td><td>100</td>",
            "<td>❌ checkout: 99% @ 350ms</td>",
            "<td>✅ search: 99% @ 350ms</td>",
            "<td>home</td><td>33.3%</td><td>100</td><td>1 (1.0%)</td><td>HTTP 503×1</td>",
        ] {
            assert!(text.contains(needle), "missing {needle:?}");
        }
    }
    // One toggle per request, in its colour.
    assert!(
        html.contains("></span>checkout</label>"),
        "a toggle per request"
    );
}
