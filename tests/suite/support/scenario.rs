//! Real HTTP servers on 127.0.0.1 for the load and scenario tests: an upstream and a demo app that calls it.
#![allow(dead_code)]

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper::{
    Request, Response, StatusCode, body::Incoming, server::conn::http1, service::service_fn,
};
use hyper_util::{
    client::legacy::Client,
    rt::{TokioExecutor, TokioIo},
};
use tokio::net::TcpListener;

/// Taken by the tests that measure time through a scenario, so that they do not measure each other: alone
/// ([`super::locks::TestLock::lock`]) by those whose bounds are milliseconds, shared
/// ([`super::locks::TestLock::share`]) by those whose bounds are seconds wide and whose load is light (a few
/// scenarios of 20 requests a second), which run beside each other but never beside a measurement in
/// milliseconds.
pub static TIMING: super::locks::TestLock = super::locks::TestLock::new("timing");

pub const TODO: &str = r#"{"userId":1,"id":1,"title":"delectus aut autem","completed":false}"#;

/// The byte at `i` of a `/bytes/N` body: a pattern whose corruption is detectable.
pub fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

/// A running server; it stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    pub requests: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn served(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Body = Full<Bytes>;

pub async fn serve<F, Fut>(handler: F) -> Server
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Response<Body>> + Send + 'static,
{
    serve_with(handler, None).await
}

/// The test certificate (CN fault test CA; SAN localhost, 127.0.0.1) as a TLS acceptor.
pub fn tls_acceptor() -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
    let dir = tls_fixtures();
    let certs = vec![CertificateDer::from_pem_file(dir.join("server.pem")).unwrap()];
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

pub fn tls_fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tls")
}

async fn serve_with<F, Fut>(handler: F, tls: Option<tokio_rustls::TlsAcceptor>) -> Server
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Response<Body>> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests = Arc::new(AtomicU64::new(0));
    let counter = requests.clone();
    let task = tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let handler = handler.clone();
            let counter = counter.clone();
            let tls = tls.clone();
            connections.spawn(async move {
                let service = service_fn(move |req| {
                    counter.fetch_add(1, Ordering::Relaxed);
                    let handler = handler.clone();
                    async move { Ok::<_, Infallible>(handler(req).await) }
                });
                match tls {
                    None => {
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    }
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(stream).await {
                            let _ = http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                }
            });
        }
    });
    Server {
        addr,
        requests,
        task,
    }
}

fn respond(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    response
}

/// The upstream: `/todos/1` (JSON), `/bytes/N` (N pattern bytes), `/delay/MS` (answers after MS ms),
/// `/status/CODE`, `/hang` (never answers), anything else 404.
pub async fn upstream() -> Server {
    serve(routes).await
}

/// The same upstream over TLS with the test certificate.
pub async fn upstream_tls() -> Server {
    serve_with(routes, Some(tls_acceptor())).await
}

async fn routes(req: Request<Incoming>) -> Response<Body> {
    {
        let path = req.uri().path().to_owned();
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match parts.as_slice() {
            ["todos", "1"] => {
                let mut r = respond(StatusCode::OK, TODO);
                r.headers_mut()
                    .insert("content-type", "application/json".parse().unwrap());
                r
            }
            ["bytes", n] => {
                let n: usize = n.parse().unwrap_or(0);
                respond(StatusCode::OK, (0..n).map(pattern).collect::<Vec<u8>>())
            }
            ["delay", ms] => {
                let ms: u64 = ms.parse().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                respond(StatusCode::OK, "ok")
            }
            ["status", code] => respond(
                StatusCode::from_u16(code.parse().unwrap_or(500)).unwrap(),
                "status",
            ),
            ["hang"] => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                respond(StatusCode::OK, "late")
            }
            _ => respond(StatusCode::NOT_FOUND, "not found"),
        }
    }
}

/// The demo app: `GET /api/<rest>` calls `<upstream_base>/<rest>` with a kept-alive client (as a real service
/// does), checks `/bytes/N` bodies byte by byte, and answers with the upstream's status and a short summary
/// ("ok N bytes"); a corrupt body gives 502, an unreachable upstream 502 too.
pub async fn demo_app(upstream_base: String) -> Server {
    demo_app_with(upstream_base, true).await
}

/// The demo app opening a new upstream connection for every call (as `httpx.get` does).
pub async fn demo_app_new_connection_per_call(upstream_base: String) -> Server {
    demo_app_with(upstream_base, false).await
}

