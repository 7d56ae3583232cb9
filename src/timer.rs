//! Waking at a precise instant, for everything in `fault` that must: the load scheduler's starts
//! ([`crate::load`], and through it [`crate::mcp_load`]) and the proxy's delays ([`crate::proxy`]).
//!
//! tokio's timer fires on 1 ms ticks, so a start or a delay it times is late by up to a millisecond, and for
//! the load generator that wait counts into every latency it reports. A [`Sleep`] here ends within tens of
//! microseconds of its deadline without spinning a core. How it waits, chosen at its first poll:
//! - on Linux, a `timerfd` of its own (a kernel high-resolution timer, which no timer slack delays) watched
//!   by the runtime's reactor: the kernel wakes the very runtime thread that polls the task, at the deadline,
//!   with no other thread in between, and a sleep reset for the next deadline re-arms the same timer;
//! - elsewhere, or when no timerfd can be had (out of file descriptors), one timer thread for the whole
//!   process waits for the earliest deadline (a futex wait with a timeout, the thread's timer slack lowered
//!   to 1 µs where the system allows) and wakes the task;
//! - when not even that thread could start, tokio's timer, to the millisecond;
//! - when tokio's clock is not the system's (paused or advanced, as in tests with `start_paused`), tokio's
//!   timer, the only one that follows that clock.
//!
//! A sleep needs a runtime with IO and time enabled (`enable_all`, as every runtime of this crate has).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

use tokio::time::Instant;

/// Sleeps until `deadline` (tokio clock), to within tens of microseconds; at once if it has passed.
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        way: Way::Undecided,
    }
}

/// A future that ends at its deadline; [`Sleep::reset`] moves the deadline, keeping what the sleep holds
/// (its timerfd), so a loop that waits again and again arms one timer.
#[must_use = "a sleep does nothing unless awaited"]
pub struct Sleep {
    deadline: Instant,
    way: Way,
}

enum Way {
    /// Not polled since it was made or reset with a deadline still ahead.
    Undecided,
    #[cfg(target_os = "linux")]
    Kernel {
        timer: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
        state: Armed,
    },
    Thread {
        timer: &'static thread::Timer,
        wake: Option<Arc<Wake>>,
    },
    Tokio(Pin<Box<tokio::time::Sleep>>),
}

/// Where a kernel timer stands for the current deadline.
#[cfg(target_os = "linux")]
#[derive(Clone, Copy, PartialEq, Eq)]
enum Armed {
    No,
    Yes,
    Fired,
}

impl Sleep {
    /// The instant this sleep ends.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Ends this sleep at `deadline` instead, as if it had just been made (it may end at once).
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        let this = self.get_mut();
        this.deadline = deadline;
        match &mut this.way {
            Way::Undecided => {}
            #[cfg(target_os = "linux")]
            Way::Kernel { state, .. } => *state = Armed::No,
            Way::Thread { wake, .. } => {
                if let Some(wake) = wake.take() {
                    wake.forget();
                }
            }
            Way::Tokio(sleep) => sleep.as_mut().reset(deadline),
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let deadline = this.deadline;
        loop {
            match &mut this.way {
                Way::Undecided => {
                    if deadline <= Instant::now() {
                        return Poll::Ready(());
                    }
                    this.way = choose(deadline);
                }
                #[cfg(target_os = "linux")]
                Way::Kernel { timer, state } => match kernel::poll(timer, state, deadline, cx) {
                    Poll::Ready(Ok(())) => return Poll::Ready(()),
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Err(e)) => {
                        tracing::debug!("kernel timer failed ({e}); waiting on the timer thread");
                        this.way = thread_or_tokio(deadline);
                    }
                },
                Way::Thread { timer, wake } => return timer.poll(wake, deadline, cx),
                // tokio's sleep would end a passed deadline at its timer's next turn, not at once.
                Way::Tokio(_) if deadline <= Instant::now() => return Poll::Ready(()),
                Way::Tokio(sleep) => return sleep.as_mut().poll(cx),
            }
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Way::Thread {
            wake: Some(wake), ..
        } = &self.way
        {
            wake.forget();
        }
    }
}

