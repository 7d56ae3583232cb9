//! The load generator's HTTP/1.1 client against a scripted server on 127.0.0.1: every way a response can
//! end (length, chunks with extensions and trailers, connection close, no body), interim responses,
//! keep-alive decisions, a server that drops idle connections, malformed answers, and the request bytes
//! the generator sends. Each test runs well under a second of load.

use crate::support::scenario;

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use fault::load::{LoadPlan, LoadReport, Mix, Pace, Target};
use scenario::run_load;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

/// A server answering each request with the bytes `script` gives for its request line, then closing the
/// connection when told to.
struct Scripted {
    port: u16,
    connections: Arc<AtomicU64>,
    requests: Arc<Mutex<Vec<Vec<u8>>>>,
}

/// What to send back, and whether to close the connection after it.
type Script = fn(&str) -> (Vec<u8>, bool);

async fn scripted(script: Script) -> Scripted {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicU64::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (count, seen) = (connections.clone(), requests.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(serve(stream, script, seen.clone()));
        }
    });
    Scripted {
        port,
        connections,
        requests,
    }
}

async fn serve(mut stream: TcpStream, script: Script, seen: Arc<Mutex<Vec<Vec<u8>>>>) {
    let mut pending = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        // One request: head, then a body of its content-length.
        let head_end = loop {
            if let Some(i) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => pending.extend_from_slice(&buf[..n]),
            }
        };
        let head = String::from_utf8_lossy(&pending[..head_end]).to_string();
        let body_length: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().to_owned())
            })
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        while pending.len() < head_end + body_length {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => pending.extend_from_slice(&buf[..n]),
            }
        }
        let request: Vec<u8> = pending.drain(..head_end + body_length).collect();
        seen.lock().unwrap().push(request);
        let line = head.lines().next().unwrap_or_default().to_owned();
        let (answer, close) = script(&line);
        if stream.write_all(&answer).await.is_err() {
            return;
        }
        if close {
            return;
        }
    }
}

fn plan(target: Target, clients: u32, rps: u32, duration_ms: u64) -> LoadPlan {
    LoadPlan {
        mix: Mix::single(target),
        connect_to: None,
        proxy_originates_tls: false,
        num_clients: clients,
        pace: Pace::Open { rps },
        duration: Duration::from_millis(duration_ms),
        timeout: Duration::from_millis(1000),
        max_in_flight: None,
    }
}

