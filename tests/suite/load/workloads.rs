//! Workloads like a service's, end to end through the built binary: a traffic mix whose requests are judged
//! each on its own, a ramp whose achieved rate follows its target, a feed whose rows fill the requests in
//! order or in a seeded order, and the refusals of each, named by field.

use crate::support::common;
use crate::support::scenario::{self, TIMING};

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::{Request, Response, StatusCode, body::Incoming};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::{Value, json};

/// A shop on 127.0.0.1: `/search` and `/profile` answer at once, `/checkout` calls its payments upstream
/// (`upstream_base`, the scenario's proxy) first, `/echo/ID` records ID and answers "echo ID".
async fn shop(upstream_base: String, seen: Arc<Mutex<Vec<String>>>) -> scenario::Server {
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let upstream_base = Arc::new(upstream_base);
    scenario::serve(move |req: Request<Incoming>| {
        let client = client.clone();
        let upstream_base = upstream_base.clone();
        let seen = seen.clone();
        async move {
            let path = req.uri().path().to_owned();
            let answer = |status: StatusCode, body: String| {
                let mut response = Response::new(Full::new(Bytes::from(body)));
                *response.status_mut() = status;
                response
            };
            if let Some(id) = path.strip_prefix("/echo/") {
                seen.lock().unwrap().push(id.to_owned());
                return answer(StatusCode::OK, format!("echo {id}"));
            }
            match path.as_str() {
                "/search" => answer(StatusCode::OK, "results".into()),
                "/profile" => answer(StatusCode::OK, "profile".into()),
                "/checkout" => {
                    let uri: hyper::Uri = format!("{upstream_base}/todos/1").parse().unwrap();
                    match client.get(uri).await {
                        Ok(response) => {
                            let _ = response.into_body().collect().await;
                            answer(StatusCode::OK, "paid".into())
                        }
                        Err(e) => answer(StatusCode::BAD_GATEWAY, e.to_string()),
                    }
                }
                _ => answer(StatusCode::NOT_FOUND, "no such page".into()),
            }
        }
    })
    .await
}

async fn scenario(client: &common::Client, tool: &str, args: Value) -> (String, Value) {
    let result = common::call(client, tool, args).await.expect("tool call");
    let text = common::text(&result).to_owned();
    assert!(!common::is_error(&result), "{tool} failed: {text}");
    (
        text,
        result
            .structured_content
            .clone()
            .expect("structuredContent"),
    )
}

