//! `fault run` as a user runs it: the built binary, a real upstream on 127.0.0.1. ~2 s.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;

/// Answers every request line block with a fixed HTTP/1.1 response, keep-alive.
async fn upstream() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (r, mut w) = s.into_split();
                let mut lines = BufReader::new(r).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if line.is_empty()
                        && w.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                            .await
                            .is_err()
                    {
                        break;
                    }
                }
            });
        }
    });
    port
}

async fn exchange(addr: &str) -> (Duration, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let t = Instant::now();
    s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0; 64];
    let mut got = Vec::new();
    while !got.ends_with(b"ok") {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed early: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    (t.elapsed(), String::from_utf8_lossy(&got).into_owned())
}

fn fault() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fault"));
    cmd.env_remove("FAULT_PROXY_EXTRA_CA")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Reads stderr until the startup line and returns the listen address it names.
async fn listen_addr(
    stderr: &mut tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
) -> String {
    loop {
        let line = tokio::time::timeout(Duration::from_secs(10), stderr.next_line())
            .await
            .expect("startup line within 10 s")
            .unwrap()
            .expect("stderr open");
        if let Some(rest) = line.strip_prefix("fault: proxying ") {
            return rest.split(" -> ").next().unwrap().to_string();
        }
    }
}

#[tokio::test]
async fn run_applies_latency_from_flags_and_stops_after_duration() {
    let port = upstream().await;
    let mut child = fault()
        .args(["run", "--proxy", &format!("0=127.0.0.1:{port}")])
        .args([
            "--with-latency",
            "--latency-mean",
            "80",
            "--duration",
            "1500ms",
        ])
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = listen_addr(&mut stderr).await;
    assert!(
        addr.starts_with("127.0.0.1:"),
        "a bare port binds loopback: {addr}"
    );
    let (took, body) = exchange(&addr).await;
    assert!(body.starts_with("HTTP/1.1 200"));
    assert!(
        took >= Duration::from_millis(78) && took < Duration::from_millis(150),
        "{took:?}"
    );
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .expect("exits after --duration")
        .unwrap();
    assert!(status.success());
    let mut rest = String::new();
    while let Ok(Some(l)) = stderr.next_line().await {
        rest.push_str(&l);
        rest.push('\n');
    }
    assert!(
        rest.contains("stopped") && rest.contains("latency=1"),
        "{rest}"
    );
    let stdout = child.stdout.take().unwrap();
    let mut out = String::new();
    BufReader::new(stdout)
        .read_to_string(&mut out)
        .await
        .unwrap();
    assert!(out.is_empty(), "stdout stays empty: {out}");
}

#[tokio::test]
async fn run_reads_faults_from_the_environment() {
    let port = upstream().await;
    let mut child = fault()
        .args(["run", "--duration", "1s"])
        .env("FAULT_PROXY", format!("0=127.0.0.1:{port}"))
        .env("FAULT_WITH_LATENCY", "true")
        .env("FAULT_LATENCY_MEAN", "60")
        .env("FAULT_LATENCY_SIDE", "client")
        .env("FAULT_LATENCY_DIRECTION", "egress")
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = listen_addr(&mut stderr).await;
    let (took, _) = exchange(&addr).await;
    assert!(took >= Duration::from_millis(58), "{took:?}");
    assert!(child.wait().await.unwrap().success());
}

async fn fails_with(args: &[&str], expected: &[&str]) {
    let out = tokio::time::timeout(Duration::from_secs(10), fault().args(args).output())
        .await
        .expect("fails at once")
        .unwrap();
    assert!(!out.status.success(), "{args:?} should fail");
    let err = String::from_utf8_lossy(&out.stderr);
    for e in expected {
        assert!(err.contains(e), "{args:?}: stderr lacks {e:?}: {err}");
    }
}

