//! Locust as the load engine: fault starts Locust headless as a master (and its workers on this machine, or
//! waits for workers started elsewhere), and turns Locust's own per-request results into the same
//! [`LoadReport`] its generator makes, so that the report's windows, phases, recovery and SLOs sit on top
//! unchanged.
//!
//! The results come from a plugin loaded with the locustfile ([`locustfile::PLUGIN`]): each worker keeps every
//! request Locust reports (name, start time, response time, status, error) and sends them with the stats of the
//! same report, so the records count exactly what Locust's own totals count. Latencies are Locust's, and
//! Locust's model is closed (users wait for their answers), not an arrival rate.
//!
//! A run: [`prepare`] checks everything before anything starts (Locust installed and recent enough, the
//! locustfile imports, the master's port free); [`Launched::start`] starts the master and local workers;
//! [`Launched::ready`] waits for the workers (within a bound); the caller readies its proxies and calls
//! [`Launched::go`] with the host to load, which starts the test and the clock the records count from;
//! [`Launched::finish`] waits for the end and reads the records. Every Locust process is killed when
//! [`Launched`] is dropped, so none outlives an error or a cancellation.

pub mod locustfile;

use std::{
    collections::{HashMap, VecDeque},
    net::{IpAddr, SocketAddr},
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, Mutex, atomic::Ordering},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::{Child, ChildStdin, Command},
    sync::mpsc,
    time::Instant,
};
use tokio_util::sync::CancellationToken;

use super::{
    LoadProgress, LoadReport, Mix, RequestOutcome, RequestSamples, SampleRecorder, Samples, Timing,
    phases, seconds_of,
};

/// The oldest Locust fault drives (its request event's start time, `worker_connect`, `-f -` for workers).
pub const MIN_VERSION: (u32, u32) = (2, 40);
/// The environment variable naming the `locust` program (default: `locust` on the PATH).
pub const PROGRAM_VAR: &str = "FAULT_LOCUST";
/// How to install it, as the errors say.
pub const INSTALL: &str = "pip install locust";
/// A locustfile is read whole, up to this size.
const MAX_LOCUSTFILE_BYTES: u64 = 4 << 20;
/// How long `locust --version` and the import check may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(60);
/// After the run's duration, how long the master gets to stop its workers and write its last records.
const END_GRACE: Duration = Duration::from_secs(30);
/// Lines of Locust's own output kept to relay in an error.
const KEPT_LINES: usize = 30;

/// Where Locust's workers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workers {
    /// fault starts this many on this machine.
    Local(u32),
    /// This many, started elsewhere (`locust --worker --master-host …`), are waited for.
    External(u32),
}

impl Workers {
    pub fn count(self) -> u32 {
        match self {
            Workers::Local(n) | Workers::External(n) => n,
        }
    }
}

/// A Locust run as the scenario asks for it.
#[derive(Debug, Clone, PartialEq)]
pub struct LocustPlan {
    /// The user's locustfile; `None`: one is written from the scenario's traffic mix.
    pub locustfile: Option<PathBuf>,
    pub users: u32,
    pub spawn_rate: f64,
    pub workers: Workers,
    /// How long the workers may take to come.
    pub workers_wait: Duration,
    /// Where the master listens for its workers.
    pub master: SocketAddr,
    /// Where Locust also writes its own CSV stats (`--csv PREFIX`), when asked.
    pub csv_prefix: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum LocustError {
    #[error(
        "Locust is not installed ('{program}' could not be run: {reason}); install it with `{INSTALL}` \
         (2.40 or later), or name the program in ${PROGRAM_VAR}"
    )]
    Absent { program: String, reason: String },
    #[error(
        "Locust {found} is too old: fault needs 2.40 or later; upgrade it with `{INSTALL} --upgrade`"
    )]
    TooOld { found: String },
    #[error("load.locustfile: {0}")]
    Locustfile(String),
    #[error("load.locustfile: Locust cannot load {path}:\n{output}")]
    Import { path: String, output: String },
    #[error(
        "load.master_port: {addr} is in use ({reason}); Locust's master needs it free for its workers: \
         stop what holds it or give another master_port"
    )]
    PortInUse { addr: SocketAddr, reason: String },
    #[error(
        "load.workers: {came} of {expected} Locust workers came within {wait} (load.workers_wait); the run \
         was refused and every Locust process stopped"
    )]
    WorkersMissing {
        came: u32,
        expected: u32,
        wait: String,
    },
    #[error("Locust could not be started: {0}")]
    Spawn(String),
    #[error("Locust's master ended before the test ended (exit status {status}):\n{output}")]
    MasterEnded { status: String, output: String },
    #[error("Locust's results could not be read: {0}")]
    Records(String),
    #[error("the Locust run was cancelled; every Locust process was stopped")]
    Cancelled,
}