/// The tool's refusal of `args`, as its text.
async fn refusal(client: &common::Client, args: Value) -> String {
    let result = common::call(client, "fault_run_latency_impact_scenario", args)
        .await
        .expect("tool call");
    assert!(
        common::is_error(&result),
        "accepted: {}",
        common::text(&result)
    );
    common::text(&result).to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ramp_is_sent_at_its_target_rate_second_by_second() {
    let _timing = TIMING.lock().await;
    let upstream = scenario::upstream().await;
    let client = common::spawn().await;
    // 0 → 200 req/s over 10 s, then 200 req/s for 5 s, through a proxy adding 1 ms.
    let (markdown, report) = scenario(
        &client,
        "fault_run_latency_impact_scenario",
        json!({
            "url": upstream.url("/todos/1"),
            "stages": [{"duration": "10s", "rps": 200}, {"duration": "5s", "rps": 200}],
            "num_clients": 4,
            "latency": 1,
            "timeout": 5,
        }),
    )
    .await;
    let seconds = report["run"]["per_second"].as_array().unwrap();
    assert_eq!(seconds.len(), 15, "{markdown}");
    let offered: Vec<u64> = seconds
        .iter()
        .map(|s| s["offered"].as_u64().unwrap())
        .collect();
    let achieved: Vec<u64> = seconds
        .iter()
        .map(|s| s["achieved"].as_u64().unwrap())
        .collect();
    assert_eq!(offered.iter().sum::<u64>(), 2000, "{offered:?}");
    assert_eq!(report["run"]["requests"], 2000);
    for second in 1..15 {
        // The target of each second: the rate at its middle on the ramp, then 200.
        let target = if second < 10 { 20 * second + 10 } else { 200 } as f64;
        let got = achieved[second] as f64;
        assert!(
            (got - target).abs() <= (0.05 * target).max(1.0),
            "second {second}: achieved {got} of {target} (achieved {achieved:?}, offered {offered:?})"
        );
        assert!(offered[second].abs_diff(target as u64) <= 1, "{offered:?}");
    }
    assert_eq!(report["strategy"]["stages"].as_array().unwrap().len(), 2);
    assert_eq!(report["strategy"]["stages"][1]["from_rps"], 200.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_fills_the_requests_in_order_and_in_a_seeded_order_a_second_run_repeats() {
    let _timing = TIMING.lock().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let app = shop("http://127.0.0.1:9".into(), seen.clone()).await;
    let upstream = scenario::upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let feed = dir.path().join("ids.csv");
    let rows: String = (0..1000).map(|i| format!("{i},user-{i}\n")).collect();
    std::fs::write(&feed, format!("id,user\n{rows}")).unwrap();
    let client = common::spawn().await;
    let run = async |order: &str, seed: u64| {
        seen.lock().unwrap().clear();
        let (markdown, report) = scenario(
            &client,
            "fault_run_latency_impact_scenario",
            json!({
                "url": app.url("/echo/{{id}}"),
                "headers": {"x-user": "{{user}}"},
                "feed": {"file": feed.to_string_lossy(), "order": order},
                "rps": 100,
                "duration": "2s",
                "seed": seed,
                "latency": 1,
                // The proxy is in front of the upstream, not of the shop: the shop is called directly.
                "proxies": [format!("{}={}", common::free_port(), upstream.addr)],
            }),
        )
        .await;
        assert_eq!(report["run"]["requests"], 200, "{markdown}");
        assert_eq!(report["run"]["errors"], 0, "{markdown}");
        seen.lock().unwrap().clone()
    };
    // Call k takes row k. Two requests in flight may reach the shop in either order, so the order seen is
    // the calls' own give or take a neighbour, and every row of the first 200 comes once.
    let in_order = run("sequential", 1).await;
    let mut sorted: Vec<u32> = in_order.iter().map(|id| id.parse().unwrap()).collect();
    for (seen, id) in sorted.iter().enumerate() {
        assert!(
            seen.abs_diff(*id as usize) <= 3,
            "row {id} came {seen}th: {in_order:?}"
        );
    }
    sorted.sort_unstable();
    assert_eq!(sorted, (0..200).collect::<Vec<u32>>());
    // A seeded order: 200 draws from 1,000 rows, the same draws again with the same seed, others with another.
    let drawn = |ids: Vec<String>| {
        let mut ids: Vec<u32> = ids.iter().map(|id| id.parse().unwrap()).collect();
        ids.sort_unstable();
        ids
    };
    let random = drawn(run("random", 7).await);
    assert_eq!(random.len(), 200);
    assert!(random.iter().all(|id| *id < 1000));
    assert_ne!(random, (0..200).collect::<Vec<u32>>());
    assert_eq!(
        drawn(run("random", 7).await),
        random,
        "the same seed repeats the rows"
    );
    assert_ne!(
        drawn(run("random", 8).await),
        random,
        "another seed draws other rows"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mix_sends_each_request_by_weight_and_latency_on_the_upstream_slows_only_the_request_that_calls_it()
 {
    let _timing = TIMING.lock().await;
    let upstream = scenario::upstream().await;
    let proxy_port = common::free_port();
    let app = shop(
        format!("http://127.0.0.1:{proxy_port}"),
        Arc::new(Mutex::new(Vec::new())),
    )
    .await;
    let client = common::spawn().await;
    let (markdown, report) = scenario(
        &client,
        "fault_run_latency_impact_scenario",
        json!({
            "requests": [
                {"name": "checkout", "url": app.url("/checkout"), "method": "POST", "body": "{}", "weight": 1},
                {"name": "search", "url": app.url("/search"), "weight": 2},
                {"name": "profile", "url": app.url("/profile"), "weight": 1,
                 "expect": {"status": [200], "body_contains": "profile"}},
            ],
            "slos": [
                {"request": "checkout", "objective": 95, "threshold_ms": 30},
                {"request": "search", "objective": 95, "threshold_ms": 30},
                {"request": "profile", "objective": 95, "threshold_ms": 30},
            ],
            "rps": 40,
            "duration": "3s",
            "seed": 42,
            "latency": 50,
            "proxies": [format!("{proxy_port}={}", upstream.addr)],
        }),
    )
    .await;
    let per_request = report["data"]["run"]["per_request"].as_array().unwrap();
    let names: Vec<&str> = per_request
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["checkout", "search", "profile"], "{markdown}");
    assert_eq!(report["run"]["requests"], 120);
    assert_eq!(report["run"]["errors"], 0, "{markdown}");
    // Weights 1:2:1 of 120 calls, by the seed's picks.
    let counts: Vec<u64> = per_request
        .iter()
        .map(|r| r["samples"]["success"].as_u64().unwrap())
        .collect();
    assert_eq!(counts.iter().sum::<u64>(), 120);
    assert!((15..=45).contains(&counts[0]), "{counts:?}");
    assert!((40..=80).contains(&counts[1]), "{counts:?}");
    // Only checkout calls the payments upstream, through the proxy's 50 ms.
    let verdicts = report["run"]["slos"].as_array().unwrap();
    let passed = |request: &str| {
        verdicts
            .iter()
            .find(|v| v["name"].as_str().unwrap().starts_with(request))
            .unwrap_or_else(|| panic!("no verdict for {request} in {verdicts:?}"))["passed"]
            .as_bool()
            .unwrap()
    };
    assert!(!passed("checkout"), "{markdown}");
    assert!(passed("search"), "{markdown}");
    assert!(passed("profile"), "{markdown}");
    for name in ["checkout", "search", "profile"] {
        assert!(markdown.contains(name), "{name} missing from\n{markdown}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_inputs_are_refused_before_anything_starts_naming_the_field() {
    let client = common::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let one = |name: &str, weight: Value| json!({"name": name, "url": "http://127.0.0.1:9/a", "weight": weight});
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"requests": [one("a", json!(-1))]}),
            "requests[0].weight: -1 is out of range",
        ),
        (
            json!({"requests": [one("a", json!("heavy"))]}),
            "requests[0].weight: expected a number",
        ),
        (
            json!({"requests": [one("a", json!(0)), one("b", json!(0))]}),
            "requests: every weight is 0",
        ),
        (
            json!({"requests": [one("a", json!(1)), one("a", json!(1))]}),
            "requests[1].name: 'a' is already the name of requests[0]",
        ),
        (
            json!({"requests": [one("a", json!(1))], "url": "http://127.0.0.1:9/"}),
            "url: is for a load of one request, and `requests` is given",
        ),
        (
            json!({"requests": [one("a", json!(1)), {"name": "b", "url": "http://127.0.0.2:9/b"}]}),
            "requests[1].url: goes to http://127.0.0.2:9",
        ),
        (
            json!({"requests": [{"name": "a", "url": "http://127.0.0.1:9/", "wieght": 1}]}),
            "unknown field 'wieght'; did you mean 'weight'?",
        ),
        (
            json!({"requests": [one("checkout", json!(1))], "slos": [{"request": "checkot", "objective": 99, "threshold_ms": 100}]}),
            "slos[0].request: 'checkot' names no request of the mix (did you mean",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "stages": [{"duration": "0s", "rps": 10}]}),
            "stages[0].duration: is 0",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "stages": [{"duration": "-5", "rps": 10}]}),
            "stages[0].duration:",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "stages": [{"duration": "1s", "rps": 5000}]}),
            "stages[0].rps: 5000 requests per second; accepted: at most 1000",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "stages": [{"duration": "100s", "rps": 5}, {"duration": "100s", "rps": 5}]}),
            "stages: the stages last 3m 20s in all; accepted: at most 2m",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "rps": 5, "stages": [{"duration": "1s", "rps": 5}]}),
            "rps: is for a constant rate, and `stages` is given",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "feed": {"file": dir.path().join("none.csv")}}),
            "feed.file:",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "feed": {"file": dir.path()}}),
            "feed.file:",
        ),
        (
            json!({"url": "http://127.0.0.1:9/{{nope}}", "feed": {"file": write(&dir, "ok.csv", "id\n1\n")}}),
            "url:",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "feed": {"file": write(&dir, "empty.csv", "id\n")}}),
            "feed.file:",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "feed": {"file": write(&dir, "ok2.csv", "id\n1\n"), "order": "shuffled"}}),
            "feed.order:",
        ),
    ];
    for (mut args, expected) in cases {
        args["latency"] = json!(10);
        let message = refusal(&client, args.clone()).await;
        assert!(
            message.contains(expected),
            "for {args}: expected '{expected}' in: {message}"
        );
    }
    // A placeholder naming no column says which columns there are.
    let message = refusal(
        &client,
        json!({"url": "http://127.0.0.1:9/{{nope}}", "latency": 10,
               "feed": {"file": write(&dir, "cols.csv", "id,user\n1,a\n")}}),
    )
    .await;
    assert!(
        message.contains("nope") && message.contains("id") && message.contains("user"),
        "{message}"
    );
}