/// How a sleep with a deadline still ahead waits (see the module's documentation).
fn choose(deadline: Instant) -> Way {
    if !clock_is_the_systems() {
        return Way::Tokio(Box::pin(tokio::time::sleep_until(deadline)));
    }
    #[cfg(target_os = "linux")]
    match kernel::timer() {
        Ok(timer) => {
            return Way::Kernel {
                timer,
                state: Armed::No,
            };
        }
        Err(e) => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                tracing::warn!("no kernel timer ({e}); precise sleeps wait on a timer thread");
            });
        }
    }
    thread_or_tokio(deadline)
}

fn thread_or_tokio(deadline: Instant) -> Way {
    match thread::timer() {
        Some(timer) => Way::Thread { timer, wake: None },
        None => Way::Tokio(Box::pin(tokio::time::sleep_until(deadline))),
    }
}

/// Whether tokio's clock reads the system's monotonic clock: not when it is paused or was advanced (tests),
/// where only tokio's own timer keeps to it. A running clock reads between two system readings taken around
/// it; a paused one is frozen at some earlier or, once advanced, later instant.
fn clock_is_the_systems() -> bool {
    let before = std::time::Instant::now();
    let tokio_now = Instant::now().into_std();
    let after = std::time::Instant::now();
    before <= tokio_now && tokio_now <= after
}

/// One kernel timer per sleep, watched by the runtime's reactor.
#[cfg(target_os = "linux")]
mod kernel {
    use std::io;
    use std::os::fd::OwnedFd;
    use std::task::{Context, Poll, ready};

    use rustix::time::{
        Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec, timerfd_create,
        timerfd_settime,
    };
    use tokio::io::unix::AsyncFd;
    use tokio::time::Instant;

    use super::Armed;