/// The `locust` program: `$FAULT_LOCUST`, else `locust` on the PATH.
pub fn program() -> String {
    std::env::var(PROGRAM_VAR)
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "locust".to_owned())
}

/// The version `locust --version` prints ("locust 2.47.0 from …").
fn parse_version(text: &str) -> Option<(u32, u32, String)> {
    let word = text
        .split_whitespace()
        .skip_while(|w| !w.eq_ignore_ascii_case("locust"))
        .nth(1)?;
    let mut parts = word.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()?;
    Some((major, minor, word.to_owned()))
}

/// Runs `program args` to its end within [`CHECK_TIMEOUT`]: its status and its stdout and stderr together.
async fn run_to_end(program: &str, args: &[&str]) -> Result<(bool, String), String> {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| e.to_string())?;
    let output = tokio::time::timeout(CHECK_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| format!("no answer within {}s", CHECK_TIMEOUT.as_secs()))?
        .map_err(|e| e.to_string())?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok((output.status.success(), text))
}

/// The last `KEPT_LINES` lines of `text`, trimmed.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(KEPT_LINES)..].join("\n")
}

/// A directory of its own for one run's locustfile and records, removed when the run is over.
#[derive(Debug)]
struct RunDir(PathBuf);

impl RunDir {
    fn create() -> std::io::Result<Self> {
        let path = std::env::temp_dir().join(format!(
            "fault-locust-{}-{:016x}",
            std::process::id(),
            rand::random::<u64>()
        ));
        std::fs::create_dir(&path)?;
        Ok(Self(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A run checked and ready to start: the locustfile fault hands to Locust, in a directory of its own.
#[derive(Debug)]
pub struct Prepared {
    plan: LocustPlan,
    program: String,
    version: String,
    dir: RunDir,
    /// The names of the mix's requests, in order, when the locustfile was written from it.
    mix_names: Vec<String>,
}

impl Prepared {
    pub fn plan(&self) -> &LocustPlan {
        &self.plan
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    fn locustfile(&self) -> PathBuf {
        self.dir.path().join("fault_locustfile.py")
    }

    fn records(&self) -> PathBuf {
        self.dir.path().join("records.jsonl")
    }

    /// The command that starts a worker elsewhere (it fetches the locustfile from the master).
    pub fn worker_command(&self) -> String {
        let host = match self.plan.master.ip() {
            ip if ip.is_unspecified() => "<this machine's address>".to_owned(),
            ip => ip.to_string(),
        };
        format!(
            "locust --worker --master-host {host} --master-port {} -f -",
            self.plan.master.port()
        )
    }
}

/// Checks everything a run needs before anything starts: Locust there and recent enough, the locustfile
/// there and importable (Locust's own error relayed), the master's port free. Without a locustfile one is
/// written from `mix`, each request given up after `timeout`.
pub async fn prepare(
    plan: &LocustPlan,
    mix: &Mix,
    timeout: Duration,
) -> Result<Prepared, LocustError> {
    let program = program();
    let (_, text) = run_to_end(&program, &["--version"])
        .await
        .map_err(|reason| LocustError::Absent {
            program: program.clone(),
            reason,
        })?;
    let Some((major, minor, version)) = parse_version(&text) else {
        return Err(LocustError::Absent {
            program,
            reason: format!("`--version` printed no Locust version: {}", tail(&text)),
        });
    };
    if (major, minor) < MIN_VERSION {
        return Err(LocustError::TooOld { found: version });
    }
    let (source, mix_names) = match &plan.locustfile {
        Some(path) => {
            let source = crate::files::read_text(path, MAX_LOCUSTFILE_BYTES)
                .map_err(|e| LocustError::Locustfile(e.to_string()))?;
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            (locustfile::wrapping(&path, &source), Vec::new())
        }
        None => (
            locustfile::from_mix(mix, timeout.as_secs_f64()),
            mix.requests().iter().map(|r| r.name.clone()).collect(),
        ),
    };
    let dir =
        RunDir::create().map_err(|e| LocustError::Spawn(format!("a temporary directory: {e}")))?;
    let prepared = Prepared {
        plan: plan.clone(),
        program,
        version,
        dir,
        mix_names,
    };
    std::fs::write(prepared.locustfile(), source)
        .map_err(|e| LocustError::Spawn(format!("writing the locustfile: {e}")))?;
    let file = prepared.locustfile().display().to_string();
    let (imported, output) = run_to_end(&prepared.program, &["-f", &file, "--list"])
        .await
        .map_err(|reason| LocustError::Absent {
            program: prepared.program.clone(),
            reason,
        })?;
    if !imported {
        return Err(LocustError::Import {
            path: plan.locustfile.as_ref().map_or_else(
                || "the locustfile written from the mix".into(),
                |p| p.display().to_string(),
            ),
            output: tail(&output),
        });
    }
    check_port(plan.master)?;
    Ok(prepared)
}

/// Whether the master's address is free (Locust's own error comes only once it runs, in its log).
fn check_port(addr: SocketAddr) -> Result<(), LocustError> {
    std::net::TcpListener::bind(addr)
        .map(drop)
        .map_err(|e| LocustError::PortInUse {
            addr,
            reason: e.to_string(),
        })
}

/// What the master says on stdout (the plugin's lines).
#[derive(Debug)]
enum Marker {
    Worker(String),
    Ready,
    Start(f64),
    Progress(u64, u64),
    End,
}

fn marker(line: &str) -> Option<Marker> {
    let mut words = line.strip_prefix("FAULT-LOCUST ")?.split_whitespace();
    let number = |w: Option<&str>| w.and_then(|w| w.parse::<f64>().ok());
    Some(match words.next()? {
        "worker" => Marker::Worker(words.next()?.to_owned()),
        "ready" => Marker::Ready,
        "start" => Marker::Start(number(words.next())?),
        "progress" => Marker::Progress(number(words.next())? as u64, number(words.next())? as u64),
        "end" => Marker::End,
        _ => return None,
    })
}

/// Logs each line of `stream` (Locust's log) and keeps the last ones in `kept`.
fn keep_lines(
    stream: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    kept: Arc<Mutex<VecDeque<String>>>,
    who: &'static str,
) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!("locust {who}: {line}");
            let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
            if kept.len() == KEPT_LINES {
                kept.pop_front();
            }
            kept.push_back(line);
        }
    });
}

/// A running Locust: its master, its local workers. Dropping it kills them all.
pub struct Launched {
    prepared: Arc<Prepared>,
    master: Child,
    stdin: Option<ChildStdin>,
    workers: Vec<Child>,
    markers: mpsc::UnboundedReceiver<Marker>,
    master_log: Arc<Mutex<VecDeque<String>>>,
    /// The workers that connected, by id.
    came: Vec<String>,
    duration: Duration,
}

impl Drop for Launched {
    fn drop(&mut self) {
        // `kill_on_drop` would do it as well; said here so that no path can forget it.
        let _ = self.master.start_kill();
        for worker in &mut self.workers {
            let _ = worker.start_kill();
        }
    }
}

/// The command of a Locust process with fault's locustfile.
fn locust(prepared: &Prepared) -> Command {
    let mut command = Command::new(&prepared.program);
    command
        .arg("-f")
        .arg(prepared.locustfile())
        .current_dir(prepared.dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

impl Launched {
    /// Starts the master (expecting the plan's workers) and the local workers, for a test of `duration`.
    pub fn start(prepared: Arc<Prepared>, duration: Duration) -> Result<Self, LocustError> {
        let plan = prepared.plan();
        let mut master = locust(&prepared);
        master
            .args(["--master", "--headless", "--only-summary"])
            .arg("--master-bind-host")
            .arg(plan.master.ip().to_string())
            .arg("--master-bind-port")
            .arg(plan.master.port().to_string())
            .arg("--expect-workers")
            .arg(plan.workers.count().to_string())
            .arg("-u")
            .arg(plan.users.to_string())
            .arg("-r")
            .arg(plan.spawn_rate.to_string())
            // The plugin ends the test at `duration` from its start; this is only a safety net.
            .arg("-t")
            .arg(format!("{}s", duration.as_secs() + END_GRACE.as_secs()))
            .env("FAULT_LOCUST_RECORDS", prepared.records())
            .env("FAULT_LOCUST_DURATION", duration.as_secs_f64().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if let Some(prefix) = &plan.csv_prefix {
            master
                .arg("--csv")
                .arg(std::path::absolute(prefix).unwrap_or_else(|_| prefix.clone()));
        }
        let mut master = master
            .spawn()
            .map_err(|e| LocustError::Spawn(e.to_string()))?;
        let master_log = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stderr) = master.stderr.take() {
            keep_lines(stderr, master_log.clone(), "master");
        }
        let (tx, markers) = mpsc::unbounded_channel();
        if let Some(stdout) = master.stdout.take() {
            tokio::spawn(async move {
                let mut lines = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    match marker(&line) {
                        Some(marker) => {
                            if tx.send(marker).is_err() {
                                break;
                            }
                        }
                        None => tracing::debug!("locust master: {line}"),
                    }
                }
            });
        }
        let stdin = master.stdin.take();
        let mut launched = Self {
            prepared: prepared.clone(),
            master,
            stdin,
            workers: Vec::new(),
            markers,
            master_log,
            came: Vec::new(),
            duration,
        };
        match plan.workers {
            Workers::Local(count) => {
                let host = match plan.master.ip() {
                    ip if ip.is_unspecified() => IpAddr::from([127, 0, 0, 1]),
                    ip => ip,
                };
                for _ in 0..count {
                    let mut worker = locust(&prepared);
                    worker
                        .args(["--worker", "--master-host"])
                        .arg(host.to_string())
                        .arg("--master-port")
                        .arg(plan.master.port().to_string());
                    let mut worker = worker
                        .spawn()
                        .map_err(|e| LocustError::Spawn(e.to_string()))?;
                    if let Some(stderr) = worker.stderr.take() {
                        keep_lines(stderr, Arc::default(), "worker");
                    }
                    launched.workers.push(worker);
                }
            }
            Workers::External(count) => {
                tracing::info!(
                    "waiting for {count} Locust workers: start each with `{}`",
                    prepared.worker_command()
                );
            }
        }
        Ok(launched)
    }

    /// The master's last lines of log.
    fn master_output(&self) -> String {
        let kept = self.master_log.lock().unwrap_or_else(|p| p.into_inner());
        kept.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// The next marker, or why there is none: the master ended, or `cancel` fired.
    async fn next_marker(&mut self, cancel: &CancellationToken) -> Result<Marker, LocustError> {
        tokio::select! {
            _ = cancel.cancelled() => Err(LocustError::Cancelled),
            marker = self.markers.recv() => match marker {
                Some(marker) => Ok(marker),
                None => {
                    let status = match tokio::time::timeout(Duration::from_secs(5), self.master.wait()).await {
                        Ok(Ok(status)) => status.to_string(),
                        _ => "unknown".to_owned(),
                    };
                    // Its last log lines may still be on their way.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Err(LocustError::MasterEnded { status, output: self.master_output() })
                }
            },
        }
    }

    /// Waits until every expected worker has come and the master is about to start (within the plan's
    /// `workers_wait`); past it, the error says how many came.
    pub async fn ready(&mut self, cancel: &CancellationToken) -> Result<(), LocustError> {
        let plan = self.prepared.plan().clone();
        let deadline = Instant::now() + plan.workers_wait;
        loop {
            let next = tokio::time::timeout_at(deadline, self.next_marker(cancel)).await;
            match next {
                Err(_) => {
                    return Err(LocustError::WorkersMissing {
                        came: self.came.len() as u32,
                        expected: plan.workers.count(),
                        wait: humantime::format_duration(plan.workers_wait).to_string(),
                    });
                }
                Ok(marker) => match marker? {
                    Marker::Worker(id) if !self.came.contains(&id) => self.came.push(id),
                    Marker::Ready => return Ok(()),
                    _ => {}
                },
            }
        }
    }

    /// Starts the test on `host` (the URL Locust's users send to): the instant, on this side, its records
    /// count from.
    pub async fn go(
        &mut self,
        host: &str,
        cancel: &CancellationToken,
    ) -> Result<(Instant, chrono::DateTime<chrono::Utc>), LocustError> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(LocustError::Spawn("the master's input is closed".into()));
        };
        stdin
            .write_all(format!("go {host}\n").as_bytes())
            .await
            .map_err(|e| LocustError::Spawn(format!("telling the master to start: {e}")))?;
        let _ = stdin.flush().await;
        loop {
            if let Marker::Start(epoch) = self.next_marker(cancel).await? {
                let now = chrono::Utc::now();
                let start =
                    chrono::DateTime::from_timestamp_micros((epoch * 1e6) as i64).unwrap_or(now);
                let behind = (now - start).to_std().unwrap_or_default();
                return Ok((Instant::now() - behind, start));
            }
        }
    }

    /// Waits for the test's end and the master's last records; the run's [`LoadReport`], its requests grouped
    /// by name and into phases cut at `cuts`, counted from `start` (what [`Self::go`] returned).
    pub async fn finish(
        mut self,
        (start, started_at): (Instant, chrono::DateTime<chrono::Utc>),
        cuts: &[Duration],
        cancel: &CancellationToken,
        progress: &LoadProgress,
    ) -> Result<(LoadReport, EngineFigures), LocustError> {
        let deadline = start + self.duration + END_GRACE;
        loop {
            match tokio::time::timeout_at(deadline, self.next_marker(cancel)).await {
                Err(_) => {
                    return Err(LocustError::MasterEnded {
                        status: format!(
                            "still running {}s after the test's end",
                            END_GRACE.as_secs()
                        ),
                        output: self.master_output(),
                    });
                }
                Ok(Err(LocustError::MasterEnded { .. })) => break,
                Ok(marker) => match marker? {
                    Marker::Progress(requests, failures) => {
                        progress.completed.store(requests, Ordering::Relaxed);
                        progress.started.store(requests, Ordering::Relaxed);
                        progress.errors.store(failures, Ordering::Relaxed);
                    }
                    Marker::End => break,
                    _ => {}
                },
            }
        }
        // The master has written its last records; it and its workers end on their own, or are killed.
        let _ = tokio::time::timeout(Duration::from_secs(10), self.master.wait()).await;
        for worker in &mut self.workers {
            let _ = tokio::time::timeout(Duration::from_secs(5), worker.wait()).await;
        }
        let records = std::fs::read_to_string(self.prepared.records())
            .map_err(|e| LocustError::Records(e.to_string()))?;
        let mut built = Built::new(&self.prepared.mix_names, self.duration, cuts);
        for (index, line) in records.lines().enumerate() {
            let record: Record = serde_json::from_str(line)
                .map_err(|e| LocustError::Records(format!("line {}: {e}", index + 1)))?;
            built.add(start, started_at, record);
        }
        let prepared = &self.prepared;
        let figures = EngineFigures {
            engine: "locust".into(),
            version: prepared.version.clone(),
            users: prepared.plan.users,
            spawn_rate: prepared.plan.spawn_rate,
            workers: built.workers(),
        };
        Ok((built.report(started_at, self.duration), figures))
    }
}

/// One request as the plugin wrote it: the worker's id, Locust's name, start (Unix seconds), response time
/// (ms), status (0: none), error (none: a success), response length.
#[derive(serde::Deserialize)]
struct Record(String, String, f64, f64, u16, Option<String>, u64);

/// How a request Locust recorded ended, in the load generator's terms.
fn outcome(status: u16, error: Option<String>) -> RequestOutcome {
    match (status, error) {
        (_, None) => RequestOutcome::Success,
        (0, Some(error)) if error.contains("Timeout") || error.contains("timed out") => {
            RequestOutcome::Timeout
        }
        (0, Some(error)) => RequestOutcome::Transport(error),
        (status, Some(_)) if status >= 400 => RequestOutcome::HttpError(status),
        (status, Some(_)) => RequestOutcome::Unexpected(status),
    }
}

/// A worker's share of the requests.
#[derive(Debug, Clone)]
pub struct WorkerShare {
    pub id: String,
    pub requests: u64,
}

/// What the report says of the engine: which, its users, and each worker's share.
#[derive(Debug, Clone)]
pub struct EngineFigures {
    pub engine: String,
    pub version: String,
    pub users: u32,
    pub spawn_rate: f64,
    pub workers: Vec<WorkerShare>,
}

/// The records read so far, per request name, as the load generator records its own.
struct Built {
    names: Vec<String>,
    recorders: Vec<SampleRecorder>,
    by_name: HashMap<String, usize>,
    workers: Vec<WorkerShare>,
    seconds: usize,
    cuts: Vec<Duration>,
    duration: Duration,
    last_end: Duration,
}

impl Built {
    fn new(names: &[String], duration: Duration, cuts: &[Duration]) -> Self {
        let mut built = Self {
            names: Vec::new(),
            recorders: Vec::new(),
            by_name: HashMap::new(),
            workers: Vec::new(),
            seconds: seconds_of(duration),
            cuts: cuts.to_vec(),
            duration,
            last_end: Duration::ZERO,
        };
        for name in names {
            built.recorder(name);
        }
        built
    }

