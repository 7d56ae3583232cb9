//! Proxy benchmark, one run, every figure against a peer measured in the same run:
//! pass-through overhead (fault vs direct, socat, haproxy, and `splice_floor.c`: the cheapest relay
//! a process can be), latency accuracy (1/10/100/300 ms),
//! bandwidth accuracy (10 KB/s, 1 MB/s, 100 MB/s) against the kernel's tbf in a network
//! namespace (netem is tried and its error reported when the kernel lacks it).
//!
//! The proxy's CPU per delayed message and its delay accuracy are measured on `fault run` processes of this
//! build and of the last commit before the shared precise timer (`src/timer.rs`), whose delays waited on a
//! timer thread (built on first use under `<target>/timer-baseline/`, then reused), and on `delay_floor.c`: the
//! cheapest delaying relay a process can be (a blocking thread per direction, `clock_nanosleep`), what a delay
//! costs on this machine whatever the proxy.
//!
//! `cargo bench --bench proxy` (root needed for the namespace part; `benches/proxy/run.sh`
//! installs socat and haproxy first). About three minutes, plus the baseline's first build.
//! `cargo bench --bench proxy -- measuring` runs only what `--report` and `--metrics` cost `fault run` (its
//! maximum exchange rate and p50 per exchange, bare and measuring, interleaved).
//! `cargo bench --bench proxy -- delays` runs only latency accuracy and the CPU per delayed message, judged
//! against the goal: at most 20 µs of the proxy's CPU for the delay of one message, at 1 ms and at 10 ms of
//! latency, its accuracy unchanged.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fault::proxy::{self, BandwidthSpec, BandwidthUnit, LatencySpec, ProxyConfig, TcpFault};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

const NS: &str = "faultbench";
const NS_HOST_IP: &str = "10.231.0.1";
const NS_IP: &str = "10.231.0.2";

// ---------- upstream: keep-alive HTTP (`GET /bytes/N`) and a bulk sender ("N\n" → N bytes)

async fn serve_http(listener: TcpListener) {
    static BLOCK: [u8; 64 * 1024] = [b'x'; 64 * 1024];
    while let Ok((s, _)) = listener.accept().await {
        let _ = s.set_nodelay(true);
        tokio::spawn(async move {
            let (r, mut w) = s.into_split();
            let mut reader = BufReader::new(r);
            let mut line = String::new();
            loop {
                line.clear();
                if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                    return;
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                loop {
                    line.clear();
                    if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let n: usize = path
                    .strip_prefix("/bytes/")
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(2);
                let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {n}\r\n\r\n");
                if w.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let mut left = n;
                while left > 0 {
                    let k = left.min(BLOCK.len());
                    if w.write_all(&BLOCK[..k]).await.is_err() {
                        return;
                    }
                    left -= k;
                }
            }
        });
    }
}

async fn serve_bulk(listener: TcpListener) {
    static BLOCK: [u8; 256 * 1024] = [7u8; 256 * 1024];
    while let Ok((s, _)) = listener.accept().await {
        tokio::spawn(async move {
            let (r, mut w) = s.into_split();
            let mut line = String::new();
            if BufReader::new(r).read_line(&mut line).await.is_err() {
                return;
            }
            let mut left: usize = line.trim().parse().unwrap_or(0);
            while left > 0 {
                let k = left.min(BLOCK.len());
                if w.write_all(&BLOCK[..k]).await.is_err() {
                    return;
                }
                left -= k;
            }
        });
    }
}

async fn upstream(ip: &str) -> (SocketAddr, SocketAddr) {
    let http = TcpListener::bind((ip, 0)).await.unwrap();
    let bulk = TcpListener::bind((ip, 0)).await.unwrap();
    let addrs = (http.local_addr().unwrap(), bulk.local_addr().unwrap());
    tokio::spawn(serve_http(http));
    tokio::spawn(serve_bulk(bulk));
    addrs
}

// ---------- clients

struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    async fn connect(addr: SocketAddr) -> std::io::Result<Client> {
        let s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        Ok(Client {
            reader: BufReader::with_capacity(256 * 1024, s),
        })
    }

    /// One exchange; returns the body length.
    async fn get(&mut self, path: &str) -> std::io::Result<usize> {
        let req = format!("GET {path} HTTP/1.1\r\nhost: bench\r\n\r\n");
        self.reader.get_mut().write_all(req.as_bytes()).await?;
        let mut len = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if self.reader.read_line(&mut line).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut left = len;
        let mut buf = vec![0u8; 256 * 1024];
        while left > 0 {
            let k = left.min(buf.len());
            self.reader.read_exact(&mut buf[..k]).await?;
            left -= k;
        }
        Ok(len)
    }
}