/// Writes `text` to `name` in `dir`; its path.
fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_declares_the_mix_the_stages_and_the_feed_with_their_members() {
    let tool = fault::mcp::FaultServer::tools()
        .into_iter()
        .find(|tool| tool.name == "fault_run_latency_impact_scenario")
        .unwrap();
    let properties = &tool.input_schema["properties"];
    let request = &properties["requests"]["items"]["properties"];
    for member in [
        "name", "method", "url", "headers", "body", "weight", "expect",
    ] {
        assert!(request.get(member).is_some(), "requests[].{member}");
    }
    assert_eq!(
        properties["requests"]["items"]["additionalProperties"],
        false
    );
    assert_eq!(
        properties["stages"]["items"]["required"],
        json!(["duration", "rps"])
    );
    assert_eq!(
        properties["feed"]["properties"]["order"]["default"],
        "sequential"
    );
    assert_eq!(properties["num_clients"]["maximum"], 1000);
    assert_eq!(properties["rps"]["default"], 3);
    assert_eq!(tool.input_schema["additionalProperties"], false);
}

/// `GET /metrics` at `addr`: the page's text, or `None` when nothing answers.
async fn scrape(addr: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n")
        .await
        .ok()?;
    let mut page = String::new();
    stream.read_to_string(&mut page).await.ok()?;
    Some(page)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenarios_proxies_serve_their_metrics_while_it_runs() {
    let _timing = TIMING.lock().await;
    let upstream = scenario::upstream().await;
    let client = Arc::new(common::spawn().await);
    let metrics = format!("127.0.0.1:{}", common::free_port());
    let run = tokio::spawn({
        let (client, url, metrics) = (client.clone(), upstream.url("/todos/1"), metrics.clone());
        async move {
            scenario(
                &client,
                "fault_run_latency_impact_scenario",
                json!({"url": url, "latency": 5, "rps": 20, "duration": "3s", "metrics": metrics}),
            )
            .await
        }
    });
    let mut page = None;
    for _ in 0..40 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        page = scrape(&metrics)
            .await
            .filter(|page| page.contains("fault_faults_applied_total{"));
        if page.is_some() {
            break;
        }
    }
    let page = page.expect("the metrics page while the scenario runs");
    assert!(
        page.contains("# TYPE fault_connections_total counter"),
        "{page}"
    );
    assert!(page.contains("fault=\"latency\""), "{page}");
    let (_, report) = run.await.unwrap();
    assert_eq!(report["run"]["requests"], 60);
    // The page ends with the scenario.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(
        scrape(&metrics).await.is_none(),
        "the metrics page outlived the scenario"
    );
    // An address in use, or no address, is refused before anything starts.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    for (given, expected) in [
        (
            taken.local_addr().unwrap().to_string(),
            "metrics: cannot listen on",
        ),
        ("not-an-address".to_owned(), "metrics: "),
        (
            "10.1.2.3:9464".to_owned(),
            "metrics: 10.1.2.3:9464 is not loopback",
        ),
    ] {
        let message = refusal(
            &client,
            json!({"url": upstream.url("/todos/1"), "latency": 5, "metrics": given}),
        )
        .await;
        assert!(message.starts_with(expected), "{given}: {message}");
    }
}
