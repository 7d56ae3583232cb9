//! Bandwidth: a link of `rate` bytes per second shared by every connection of the proxy.
//!
//! The link is a virtual clock (GCRA): each chunk is sent when the link is free and takes
//! `len / rate` to cross it, so a body of N bytes takes N / rate, whatever the chunking.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use tokio::time::Instant;

use super::{Chunk, Stage, Verdict};

/// Idle time the link may bank, so timer wake-up lateness does not lower the rate.
const SLACK: Duration = Duration::from_millis(10);

pub struct Link {
    bytes_per_second: f64,
    /// When the link finishes sending what it has accepted so far.
    busy_until: Mutex<Option<Instant>>,
}

impl Link {
    pub fn new(bytes_per_second: u64) -> Self {
        Self {
            bytes_per_second: bytes_per_second.max(1) as f64,
            busy_until: Mutex::new(None),
        }
    }

    /// Reserves the link for `len` bytes; returns how long until they have crossed it.
    pub fn reserve(&self, len: usize, now: Instant) -> Duration {
        let cost = Duration::from_secs_f64(len as f64 / self.bytes_per_second);
        let mut guard = match self.busy_until.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let floor = now.checked_sub(SLACK).unwrap_or(now);
        let start = match *guard {
            Some(t) if t > floor => t,
            _ => floor,
        };
        let done = start + cost;
        *guard = Some(done);
        done.saturating_duration_since(now)
    }

    /// A chunk size that keeps delivery smooth: about 10 ms of traffic, between 256 B and 64 KiB.
    pub fn chunk_size(&self) -> usize {
        ((self.bytes_per_second / 100.0) as usize).clamp(256, 64 * 1024)
    }
}

pub struct Bandwidth {
    link: Arc<Link>,
}

impl Bandwidth {
    pub fn new(link: Arc<Link>) -> Self {
        Self { link }
    }
}

impl Stage for Bandwidth {
    fn max_chunk(&self) -> Option<usize> {
        Some(self.link.chunk_size())
    }

    fn on_chunk(&mut self, chunk: &Chunk<'_>, _rng: &mut StdRng) -> Verdict {
        let delay = self.link.reserve(chunk.bytes.len(), chunk.now);
        Verdict::after(delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_takes_len_over_rate_even_with_late_wakeups() {
        let link = Link::new(10_000);
        let start = Instant::now();
        let mut now = start;
        let mut sent = 0;
        while sent < 20_000 {
            let d = link.reserve(link.chunk_size(), now);
            // Every wake-up is 1 ms late, as a coarse timer would be.
            now += d + Duration::from_millis(1);
            sent += link.chunk_size();
        }
        let took = (now - start).as_secs_f64();
        assert!((took - 2.0).abs() < 0.02, "{took}");
    }
}
