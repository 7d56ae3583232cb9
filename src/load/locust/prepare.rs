//! Checking a run before anything starts, and the directory holding its locustfile and records.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use super::{
    LocustError, LocustPlan,
    install::{MIN_VERSION, parse_version, program, run_to_end, tail},
    locustfile,
};
use crate::load::Mix;

/// A locustfile is read whole, up to this size.
const MAX_LOCUSTFILE_BYTES: u64 = 4 << 20;

/// A directory of its own for one run's locustfile and records, removed when the run is over.
#[derive(Debug)]
pub(super) struct RunDir(PathBuf);

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

    pub(super) fn path(&self) -> &Path {
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
    pub(super) plan: LocustPlan,
    pub(super) program: String,
    pub(super) version: String,
    pub(super) dir: RunDir,
    /// The names of the mix's requests, in order, when the locustfile was written from it.
    pub(super) mix_names: Vec<String>,
}

impl Prepared {
    pub fn plan(&self) -> &LocustPlan {
        &self.plan
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    pub(super) fn locustfile(&self) -> PathBuf {
        self.dir.path().join("fault_locustfile.py")
    }

    pub(super) fn records(&self) -> PathBuf {
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

/// Whether `path` names a locustfile that exists (checked as the fields are read).
pub fn check_locustfile(path: &Path) -> Result<(), String> {
    crate::files::regular_file(path)
        .map(drop)
        .map_err(|e| e.to_string())
}
