//! Delays exact to well under a millisecond, without spinning.
//!
//! tokio's timer fires on 1 ms ticks, rounding every delay up by up to a millisecond. A precise sleep waits on
//! it until just before its deadline, then hands the last stretch to one timer thread for the whole process,
//! which sleeps on the kernel's high-resolution timers (a futex wait with a timeout) and wakes the task at the
//! deadline: one thread wake-up per delayed message instead of polling through the last millisecond.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;

/// How long before the deadline the tokio timer hands over to the timer thread.
const COARSE_MARGIN: Duration = Duration::from_millis(1);

/// Sleeps until `deadline` (tokio clock), to within the kernel's timer slack (about 50 µs).
pub(super) async fn sleep_until(deadline: Instant) {
    if let Some(coarse) = deadline.checked_sub(COARSE_MARGIN)
        && coarse > Instant::now()
    {
        tokio::time::sleep_until(coarse).await;
    }
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return;
    }
    match timer() {
        Some(timer) => {
            FineSleep {
                timer,
                deadline: std::time::Instant::now() + remaining,
                wake: None,
            }
            .await
        }
        None => tokio::time::sleep_until(deadline).await,
    }
}

/// One sleep registered with the timer thread.
struct Wake {
    fired: AtomicBool,
    waker: Mutex<Waker>,
}

struct FineSleep {
    timer: &'static Timer,
    deadline: std::time::Instant,
    wake: Option<Arc<Wake>>,
}

impl Future for FineSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if std::time::Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        match &self.wake {
            Some(wake) if wake.fired.load(Ordering::Acquire) => Poll::Ready(()),
            Some(wake) => {
                *wake.waker.lock().unwrap_or_else(|p| p.into_inner()) = cx.waker().clone();
                // The thread may have fired between the check and the new waker: look again.
                if wake.fired.load(Ordering::Acquire) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            }
            None => {
                let wake = Arc::new(Wake {
                    fired: AtomicBool::new(false),
                    waker: Mutex::new(cx.waker().clone()),
                });
                self.timer.add(self.deadline, wake.clone());
                self.wake = Some(wake);
                Poll::Pending
            }
        }
    }
}

/// A sleep in the timer thread's queue, earliest deadline first.
struct Due(std::time::Instant, u64, Arc<Wake>);

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.0, self.1) == (other.0, other.1)
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.0, self.1).cmp(&(other.0, other.1))
    }
}

type Queue = Mutex<(BinaryHeap<Reverse<Due>>, u64)>;

struct Timer {
    queue: &'static Queue,
    thread: std::thread::Thread,
}

impl Timer {
    fn add(&self, deadline: std::time::Instant, wake: Arc<Wake>) {
        let earliest = {
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            let (heap, next_id) = &mut *queue;
            *next_id += 1;
            heap.push(Reverse(Due(deadline, *next_id, wake)));
            heap.peek().is_some_and(|Reverse(due)| due.1 == *next_id)
        };
        if earliest {
            self.thread.unpark();
        }
    }
}

/// The timer thread's loop: wake every due sleep, then park until the earliest one left.
fn run(queue: &Queue) {
    loop {
        let next = {
            let mut queue = queue.lock().unwrap_or_else(|p| p.into_inner());
            let now = std::time::Instant::now();
            while queue.0.peek().is_some_and(|Reverse(due)| due.0 <= now) {
                if let Some(Reverse(Due(_, _, wake))) = queue.0.pop() {
                    wake.fired.store(true, Ordering::Release);
                    wake.waker
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .wake_by_ref();
                }
            }
            queue.0.peek().map(|Reverse(due)| due.0 - now)
        };
        match next {
            Some(wait) => std::thread::park_timeout(wait),
            None => std::thread::park(),
        }
    }
}

/// The process's timer thread, started on first use; `None` if no thread could be started.
fn timer() -> Option<&'static Timer> {
    static QUEUE: Queue = Mutex::new((BinaryHeap::new(), 0));
    static TIMER: OnceLock<Option<Timer>> = OnceLock::new();
    TIMER
        .get_or_init(|| {
            match std::thread::Builder::new()
                .name("fault-precise-timer".into())
                .spawn(|| run(&QUEUE))
            {
                Ok(handle) => Some(Timer {
                    queue: &QUEUE,
                    thread: handle.thread().clone(),
                }),
                Err(e) => {
                    tracing::warn!("no precise timer thread ({e}); delays may be up to 1 ms late");
                    None
                }
            }
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Accuracy is a benchmark figure (`cargo bench --bench proxy -- delays`, the latency accuracy table):
    // a timed assertion here would fail on a loaded machine. This checks the sleep ends, never early.
    #[tokio::test]
    async fn sleeps_end_at_or_after_their_deadline_and_never_hang() {
        for ms in [0.3, 1.0, 2.5, 10.0] {
            let start = Instant::now();
            let deadline = start + Duration::from_secs_f64(ms / 1e3);
            sleep_until(deadline).await;
            let late = Instant::now().saturating_duration_since(deadline);
            assert!(Instant::now() >= deadline, "{ms} ms sleep ended early");
            assert!(
                late < Duration::from_secs(2),
                "{ms} ms sleep ended {late:?} late: the wake-up was lost"
            );
        }
    }
}
