//! A Locust run as the scenario asks for it.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

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