    fn recorder(&mut self, name: &str) -> usize {
        if let Some(index) = self.by_name.get(name) {
            return *index;
        }
        self.names.push(name.to_owned());
        self.recorders.push(SampleRecorder::new(
            1,
            self.seconds,
            phases(&self.cuts, self.duration),
        ));
        self.by_name.insert(name.to_owned(), self.names.len() - 1);
        self.names.len() - 1
    }

    fn add(&mut self, start: Instant, started_at: chrono::DateTime<chrono::Utc>, record: Record) {
        let Record(worker, name, began, response_ms, status, error, length) = record;
        let t0 = started_at.timestamp_micros() as f64 / 1e6;
        let at = Duration::from_secs_f64((began - t0).max(0.0));
        let took = Duration::from_secs_f64((response_ms / 1e3).max(0.0));
        let client = match self.workers.iter().position(|w| w.id == worker) {
            Some(index) => index,
            None => {
                self.workers.push(WorkerShare {
                    id: worker,
                    requests: 0,
                });
                self.workers.len() - 1
            }
        };
        self.workers[client].requests += 1;
        let due = start + at;
        let timing = Timing {
            due,
            sent: Some(due),
            ended: due + took,
        };
        self.last_end = self.last_end.max(at + took);
        let index = self.recorder(&name);
        self.recorders[index].record(
            client as u32,
            (at, at + took),
            &timing,
            outcome(status, error),
            length,
        );
    }

