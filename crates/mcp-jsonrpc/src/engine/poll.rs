//! The few polling tools the engine needs, written here rather than taken from `futures-util`
//! (a crate a minimal server would otherwise compile for them alone).

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use super::lock;

/// `fut` run to its end, with a panic in one of its polls caught and returned as `Err`.
pub(crate) async fn caught<F: Future>(fut: F) -> std::thread::Result<F::Output> {
    let mut fut = std::pin::pin!(fut);
    CatchUnwind(fut.as_mut()).await
}

/// Polls the future it points to, catching a panic in a poll as `Err`.
pub(crate) struct CatchUnwind<'a, F>(pub(crate) Pin<&'a mut F>);

impl<F: Future> Future for CatchUnwind<'_, F> {
    type Output = std::thread::Result<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // A future that panicked is never polled again: its caller gets the `Err`.
        match catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(polled) => polled.map(Ok),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// The waker of the task to wake, registered by that task on each poll and woken from any
/// thread.
#[derive(Default)]
pub(crate) struct WakerSlot(Mutex<Option<Waker>>);

impl WakerSlot {
    /// Keeps `waker`, unless the one kept already wakes the same task.
    pub(crate) fn register(&self, waker: &Waker) {
        let mut slot = lock(&self.0);
        if !slot.as_ref().is_some_and(|kept| kept.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
    }

    /// Wakes the task registered last, if any; it registers again when polled. Wakes before
    /// that poll find nothing to wake: one is enough.
    pub(crate) fn wake(&self) {
        let waker = lock(&self.0).take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// A future polled only when its own waker fired (and on its first poll), for work that shares
/// a task with an engine's [`Driver`](crate::Driver): the driver wakes for every message, and
/// a future polled along with it each time would redo its own checks (a lock, a waker clone)
/// for nothing.
///
/// ```
/// # async fn run(driver: mcp_jsonrpc::Driver) {
/// use mcp_jsonrpc::WhenWoken;
///
/// let mut background = std::pin::pin!(std::future::pending::<()>());
/// let background = WhenWoken::new(background.as_mut());
/// tokio::select! {
///     biased;
///     _ = driver => {}
///     () = background => {}
/// }
/// # }
/// ```
pub struct WhenWoken<F> {
    inner: F,
    flag: Arc<WakeFlag>,
}

struct WakeFlag {
    woken: AtomicBool,
    task: WakerSlot,
}

impl Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

impl<F: Future + Unpin> WhenWoken<F> {
    /// Wraps `inner`.
    pub fn new(inner: F) -> Self {
        WhenWoken {
            inner,
            flag: Arc::new(WakeFlag {
                woken: AtomicBool::new(true),
                task: WakerSlot::default(),
            }),
        }
    }
}

impl<F: Future + Unpin> Future for WhenWoken<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // Registered before the flag is read: a wake in between is not lost.
        self.flag.task.register(cx.waker());
        if !self.flag.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        let waker = Waker::from(Arc::clone(&self.flag));
        Pin::new(&mut self.inner).poll(&mut Context::from_waker(&waker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts its polls and keeps the waker of the last one.
    #[derive(Default)]
    struct Probe {
        polls: usize,
        waker: Option<Waker>,
    }

    impl Future for Probe {
        type Output = ();

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls += 1;
            self.waker = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    #[test]
    fn a_quiet_future_is_polled_only_when_its_own_waker_fired() {
        let mut quiet = WhenWoken::new(Probe::default());
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..3 {
            assert!(Pin::new(&mut quiet).poll(&mut cx).is_pending());
        }
        assert_eq!(quiet.inner.polls, 1, "only the first poll reaches it");
        quiet.inner.waker.take().expect("it registered").wake();
        assert!(Pin::new(&mut quiet).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut quiet).poll(&mut cx).is_pending());
        assert_eq!(quiet.inner.polls, 2, "polled again once, after its wake");
    }

    #[tokio::test]
    async fn a_panic_in_a_poll_is_caught() {
        let answer = caught(async { 7 }).await;
        assert_eq!(answer.ok(), Some(7));
        let panicked = caught(async {
            tokio::task::yield_now().await;
            panic!("in the second poll");
        })
        .await;
        assert!(panicked.is_err());
    }

    #[test]
    fn a_slot_wakes_the_task_registered_last() {
        struct Count(std::sync::atomic::AtomicUsize);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let (first, second) = (Arc::new(Count(0.into())), Arc::new(Count(0.into())));
        let slot = WakerSlot::default();
        slot.wake();
        slot.register(&Waker::from(Arc::clone(&first)));
        slot.register(&Waker::from(Arc::clone(&second)));
        slot.wake();
        slot.wake();
        assert_eq!(first.0.load(Ordering::Relaxed), 0);
        assert_eq!(
            second.0.load(Ordering::Relaxed),
            1,
            "once until it registers again"
        );
    }
}