#[tokio::test]
async fn bad_values_fail_with_a_clear_message() {
    fails_with(
        &["run", "--proxy", "34000"],
        &["'34000'", "LISTEN=UPSTREAM"],
    )
    .await;
    fails_with(
        &[
            "run",
            "--proxy",
            "0=127.0.0.1:9",
            "--with-bandwidth",
            "--bandwidth-unit",
            "kbit",
        ],
        &["'kbit'", "Bps, KBps, MBps, GBps"],
    )
    .await;
    fails_with(
        &[
            "run",
            "--proxy",
            "0=127.0.0.1:9",
            "--latency-direction",
            "up",
        ],
        &["direction must be one of ingress, egress, both; got 'up'"],
    )
    .await;
    fails_with(
        &[
            "run",
            "--proxy",
            "0=127.0.0.1:9",
            "--latency-distribution",
            "gauss",
        ],
        &["'gauss'", "pareto-normal"],
    )
    .await;
    fails_with(
        &[
            "run",
            "--proxy",
            "0=127.0.0.1:9",
            "--with-latency",
            "--latency-mean",
            "300",
            "--latency-sched",
            "start:10%",
        ],
        &["run duration"],
    )
    .await;
    fails_with(
        &["run", "--proxy", "0=127.0.0.1:9", "--with-latency"],
        &["--latency-mean: is required", "e.g. 300"],
    )
    .await;
    // A window that does not fit the run, or that overlaps another, is refused naming the fault's flag.
    fails_with(
        &[
            "run",
            "--proxy",
            "0=127.0.0.1:9",
            "--duration",
            "10s",
            "--with-http-error",
            "--http-error-sched",
            "start:8s,duration:5s",
        ],
        &["--http-error-sched: window 1 (start:8s,duration:5s) ends at 13s, after the run's end at 10s"],
    )
    .await;
    fails_with(
        &[
            "run",
            "--proxy",
            "0=127.0.0.1:9",
            "--with-latency",
            "--latency-mean",
            "300",
            "--latency-sched",
            "start:1s,duration:4s;start:3s",
        ],
        &[
            "--latency-sched",
            "window 2 (start:3s) overlaps window 1 (start:1s,duration:4s)",
        ],
    )
    .await;
    fails_with(
        &[
            "run",
            "--proxy",
            "0=127.0.0.1:9",
            "--jitter-amplitude",
            "30",
        ],
        &["--jitter-amplitude is given but the fault is not enabled: add --with-jitter"],
    )
    .await;
    let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = taken.local_addr().unwrap();
    fails_with(
        &["run", "--proxy", &format!("{}=127.0.0.1:9", addr.port())],
        &[&format!("cannot listen on {addr}"), "in use"],
    )
    .await;
}

/// Sends one request and reads until the connection ends: the bytes and how it ended (`Ok` = FIN).
async fn read_until_end(addr: &str) -> (Vec<u8>, std::io::Result<()>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) => return Ok(()),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => return Err(e),
            }
        }
    })
    .await
    .expect("the connection ends within 5 s");
    (got, end)
}

#[tokio::test]
async fn run_resets_connections_after_the_given_bytes() {
    let port = upstream().await;
    let mut child = fault()
        .args(["run", "--proxy", &format!("0=127.0.0.1:{port}")])
        .args([
            "--with-reset",
            "--reset-after-bytes",
            "10",
            "--duration",
            "3s",
        ])
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = listen_addr(&mut stderr).await;
    let (got, end) = read_until_end(&addr).await;
    assert_eq!(got, b"HTTP/1.1 2");
    let err = end.expect_err("a reset, not a clean end of stream");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err}");
    let _ = child.kill().await;
}

#[tokio::test]
async fn run_closes_connections_cleanly_after_the_data_limit() {
    let port = upstream().await;
    let mut child = fault()
        .args(["run", "--proxy", &format!("0=127.0.0.1:{port}")])
        .args([
            "--with-limit-data",
            "--limit-data-bytes",
            "10",
            "--duration",
            "3s",
        ])
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = listen_addr(&mut stderr).await;
    let (got, end) = read_until_end(&addr).await;
    end.expect("a clean end of stream (FIN), not a reset");
    assert_eq!(got, b"HTTP/1.1 2");
    let _ = child.kill().await;
}

#[tokio::test]
async fn run_corrupts_one_bit_of_each_segment() {
    let port = upstream().await;
    let mut child = fault()
        .args(["run", "--proxy", &format!("0=127.0.0.1:{port}")])
        .args(["--with-corrupt", "--corrupt-rate", "1", "--duration", "3s"])
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = listen_addr(&mut stderr).await;
    let described = stderr.next_line().await.unwrap().unwrap_or_default();
    assert!(
        described.starts_with("fault: fault Corrupt: 100.0% of chunks"),
        "{described}"
    );
    // The upstream's answer, written at once: one segment, so one bit flipped in it.
    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
    let mut s = TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut got = vec![0; answer.len()];
    tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut got))
        .await
        .expect("the answer within 5 s")
        .unwrap();
    let flipped: u32 = answer
        .iter()
        .zip(&got)
        .map(|(a, b)| (a ^ b).count_ones())
        .sum();
    assert_eq!(flipped, 1, "{:?}", String::from_utf8_lossy(&got));
    let _ = child.kill().await;
}

