//! The connections a listener serves, asked to finish when the server shuts down.
//!
//! hyper-util's `GracefulShutdown` watches one channel shared by every connection: each poll
//! of each connection polls that channel's notification, under its lock, so concurrent
//! requests on different threads contend for it. Here every connection has a flag and a waker
//! of its own; the shared set is locked only when a connection opens or closes, and by the
//! shutdown.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use futures_util::task::AtomicWaker;
use hyper_util::server::graceful::GracefulConnection;
use tokio::sync::Notify;

/// A connection that can be asked to finish: hyper's, through `GracefulConnection`.
pub(crate) trait Finish: Future {
    /// Asks the connection to finish what it is doing and close.
    fn finish(self: Pin<&mut Self>);
}

impl<C: GracefulConnection> Finish for C {
    fn finish(self: Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// The open connections of one listener.
#[derive(Default)]
pub(crate) struct Tracker {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Fires when the last connection closes after the shutdown began.
    drained: Notify,
}

#[derive(Default)]
struct State {
    next: u64,
    open: HashMap<u64, Arc<Signal>>,
    shutting_down: bool,
}

/// One connection's shutdown request.
#[derive(Default)]
struct Signal {
    asked: AtomicBool,
    waker: AtomicWaker,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Tracker {
    /// Serves `conn` as one of the tracked connections: once the shutdown begins, it is asked
    /// to finish (HTTP/1.1: after the request in progress; HTTP/2: a GOAWAY).
    pub(crate) fn watch<C: Finish>(&self, conn: C) -> Watched<C> {
        let signal = Arc::new(Signal::default());
        let key = {
            let mut st = self.shared.lock();
            let key = st.next;
            st.next += 1;
            if st.shutting_down {
                signal.asked.store(true, Ordering::Release);
            }
            st.open.insert(key, Arc::clone(&signal));
            key
        };
        Watched {
            conn: Box::pin(conn),
            signal,
            asked: false,
            registered: None,
            _entry: Entry {
                shared: Arc::clone(&self.shared),
                key,
            },
        }
    }

    /// How many connections are open.
    pub(crate) fn open(&self) -> usize {
        self.shared.lock().open.len()
    }

    /// Asks every connection to finish and waits until all have closed.
    pub(crate) async fn shutdown(&self) {
        {
            let mut st = self.shared.lock();
            st.shutting_down = true;
            for signal in st.open.values() {
                signal.asked.store(true, Ordering::Release);
                signal.waker.wake();
            }
        }
        loop {
            let drained = self.shared.drained.notified();
            if self.shared.lock().open.is_empty() {
                return;
            }
            drained.await;
        }
    }
}

/// A tracked connection (see [`Tracker::watch`]).
pub(crate) struct Watched<C> {
    conn: Pin<Box<C>>,
    signal: Arc<Signal>,
    /// `graceful_shutdown` was called.
    asked: bool,
    /// The waker last registered with the signal.
    registered: Option<Waker>,
    /// Held for its `Drop`: removes the connection from the set.
    _entry: Entry,
}

/// Removes a connection from the set when it is dropped.
struct Entry {
    shared: Arc<Shared>,
    key: u64,
}

impl Drop for Entry {
    fn drop(&mut self) {
        let empty = {
            let mut st = self.shared.lock();
            st.open.remove(&self.key);
            st.shutting_down && st.open.is_empty()
        };
        if empty {
            self.shared.drained.notify_waiters();
        }
    }
}

impl<C: Finish> Future for Watched<C> {
    type Output = C::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let this = &mut *self;
        if !this.asked {
            // Registered before the flag is read: a shutdown between the two wakes this task.
            // Again only when polled by another task's waker (the registered one stays valid):
            // no atomic write per poll.
            if !this
                .registered
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
            {
                this.signal.waker.register(cx.waker());
                this.registered = Some(cx.waker().clone());
            }
            if this.signal.asked.load(Ordering::Acquire) {
                this.asked = true;
                this.conn.as_mut().finish();
            }
        }
        this.conn.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A connection that ends once asked to finish.
    struct Conn {
        asked: bool,
    }

    impl Future for Conn {
        type Output = Result<(), std::io::Error>;

        fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
            if self.asked {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            }
        }
    }

    impl Finish for Conn {
        fn finish(mut self: Pin<&mut Self>) {
            self.asked = true;
        }
    }

    #[tokio::test]
    async fn shutdown_asks_every_connection_and_waits_for_them() {
        let tracker = Tracker::default();
        let a = tokio::spawn(tracker.watch(Conn { asked: false }));
        let b = tokio::spawn(tracker.watch(Conn { asked: false }));
        tokio::task::yield_now().await;
        assert!(!a.is_finished() && !b.is_finished());
        tokio::time::timeout(Duration::from_secs(5), tracker.shutdown())
            .await
            .expect("every connection closes");
        assert!(a.await.unwrap().is_ok());
        assert!(b.await.unwrap().is_ok());
        assert!(tracker.shared.lock().open.is_empty());
        // A connection opened after the shutdown began is asked at once.
        let late = tracker.watch(Conn { asked: false });
        assert!(late.await.is_ok());
    }

    /// Counts its wakes.
    struct Count(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn shutdown_wakes_the_task_that_polled_last() {
        let tracker = Tracker::default();
        let mut conn = Box::pin(tracker.watch(Conn { asked: false }));
        let first = Arc::new(Count(0.into()));
        let second = Arc::new(Count(0.into()));
        for count in [&first, &first, &second] {
            let waker = Waker::from(Arc::clone(count));
            assert!(
                conn.as_mut()
                    .poll(&mut Context::from_waker(&waker))
                    .is_pending()
            );
        }
        // Asks at once, then waits for the connection to close.
        let mut shutdown = std::pin::pin!(tracker.shutdown());
        let noop = &mut Context::from_waker(Waker::noop());
        assert!(shutdown.as_mut().poll(noop).is_pending());
        assert_eq!(
            second.0.load(Ordering::SeqCst),
            1,
            "the last poller is woken"
        );
        assert_eq!(first.0.load(Ordering::SeqCst), 0, "not an earlier one");
        assert!(conn.as_mut().await.is_ok());
        drop(conn);
        tokio::time::timeout(Duration::from_secs(5), shutdown)
            .await
            .expect("the connection closed");
    }

    #[tokio::test]
    async fn shutdown_with_no_connection_returns_at_once() {
        let tracker = Tracker::default();
        drop(tracker.watch(Conn { asked: true }));
        tokio::time::timeout(Duration::from_secs(5), tracker.shutdown())
            .await
            .expect("nothing to wait for");
    }
}
