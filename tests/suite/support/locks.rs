//! The locks between tests that must not run beside each other. Each test runs on a thread of its own, so a test
//! waiting here holds one of the harness's threads: with `FAULT_TEST_LOCK_LOG=<file>`, every hold is appended to
//! that file (test, lock, when asked, seconds waited, seconds held), to see where the suite's threads wait.
#![allow(dead_code)] // the measured binary includes this file and uses none of it

use std::{
    io::Write,
    time::{Instant, SystemTime, UNIX_EPOCH},
};

pub struct TestLock {
    name: &'static str,
    inner: tokio::sync::RwLock<()>,
}

impl TestLock {
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            inner: tokio::sync::RwLock::const_new(()),
        }
    }

    /// Alone: no other holder, shared or not.
    pub async fn lock(&'static self) -> Hold {
        let asked = Instant::now();
        let guard = Guard::Alone(self.inner.write().await);
        self.held(guard, asked)
    }

    /// [`Self::lock`] for a test that is not async (it must not be called inside a runtime).
    pub fn lock_blocking(&'static self) -> Hold {
        let asked = Instant::now();
        let guard = Guard::Alone(self.inner.blocking_write());
        self.held(guard, asked)
    }

    /// Beside other shared holders, never beside one that holds it alone. Holders are served in the order
    /// they asked, so one waiting to hold it alone is not passed by shared holders that ask after it.
    pub async fn share(&'static self) -> Hold {
        let asked = Instant::now();
        let guard = Guard::Shared(self.inner.read().await);
        self.held(guard, asked)
    }

    fn held(&'static self, guard: Guard, asked: Instant) -> Hold {
        Hold {
            lock: self.name,
            guard,
            asked,
            got: Instant::now(),
        }
    }
}

/// What a holder keeps until it drops it.
enum Guard {
    Alone(tokio::sync::RwLockWriteGuard<'static, ()>),
    Shared(tokio::sync::RwLockReadGuard<'static, ()>),
}

/// A lock held; released (and logged) when dropped.
pub struct Hold {
    lock: &'static str,
    guard: Guard,
    asked: Instant,
    got: Instant,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let Some(path) = std::env::var_os("FAULT_TEST_LOCK_LOG") else {
            return;
        };
        // When it was asked, as seconds since the epoch: now, less the time since.
        let asked_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |since| since.as_secs_f64())
            - self.asked.elapsed().as_secs_f64();
        let shared = match self.guard {
            Guard::Alone(_) => "",
            Guard::Shared(_) => "/shared",
        };
        let line = format!(
            "{} {}{shared} {:.3} {:.3} {:.3}\n",
            std::thread::current().name().unwrap_or("?"),
            self.lock,
            asked_at,
            (self.got - self.asked).as_secs_f64(),
            self.got.elapsed().as_secs_f64(),
        );
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = file.write_all(line.as_bytes());
        }
    }
}