    /// A new disarmed monotonic timer, registered with the current runtime's reactor.
    pub(super) fn timer() -> io::Result<AsyncFd<OwnedFd>> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        // SAFETY: the `AsyncFd` owns the descriptor (an `OwnedFd`, closed only when it is dropped) and nothing
        // replaces it, so it stays open and the same for the registration's whole life.
        unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
            .map_err(io::Error::from)
    }

    /// Arms `timer` for `deadline` if it is not yet, then waits for it to expire.
    pub(super) fn poll(
        timer: &AsyncFd<OwnedFd>,
        state: &mut Armed,
        deadline: Instant,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        if *state == Armed::Fired {
            return Poll::Ready(Ok(()));
        }
        if *state == Armed::No {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                *state = Armed::Fired;
                return Poll::Ready(Ok(()));
            }
            // Relative to now, which the deadline was measured against: the timer expires at or after it.
            // Setting the time also clears an expiry of the previous deadline that was never read.
            let zero = Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let value = Timespec::try_from(left).map_err(|_| io::ErrorKind::InvalidInput)?;
            timerfd_settime(
                timer.get_ref(),
                TimerfdTimerFlags::empty(),
                &Itimerspec {
                    it_interval: zero,
                    it_value: value,
                },
            )?;
            *state = Armed::Yes;
        }
        loop {
            let mut ready = ready!(timer.poll_read_ready(cx))?;
            // An expired timer reads as its expiry count; one not yet expired as "would block".
            let mut count = [0u8; 8];
            match ready.try_io(|fd| Ok(rustix::io::read(fd.get_ref(), &mut count)?)) {
                Ok(Ok(_)) => {
                    // The read took every expiry: the next deadline's wait goes straight to the reactor
                    // instead of first reading "would block" off a readiness already spent.
                    ready.clear_ready();
                    *state = Armed::Fired;
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

/// One sleep waiting on the timer thread; forgotten (never woken) once its sleep is dropped or reset.
struct Wake {
    fired: std::sync::atomic::AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Wake {
    fn forget(&self) {
        self.waker.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// The fallback: one timer thread for the whole process.
mod thread {
    use std::sync::atomic::Ordering;

    use super::*;

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

    pub(super) struct Timer {
        queue: &'static Queue,
        thread: std::thread::Thread,
    }

    impl Timer {
        /// Registers the sleep on its first poll, then ends it once the thread has fired it.
        pub(super) fn poll(
            &self,
            wake: &mut Option<Arc<Wake>>,
            deadline: Instant,
            cx: &mut Context<'_>,
        ) -> Poll<()> {
            let deadline = deadline.into_std();
            if std::time::Instant::now() >= deadline {
                return Poll::Ready(());
            }
            match wake {
                Some(wake) if wake.fired.load(Ordering::Acquire) => Poll::Ready(()),
                Some(wake) => {
                    *wake.waker.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(cx.waker().clone());
                    // The thread may have fired between the check and the new waker: look again.
                    if wake.fired.load(Ordering::Acquire) {
                        Poll::Ready(())
                    } else {
                        Poll::Pending
                    }
                }
                None => {
                    let new = Arc::new(Wake {
                        fired: std::sync::atomic::AtomicBool::new(false),
                        waker: Mutex::new(Some(cx.waker().clone())),
                    });
                    self.add(deadline, new.clone());
                    *wake = Some(new);
                    Poll::Pending
                }
            }
        }

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
        #[cfg(target_os = "linux")]
        if let Err(e) = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1_000)) {
            tracing::debug!("timer slack left at the default ({e}): wake-ups may be 50 µs late");
        }
        loop {
            let next = {
                let mut queue = queue.lock().unwrap_or_else(|p| p.into_inner());
                let now = std::time::Instant::now();
                while queue.0.peek().is_some_and(|Reverse(due)| due.0 <= now) {
                    if let Some(Reverse(Due(_, _, wake))) = queue.0.pop() {
                        wake.fired.store(true, Ordering::Release);
                        if let Some(waker) =
                            wake.waker.lock().unwrap_or_else(|p| p.into_inner()).take()
                        {
                            waker.wake();
                        }
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
    pub(super) fn timer() -> Option<&'static Timer> {
        static QUEUE: Queue = Mutex::new((BinaryHeap::new(), 0));
        static TIMER: OnceLock<Option<Timer>> = OnceLock::new();
        TIMER
            .get_or_init(|| {
                match std::thread::Builder::new()
                    .name("fault-timer".into())
                    .spawn(|| run(&QUEUE))
                {
                    Ok(handle) => Some(Timer {
                        queue: &QUEUE,
                        thread: handle.thread().clone(),
                    }),
                    Err(e) => {
                        tracing::warn!(
                            "no timer thread ({e}); precise sleeps may be up to 1 ms late"
                        );
                        None
                    }
                }
            })
            .as_ref()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    // How close to its deadline a sleep ends is a benchmark figure (`cargo bench --bench load`, "send on
    // time"; `cargo bench --bench proxy -- delays`): a timed assertion here would fail on a loaded machine.
    // These check the contract: never early, never lost, forgotten once dropped or reset.

    /// A sleep that waits the way `way` chooses for `deadline`.
    fn sleep_on(way: Choice, deadline: Instant) -> Sleep {
        Sleep {
            deadline,
            way: way(deadline),
        }
    }

    /// How a test makes a sleep wait for its deadline.
    type Choice = fn(Instant) -> Way;

    /// Every way a sleep can wait on a running clock: its own choice (the kernel timer on Linux), the timer
    /// thread, tokio's timer.
    fn ways() -> [(&'static str, Choice); 3] {
        [
            ("chosen", choose),
            ("thread", thread_or_tokio),
            ("tokio", |deadline| {
                Way::Tokio(Box::pin(tokio::time::sleep_until(deadline)))
            }),
        ]
    }

    /// Counts its wake-ups.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl std::task::Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn a_sleep_ends_at_or_after_its_deadline_and_is_never_lost() {
        #[cfg(target_os = "linux")]
        assert!(
            matches!(
                choose(Instant::now() + Duration::from_secs(1)),
                Way::Kernel { .. }
            ),
            "on Linux a sleep waits on its own kernel timer"
        );
        for (name, way) in ways() {
            for ms in [0.05, 0.3, 1.0, 2.5, 10.0] {
                let deadline = Instant::now() + Duration::from_secs_f64(ms / 1e3);
                let sleep = sleep_on(way, deadline);
                tokio::time::timeout(Duration::from_secs(5), sleep)
                    .await
                    .unwrap_or_else(|_| panic!("{name}: {ms} ms sleep lost its wake-up"));
                assert!(
                    Instant::now() >= deadline,
                    "{name}: {ms} ms sleep ended early"
                );
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_sleeps_at_once_each_end_at_or_after_its_own_deadline() {
        for (name, way) in ways() {
            let start = Instant::now();
            let sleeps = (0..300u64).map(|i| {
                // Deadlines spread over 30 ms, out of order, some equal.
                let deadline = start + Duration::from_micros((i * 7_919) % 30_000);
                async move {
                    sleep_on(way, deadline).await;
                    Instant::now() >= deadline
                }
            });
            let ended = tokio::time::timeout(
                Duration::from_secs(10),
                futures::future::join_all(sleeps.map(tokio::spawn)),
            )
            .await
            .unwrap_or_else(|_| panic!("{name}: some of 300 sleeps never ended"));
            let on_time = ended.into_iter().filter(|r| matches!(r, Ok(true))).count();
            assert_eq!(on_time, 300, "{name}: sleeps ended early or failed");
        }
    }

    #[tokio::test]
    async fn a_dropped_or_reset_sleep_is_forgotten() {
        for (name, way) in ways() {
            let mut stalls = 0;
            while !near_deadlines_are_forgotten(name, way).await {
                stalls += 1;
                assert!(
                    stalls < 5,
                    "{name}: the machine stalled past a deadline 20 ms ahead five times in a row"
                );
            }
        }
    }

    /// Drops one sleep and moves another away from a deadline 20 ms ahead, then checks that nobody is woken
    /// for it. False when the machine stalled past that deadline before the first polls, which then prove
    /// nothing.
    async fn near_deadlines_are_forgotten(name: &str, way: Choice) -> bool {
        let counting = Arc::new(Counting::default());
        let waker = Waker::from(counting.clone());
        let mut cx = Context::from_waker(&waker);
        let soon = Instant::now() + Duration::from_millis(20);
        let waits = |sleep: &mut Sleep, cx: &mut Context<'_>| {
            let pending = Pin::new(sleep).poll(cx).is_pending();
            assert!(
                pending || Instant::now() >= soon,
                "{name}: a sleep ended before its deadline"
            );
            pending
        };
        let mut dropped = sleep_on(way, soon);
        if !waits(&mut dropped, &mut cx) {
            return false;
        }
        drop(dropped);
        let mut moved = sleep_on(way, soon);
        if !waits(&mut moved, &mut cx) {
            return false;
        }
        let later = Instant::now() + Duration::from_secs(60);
        Pin::new(&mut moved).reset(later);
        assert_eq!(moved.deadline(), later);
        assert!(Pin::new(&mut moved).poll(&mut cx).is_pending(), "{name}");
        // Well past the first deadline: neither the dropped sleep nor the old deadline woke anyone.
        std::thread::sleep(
            (soon + Duration::from_millis(30)).saturating_duration_since(Instant::now()),
        );
        tokio::task::yield_now().await;
        assert_eq!(
            counting.0.load(Ordering::SeqCst),
            0,
            "{name}: woken for a forgotten deadline"
        );
        assert!(Pin::new(&mut moved).poll(&mut cx).is_pending(), "{name}");
        // Reset into the past, it ends at the next poll.
        Pin::new(&mut moved).reset(Instant::now());
        assert!(Pin::new(&mut moved).poll(&mut cx).is_ready(), "{name}");
        true
    }

    #[tokio::test]
    async fn a_deadline_already_passed_ends_at_the_first_poll() {
        let waker = Waker::from(Arc::new(Counting::default()));
        let mut cx = Context::from_waker(&waker);
        let now = Instant::now();
        for deadline in [now, now - Duration::from_millis(5)] {
            assert!(
                Pin::new(&mut sleep_until(deadline))
                    .poll(&mut cx)
                    .is_ready()
            );
            for (name, way) in ways() {
                let mut sleep = sleep_on(way, deadline);
                assert!(Pin::new(&mut sleep).poll(&mut cx).is_ready(), "{name}");
            }
        }
    }

    #[tokio::test]
    async fn a_sleep_reset_again_and_again_ends_at_each_deadline() {
        let sleep = sleep_until(Instant::now());
        tokio::pin!(sleep);
        for _ in 0..50 {
            let deadline = Instant::now() + Duration::from_micros(200);
            sleep.as_mut().reset(deadline);
            tokio::time::timeout(Duration::from_secs(5), sleep.as_mut())
                .await
                .expect("a reset sleep lost its wake-up");
            assert!(Instant::now() >= deadline, "a reset sleep ended early");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn on_a_paused_clock_a_sleep_keeps_to_tokio_s_time() {
        let start = Instant::now();
        let real = std::time::Instant::now();
        sleep_until(start + Duration::from_secs(3600)).await;
        assert!(Instant::now() >= start + Duration::from_secs(3600));
        assert!(
            real.elapsed() < Duration::from_secs(60),
            "waited in real time"
        );
    }
}
