//! `fault_run_capacity_scenario` against a real service on 127.0.0.1 whose capacity Little's law gives: a fixed
//! pool of 8 workers, each request holding one for 10 ms of work and then a call to its upstream through the
//! scenario's proxy. Nominally 8 / 10 ms = 800 req/s, and with 10 ms of latency on the upstream path each worker
//! is held 20 ms: 400 req/s. The test judges against the hold the service measured at the search's first (idle)
//! step, since the upstream call through the proxy adds a machine-dependent millisecond or so to both.

use std::{convert::Infallible, net::SocketAddr, sync::Arc, time::Duration};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::{
    Request, Response, StatusCode, body::Incoming, server::conn::http1, service::service_fn,
};
use hyper_util::{
    client::legacy::Client,
    rt::{TokioExecutor, TokioIo},
};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::common;
use crate::scenario_support;

/// Workers of the service: requests it serves at once.
const WORKERS: usize = 8;
/// The work each request does while it holds a worker, before its upstream call.
const WORK: Duration = Duration::from_millis(10);

/// A running pool service; it stops when dropped.
struct PoolService {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for PoolService {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The service: `GET /` takes one of [`WORKERS`] workers (waiting for one when all are busy), works for
/// [`WORK`] (a sleep of the thread, precise to tens of microseconds, not the runtime's millisecond timer), calls
/// `upstream` with a kept-alive client, and answers 200 when the upstream did, 502 when it did not.
async fn pool_service(upstream: String) -> PoolService {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let workers = Arc::new(tokio::sync::Semaphore::new(WORKERS));
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let upstream: hyper::Uri = upstream.parse().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let (workers, client, upstream) = (workers.clone(), client.clone(), upstream.clone());
            tokio::spawn(async move {
                let service = service_fn(move |_req: Request<Incoming>| {
                    let (workers, client, upstream) =
                        (workers.clone(), client.clone(), upstream.clone());
                    async move {
                        let _worker = workers.acquire_owned().await.unwrap();
                        tokio::task::spawn_blocking(|| std::thread::sleep(WORK))
                            .await
                            .unwrap();
                        let answered = async {
                            let response = client.get(upstream).await.ok()?;
                            let status = response.status();
                            response.into_body().collect().await.ok()?;
                            status.is_success().then_some(())
                        }
                        .await;
                        let status = if answered.is_some() {
                            StatusCode::OK
                        } else {
                            StatusCode::BAD_GATEWAY
                        };
                        let mut response = Response::new(Full::new(Bytes::from_static(b"ok")));
                        *response.status_mut() = status;
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    PoolService { addr, task }
}

/// A server whose rate cap the search's highest rate fits.
async fn server() -> common::Client {
    common::spawn_with(common::ServerSpec {
        agent_args: &["--max-scenario-rps", "2000"],
        ..Default::default()
    })
    .await
}

fn within(found: f64, expected: f64, share: f64) -> bool {
    (found - expected).abs() <= expected * share
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_capacity_found_is_littles_law_without_and_with_latency_on_the_upstream() {
    let upstream = scenario_support::upstream().await;
    let proxy_port = common::free_port();
    let service = pool_service(format!("http://127.0.0.1:{proxy_port}/todos/1")).await;
    let client = server().await;
    let result = common::call(
        &client,
        "fault_run_capacity_scenario",
        json!({
            "url": format!("http://{}/", service.addr),
            "proxies": [format!("{proxy_port}={}", upstream.addr)],
            "faults": [{"type": "latency", "latency": 10, "deviation": 0, "side": "server",
                        "direction": "ingress", "per_read_write_op": false}],
            "slos": [{"objective": 95, "threshold_ms": 60}],
            "timeout": 5,
            "start_rps": 100,
            "max_rps": 2000,
            "step_duration": 2,
            "growth": 2,
            "precision": 5,
        }),
    )
    .await
    .expect("tool call");
    let markdown = common::text(&result).to_owned();
    assert!(!common::is_error(&result), "{markdown}");
    eprintln!("{markdown}");
    let report: Value = result
        .structured_content
        .clone()
        .expect("structuredContent");
    assert_eq!(report["schema_version"], 1);

    let without = &report["without_fault"];
    let with = &report["with_fault"];
    let capacity = |side: &Value| side["capacity_rps"].as_f64().expect("a capacity");
    let (before, after) = (capacity(without), capacity(with));
    // Little's law: workers / time each request holds one. The hold is read where no request queues for a
    // worker: the p50 of the first step (100 req/s, under an eighth of the capacity).
    let littles_law = |side: &Value| {
        let idle_p50_ms = side["steps"][0]["p50_ms"].as_f64().expect("a p50");
        WORKERS as f64 / (idle_p50_ms / 1000.0)
    };
    let (expected_before, expected_after) = (littles_law(without), littles_law(with));
    // The nominal figures bound the hold from below: 10 ms of work, then 10 ms more with the fault.
    assert!(
        expected_before <= 800.0 && expected_after <= 400.0,
        "{markdown}"
    );
    assert!(
        within(before, expected_before, 0.15),
        "without the fault: {before} req/s, Little's law {expected_before:.0}\n{markdown}"
    );
    assert!(
        within(after, expected_after, 0.15),
        "with the fault: {after} req/s, Little's law {expected_after:.0}\n{markdown}"
    );
    // The fault about halves the capacity: 10 ms more on a hold of about 11.
    assert!(
        within(after / before, expected_after / expected_before, 0.15),
        "{before} → {after} req/s\n{markdown}"
    );
    // Each side broke above its capacity, close to it: the answer is within the precision of the break.
    for side in [without, with] {
        let broke = side["first_break_rps"].as_f64().unwrap();
        assert!(
            broke > capacity(side) && broke <= capacity(side) * 1.06,
            "{side}"
        );
        assert_eq!(side["at_least"], false);
    }
    // The side with the fault offered nothing at or above the first break without it.
    let first_break = without["first_break_rps"].as_u64().unwrap();
    assert!(
        with["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|step| step["offered_rps"].as_u64().unwrap() < first_break)
    );
    // The cost, in numbers and in words, in every output.
    let cost = &report["cost"];
    assert_eq!(cost["without_fault_rps"].as_f64().unwrap(), before);
    assert_eq!(cost["with_fault_rps"].as_f64().unwrap(), after);
    let summary = cost["summary"].as_str().unwrap();
    assert!(
        summary.starts_with(&format!("capacity {before} → {after} req/s, −")),
        "{summary}"
    );
    assert!(markdown.contains(summary), "{markdown}");
    let image = result
        .content
        .iter()
        .find_map(|block| block.as_image())
        .expect("the chart as an image");
    assert_eq!(image.mime_type, "image/png");
    let alt = image.meta.as_ref().unwrap().0["alt"].as_str().unwrap();
    assert!(alt.contains(summary), "{alt}");
    // Every step is an impact run judged on its own figures: offered, achieved, percentiles, SLO verdicts.
    for step in without["steps"].as_array().unwrap() {
        assert!(
            step["requests"].as_u64().unwrap() >= 2 * step["offered_rps"].as_u64().unwrap() - 2
        );
        assert_eq!(step["slos"].as_array().unwrap().len(), 1);
        assert!(step["p50_ms"].as_f64().unwrap() <= step["p99_ms"].as_f64().unwrap());
    }
    assert!(without["knee_rps"].as_u64().is_some(), "{markdown}");
    assert_eq!(report["faults"][0]["kind"], "latency");
    assert!(report["faults"][0]["applications"].as_u64().unwrap() > 0);
}
