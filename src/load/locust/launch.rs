//! A running Locust: its master and local workers started, waited for, told to go, and read at the end.

use std::{
    collections::VecDeque,
    net::IpAddr,
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
    LocustError, Workers,
    install::KEPT_LINES,
    prepare::Prepared,
    records::{Built, EngineFigures, Record},
};
use crate::load::{LoadProgress, LoadReport};

/// After the run's duration, how long the master gets to stop its workers and write its last records.
const END_GRACE: Duration = Duration::from_secs(30);

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
