//! When one piece of load work (an HTTP request of [`super`], an attempt of an MCP tool call of
//! [`crate::mcp_load`]) was due, sent and ended, and the one timeout rule of both drivers.
//!
//! As oha's `RequestResult { start_latency_correction, start, end }`: latency runs from when the work was
//! due, not from when it was sent, so a client that sends late (its task busy, or its in-flight slots
//! taken) cannot hide the wait (no coordinated omission); keeping the send apart splits that latency into
//! queueing delay (due → sent, on our side) and service time (sent → ended, the target's and the network's).

use std::time::Duration;

use tokio::time::Instant;

/// One piece of work's times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// When the schedule said it should start.
    pub due: Instant,
    /// When it was sent (its driver began the exchange); `None`: never sent, as it came due while its client
    /// was at its in-flight cap.
    pub sent: Option<Instant>,
    /// When its answer ended, or it timed out; for work never sent, its deadline.
    pub ended: Instant,
}

impl Timing {
    /// Work that came due while its client was at its in-flight cap: never sent, so it counts as waiting
    /// until its deadline, when a client would have given up on it.
    pub fn not_started(due: Instant, timeout: Duration) -> Self {
        Self {
            due,
            sent: None,
            ended: deadline(due, timeout),
        }
    }

    /// Due → ended: what the reports call latency.
    pub fn latency(&self) -> Duration {
        self.ended.saturating_duration_since(self.due)
    }

    /// Due → sent; work never sent waited its whole latency.
    pub fn queueing(&self) -> Duration {
        self.sent
            .unwrap_or(self.ended)
            .saturating_duration_since(self.due)
    }

    /// Sent → ended; `None` for work never sent.
    pub fn service(&self) -> Option<Duration> {
        self.sent
            .map(|sent| self.ended.saturating_duration_since(sent))
    }
}

/// When work due at `due` times out: `timeout` after it was due, however late it was sent, so its latency
/// is never more than the timeout.
pub fn deadline(due: Instant, timeout: Duration) -> Instant {
    due + timeout
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_queueing_plus_service_and_a_start_never_made_waited_until_its_deadline() {
        let due = Instant::now();
        let ms = Duration::from_millis;
        let late = Timing {
            due,
            sent: Some(due + ms(30)),
            ended: due + ms(100),
        };
        assert_eq!(late.latency(), ms(100));
        assert_eq!(late.queueing(), ms(30));
        assert_eq!(late.service(), Some(ms(70)));
        let refused = Timing::not_started(due, ms(500));
        assert_eq!(refused.latency(), ms(500));
        assert_eq!(refused.queueing(), ms(500));
        assert_eq!(refused.service(), None);
    }
}