/// The arguments of `fault run`, as clap knows them.
fn run_arguments() -> Vec<clap::Arg> {
    use clap::CommandFactory;
    let cli = fault::cli::Cli::command();
    let run = cli.find_subcommand("run").expect("fault run");
    run.get_arguments().cloned().collect()
}

/// Runs `fault run` with `args` and a closed upstream; what it printed if it exited within 5 s.
async fn refused(args: &[String]) -> Result<(String, String), String> {
    let started = Instant::now();
    let run = fault()
        .args(["run", "--proxy", "0=127.0.0.1:9"])
        .args(args)
        .output();
    let out = match tokio::time::timeout(Duration::from_secs(5), run).await {
        Ok(out) => out.map_err(|e| e.to_string())?,
        Err(_) => return Err("still running after 5 s".into()),
    };
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        return Err(format!("exited successfully: {stderr}"));
    }
    if !stdout.is_empty() {
        return Err(format!("wrote to stdout: {stdout}"));
    }
    Ok((stderr, format!("{} ms", started.elapsed().as_millis())))
}

/// `--with-<fault>` and a value for each required field of every fault: every fault enabled, from the faults'
/// own declarations.
fn every_fault_enabled() -> Vec<String> {
    use fault::proxy::faults::{self, EachFault, TcpFaultSpec};
    struct Enabled(Vec<String>);
    impl EachFault for Enabled {
        fn fault<S: TcpFaultSpec>(&mut self) {
            self.0.push(format!("--with-{}", S::KIND.replace('_', "-")));
            for field in faults::fields::<S>() {
                if let fault::fields::Presence::Required { example } = field.presence {
                    self.0.push(format!("--{}={example}", field.long(S::KIND)));
                }
            }
        }
    }
    let mut enabled = Enabled(Vec::new());
    faults::for_each(&mut enabled);
    enabled.0
}

#[tokio::test]
async fn every_numeric_flag_refuses_a_negative_nan_or_huge_value_at_once() {
    use std::any::TypeId;
    let arguments = run_arguments();
    let numeric = [
        TypeId::of::<f64>(),
        TypeId::of::<u64>(),
        TypeId::of::<u16>(),
        TypeId::of::<Duration>(),
    ];
    // The faults' number fields name their unit as their value name (MS, HZ, BYTES, …); the others are
    // typed numbers.
    let units = ["N", "MS", "SECS", "HZ", "BYTES", "SEGMENTS"];
    let flags: Vec<String> = arguments
        .iter()
        .filter(|arg| {
            let parsed = arg.get_value_parser().type_id();
            let named = arg
                .get_value_names()
                .is_some_and(|names| names.iter().any(|name| units.contains(&name.as_str())));
            named || numeric.iter().any(|id| parsed == *id)
        })
        .filter_map(|arg| arg.get_long().map(|long| format!("--{long}")))
        .collect();
    assert!(
        flags.contains(&"--latency-mean".to_owned()) && flags.contains(&"--seed".to_owned()),
        "{flags:?}"
    );
    // Every fault enabled, so that each one's values are checked as well as parsed.
    let every_fault = every_fault_enabled();
    let mut failures = Vec::new();
    for flag in &flags {
        for value in ["-1", "NaN", "1e30"] {
            let mut args = every_fault.clone();
            args.push(format!("{flag}={value}"));
            match refused(&args).await {
                Ok((stderr, _)) if stderr.contains(flag.as_str()) => {}
                Ok((stderr, _)) => failures.push(format!("{flag}={value}: {stderr}")),
                Err(why) => failures.push(format!("{flag}={value}: {why}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} flags tried: {failures:#?}",
        flags.len()
    );
}

#[tokio::test]
async fn an_upstream_ca_that_is_not_a_bounded_regular_file_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.pem");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let huge = dir.path().join("huge.pem");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(20 << 20)
        .unwrap();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "no certificate here\n").unwrap();
    let cases = [
        (dir.path().join("missing.pem"), "not found"),
        (dir.path().to_path_buf(), "is a directory"),
        ("/dev/zero".into(), "not a regular file"),
        (fifo, "not a regular file"),
        (huge, "limit"),
        (empty, "no PEM certificate"),
    ];
    for (path, problem) in cases {
        let path = path.to_string_lossy().into_owned();
        let (stderr, took) = refused(&["--upstream-ca".into(), path.clone()])
            .await
            .unwrap_or_else(|why| panic!("{path}: {why}"));
        for expected in ["--upstream-ca", path.as_str(), problem] {
            assert!(stderr.contains(expected), "{path} ({took}): {stderr}");
        }
    }
}