async fn demo_app_with(upstream_base: String, keep_alive: bool) -> Server {
    let mut builder = Client::builder(TokioExecutor::new());
    if !keep_alive {
        builder.pool_max_idle_per_host(0);
    }
    let client: Client<_, Empty<Bytes>> = builder.build_http();
    let upstream_base = Arc::new(upstream_base);
    serve(move |req: Request<Incoming>| {
        let client = client.clone();
        let upstream_base = upstream_base.clone();
        async move {
            let rest = req
                .uri()
                .path()
                .strip_prefix("/api")
                .unwrap_or("/todos/1")
                .to_owned();
            let uri: hyper::Uri = match format!("{upstream_base}{rest}").parse() {
                Ok(uri) => uri,
                Err(_) => return respond(StatusCode::BAD_REQUEST, "bad path"),
            };
            let call = async {
                let response = client.get(uri).await.map_err(|e| e.to_string())?;
                let status = response.status();
                let body = response
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| e.to_string())?
                    .to_bytes();
                Ok::<_, String>((status, body))
            };
            match tokio::time::timeout(Duration::from_secs(30), call).await {
                Ok(Ok((status, body))) => {
                    if rest.starts_with("/bytes/")
                        && status.is_success()
                        && !body.iter().enumerate().all(|(i, b)| *b == pattern(i))
                    {
                        return respond(StatusCode::BAD_GATEWAY, "corrupt body");
                    }
                    respond(status, format!("ok {} bytes", body.len()))
                }
                Ok(Err(e)) => respond(StatusCode::BAD_GATEWAY, format!("upstream: {e}")),
                Err(_) => respond(StatusCode::GATEWAY_TIMEOUT, "upstream timeout"),
            }
        }
    })
    .await
}

/// What a [`guarded_app`] does once a call to its upstream has failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// Answers 503 until this long after its last upstream failure, as a circuit breaker or a load balancer
    /// with a cool-down does; it still calls the upstream for every request, and each failure starts the
    /// hold-down again.
    HoldDown(Duration),
    /// Answers from its upstream again at once.
    Recover,
    /// Answers 503 for good, without calling its upstream again.
    Never,
}

/// A service that calls its upstream for every request: `GET /` calls `<upstream_base>/todos/1` with a
/// kept-alive client and gives up after `upstream_timeout`. It answers 200 when the upstream answered in time
/// with a status below 500, 503 when it did not (a failure), and after a failure as `after` says.
pub async fn guarded_app(
    upstream_base: String,
    upstream_timeout: Duration,
    after: AfterFailure,
) -> Server {
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let upstream: Arc<hyper::Uri> = Arc::new(
        format!("{upstream_base}/todos/1")
            .parse()
            .expect("an upstream URL"),
    );
    let last_failure: Arc<std::sync::Mutex<Option<tokio::time::Instant>>> = Arc::default();
    serve(move |_req: Request<Incoming>| {
        let client = client.clone();
        let upstream = upstream.clone();
        let last_failure = last_failure.clone();
        async move {
            let failed_before = *last_failure.lock().unwrap();
            if after == AfterFailure::Never && failed_before.is_some() {
                return respond(StatusCode::SERVICE_UNAVAILABLE, "down for good");
            }
            let call = async {
                let response = client
                    .get((*upstream).clone())
                    .await
                    .map_err(|e| e.to_string())?;
                let status = response.status();
                response
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>(status)
            };
            let answered = matches!(
                tokio::time::timeout(upstream_timeout, call).await,
                Ok(Ok(status)) if status.as_u16() < 500
            );
            let now = tokio::time::Instant::now();
            if !answered {
                *last_failure.lock().unwrap() = Some(now);
                return respond(StatusCode::SERVICE_UNAVAILABLE, "upstream failed");
            }
            let holding = match (after, *last_failure.lock().unwrap()) {
                (AfterFailure::HoldDown(hold), Some(failed)) => now < failed + hold,
                _ => false,
            };
            if holding {
                respond(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "holding down after a failure",
                )
            } else {
                respond(StatusCode::OK, "ok")
            }
        }
    })
    .await
}

/// Runs a load plan to its end, with no cancellation and no one watching progress.
pub async fn run_load(plan: &fault::load::LoadPlan) -> fault::load::LoadReport {
    fault::load::run(
        plan,
        &tokio_util::sync::CancellationToken::new(),
        Arc::new(fault::load::LoadProgress::default()),
    )
    .await
    .expect("load run")
}
