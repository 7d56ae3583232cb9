//! Our own fault proxy (the library `fault run` is built on, in process) in front of the real local embedding
//! server while the index tool runs, and in front of the real local chat model while an LLM tool runs: each
//! fault ends the call within its bound with an error naming the endpoint, what went wrong there and what to
//! do; the server keeps serving; and for the index nothing half-written is left: the next run without the fault
//! ends with exactly the chunks of a fault-free index.
//!
//! Needs the local LLM stack (`FAULT_TEST_EMBED_BASE_URL`, `FAULT_TEST_OPENAI_BASE_URL` and
//! `FAULT_TEST_OPENAI_MODEL` from `bash ../shared/llm/local-llm.sh start`); without it each test is skipped out
//! loud.

use crate::support::common;
use crate::support::indexing;
use crate::support::optional;

use std::{
    collections::HashMap,
    path::Path,
    time::{Duration, Instant},
};

use fault::proxy::{self, ProxyConfig, ProxyHandle, cli::parse_fault_flags};
use indexing::{agent_args, fixture_repo, server_env, small_batch_args};
use serde_json::{Value, json};

/// The bound within which a faulted call must end: the request timeout (10 s) times the tries (1 + 1 retry),
/// backoff and the walk, with room for a loaded machine.
const BOUND: Duration = Duration::from_secs(45);

/// Our fault proxy in front of `upstream`'s port with the faults of `flags` (as `fault run` takes them), and
/// `upstream` with the proxy's port instead.
async fn behind_the_proxy(upstream: &url::Url, flags: &str) -> (ProxyHandle, String) {
    let port = upstream.port_or_known_default().unwrap();
    let proxy = proxy::start(ProxyConfig {
        mappings: vec![format!("0=127.0.0.1:{port}").parse().unwrap()],
        faults: parse_fault_flags(flags).unwrap(),
        seed: Some(1),
        ..Default::default()
    })
    .await
    .unwrap();
    let mut faulted = upstream.clone();
    faulted
        .set_port(Some(proxy.local_addrs()[0].port()))
        .unwrap();
    let faulted = faulted.as_str().trim_end_matches('/').to_owned();
    (proxy, faulted)
}

/// `base` behind our proxy with `flags`, or `base` itself when there are none.
async fn proxied(base: &str, flags: &str) -> (Option<ProxyHandle>, String) {
    if flags.is_empty() {
        return (None, base.to_owned());
    }
    let (proxy, url) = behind_the_proxy(&url::Url::parse(base).unwrap(), flags).await;
    (Some(proxy), url)
}