    fn workers(&self) -> Vec<WorkerShare> {
        self.workers.clone()
    }

    fn report(self, started_at: chrono::DateTime<chrono::Utc>, duration: Duration) -> LoadReport {
        let per_request: Vec<RequestSamples> = self
            .names
            .iter()
            .zip(&self.recorders)
            .map(|(name, recorder)| RequestSamples {
                name: name.clone(),
                samples: recorder.samples(),
            })
            .collect();
        let mut samples = Samples::new(self.seconds);
        samples.phases = phases(&self.cuts, duration);
        for request in &per_request {
            samples.merge(&request.samples);
        }
        LoadReport {
            started_at,
            ended_at: chrono::Utc::now(),
            elapsed: self.last_end,
            planned: None,
            connections_opened: 0,
            cut_short: false,
            // A closed model offers what its users send: the requests started in each second.
            offered_per_second: samples.per_second.iter().map(|s| s.requests).collect(),
            samples,
            per_request,
        }
    }
}

/// Whether `path` names a locustfile that exists (checked as the fields are read).
pub fn check_locustfile(path: &Path) -> Result<(), String> {
    crate::files::regular_file(path)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_what_locust_prints() {
        assert_eq!(
            parse_version(
                "locust 2.47.0 from /venv/lib/python3.11/site-packages/locust (Python 3.11.7)"
            ),
            Some((2, 47, "2.47.0".into()))
        );
        assert_eq!(parse_version("locust 2.8.6"), Some((2, 8, "2.8.6".into())));
        assert!((2, 8) < MIN_VERSION && (2, 47) >= MIN_VERSION);
        assert_eq!(parse_version("command not found"), None);
    }

    #[test]
    fn the_plugins_lines_are_read_and_others_left() {
        assert!(
            matches!(marker("FAULT-LOCUST start 1795929363.3099222"), Some(Marker::Start(t)) if t > 1.7e9)
        );
        assert!(matches!(
            marker("FAULT-LOCUST progress 102 23"),
            Some(Marker::Progress(102, 23))
        ));
        assert!(
            matches!(marker("FAULT-LOCUST worker vm_b05"), Some(Marker::Worker(id)) if id == "vm_b05")
        );
        assert!(marker("Type     Name  # reqs").is_none());
    }

    #[test]
    fn a_record_ends_as_the_generator_would_have_said() {
        assert_eq!(outcome(200, None), RequestOutcome::Success);
        assert_eq!(
            outcome(503, Some("HTTPError".into())),
            RequestOutcome::HttpError(503)
        );
        assert_eq!(
            outcome(200, Some("status 200".into())),
            RequestOutcome::Unexpected(200)
        );
        assert_eq!(
            outcome(0, Some("ReadTimeout: x".into())),
            RequestOutcome::Timeout
        );
        assert_eq!(
            outcome(0, Some("ConnectionError: refused".into())),
            RequestOutcome::Transport("ConnectionError: refused".into())
        );
    }
}