fn get(server: &Scripted, path: &str) -> Target {
    Target::parse(
        &format!("http://127.0.0.1:{}{path}", server.port),
        "GET",
        &[],
        "",
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_bodies_with_extensions_and_trailers_keep_the_connection() {
    let server = scripted(|_| {
        (
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
              5\r\nhello\r\n6;name=value\r\n world\r\n0\r\nx-checksum: 1\r\n\r\n"
                .to_vec(),
            false,
        )
    })
    .await;
    // One request in flight at a time: on a busy machine, a request due while the previous one is still out
    // is not sent (counted apart) rather than opening a second connection.
    let one_at_a_time = LoadPlan {
        max_in_flight: Some(1),
        ..plan(get(&server, "/"), 1, 50, 400)
    };
    let report = run_load(&one_at_a_time).await;
    let sent = report.samples.success;
    assert_eq!(sent + report.samples.not_started, 20);
    assert!(sent >= 10, "{sent} of 20 sent");
    assert_eq!(report.samples.body_bytes, sent * 11);
    assert_eq!(server.connections.load(Ordering::Relaxed), 1);
    assert_eq!(report.connections_opened, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_close_and_bodies_ending_at_close_open_a_new_connection_each_time() {
    let server = scripted(|line| {
        if line.contains("/http10") {
            (b"HTTP/1.0 200 OK\r\n\r\nuntil the end".to_vec(), true)
        } else {
            (
                b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 3\r\n\r\nabc".to_vec(),
                true,
            )
        }
    })
    .await;
    let report = run_load(&plan(get(&server, "/close"), 1, 50, 200)).await;
    assert_eq!(report.samples.success, 10);
    assert_eq!(report.samples.body_bytes, 30);
    assert_eq!(report.connections_opened, 10);

    let report = run_load(&plan(get(&server, "/http10"), 1, 50, 200)).await;
    assert_eq!(report.samples.success, 10);
    assert_eq!(report.samples.body_bytes, 10 * "until the end".len() as u64);
    assert_eq!(report.connections_opened, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interim_responses_are_skipped_and_bodyless_answers_end_at_the_head() {
    let server = scripted(|line| {
        let answer: &[u8] = if line.starts_with("HEAD") {
            // A HEAD answer announces a length but carries no body.
            b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n"
        } else if line.contains("/no-content") {
            b"HTTP/1.1 204 No Content\r\n\r\n"
        } else if line.contains("/upgrade") {
            b"HTTP/1.1 101 Switching Protocols\r\nupgrade: other\r\nconnection: upgrade\r\n\r\n"
        } else {
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n\
              HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\nok"
        };
        (answer.to_vec(), false)
    })
    .await;
    let url = format!("http://127.0.0.1:{}/", server.port);
    let head = Target::parse(&url, "HEAD", &[], "").unwrap();
    // One request in flight at a time, so that the connection is reused whenever the framing is right (on a busy
    // machine a request due while the previous one is still out is not sent, rather than opening another).
    let one_at_a_time = |target| LoadPlan {
        max_in_flight: Some(1),
        ..plan(target, 1, 50, 200)
    };
    let kept_alive = |report: &LoadReport, body_per_answer: u64| {
        let answered = report.samples.success;
        assert_eq!(answered + report.samples.not_started, 10);
        assert!(answered >= 5, "{answered} of 10 sent");
        assert_eq!(report.samples.transport_errors, 0);
        assert_eq!(report.samples.body_bytes, answered * body_per_answer);
        assert_eq!(report.connections_opened, 1);
    };
    kept_alive(&run_load(&one_at_a_time(head)).await, 0);
    kept_alive(
        &run_load(&one_at_a_time(get(&server, "/no-content"))).await,
        0,
    );

    // After 101 the connection speaks another protocol: each request gets a fresh one.
    let report = run_load(&plan(get(&server, "/upgrade"), 1, 50, 200)).await;
    assert_eq!(report.samples.success, 10);
    assert_eq!(report.connections_opened, 10);

    kept_alive(&run_load(&one_at_a_time(get(&server, "/created"))).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_closed_by_the_server_is_retried_on_a_fresh_one() {
    // Keep-alive announced, but the server closes after every answer, as one with a short idle timeout.
    let server = scripted(|_| {
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_vec(),
            true,
        )
    })
    .await;
    let report = run_load(&plan(get(&server, "/"), 1, 20, 500)).await;
    assert_eq!(
        report.samples.success, 10,
        "{:?}",
        report.samples.transport_error_examples
    );
    assert_eq!(report.samples.transport_errors, 0);
    assert_eq!(server.requests.lock().unwrap().len(), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_truncated_answers_are_transport_errors() {
    let server = scripted(|line| {
        if line.contains("/garbage") {
            (b"not http at all\r\n\r\n".to_vec(), false)
        } else if line.contains("/bad-length") {
            (
                b"HTTP/1.1 200 OK\r\ncontent-length: many\r\n\r\n".to_vec(),
                false,
            )
        } else {
            // Promises 100 bytes, sends 5, closes.
            (
                b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nshort".to_vec(),
                true,
            )
        }
    })
    .await;
    for (path, expected) in [
        ("/garbage", "invalid HTTP response"),
        ("/bad-length", "content-length 'many' is not a number"),
        ("/truncated", "closed before the response was complete"),
    ] {
        let report = run_load(&plan(get(&server, path), 1, 20, 250)).await;
        let samples = &report.samples;
        assert_eq!(samples.transport_errors, 5, "{path}");
        assert_eq!(samples.success, 0, "{path}");
        assert!(
            samples
                .transport_error_examples
                .iter()
                .any(|e| e.contains(expected)),
            "{path}: {:?}",
            samples.transport_error_examples
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_carries_host_user_headers_and_a_framed_body() {
    let server = scripted(|_| {
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".to_vec(),
            false,
        )
    })
    .await;
    let url = format!("http://127.0.0.1:{}/orders?id=7", server.port);
    let headers = vec![
        ("x-trace".to_owned(), "abc".to_owned()),
        // Ours frames the body; a user's length must not contradict it.
        ("content-length".to_owned(), "999".to_owned()),
    ];
    let target = Target::parse(&url, "post", &headers, "{\"qty\":2}").unwrap();
    let report = run_load(&plan(target, 1, 20, 100)).await;
    assert_eq!(report.samples.success, 2);
    let requests = server.requests.lock().unwrap();
    let request = String::from_utf8_lossy(&requests[0]).to_string();
    let expected_host = format!("host: 127.0.0.1:{}\r\n", server.port);
    assert!(
        request.starts_with("POST /orders?id=7 HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(request.contains(&expected_host), "{request}");
    assert!(request.contains("x-trace: abc\r\n"), "{request}");
    assert!(request.contains("content-length: 9\r\n"), "{request}");
    assert!(!request.contains("999"), "{request}");
    assert!(request.ends_with("\r\n\r\n{\"qty\":2}"), "{request}");
}
