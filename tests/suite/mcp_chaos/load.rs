//! Open-model load on MCP servers with `fault_run_mcp_chaos_scenario`: many client sessions at a fixed rate
//! against `fault mcp-test-server --transport http`, checked against the server's own timings; and the
//! head-of-line verdict on a server that answers calls concurrently.

use std::time::Duration;

use serde_json::json;

use crate::{
    mcp::http::HttpServer,
    mcp_chaos::scenario::{run, tool},
    support::common,
};

/// The q-quantile (nearest rank) of `values`.
fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

/// 50 clients × 2 calls/s × 3 s of `slow` (300 ms): exactly 300 calls, every one answered, none refused for
/// want of a slot, and the client's p50/p95/p99 at most 5 % (or 25 ms) above the times the server measured
/// itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_clients_at_a_fixed_rate_agree_with_the_servers_own_timings() {
    // Latencies are compared within milliseconds: nothing that loads the cores for long runs beside it.
    let _quiet = common::CPU_HEAVY.lock().await;
    let server = HttpServer::start(&["mcp-test-server"], &[], &[]).await;
    let agent = common::spawn().await;
    let (text, report) = run(
        &agent,
        json!({
            "server": {"url": server.url()},
            "calls": [{"tool": "slow", "arguments": {"milliseconds": 300}}],
            "num_clients": 50,
            "rps": 2,
            "duration": "3s",
        }),
    )
    .await;
    let run = &report["run"];
    assert_eq!(run["overall"]["logical_calls"], 300, "{text}");
    assert_eq!(run["overall"]["calls"], 300, "{text}");
    assert_eq!(run["overall"]["outcomes"]["ok"], 300, "{text}");
    assert_eq!(run["not_started"], 0, "{text}");
    let started: u64 = run["per_second"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(started, 300);
    assert_eq!(
        report["client"]["schedule"],
        "50 clients, each 1 calls cycled at 2 calls/s for 3s"
    );
    assert!(
        text.contains("**Head-of-line blocking**: not measured: one tool was called"),
        "{text}"
    );

    // The server's own timings, from its log: one line per answered call.
    let log = server.stderr();
    let mut handled: Vec<f64> = log
        .lines()
        .filter(|line| line.contains("slow: answered"))
        .filter_map(|line| {
            line.split("handled_ms=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert_eq!(handled.len(), 300, "{log}");
    let latency = &tool(&report, "slow")["latency"];
    for (q, field) in [(0.50, "p50_ms"), (0.95, "p95_ms"), (0.99, "p99_ms")] {
        let own = quantile(&mut handled, q);
        let seen = latency[field].as_f64().unwrap();
        // The client's figure holds the server's time and the way there and back (the HTTP exchange and
        // 50 clients' scheduling on a busy machine): never less, at most 5 % or 25 ms more.
        assert!(
            seen >= own - 1.0 && seen - own <= (0.05 * own).max(25.0),
            "{field}: the client saw {seen} ms, the server measured {own} ms\n{text}"
        );
    }
    agent.cancel().await.unwrap();
}

/// One client mixing a 100 ms `slow` with `echo` (one slow call every 400 ms) on a server that answers calls
/// concurrently: the echo calls started while a slow call was in flight on the same session take at most a few
/// milliseconds more than the others (a tenth of the slow call is what it takes to be called blocking), and the
/// report says there is no head-of-line blocking, with the figures behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_server_shows_no_head_of_line_blocking() {
    let server = HttpServer::start(&["mcp-test-server"], &[], &[]).await;
    let agent = common::spawn().await;
    let (text, report) = run(
        &agent,
        json!({
            "server": {"url": server.url()},
            "calls": [
                {"tool": "slow", "arguments": {"milliseconds": 100}},
                {"tool": "echo", "arguments": {"text": "a"}},
                {"tool": "echo", "arguments": {"text": "b"}},
                {"tool": "echo", "arguments": {"text": "c"}},
                {"tool": "echo", "arguments": {"text": "d"}},
                {"tool": "echo", "arguments": {"text": "e"}},
                {"tool": "echo", "arguments": {"text": "f"}},
                {"tool": "echo", "arguments": {"text": "g"}},
            ],
            "rps": 20,
            "duration": "3s",
        }),
    )
    .await;
    let hol = &report["run"]["head_of_line"];
    assert_eq!(hol["blocked"], false, "{text}");
    let echo = hol["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "echo")
        .unwrap_or_else(|| panic!("{hol}"));
    assert!(
        echo["behind_same_session"]["calls"].as_u64().unwrap() >= 5,
        "{hol}"
    );
    assert!(echo["clear"]["calls"].as_u64().unwrap() >= 20, "{hol}");
    // Behind a 100 ms call, yet not waiting for any tenth of it.
    let p50 = |group: &str| echo[group]["p50_ms"].as_f64().unwrap();
    assert!(p50("behind_same_session") - p50("clear") < 10.0, "{hol}");
    assert!(text.contains("**Head-of-line blocking**: no:"), "{text}");
    assert!(text.contains("| echo |"), "{text}");
    agent.cancel().await.unwrap();
}

/// Faults against a server given by URL: the run goes through `fault mcp-proxy --upstream` (HTTP-only faults
/// included), its events are joined to the calls of every client session, and the baseline runs through a
/// proxy without faults.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_reach_a_url_server_through_the_http_proxy_for_every_client() {
    let server = HttpServer::start(&["mcp-test-server"], &[], &[]).await;
    let agent = common::spawn().await;
    let (text, report) = run(
        &agent,
        json!({
            "server": {"url": server.url()},
            "plan": {"seed": 3, "faults": [
                {"type": "latency", "tools": ["echo"], "ms": 150},
                {"type": "http_status", "tools": ["get_item"], "status": 503},
            ]},
            "calls": [
                {"tool": "echo", "arguments": {"text": "a"}},
                {"tool": "get_item", "arguments": {"id": 2}},
            ],
            "num_clients": 3,
            "repeat": 2,
            "baseline": true,
        }),
    )
    .await;
    let echo = tool(&report, "echo");
    assert_eq!(echo["calls"], 6, "{text}");
    assert_eq!(echo["faults_by_type"]["latency"], 6, "{text}");
    assert!(
        echo["latency"]["p50_ms"].as_f64().unwrap() >= 150.0,
        "{text}"
    );
    assert_eq!(echo["outcomes"]["ok"], 6, "{text}");
    let get_item = tool(&report, "get_item");
    assert_eq!(get_item["faults_by_type"]["http_status"], 6, "{text}");
    assert_eq!(get_item["outcomes"]["protocol_error"], 6, "{text}");
    let baseline = &report["baseline"]["overall"];
    assert_eq!(baseline["calls"], 12, "{text}");
    assert_eq!(baseline["faults_injected"], 0, "{text}");
    assert_eq!(baseline["outcomes"]["ok"], 12, "{text}");
    assert!(text.contains("called over Streamable HTTP"), "{text}");
    agent.cancel().await.unwrap();
}

/// The server stalls (SIGSTOP, then SIGCONT 1 s later) in the middle of a 10 calls/s run with one call in flight
/// at a time: the calls that came due during the stall could not be sent, and count from when they were due
/// (with their timeout, as the impact report counts requests that could not start), so the report's largest
/// latency is at least the stall instead of the stall vanishing from the tail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stall_is_in_the_latency_from_the_schedule() {
    use rustix::process::{Pid, Signal, kill_process};
    let server = HttpServer::start(&["mcp-test-server"], &[], &[]).await;
    let pid = server
        .pid()
        .and_then(|pid| Pid::from_raw(pid as i32))
        .expect("the server's pid");
    let agent = common::spawn().await;
    let stall = Duration::from_secs(1);
    let stalling = tokio::spawn(async move {
        // The handshake and the first second of calls go through first.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        kill_process(pid, Signal::STOP).expect("SIGSTOP");
        tokio::time::sleep(stall).await;
        kill_process(pid, Signal::CONT).expect("SIGCONT");
    });
    let (text, report) = run(
        &agent,
        json!({
            "server": {"url": server.url()},
            "calls": [{"tool": "echo", "arguments": {"text": "hi"}}],
            "rps": 10,
            "duration": "3s",
            "concurrency": 1,
            "client": {"timeout_ms": 2000},
        }),
    )
    .await;
    stalling.await.unwrap();
    let run = &report["run"];
    let latency = &run["overall"]["latency"];
    let max_ms = latency["max_ms"].as_f64().unwrap();
    assert!(
        max_ms >= stall.as_millis() as f64,
        "a {stall:?} stall, yet the largest latency is {max_ms} ms\n{text}"
    );
    // Every due call is in the figures: sent or not.
    assert_eq!(run["overall"]["logical_calls"], 30, "{text}");
    let not_started = run["not_started"].as_u64().unwrap();
    assert!(not_started >= 5, "{text}");
    assert_eq!(
        run["overall"]["outcomes"]["not_started"].as_u64(),
        Some(not_started)
    );
    assert!(text.contains("| max |"), "{text}");
    agent.cancel().await.unwrap();
}

/// One call in flight at 10 calls per second: `slow` at 250 ms is slower than the schedule, so the calls due
/// while one is out wait (unsent, their whole timeout): the report's queueing delay is the timeout at p99,
/// its service time the tool's 250 ms. `echo` keeps up, and its queueing delay stays near zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queueing_delay_shows_a_server_slower_than_the_schedule() {
    // Milliseconds of queueing are measured: nothing that loads the cores for long runs beside it.
    let _quiet = common::CPU_HEAVY.lock().await;
    let server = HttpServer::start(&["mcp-test-server"], &[], &[]).await;
    let agent = common::spawn().await;
    let args = |call: serde_json::Value| {
        json!({
            "server": {"url": server.url()},
            "calls": [call],
            "rps": 10,
            "duration": "2s",
            "concurrency": 1,
            "client": {"timeout_ms": 1000},
        })
    };
    let (text, report) = run(
        &agent,
        args(json!({"tool": "slow", "arguments": {"milliseconds": 250}})),
    )
    .await;
    let slow = &report["run"]["overall"];
    assert!(
        slow["outcomes"]["not_started"].as_u64().unwrap() >= 8,
        "{text}"
    );
    assert_eq!(slow["queueing"]["calls"], 20, "{text}");
    assert!(
        slow["queueing"]["p99_ms"].as_f64().unwrap() >= 999.0,
        "{text}"
    );
    assert_eq!(slow["service"]["calls"], slow["outcomes"]["ok"], "{text}");
    // The tool's own 250 ms and the round trip, which a busy machine stretches by tens of milliseconds: far
    // below the queueing's second either way.
    let service_p50 = slow["service"]["p50_ms"].as_f64().unwrap();
    assert!((250.0..400.0).contains(&service_p50), "{text}");

    let (text, report) = run(
        &agent,
        args(json!({"tool": "echo", "arguments": {"text": "a"}})),
    )
    .await;
    let fast = &report["run"]["overall"];
    assert_eq!(fast["outcomes"]["ok"], 20, "{text}");
    // Sent on time, but for the time the system takes to wake the client: a few milliseconds at most on a
    // busy machine, against the slow tool's second.
    assert!(
        fast["queueing"]["p50_ms"].as_f64().unwrap() <= 10.0,
        "{text}"
    );
    assert!(
        fast["queueing"]["max_ms"].as_f64().unwrap() < 200.0,
        "{text}"
    );
    let q = |field: &str| fast["queueing"][field].as_f64().unwrap();
    let row = format!(
        "| (all) | 20 | {:.2} | {:.2} | {:.2} | {:.2} | 20 |",
        q("p50_ms"),
        q("p95_ms"),
        q("p99_ms"),
        q("max_ms")
    );
    assert!(text.contains(&row), "{row}\n{text}");
    eprintln!(
        "MCP queueing delay p50/p99/max: slow server {}/{}/{} ms, fast server {}/{}/{} ms",
        slow["queueing"]["p50_ms"],
        slow["queueing"]["p99_ms"],
        slow["queueing"]["max_ms"],
        fast["queueing"]["p50_ms"],
        fast["queueing"]["p99_ms"],
        fast["queueing"]["max_ms"]
    );
    agent.cancel().await.unwrap();
}
