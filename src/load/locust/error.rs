//! Why a Locust run was refused or ended early.

use std::net::SocketAddr;

use super::install::{INSTALL, PROGRAM_VAR};

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
