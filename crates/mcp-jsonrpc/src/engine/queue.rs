//! Where a [`Peer`](super::Peer) puts what it sends: the engine's outbound queue, or the queue
//! of one request a transport serves in its own task (see [`Running`](super::Running)).
//!
//! The request's queue is made for every request a transport serves in its own task, and most never
//! carry a message: it is one small allocation (a lock around a deque that allocates on its
//! first message), where a Tokio channel would cost two, one of them a cache-aligned block of
//! half a kilobyte.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use tokio::sync::mpsc;

use super::Queued;

/// The sending side a [`Peer`](super::Peer) holds.
pub(super) enum Tx {
    /// The engine's outbound queue.
    Engine(mpsc::Sender<Queued>),
    /// The queue of one request a transport serves in its own task.
    Request(RequestTx),
    /// The queue of one request that stands alone: nothing carries the peer's answers to its
    /// requests back, so it sends none.
    Alone(RequestTx),
}

impl Clone for Tx {
    fn clone(&self) -> Self {
        match self {
            Tx::Engine(tx) => Tx::Engine(tx.clone()),
            Tx::Request(tx) => Tx::Request(tx.clone()),
            Tx::Alone(tx) => Tx::Alone(tx.clone()),
        }
    }
}

impl Tx {
    /// Queues `item`, waiting for room; gives it back when nobody receives any more.
    pub(super) async fn send(&self, item: Queued) -> Result<(), Queued> {
        match self {
            Tx::Engine(tx) => tx.send(item).await.map_err(|e| e.0),
            Tx::Request(tx) | Tx::Alone(tx) => tx.send(item).await,
        }
    }
}

struct State {
    items: VecDeque<Queued>,
    senders: usize,
    receiving: bool,
    receiver: Option<Waker>,
    /// Senders waiting for room; all are woken when room is made (a full queue is rare).
    waiting: Vec<Waker>,
}

struct Queue {
    state: Mutex<State>,
    capacity: usize,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A bounded queue for one request: at most `capacity` items wait before senders wait.
pub(super) fn request_queue(capacity: usize) -> (RequestTx, RequestRx) {
    let queue = Arc::new(Queue {
        state: Mutex::new(State {
            items: VecDeque::new(),
            senders: 1,
            receiving: true,
            receiver: None,
            waiting: Vec::new(),
        }),
        capacity: capacity.max(1),
    });
    (
        RequestTx {
            queue: Arc::clone(&queue),
        },
        RequestRx { queue },
    )
}

/// The sending side of a request's queue.
pub(super) struct RequestTx {
    queue: Arc<Queue>,
}

impl Clone for RequestTx {
    fn clone(&self) -> Self {
        self.queue.lock().senders += 1;
        RequestTx {
            queue: Arc::clone(&self.queue),
        }
    }
}

impl Drop for RequestTx {
    fn drop(&mut self) {
        let waker = {
            let mut st = self.queue.lock();
            st.senders -= 1;
            if st.senders == 0 {
                st.receiver.take()
            } else {
                None
            }
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl RequestTx {
    async fn send(&self, item: Queued) -> Result<(), Queued> {
        let mut item = Some(item);
        poll_fn(|cx| {
            let mut st = self.queue.lock();
            if !st.receiving {
                return Poll::Ready(item.take().map_or(Ok(()), Err));
            }
            if st.items.len() >= self.queue.capacity {
                if !st.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                    st.waiting.push(cx.waker().clone());
                }
                return Poll::Pending;
            }
            if let Some(item) = item.take() {
                st.items.push_back(item);
            }
            let waker = st.receiver.take();
            drop(st);
            if let Some(w) = waker {
                w.wake();
            }
            Poll::Ready(Ok(()))
        })
        .await
    }
}

/// The receiving side of a request's queue.
pub(super) struct RequestRx {
    queue: Arc<Queue>,
}

impl RequestRx {
    /// The next item; `None` once it is empty and every sender is gone. When pending, the task
    /// is woken by the next item or the last sender's drop.
    pub(super) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Queued>> {
        let mut st = self.queue.lock();
        if let Some(item) = st.items.pop_front() {
            let waiting = std::mem::take(&mut st.waiting);
            drop(st);
            waiting.into_iter().for_each(Waker::wake);
            return Poll::Ready(Some(item));
        }
        if st.senders == 0 {
            return Poll::Ready(None);
        }
        match &mut st.receiver {
            Some(w) => w.clone_from(cx.waker()),
            None => st.receiver = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// The next item if one is waiting.
    pub(super) fn try_recv(&mut self) -> Option<Queued> {
        let mut st = self.queue.lock();
        let item = st.items.pop_front()?;
        let waiting = std::mem::take(&mut st.waiting);
        drop(st);
        waiting.into_iter().for_each(Waker::wake);
        Some(item)
    }
}

impl Drop for RequestRx {
    fn drop(&mut self) {
        let (items, waiting) = {
            let mut st = self.queue.lock();
            st.receiving = false;
            (
                std::mem::take(&mut st.items),
                std::mem::take(&mut st.waiting),
            )
        };
        drop(items);
        waiting.into_iter().for_each(Waker::wake);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Message, Notification, Outbound};

    async fn recv(rx: &mut RequestRx) -> Option<Queued> {
        poll_fn(|cx| rx.poll_recv(cx)).await
    }

    fn item(n: i64) -> Queued {
        Box::new(Outbound::from(Message::Notification(Notification::new(
            format!("n{n}"),
            None,
        ))))
    }

    fn method(q: &Queued) -> String {
        match &q.frame {
            crate::Frame::Single(Message::Notification(n)) => n.method.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn items_arrive_in_order_and_the_end_is_seen_once_senders_are_gone() {
        let (tx, mut rx) = request_queue(4);
        let tx2 = tx.clone();
        tx.send(item(1)).await.unwrap();
        tx2.send(item(2)).await.unwrap();
        assert_eq!(method(&rx.try_recv().unwrap()), "n1");
        drop(tx);
        assert_eq!(method(&recv(&mut rx).await.unwrap()), "n2");
        assert!(rx.try_recv().is_none());
        let waiting = tokio::spawn(async move { recv(&mut rx).await.is_none() });
        tokio::task::yield_now().await;
        drop(tx2);
        assert!(
            waiting.await.unwrap(),
            "the end once the last sender is gone"
        );
    }

    #[tokio::test]
    async fn a_full_queue_makes_senders_wait_and_a_gone_receiver_refuses() {
        let (tx, mut rx) = request_queue(1);
        tx.send(item(1)).await.unwrap();
        let tx2 = tx.clone();
        let second = tokio::spawn(async move { tx2.send(item(2)).await.is_ok() });
        tokio::task::yield_now().await;
        assert!(!second.is_finished(), "waits for room");
        assert_eq!(method(&recv(&mut rx).await.unwrap()), "n1");
        assert!(second.await.unwrap());
        assert_eq!(method(&recv(&mut rx).await.unwrap()), "n2");
        // A sender waiting when the receiver goes away gets its item back.
        tx.send(item(3)).await.unwrap();
        let tx3 = tx.clone();
        let blocked = tokio::spawn(async move { tx3.send(item(4)).await.is_err() });
        tokio::task::yield_now().await;
        drop(rx);
        assert!(blocked.await.unwrap());
        assert!(tx.send(item(5)).await.is_err());
    }
}
