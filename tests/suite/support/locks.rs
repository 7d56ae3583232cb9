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
    inner: tokio::sync::Mutex<()>,
}

impl TestLock {
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            inner: tokio::sync::Mutex::const_new(()),
        }
    }

    pub async fn lock(&'static self) -> Hold {
        let asked = Instant::now();
        let guard = self.inner.lock().await;
        self.held(guard, asked)
    }

    /// [`Self::lock`] for a test that is not async (it must not be called inside a runtime).
    pub fn lock_blocking(&'static self) -> Hold {
        let asked = Instant::now();
        let guard = self.inner.blocking_lock();
        self.held(guard, asked)
    }

    fn held(&'static self, guard: tokio::sync::MutexGuard<'static, ()>, asked: Instant) -> Hold {
        Hold {
            _guard: guard,
            lock: self.name,
            asked,
            got: Instant::now(),
        }
    }
}

/// A lock held; released (and logged) when dropped.
pub struct Hold {
    _guard: tokio::sync::MutexGuard<'static, ()>,
    lock: &'static str,
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
        let line = format!(
            "{} {} {:.3} {:.3} {:.3}\n",
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