/// A server whose LLM tools use the chat `model` at `base`, with the test env plus `extra_env`.
async fn chat_server(
    data: &Path,
    base: &str,
    model: &str,
    extra_env: &[(&str, &str)],
) -> common::Client {
    let mut env: HashMap<String, String> = server_env(data);
    env.extend(
        extra_env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    common::spawn_with(common::ServerSpec {
        agent_args: &[
            "--llm-base-url",
            base,
            "--llm-prompt-reasoning-model",
            model,
        ],
        env,
        ..Default::default()
    })
    .await
}

async fn index_on(client: &common::Client, repo: &Path) -> rmcp::model::CallToolResult {
    common::call(
        client,
        "fault_index_source_code",
        json!({"source_dir": repo.display().to_string(), "lang": "python"}),
    )
    .await
    .expect("tool call")
}

/// A server indexing with the embeddings at `embed_base`: with one retry and a request timeout of `faulted`
/// seconds when given, else the suite's generous defaults (the real model on a loaded machine).
async fn server(data: &Path, embed_base: &str, faulted: Option<u64>) -> common::Client {
    let args = agent_args(embed_base, "embedded");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut env: HashMap<String, String> = server_env(data);
    if let Some(timeout_secs) = faulted {
        env.insert("FAULT_LLM_TIMEOUT_SECS".into(), timeout_secs.to_string());
        env.insert("FAULT_LLM_MAX_RETRIES".into(), "1".into());
    }
    common::spawn_with(common::ServerSpec {
        agent_args: &args,
        env,
        ..Default::default()
    })
    .await
}

#[tokio::test]
async fn each_fault_in_front_of_the_embeddings_ends_the_index_clearly_and_loses_nothing() {
    let test = "proxy::dependency_faults::each_fault_in_front_of_the_embeddings_ends_the_index_clearly_and_loses_nothing";
    let Some([embed_base]) =
        optional::env_vars(test, ["FAULT_TEST_EMBED_BASE_URL"], &[optional::LOCAL_LLM])
    else {
        return;
    };
    let upstream = url::Url::parse(&embed_base).unwrap();

    // A fault-free index of the same tree: what every run must end with.
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("faults-demo"));
    let clean_data = tempfile::tempdir().unwrap();
    let clean = server(clean_data.path(), &embed_base, None).await;
    let expected = index_on(&clean, &repo).await;
    assert!(!common::is_error(&expected), "{}", common::text(&expected));
    let expected = expected.structured_content.unwrap()["chunks_total"].clone();
    clean.cancel().await.unwrap();

    // The fault, and what the error must say about it.
    let cases: [(&str, &[&str]); 7] = [
        (
            "--with-http-error --http-error-status-code 503",
            &["HTTP 503", "run again when it is back"],
        ),
        (
            "--with-http-error --http-error-status-code 429",
            &["HTTP 429", "limiting the rate", "wait, then run again"],
        ),
        (
            "--with-http-error --http-error-status-code 500",
            &["HTTP 500", "run again when it is back"],
        ),
        (
            "--with-latency --latency-mean 15000",
            &["did not answer within 3s", "FAULT_LLM_TIMEOUT_SECS"],
        ),
        // The dependency takes the request and its answer never comes back (the responses swallowed; the
        // blackhole's default direction, egress, swallows the requests instead, and an idle server then closes
        // the connection).
        (
            "--with-blackhole --blackhole-direction ingress",
            &["did not answer within 3s", "FAULT_LLM_TIMEOUT_SECS"],
        ),
        (
            "--with-reset --reset-after-bytes 0",
            &["cannot reach", "Connection reset"],
        ),
        (
            "--with-limit-data --limit-data-bytes 100",
            &["connection closed before message completed"],
        ),
    ];
    for (flags, says) in cases {
        let (proxy, faulted) = behind_the_proxy(&upstream, flags).await;

        let data = tempfile::tempdir().unwrap();
        // Every fault but the two stalls acts once the embeddings' answer comes (the reset and the cut too: they
        // act on the answer's first bytes), and the real model on a loaded machine may take longer than the 3 s
        // that keep the stalls short (a stall never answers, however long the wait).
        let stall = flags.contains("latency") || flags.contains("blackhole");
        let timeout_secs: u64 = if stall { 3 } else { 60 };
        let client = server(data.path(), &faulted, Some(timeout_secs)).await;
        let started = Instant::now();
        let result = index_on(&client, &repo).await;
        let took = started.elapsed();
        let message = common::text(&result).to_owned();
        println!("{flags}: {:.1} s: {message}", took.as_secs_f64());
        assert!(common::is_error(&result), "{flags}: {message}");
        // Two tries, the wait between them, and room for the walk.
        let bound = Duration::from_secs(2 * timeout_secs + 25);
        assert!(took < bound, "{flags}: {took:?}");
        // The dependency named by its address, the fault seen, what to do; and that a re-run continues.
        let address = format!("127.0.0.1:{}", proxy.local_addrs()[0].port());
        assert!(message.contains(&address), "{flags}: {message}");
        assert!(
            message.contains("running the index again continues from there"),
            "{flags}: {message}"
        );
        for word in says {
            assert!(message.contains(word), "{flags}: {message}");
        }
        // The server keeps serving.
        let listed = common::call(
            &client,
            "fault_list_function_names",
            json!({"file": repo.join("app/server.py").display().to_string()}),
        )
        .await
        .unwrap();
        assert!(!common::is_error(&listed), "{flags}: {listed:?}");
        client.cancel().await.unwrap();
        proxy.stop().await;

        // Nothing half-written: the next run, without the fault, ends with the fault-free index's chunks.
        let healed = server(data.path(), &embed_base, None).await;
        let result = index_on(&healed, &repo).await;
        assert!(
            !common::is_error(&result),
            "{flags}: {}",
            common::text(&result)
        );
        let summary: Value = result.structured_content.unwrap();
        assert_eq!(summary["chunks_total"], expected, "{flags}: {summary}");
        healed.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn each_fault_in_front_of_the_chat_model_ends_the_llm_tool_clearly() {
    let test =
        "proxy::dependency_faults::each_fault_in_front_of_the_chat_model_ends_the_llm_tool_clearly";
    let Some([chat_base, model]) = optional::env_vars(
        test,
        ["FAULT_TEST_OPENAI_BASE_URL", "FAULT_TEST_OPENAI_MODEL"],
        &[optional::LOCAL_LLM],
    ) else {
        return;
    };
    let _model = optional::LOCAL_CHAT_MODEL.lock().await;
    let upstream = url::Url::parse(&chat_base).unwrap();
    let cases: [(&str, &[&str]); 6] = [
        (
            "--with-http-error --http-error-status-code 503",
            &["HTTP 503", "run again when it is back"],
        ),
        (
            "--with-http-error --http-error-status-code 502 --http-error-retry-after 1",
            &["HTTP 502", "run again when it is back"],
        ),
        (
            "--with-http-error --http-error-status-code 429",
            &["HTTP 429", "wait, then run again"],
        ),
        (
            "--with-blackhole --blackhole-direction ingress",
            &["did not answer within 3s", "FAULT_LLM_TIMEOUT_SECS"],
        ),
        (
            "--with-reset --reset-after-bytes 0",
            &["cannot reach", "Connection reset"],
        ),
        (
            "--with-limit-data --limit-data-bytes 100",
            &["connection closed before message completed"],
        ),
    ];
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("app.py");
    std::fs::write(
        &file,
        "def fetch(url):\n    return requests.get(url).json()\n",
    )
    .unwrap();
    for (flags, says) in cases {
        // Every fault but the blackhole acts once the model's answer comes (the reset too: it cuts the answer's
        // first bytes), and the real model on a loaded machine may take longer than the 3 s that keep the
        // blackhole's stall short.
        let timeout_secs: u64 = if flags.contains("blackhole") { 3 } else { 60 };
        let (proxy, faulted) = behind_the_proxy(&upstream, flags).await;
        let data = tempfile::tempdir().unwrap();
        let client = chat_server(
            data.path(),
            &faulted,
            &model,
            &[
                // The HTTP error fault replaces the model's answer when it comes: a short answer keeps that quick.
                ("FAULT_LLM_MAX_TOKENS", "16"),
                ("FAULT_LLM_TIMEOUT_SECS", &timeout_secs.to_string()),
                ("FAULT_LLM_MAX_RETRIES", "1"),
            ],
        )
        .await;
        let started = Instant::now();
        let result = common::call(
            &client,
            "fault_score_reliability",
            json!({"snippet": "def fetch(url):\n    return requests.get(url).json()", "lang": "python"}),
        )
        .await
        .unwrap();
        let took = started.elapsed();
        let message = common::text(&result).to_owned();
        println!("{flags}: {:.1} s: {message}", took.as_secs_f64());
        assert!(common::is_error(&result), "{flags}: {message}");
        // Two tries, the wait between them, and room for the server's start.
        let bound = Duration::from_secs(2 * timeout_secs + 25);
        assert!(took < bound, "{flags}: {took:?}");
        let address = format!("127.0.0.1:{}", proxy.local_addrs()[0].port());
        assert!(message.contains(&address), "{flags}: {message}");
        for word in says {
            assert!(message.contains(word), "{flags}: {message}");
        }
        // The server keeps serving.
        let listed = common::call(
            &client,
            "fault_list_function_names",
            json!({"file": file.display().to_string()}),
        )
        .await
        .unwrap();
        assert!(!common::is_error(&listed), "{flags}: {listed:?}");
        client.cancel().await.unwrap();
        proxy.stop().await;
    }
}

/// The (path, first line) of the top 5 chunks for each query.
async fn top_5(data: &Path, llm: &fault::llm::LlmSettings) -> Vec<Vec<(String, u32)>> {
    let mut found = Vec::new();
    for query in [
        "retry the request",
        "open a database connection",
        "histogram of latencies",
    ] {
        let hits = fault::index::retrieve_context_in(data, llm, None, query, 5)
            .await
            .unwrap();
        found.push(
            hits.iter()
                .map(|h| {
                    let name = h.path.file_name().unwrap().to_string_lossy().into_owned();
                    (name, h.start_line)
                })
                .collect(),
        );
    }
    found
}

#[tokio::test]
async fn each_fault_in_front_of_qdrant_ends_the_index_clearly_and_the_rerun_equals_a_fault_free_index()
 {
    let test = "proxy::dependency_faults::each_fault_in_front_of_qdrant_ends_the_index_clearly_and_the_rerun_equals_a_fault_free_index";
    let Some([embed_base, qdrant_url]) = optional::env_vars(
        test,
        ["FAULT_TEST_EMBED_BASE_URL", "FAULT_TEST_QDRANT_URL"],
        &[optional::LOCAL_LLM, optional::QDRANT],
    ) else {
        return;
    };
    let qdrant = url::Url::parse(&qdrant_url).unwrap();
    let llm = indexing::llm_settings_at(&embed_base);
    // Several batches (SMALL_BATCH chunks each), so that a cut can come after some were stored.
    let work = tempfile::tempdir().unwrap();
    let tree = |name: &str| {
        let repo = fixture_repo(&work.path().join(name));
        indexing::generated_files(&repo.join("stages"), 6, 5);
        repo
    };

    // The fault-free index, in the embedded store: what every faulted-then-healed index must equal.
    let reference_data = tempfile::tempdir().unwrap();
    let reference_repo = tree("reference");
    let reference_started = Instant::now();
    let reference = indexing::index_with(
        reference_data.path(),
        &small_batch_args(&embed_base, "embedded"),
        &[],
        &reference_repo,
    )
    .await;
    // A cut after some batches comes after their embedding too, which a loaded machine slows: such a call
    // must end within the fault-free run's time plus the bound.
    let bound = reference_started.elapsed() + BOUND;
    let reference_store = indexing::embedded_store(&reference);
    let (reference_chunks, _) = indexing::stored_chunks(&reference_store).await;
    let reference_top = top_5(reference_data.path(), &llm).await;
    assert!(
        reference_chunks.len() > 2 * indexing::SMALL_BATCH,
        "{}",
        reference_chunks.len()
    );

    // The fault (on the gRPC connection to Qdrant), and what the error must say about it.
    let cases: [(&str, &[&str]); 4] = [
        (
            "--with-blackhole --blackhole-direction ingress",
            &["did not answer within 3s", "--qdrant-timeout"],
        ),
        (
            "--with-latency --latency-mean 5000",
            &["did not answer within 3s", "--qdrant-timeout"],
        ),
        (
            "--with-reset --reset-after-bytes 0",
            &["lost the connection"],
        ),
        // The request flow cut within a batch (a batch of SMALL_BATCH points is about 30,000 bytes).
        (
            "--with-limit-data --limit-data-bytes 20000 --limit-data-direction egress",
            &[
                "lost the connection",
                "running the index again continues from there",
            ],
        ),
    ];
    for (case, (flags, says)) in cases.into_iter().enumerate() {
        let repo = tree(&format!("qdrant-case-{case}"));
        let (proxy, faulted) = behind_the_proxy(&qdrant, flags).await;
        let data = tempfile::tempdir().unwrap();
        let mut args = small_batch_args(&embed_base, "qdrant");
        args.extend([
            "--qdrant-url".into(),
            faulted.clone(),
            "--qdrant-timeout".into(),
            "3s".into(),
        ]);
        let started = Instant::now();
        let result = indexing::index_call(data.path(), &args, &[], &repo).await;
        let took = started.elapsed();
        let message = common::text(&result).to_owned();
        println!(
            "{flags}: {:.1} s: {message} ({:?})",
            took.as_secs_f64(),
            proxy.stats()
        );
        assert!(common::is_error(&result), "{flags}: {message}");
        assert!(took < bound, "{flags}: {took:?} (bound {bound:?})");
        let address = format!("127.0.0.1:{}", proxy.local_addrs()[0].port());
        assert!(message.contains(&address), "{flags}: {message}");
        assert!(message.contains("Qdrant"), "{flags}: {message}");
        for word in says {
            assert!(message.contains(word), "{flags}: {message}");
        }
        proxy.stop().await;

        // The re-run straight to Qdrant continues and ends with the fault-free index: the same chunks, each once,
        // and the same answers to queries.
        let mut args = small_batch_args(&embed_base, "qdrant");
        args.extend(["--qdrant-url".into(), qdrant_url.clone()]);
        let healed = indexing::index_with(data.path(), &args, &[], &repo).await;
        println!(
            "{flags}: re-run embedded {} chunks",
            healed["chunks_embedded"]
        );
        let store = indexing::qdrant_store(&qdrant_url, healed["collection"].as_str().unwrap());
        let (chunks, twice) = indexing::stored_chunks(&store).await;
        assert_eq!(twice, 0, "{flags}: chunks stored twice");
        assert_eq!(chunks, reference_chunks, "{flags}");
        assert_eq!(top_5(data.path(), &llm).await, reference_top, "{flags}");
        // Each case's tree has a collection of its own: gone with the case.
        indexing::drop_qdrant_collection(&qdrant_url, healed["collection"].as_str().unwrap()).await;
    }
}

/// How long the 429 storm of the rate-limit test lasts, and the `Retry-After` its answers carry.
const STORM: Duration = Duration::from_secs(3);
const STORM_RETRY_AFTER_SECS: u64 = 1;

#[tokio::test]
async fn a_429_storm_with_retry_after_is_waited_out_with_the_fewest_requests() {
    let test = "proxy::dependency_faults::a_429_storm_with_retry_after_is_waited_out_with_the_fewest_requests";
    let Some([embed_base]) =
        optional::env_vars(test, ["FAULT_TEST_EMBED_BASE_URL"], &[optional::LOCAL_LLM])
    else {
        return;
    };
    let upstream = url::Url::parse(&embed_base).unwrap();
    let upstream_port = upstream.port_or_known_default().unwrap();
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("storm"));

    // The storm: our proxy answers every request with a 429 and `Retry-After: 1` in place of an upstream that
    // answers at once (the proxy waits for an answer to replace, and the real model takes its time), which
    // counts the requests. After STORM the real embeddings answer on the same port.
    let instant = crate::support::llm_fakes::FakeServer::start(|_, _| {
        crate::support::llm_fakes::Reply::json(200, json!({"data": []}))
    })
    .await;
    let storm_upstream = url::Url::parse(&format!("{}/v1", instant.url())).unwrap();
    let (storm, _) = behind_the_proxy(
        &storm_upstream,
        &format!(
            "--with-http-error --http-error-status-code 429 --http-error-retry-after {STORM_RETRY_AFTER_SECS}"
        ),
    )
    .await;
    let port = storm.local_addrs()[0].port();
    let mut faulted = upstream.clone();
    faulted.set_port(Some(port)).unwrap();
    let faulted = faulted.as_str().trim_end_matches('/').to_owned();
    let data = tempfile::tempdir().unwrap();
    let args = agent_args(&faulted, "embedded");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut env: HashMap<String, String> = server_env(data.path());
    env.insert("FAULT_LLM_MAX_RETRIES".into(), "10".into());
    let client = common::spawn_with(common::ServerSpec {
        agent_args: &args,
        env,
        ..Default::default()
    })
    .await;
    let started = Instant::now();
    let (result, healthy) = tokio::join!(index_on(&client, &repo), async {
        tokio::time::sleep(STORM).await;
        storm.stop().await;
        proxy::start(ProxyConfig {
            mappings: vec![format!("{port}=127.0.0.1:{upstream_port}").parse().unwrap()],
            ..Default::default()
        })
        .await
        .unwrap()
    });
    let refused = instant.requests().len() as u64;
    let took = started.elapsed();
    let message = common::text(&result).to_owned();
    assert!(!common::is_error(&result), "{message}");
    // The fewest requests a client honouring `Retry-After` can send into the storm: one per wait.
    let fewest = STORM.as_secs() / STORM_RETRY_AFTER_SECS;
    println!(
        "429 storm of {} s with Retry-After: {STORM_RETRY_AFTER_SECS}: {refused} requests refused (fewest honouring \
         it: {fewest}, ratio {:.2}); the index ended after {:.1} s",
        STORM.as_secs(),
        refused as f64 / fewest as f64,
        took.as_secs_f64()
    );
    // Each wait is the server's second, not the 0.25 s first backoff: no more than one request per second, and
    // not fewer than the storm forces.
    assert!(
        (fewest..=fewest + 1).contains(&refused),
        "{refused} refused"
    );
    assert!(took >= STORM, "{took:?}");
    client.cancel().await.unwrap();
    healthy.stop().await;
}

#[tokio::test]
async fn a_cancelled_llm_call_closes_its_connection_to_the_model_at_once() {
    let test =
        "proxy::dependency_faults::a_cancelled_llm_call_closes_its_connection_to_the_model_at_once";
    let Some([chat_base, model]) = optional::env_vars(
        test,
        ["FAULT_TEST_OPENAI_BASE_URL", "FAULT_TEST_OPENAI_MODEL"],
        &[optional::LOCAL_LLM],
    ) else {
        return;
    };
    let _model = optional::LOCAL_CHAT_MODEL.lock().await;
    use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
    use rmcp::service::PeerRequestOptions;

    // A relay in front of the model notes when our server ends its request (the end of what it sends), and
    // when the model's server then closes its side.
    let upstream = url::Url::parse(&chat_base).unwrap();
    let model_addr = format!(
        "{}:{}",
        upstream.host_str().unwrap(),
        upstream.port_or_known_default().unwrap()
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut relayed = upstream.clone();
    relayed
        .set_port(Some(listener.local_addr().unwrap().port()))
        .unwrap();
    let relayed = relayed.as_str().trim_end_matches('/').to_owned();
    let (sent_tx, mut sent_rx) = tokio::sync::watch::channel(false);
    let relay = tokio::spawn(async move {
        let (client, _) = listener.accept().await.unwrap();
        let server = tokio::net::TcpStream::connect(model_addr).await.unwrap();
        let (mut client_read, mut client_write) = client.into_split();
        let (mut server_read, mut server_write) = server.into_split();
        let to_model = async {
            let mut buffer = [0u8; 8192];
            loop {
                match tokio::io::AsyncReadExt::read(&mut client_read, &mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let _ = sent_tx.send(true);
                        if tokio::io::AsyncWriteExt::write_all(&mut server_write, &buffer[..n])
                            .await
                            .is_err()
                        {
                            break;
                        }
                    }
                }
            }
            let closed_by_us = Instant::now();
            let _ = tokio::io::AsyncWriteExt::shutdown(&mut server_write).await;
            closed_by_us
        };
        let from_model = async {
            let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
            Instant::now()
        };
        tokio::join!(to_model, from_model)
    });
    let data = tempfile::tempdir().unwrap();
    let client = chat_server(
        data.path(),
        &relayed,
        &model,
        &[("FAULT_LLM_TIMEOUT_SECS", "120")],
    )
    .await;
    let arguments = json!({"snippet": "def fetch(url):\n    return requests.get(url).json()", "lang": "python"});
    let request = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("fault_score_reliability")
            .with_arguments(arguments.as_object().unwrap().clone()),
    ));
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    // Cancelled once the request has reached the model (the local model takes seconds to answer).
    tokio::time::timeout(Duration::from_secs(30), sent_rx.wait_for(|sent| *sent))
        .await
        .expect("the request never reached the model")
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!relay.is_finished(), "the model answered already");
    let cancelled = Instant::now();
    handle
        .cancel(Some("the user moved on".into()))
        .await
        .unwrap();
    let (closed_by_us, closed_by_model) = tokio::time::timeout(Duration::from_secs(10), relay)
        .await
        .expect("the connection to the model is still open 10 s after the cancel")
        .unwrap();
    let ours = closed_by_us.saturating_duration_since(cancelled);
    let theirs = closed_by_model.saturating_duration_since(cancelled);
    println!(
        "cancel to our request's end: {:.1} ms; to the model's server closing its side: {:.1} ms",
        ours.as_secs_f64() * 1e3,
        theirs.as_secs_f64() * 1e3
    );
    assert!(ours < Duration::from_secs(2), "{ours:?}");
    // The server still serves.
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "fault_score_reliability"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn faults_edits_and_reruns_in_sequence_end_as_a_fault_free_index_of_the_final_tree() {
    let test = "proxy::dependency_faults::faults_edits_and_reruns_in_sequence_end_as_a_fault_free_index_of_the_final_tree";
    let Some([embed_base, qdrant_url]) = optional::env_vars(
        test,
        ["FAULT_TEST_EMBED_BASE_URL", "FAULT_TEST_QDRANT_URL"],
        &[optional::LOCAL_LLM, optional::QDRANT],
    ) else {
        return;
    };
    let llm = indexing::llm_settings_at(&embed_base);
    let work = tempfile::tempdir().unwrap();
    let repo = fixture_repo(&work.path().join("sequence"));
    indexing::generated_files(&repo.join("stages"), 6, 5);
    let data = tempfile::tempdir().unwrap();
    // One run: the embeddings and Qdrant each behind our proxy with `embed_flags` / `qdrant_flags` ("" for none).
    let run = |embed_flags: &'static str, qdrant_flags: &'static str| {
        let (embed_base, qdrant_url, repo, data) = (
            embed_base.clone(),
            qdrant_url.clone(),
            repo.clone(),
            data.path().to_owned(),
        );
        async move {
            // A side without faults goes straight to its server: the project then records Qdrant's own address.
            let (embed_proxy, embed) = proxied(&embed_base, embed_flags).await;
            let (qdrant_proxy, qdrant) = proxied(&qdrant_url, qdrant_flags).await;
            let mut args = small_batch_args(&embed, "qdrant");
            args.extend([
                "--qdrant-url".into(),
                qdrant,
                "--qdrant-timeout".into(),
                "3s".into(),
            ]);
            let result = indexing::index_call(&data, &args, &[], &repo).await;
            for proxy in [embed_proxy, qdrant_proxy].into_iter().flatten() {
                proxy.stop().await;
            }
            result
        }
    };
    let edit = |path: &str, text: &str| std::fs::write(repo.join(path), text).unwrap();

    // 1. Qdrant's requests cut after 20,000 bytes (a batch of SMALL_BATCH points is about 30,000): a write
    // fails.
    let first = run(
        "",
        "--with-limit-data --limit-data-bytes 20000 --limit-data-direction egress",
    )
    .await;
    println!("1: {}", common::text(&first));
    assert!(common::is_error(&first));
    // Edits: bodies changed, a file gone, a file new.
    edit(
        "stages/stage_000.py",
        "def step_0_0(request):\n    return request.post(\"changed\")\n\n\ndef step_0_1(request):\n    return None\n",
    );
    std::fs::remove_file(repo.join("stages/stage_001.py")).unwrap();
    edit(
        "stages/extra.py",
        "def extra_step(request):\n    return request.headers\n",
    );
    // 2. The embeddings' answers cut after 200,000 bytes (an answer of SMALL_BATCH vectors is about
    // 130,000): the second answer is lost.
    let second = run("--with-limit-data --limit-data-bytes 200000", "").await;
    println!("2: {}", common::text(&second));
    assert!(common::is_error(&second));
    // An edit between faulted runs: a function renamed.
    edit(
        "stages/stage_002.py",
        "def renamed_step(request):\n    return request.get(\"renamed\")\n",
    );
    // 3. Qdrant never answers: the run ends at the timeout.
    let third = run("", "--with-blackhole --blackhole-direction ingress").await;
    println!("3: {}", common::text(&third));
    assert!(common::is_error(&third));
    // 4. Everything answers.
    let last = run("", "").await;
    assert!(!common::is_error(&last), "{}", common::text(&last));
    let summary = last.structured_content.unwrap();
    println!(
        "4: embedded {} chunks, {} in all",
        summary["chunks_embedded"], summary["chunks_total"]
    );

    // A fault-free index of the final tree, in the embedded store.
    let reference_data = tempfile::tempdir().unwrap();
    let reference = indexing::index_with(
        reference_data.path(),
        &small_batch_args(&embed_base, "embedded"),
        &[],
        &repo,
    )
    .await;
    let reference_store = indexing::embedded_store(&reference);
    let store = indexing::qdrant_store(&qdrant_url, summary["collection"].as_str().unwrap());
    let (chunks, twice) = indexing::stored_chunks(&store).await;
    let (expected, _) = indexing::stored_chunks(&reference_store).await;
    assert_eq!(twice, 0, "chunks stored twice");
    assert_eq!(
        chunks, expected,
        "the store differs from a fault-free index of the final tree"
    );
    assert_eq!(
        top_5(data.path(), &llm).await,
        top_5(reference_data.path(), &llm).await
    );
    indexing::drop_qdrant_collection(&qdrant_url, summary["collection"].as_str().unwrap()).await;
}