async fn keepalive_samples(addr: SocketAddr, n: usize) -> Vec<f64> {
    let mut c = Client::connect(addr).await.unwrap();
    for _ in 0..20 {
        c.get("/").await.unwrap();
    }
    let mut xs = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        c.get("/").await.unwrap();
        xs.push(t.elapsed().as_secs_f64() * 1e6);
    }
    xs.sort_by(f64::total_cmp);
    xs
}

async fn newconn_samples(addr: SocketAddr, n: usize) -> Vec<f64> {
    let mut xs = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let mut c = Client::connect(addr).await.unwrap();
        c.get("/").await.unwrap();
        xs.push(t.elapsed().as_secs_f64() * 1e6);
    }
    xs.sort_by(f64::total_cmp);
    xs
}

async fn bulk_mbps(addr: SocketAddr, bytes: usize) -> f64 {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let t = Instant::now();
    s.write_all(format!("{bytes}\n").as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let mut got = 0;
    loop {
        let n = s.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        got += n;
    }
    assert_eq!(got, bytes);
    bytes as f64 / t.elapsed().as_secs_f64() / 1e6
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    pct(xs, 0.5)
}

// ---------- reference proxies

struct Reference {
    name: &'static str,
    http: SocketAddr,
    bulk: SocketAddr,
    children: Vec<Child>,
}

impl Drop for Reference {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

async fn wait_listening(addr: SocketAddr) -> bool {
    for _ in 0..100 {
        if TcpStream::connect(addr).await.is_ok() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Starts one relay process per upstream, each made by `command(listen_port, upstream)`.
async fn relay_per_upstream(
    name: &'static str,
    http: SocketAddr,
    bulk: SocketAddr,
    command: impl Fn(u16, SocketAddr) -> Command,
) -> Result<Reference, String> {
    let mut r = Reference {
        name,
        http,
        bulk,
        children: Vec::new(),
    };
    for (addr, up) in [(&mut r.http, http), (&mut r.bulk, bulk)] {
        let port = free_port();
        let child = command(port, up)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("{name}: {e}"))?;
        r.children.push(child);
        *addr = SocketAddr::from(([127, 0, 0, 1], port));
    }
    if wait_listening(r.http).await && wait_listening(r.bulk).await {
        Ok(r)
    } else {
        Err(format!("{name} did not listen"))
    }
}

async fn socat(http: SocketAddr, bulk: SocketAddr) -> Result<Reference, String> {
    relay_per_upstream("socat", http, bulk, |port, up| {
        let mut c = Command::new("socat");
        c.arg(format!(
            "TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr,nodelay"
        ))
        .arg(format!("TCP:{up},nodelay"));
        c
    })
    .await
}

async fn haproxy(http: SocketAddr, bulk: SocketAddr) -> Result<Reference, String> {
    let (p1, p2) = (free_port(), free_port());
    let cfg = format!(
        "global\n  maxconn 4096\ndefaults\n  mode tcp\n  timeout connect 5s\n  timeout client 60s\n  timeout server 60s\n  option tcp-smart-connect\n  option splice-request\n  option splice-response\n\
         listen http\n  bind 127.0.0.1:{p1}\n  server up {http}\n\
         listen bulk\n  bind 127.0.0.1:{p2}\n  server up {bulk}\n"
    );
    let path = std::env::temp_dir().join(format!("fault-bench-haproxy-{}.cfg", std::process::id()));
    std::fs::write(&path, cfg).map_err(|e| e.to_string())?;
    let child = Command::new("haproxy")
        .arg("-f")
        .arg(&path)
        .arg("-db")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("haproxy: {e}"))?;
    let r = Reference {
        name: "haproxy",
        http: SocketAddr::from(([127, 0, 0, 1], p1)),
        bulk: SocketAddr::from(([127, 0, 0, 1], p2)),
        children: vec![child],
    };
    if wait_listening(r.http).await && wait_listening(r.bulk).await {
        Ok(r)
    } else {
        Err("haproxy did not listen".into())
    }
}

/// `splice_floor.c`, built here with the system's C compiler: the cheapest relay a process can be,
/// so its row shows what relaying costs on this machine whatever the proxy.
async fn splice_floor(http: SocketAddr, bulk: SocketAddr) -> Result<Reference, String> {
    let exe = build_c("splice_floor")?;
    relay_per_upstream("splice_floor", http, bulk, |port, up| {
        let mut c = Command::new(&exe);
        c.arg(port.to_string()).arg(up.port().to_string());
        c
    })
    .await
}

// ---------- network namespace (kernel reference)

fn sh(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

struct Namespace {
    server: Option<Child>,
}

impl Namespace {
    /// A namespace joined to the host by a veth pair, with our upstream running inside it.
    fn up(exe: &str) -> Result<(Namespace, SocketAddr), String> {
        let _ = sh(&["ip", "netns", "del", NS]);
        sh(&["ip", "netns", "add", NS])?;
        let mut ns = Namespace { server: None };
        sh(&[
            "ip", "link", "add", "fbh0", "type", "veth", "peer", "name", "fbn0",
        ])?;
        sh(&["ip", "link", "set", "fbn0", "netns", NS])?;
        sh(&[
            "ip",
            "addr",
            "add",
            &format!("{NS_HOST_IP}/30"),
            "dev",
            "fbh0",
        ])?;
        sh(&["ip", "link", "set", "fbh0", "up"])?;
        sh(&[
            "ip",
            "netns",
            "exec",
            NS,
            "ip",
            "addr",
            "add",
            &format!("{NS_IP}/30"),
            "dev",
            "fbn0",
        ])?;
        sh(&["ip", "netns", "exec", NS, "ip", "link", "set", "fbn0", "up"])?;
        sh(&["ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up"])?;
        let mut child = Command::new("ip")
            .args(["netns", "exec", NS, exe, "serve", NS_IP])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the upstream in the namespace: {e}"))?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            use std::io::BufRead;
            let _ = std::io::BufReader::new(out).read_line(&mut line);
        }
        ns.server = Some(child);
        let addr: SocketAddr = line
            .trim()
            .parse()
            .map_err(|_| format!("namespace upstream did not report its address: {line:?}"))?;
        Ok((ns, addr))
    }

    fn qdisc(&self, spec: &[&str]) -> Result<(), String> {
        let mut args = vec![
            "ip", "netns", "exec", NS, "tc", "qdisc", "replace", "dev", "fbn0", "root",
        ];
        args.extend_from_slice(spec);
        sh(&args)
    }

    fn clear_qdisc(&self) {
        let _ = sh(&[
            "ip", "netns", "exec", NS, "tc", "qdisc", "del", "dev", "fbn0", "root",
        ]);
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        if let Some(c) = &mut self.server {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = sh(&["ip", "link", "del", "fbh0"]);
        let _ = sh(&["ip", "netns", "del", NS]);
    }
}

// ---------- measurements

async fn start_proxy(
    http: SocketAddr,
    bulk: SocketAddr,
    faults: Vec<TcpFault>,
) -> proxy::ProxyHandle {
    proxy::start(ProxyConfig {
        mappings: vec![
            format!("0={http}").parse().unwrap(),
            format!("0={bulk}").parse().unwrap(),
        ],
        faults,
        ..Default::default()
    })
    .await
    .unwrap()
}

fn bandwidth(bytes_per_second: u64) -> TcpFault {
    TcpFault::Bandwidth(BandwidthSpec {
        rate: bytes_per_second,
        unit: BandwidthUnit::Bps,
        ..Default::default()
    })
}

/// Time to move `body` bytes (plus ~40 B of headers) as a rate in B/s, on a fresh connection.
async fn measured_rate(addr: SocketAddr, body: usize) -> f64 {
    let mut c = Client::connect(addr).await.unwrap();
    let t = Instant::now();
    c.get(&format!("/bytes/{body}")).await.unwrap();
    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {body}\r\n\r\n").len();
    (body + head) as f64 / t.elapsed().as_secs_f64()
}

/// Latency accuracy (1/10/100/300 ms) of this build's proxy, in process.
async fn latency_accuracy(http: SocketAddr, bulk: SocketAddr) {
    println!(
        "\n## Latency accuracy (server ingress, keep-alive, added = median(proxied) − median(direct))\n"
    );
    println!("| requested ms | samples | added p50 ms | error ms | error % | added p99 ms |");
    println!("|---|---|---|---|---|---|");
    let mut direct = keepalive_samples(http, 300).await;
    let base = median(&mut direct) / 1e3;
    for (ms, n) in [(1u64, 300usize), (10, 100), (100, 25), (300, 10)] {
        let p = start_proxy(
            http,
            bulk,
            vec![TcpFault::Latency(LatencySpec {
                mean: Duration::from_millis(ms),
                ..Default::default()
            })],
        )
        .await;
        let xs = keepalive_samples(p.local_addrs()[0], n).await;
        p.stop().await;
        let added = pct(&xs, 0.5) / 1e3 - base;
        let err = added - ms as f64;
        println!(
            "| {ms} | {n} | {added:.3} | {err:+.3} | {:+.2}% | {:.3} |",
            100.0 * err / ms as f64,
            pct(&xs, 0.99) / 1e3 - base
        );
    }
}

// ---------- CPU per delayed message: this build against the last one before the shared precise timer

/// CPU time of a process: utime + stime from `/proc/PID/stat` (clock ticks of 10 ms), and the sum of its
/// threads' run time from `/proc/PID/task/*/schedstat` (nanoseconds).
fn process_cpu(pid: u32) -> (Duration, Duration) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    let mut run_ns = 0u64;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            let schedstat =
                std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            run_ns += schedstat
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    (
        Duration::from_millis(ticks * 10),
        Duration::from_nanos(run_ns),
    )
}

fn run_text(command: &mut Command) -> Result<String, String> {
    let output = command.output().map_err(|e| format!("{command:?}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{command:?}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Builds `fault` (release) at the last commit before the shared precise timer: the parent of the commit that
/// moved the proxy's precise delays (`src/proxy/precise.rs`, a tokio sleep to 1 ms before the deadline, then a
/// timer thread) into `src/timer.rs`. Its sources and target dir live next to this bench's target dir
/// (`<target>/timer-baseline/`), the target dir seeded from this one's release dependencies on first use, and
/// are kept for the next run.
fn baseline_build() -> Result<PathBuf, String> {
    let repo = env!("CARGO_MANIFEST_DIR");
    let moved = run_text(Command::new("git").args([
        "-C",
        repo,
        "log",
        "-n1",
        "--format=%H",
        "--diff-filter=D",
        "--",
        "src/proxy/precise.rs",
    ]))?;
    if moved.is_empty() {
        return Err("no commit in this clone's history moved the timer (a shallow clone?)".into());
    }
    let rev = run_text(Command::new("git").args(["-C", repo, "rev-parse", &format!("{moved}^")]))?;
    // This bench runs as <target>/release/deps/proxy-<hash>.
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let target = exe
        .ancestors()
        .nth(3)
        .ok_or("cannot find the target dir from the bench's path")?;
    let base = target.join("timer-baseline");
    let src = base.join(format!("src-{rev}"));
    if !src.join("Cargo.toml").exists() {
        std::fs::create_dir_all(&src).map_err(|e| format!("{}: {e}", src.display()))?;
        run_text(Command::new("sh").args([
            "-c",
            &format!(
                "git -C '{repo}' archive {rev} | tar -x -C '{}'",
                src.display()
            ),
        ]))?;
    }
    let target_dir = base.join("target");
    if !target_dir.exists() {
        std::fs::create_dir_all(&target_dir).map_err(|e| e.to_string())?;
        // Most dependencies are the same versions: start from this build's.
        let _ = run_text(
            Command::new("cp")
                .arg("-a")
                .arg(target.join("release"))
                .arg(&target_dir),
        );
    }
    eprintln!("building the baseline ({rev}) in {}", target_dir.display());
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    // What `cargo bench` sets for this process (package variables, library path) would make the nested
    // build see another environment than a plain `cargo build` and rebuild dependencies: drop it.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if (name.starts_with("CARGO_") && name != "CARGO_HOME")
            || name == "LD_LIBRARY_PATH"
            || name == "OUT_DIR"
        {
            build.env_remove(name);
        }
    }
    let status = build
        .args([
            "build",
            "--release",
            "--offline",
            "--bin",
            "fault",
            "--manifest-path",
        ])
        .arg(src.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target_dir)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cargo build of {rev}: {e}"))?;
    if !status.success() {
        return Err(format!("cargo build of {rev} failed"));
    }
    Ok(target_dir.join("release").join("fault"))
}

/// A `fault run` process in front of `upstream`, killed on drop.
struct FaultRun {
    child: Child,
    addr: SocketAddr,
}

impl Drop for FaultRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn fault_run(
    bin: &Path,
    upstream: SocketAddr,
    latency_ms: Option<u64>,
) -> Result<FaultRun, String> {
    fault_run_with(bin, upstream, latency_ms, &[]).await
}

/// [`fault_run`] with `extra` arguments.
async fn fault_run_with(
    bin: &Path,
    upstream: SocketAddr,
    latency_ms: Option<u64>,
    extra: &[String],
) -> Result<FaultRun, String> {
    let port = free_port();
    let mut command = Command::new(bin);
    command.args(["run", "--proxy", &format!("{port}={upstream}")]);
    if let Some(ms) = latency_ms {
        command.args(["--with-latency", "--latency-mean", &ms.to_string()]);
    }
    command.args(extra);
    spawn_listening(command, port).await
}

/// `command`, quiet, once it listens on 127.0.0.1:`port`.
async fn spawn_listening(mut command: Command, port: u16) -> Result<FaultRun, String> {
    let program = command.get_program().to_string_lossy().into_owned();
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{program}: {e}"))?;
    let run = FaultRun {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
    };
    if wait_listening(run.addr).await {
        Ok(run)
    } else {
        Err(format!("{program} did not listen"))
    }
}

/// `benches/proxy/NAME.c`, built with the system's C compiler into the temporary directory.
fn build_c(name: &str) -> Result<PathBuf, String> {
    let source = format!("{}/benches/proxy/{name}.c", env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::temp_dir().join(format!("fault-bench-{name}-{}", std::process::id()));
    let built = Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&exe)
        .arg(&source)
        .status()
        .map_err(|e| format!("cc: {e}"))?;
    if built.success() {
        Ok(exe)
    } else {
        Err(format!("cc could not build {source}"))
    }
}

/// What the proxy process spent over `n` keep-alive exchanges, and how long each took.
struct Spent {
    ticks: Duration,
    run: Duration,
    /// Each exchange's time, µs, sorted.
    exchanges: Vec<f64>,
}

/// The proxy process's CPU over `n` keep-alive exchanges (one delayed message each: latency acts on the
/// server-side ingress flow), after 20 to warm up.
async fn proxy_cpu(
    relay: &Relay,
    http: SocketAddr,
    latency_ms: Option<u64>,
    n: usize,
) -> Result<Spent, String> {
    let proxy = relay.start(http, latency_ms).await?;
    let pid = proxy.child.id();
    let mut client = Client::connect(proxy.addr)
        .await
        .map_err(|e| e.to_string())?;
    for _ in 0..20 {
        client.get("/").await.map_err(|e| e.to_string())?;
    }
    let (ticks, run) = process_cpu(pid);
    let mut exchanges = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        client.get("/").await.map_err(|e| e.to_string())?;
        exchanges.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let (ticks_after, run_after) = process_cpu(pid);
    exchanges.sort_by(f64::total_cmp);
    Ok(Spent {
        ticks: ticks_after.saturating_sub(ticks),
        run: run_after.saturating_sub(run),
        exchanges,
    })
}

/// A relay whose CPU per delayed message is measured: a build of `fault run`, or `delay_floor.c`.
enum Relay {
    Fault(PathBuf),
    Floor(PathBuf),
}

impl Relay {
    /// `delay_floor.c`, built here with the system's C compiler: the cheapest delaying relay a process can
    /// be, so its row shows what a delay costs on this machine whatever the proxy.
    fn floor() -> Result<Self, String> {
        build_c("delay_floor").map(Self::Floor)
    }

    /// The relay in front of `upstream`, delaying each response message by `latency_ms`, listening.
    async fn start(
        &self,
        upstream: SocketAddr,
        latency_ms: Option<u64>,
    ) -> Result<FaultRun, String> {
        let exe = match self {
            Self::Fault(bin) => return fault_run(bin, upstream, latency_ms).await,
            Self::Floor(exe) => exe,
        };
        let port = free_port();
        let delay_us = latency_ms.unwrap_or(0) * 1000;
        let mut command = Command::new(exe);
        command.args([
            port.to_string(),
            upstream.port().to_string(),
            delay_us.to_string(),
        ]);
        spawn_listening(command, port).await
    }
}

/// The goal for the proxy's CPU per delayed message: what the delay itself costs, beyond relaying.
const DELAY_CPU_GOAL_US: f64 = 20.0;

/// CPU of the proxy process per delayed message and the delay's accuracy, for this build ("after") and the
/// last build before the shared precise timer ("before"), in the same run: each build's pass-through cost
/// per exchange is measured too and subtracted, leaving what the delay itself costs; its accuracy is the
/// median exchange with the delay minus the median without, minus the latency asked for.
async fn cpu_per_delayed_message(http: SocketAddr) {
    println!(
        "\n## Proxy CPU per delayed message, before (timer thread) and after (kernel timer), same run\n"
    );
    let after = Relay::Fault(PathBuf::from(env!("CARGO_BIN_EXE_fault")));
    let before = match baseline_build() {
        Ok(path) => Relay::Fault(path),
        Err(e) => {
            println!("BEFORE NOT MEASURED: {e}");
            return;
        }
    };
    let floor = Relay::floor();
    if let Err(e) = &floor {
        println!("FLOOR NOT MEASURED: {e}");
    }
    println!(
        "`fault run` processes, keep-alive exchanges back to back, CPU of the proxy process only: utime+stime \
         (/proc/PID/stat, 10 ms ticks) and thread run time (/proc/PID/task/*/schedstat, ns); \
         \"delay\" = delayed minus pass-through, per message; error = median delayed exchange − median \
         pass-through exchange − latency\n"
    );
    println!(
        "| round | latency | messages | build | utime+stime per message µs | run time per message µs | pass-through run time per exchange µs | delay's run time per message µs | error p50 ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    // (latency, build, delay's run time per message µs, error p50 ms) of every measurement.
    let mut rows: Vec<(u64, &str, f64, f64)> = Vec::new();
    for round in 1..=2 {
        for (ms, n) in [(1u64, 2000usize), (10, 500)] {
            let mut builds = vec![("before", &before), ("after", &after)];
            if let Ok(floor) = &floor {
                builds.push(("floor", floor));
            }
            if round % 2 == 0 {
                builds.reverse();
            }
            for (label, relay) in builds {
                let measured = async {
                    let pass = proxy_cpu(relay, http, None, n).await?;
                    let delayed = proxy_cpu(relay, http, Some(ms), n).await?;
                    Ok::<_, String>((pass, delayed))
                }
                .await;
                let (pass, delayed) = match measured {
                    Ok(m) => m,
                    Err(e) => {
                        println!("| {round} | {ms} ms | {n} | {label} | failed: {e} | | | | |");
                        continue;
                    }
                };
                let per = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
                let delay_run = per(delayed.run) - per(pass.run);
                let error_ms =
                    (pct(&delayed.exchanges, 0.5) - pct(&pass.exchanges, 0.5)) / 1e3 - ms as f64;
                println!(
                    "| {round} | {ms} ms | {n} | {label} | {:.1} | {:.1} | {:.1} | {delay_run:.1} | {error_ms:+.3} |",
                    per(delayed.ticks),
                    per(delayed.run),
                    per(pass.run)
                );
                rows.push((ms, label, delay_run, error_ms));
            }
        }
    }
    println!();
    for ms in [1u64, 10] {
        let of = |build: &str| -> Vec<(f64, f64)> {
            rows.iter()
                .filter(|(m, b, ..)| *m == ms && *b == build)
                .map(|&(_, _, cpu, error)| (cpu, error))
                .collect()
        };
        let span = |xs: &[f64]| {
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!("{lo:.1}–{hi:.1}")
        };
        let (before, after, floor) = (of("before"), of("after"), of("floor"));
        if before.is_empty() || after.is_empty() {
            println!("- {ms} ms: not measured");
            continue;
        }
        let cpu = |xs: &[(f64, f64)]| xs.iter().map(|x| x.0).collect::<Vec<_>>();
        let err = |xs: &[(f64, f64)]| xs.iter().map(|x| x.1 * 1e3).collect::<Vec<_>>();
        let worst = cpu(&after).into_iter().fold(f64::NEG_INFINITY, f64::max);
        let floor_cpu = if floor.is_empty() {
            "not measured".to_owned()
        } else {
            format!("{} µs", span(&cpu(&floor)))
        };
        println!(
            "- {ms} ms: the delay's CPU per message {} µs after, {} µs before, the machine's floor (delay_floor.c) \
             {floor_cpu}; goal ≤ {DELAY_CPU_GOAL_US} µs: {}. Error at p50 {} µs after, {} µs before",
            span(&cpu(&after)),
            span(&cpu(&before)),
            if worst <= DELAY_CPU_GOAL_US {
                "met"
            } else {
                "NOT MET"
            },
            span(&err(&after)),
            span(&err(&before)),
        );
    }
}

async fn run() {
    let exe = std::env::current_exe()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let (http, bulk) = upstream("127.0.0.1").await;
    println!("# fault proxy benchmark\n");

    // 1. Pass-through overhead.
    let keepalive_n = 3000;
    let newconn_n = 600;
    let bulk_bytes = 1024 * 1024 * 1024;
    let fault_proxy = start_proxy(http, bulk, vec![]).await;
    let mut targets: Vec<(String, SocketAddr, SocketAddr)> = vec![
        ("direct".into(), http, bulk),
        (
            "fault".into(),
            fault_proxy.local_addrs()[0],
            fault_proxy.local_addrs()[1],
        ),
    ];
    let mut refs = Vec::new();
    for r in [
        socat(http, bulk).await,
        haproxy(http, bulk).await,
        splice_floor(http, bulk).await,
    ] {
        match r {
            Ok(r) => {
                targets.push((r.name.into(), r.http, r.bulk));
                refs.push(r);
            }
            Err(e) => println!("(reference skipped: {e})"),
        }
    }
    // Paths take turns, round after round, so a change in machine load hits them all alike.
    let rounds = 5;
    let mut keepalive = vec![Vec::new(); targets.len()];
    let mut newconn = vec![Vec::new(); targets.len()];
    let mut bulk_runs = vec![Vec::new(); targets.len()];
    for _ in 0..rounds {
        for (i, (_, h, b)) in targets.iter().enumerate() {
            keepalive[i].extend(keepalive_samples(*h, keepalive_n / rounds).await);
            newconn[i].extend(newconn_samples(*h, newconn_n / rounds).await);
            bulk_runs[i].push(bulk_mbps(*b, bulk_bytes).await);
        }
    }
    drop(refs);
    fault_proxy.stop().await;
    for xs in keepalive.iter_mut().chain(newconn.iter_mut()) {
        xs.sort_by(f64::total_cmp);
    }
    println!("## Pass-through overhead (no fault)\n");
    println!(
        "keep-alive: {keepalive_n} requests; new connection: {newconn_n}; bulk: {rounds} × {} MB; \
         paths interleaved over {rounds} rounds; bulk share = median over rounds of path / direct\n",
        bulk_bytes / 1_000_000
    );
    println!(
        "| path | keep-alive p50 µs (added) | keep-alive p99 µs (added) | new-conn p50 µs (added) | new-conn p99 µs (added) | bulk MB/s (of direct) |"
    );
    println!("|---|---|---|---|---|---|");
    let (d_ka, d_nc) = (&keepalive[0], &newconn[0]);
    for (i, (name, _, _)) in targets.iter().enumerate() {
        let (ka, nc) = (&keepalive[i], &newconn[i]);
        let mut shares: Vec<f64> = bulk_runs[i]
            .iter()
            .zip(&bulk_runs[0])
            .map(|(mine, direct)| mine / direct)
            .collect();
        let mut mbps = bulk_runs[i].clone();
        println!(
            "| {name} | {:.1} (+{:.1}) | {:.1} (+{:.1}) | {:.1} (+{:.1}) | {:.1} (+{:.1}) | {:.0} ({:.0}%) |",
            pct(ka, 0.5),
            pct(ka, 0.5) - pct(d_ka, 0.5),
            pct(ka, 0.99),
            pct(ka, 0.99) - pct(d_ka, 0.99),
            pct(nc, 0.5),
            pct(nc, 0.5) - pct(d_nc, 0.5),
            pct(nc, 0.99),
            pct(nc, 0.99) - pct(d_nc, 0.99),
            median(&mut mbps),
            100.0 * median(&mut shares)
        );
    }

    // 2. Latency accuracy, and the proxy's CPU per delayed message before and after the shared precise timer.
    latency_accuracy(http, bulk).await;
    cpu_per_delayed_message(http).await;

    // 3. Bandwidth accuracy (fault), then the kernel reference in a namespace.
    let rates: [(u64, &str); 3] = [
        (10_000, "10 KB/s"),
        (1_000_000, "1 MB/s"),
        (100_000_000, "100 MB/s"),
    ];
    println!("\n## Bandwidth accuracy (body sized for ≈1.5 s; rate = bytes / time)\n");
    println!("| requested | fault measured | fault error | kernel tbf measured | tbf error |");
    println!("|---|---|---|---|---|");
    let mut fault_rates = Vec::new();
    for (rate, _) in rates {
        let p = start_proxy(http, bulk, vec![bandwidth(rate)]).await;
        let got = measured_rate(p.local_addrs()[0], (rate as f64 * 1.5) as usize).await;
        p.stop().await;
        fault_rates.push(got);
    }
    let ns = Namespace::up(&exe);
    let mut netem_error = None;
    let mut tbf_rates = vec![None; rates.len()];
    let mut netem_rows = Vec::new();
    match &ns {
        Ok((ns, ns_http)) => {
            for (i, (rate, _)) in rates.iter().enumerate() {
                let bits = rate * 8;
                let burst = (rate / 100).max(3000);
                match ns.qdisc(&[
                    "tbf",
                    "rate",
                    &format!("{bits}bit"),
                    "burst",
                    &burst.to_string(),
                    "latency",
                    "2s",
                ]) {
                    Ok(()) => {
                        tbf_rates[i] =
                            Some(measured_rate(*ns_http, (*rate as f64 * 1.5) as usize).await);
                    }
                    Err(e) => println!("(tbf {rate}: {e})"),
                }
                ns.clear_qdisc();
            }
            // Latency reference: netem delay on the namespace side.
            match ns.qdisc(&["netem", "delay", "10ms"]) {
                Ok(()) => {
                    let mut base = keepalive_samples(*ns_http, 20).await;
                    let _ = median(&mut base);
                    for ms in [1u64, 10, 100, 300] {
                        let _ = ns.qdisc(&["netem", "delay", &format!("{ms}ms")]);
                        let mut xs = keepalive_samples(*ns_http, 10).await;
                        netem_rows.push((ms, median(&mut xs) / 1e3));
                    }
                    ns.clear_qdisc();
                }
                Err(e) => netem_error = Some(e),
            }
        }
        Err(e) => {
            netem_error = Some(format!("namespace not available: {e}"));
        }
    }
    for (i, (rate, label)) in rates.iter().enumerate() {
        let f = fault_rates[i];
        let (tm, te) = match tbf_rates[i] {
            Some(t) => (
                format!("{:.0} B/s", t),
                format!("{:+.2}%", 100.0 * (t / *rate as f64 - 1.0)),
            ),
            None => ("n/a".into(), "n/a".into()),
        };
        println!(
            "| {label} | {f:.0} B/s | {:+.2}% | {tm} | {te} |",
            100.0 * (f / *rate as f64 - 1.0)
        );
    }
    println!("\n## Kernel latency reference (netem)\n");
    match netem_error {
        Some(e) => println!("netem not available in this sandbox: {e}"),
        None => {
            for (ms, got) in netem_rows {
                println!("- netem delay {ms} ms → exchange median {got:.3} ms");
            }
        }
    }
    drop(ns);
}

/// Exchanges per second through `addr` from `clients` keep-alive connections, each back to back, for
/// `seconds`.
async fn max_exchange_rate(addr: SocketAddr, clients: usize, seconds: f64) -> f64 {
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        tasks.spawn(async move {
            let mut client = Client::connect(addr).await.unwrap();
            let mut done = 0u64;
            while Instant::now() < until {
                client.get("/").await.unwrap();
                done += 1;
            }
            done
        });
    }
    let mut total = 0;
    while let Some(done) = tasks.join_next().await {
        total += done.unwrap();
    }
    total as f64 / seconds
}

/// What measuring costs `fault run`: the same build bare and with `--report` and `--metrics` (every exchange
/// timed and grouped, the Prometheus page served and scraped once a second), in interleaved rounds: the
/// maximum exchange rate (16 keep-alive clients) and the p50 of one client's exchanges. Goal: at most 5 % of
/// the rate and 5 µs of p50.
async fn measuring_overhead(http: SocketAddr) {
    println!(
        "\n## What measuring costs `fault run` (--report and --metrics against bare), same run\n"
    );
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_fault"));
    let dir = std::env::temp_dir().join(format!("fault-bench-measure-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let metrics = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let measuring = vec![
        "--report".to_owned(),
        dir.join("report.md").display().to_string(),
        "--metrics".to_owned(),
        metrics.to_string(),
    ];
    let bare = fault_run(&bin, http, None).await.unwrap();
    let measured = fault_run_with(&bin, http, None, &measuring).await.unwrap();
    // A scraper, as Prometheus would be: the page once a second.
    let scraper = tokio::spawn(async move {
        loop {
            if let Ok(mut stream) = TcpStream::connect(metrics).await {
                let _ = stream
                    .write_all(b"GET /metrics HTTP/1.1\r\nhost: bench\r\nconnection: close\r\n\r\n")
                    .await;
                let mut page = Vec::new();
                let _ = stream.read_to_end(&mut page).await;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    let (mut rate_ratios, mut p50_deltas) = (Vec::new(), Vec::new());
    let (mut bare_rates, mut measured_rates) = (Vec::new(), Vec::new());
    for round in 0..6 {
        let order = if round % 2 == 0 {
            [(&bare, false), (&measured, true)]
        } else {
            [(&measured, true), (&bare, false)]
        };
        let (mut rate, mut p50) = ([0.0; 2], [0.0; 2]);
        for (run, is_measured) in order {
            let side = usize::from(is_measured);
            rate[side] = max_exchange_rate(run.addr, 16, 2.0).await;
            let mut samples = keepalive_samples(run.addr, 2000).await;
            p50[side] = median(&mut samples);
        }
        eprintln!(
            "round {round}: bare {:.0}/s p50 {:.1} µs, measuring {:.0}/s p50 {:.1} µs",
            rate[0], p50[0], rate[1], p50[1]
        );
        bare_rates.push(rate[0]);
        measured_rates.push(rate[1]);
        rate_ratios.push(rate[1] / rate[0]);
        p50_deltas.push(p50[1] - p50[0]);
    }
    scraper.abort();
    let ratio = median(&mut rate_ratios);
    let delta = median(&mut p50_deltas);
    println!("| Measure | bare | --report --metrics | Cost |"); // stdout-ok
    println!("|---|---|---|---|"); // stdout-ok
    println!(
        "| Max exchange rate, 16 keep-alive clients (median of 6 × 2 s) | {:.0}/s | {:.0}/s | {:.1} % |",
        median(&mut bare_rates),
        median(&mut measured_rates),
        (1.0 - ratio) * 100.0
    ); // stdout-ok
    println!("| p50 per exchange, one client (median of 6 × 2,000) | | | {delta:+.1} µs |"); // stdout-ok
    println!(
        "\nGoal: at most 5 % of the rate and 5 µs of p50: {}",
        if ratio >= 0.95 && delta <= 5.0 {
            "met"
        } else {
            "NOT MET"
        }
    ); // stdout-ok
    drop((bare, measured));
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if args.get(1).map(String::as_str) == Some("serve") {
        // Upstream inside the namespace: report the HTTP address, then serve until killed.
        let ip = args.get(2).cloned().unwrap_or_else(|| "127.0.0.1".into());
        rt.block_on(async move {
            let (http, _bulk) = upstream(&ip).await;
            println!("{http}");
            std::future::pending::<()>().await;
        });
        return;
    }
    if args.iter().any(|a| a == "measuring") {
        rt.block_on(async {
            let (http, _bulk) = upstream("127.0.0.1").await;
            measuring_overhead(http).await;
        });
        return;
    }
    if args.iter().any(|a| a == "delays") {
        // Only latency accuracy and CPU per delayed message.
        rt.block_on(async {
            let (http, bulk) = upstream("127.0.0.1").await;
            latency_accuracy(http, bulk).await;
            cpu_per_delayed_message(http).await;
        });
        return;
    }
    rt.block_on(run());
}
