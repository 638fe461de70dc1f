//! Requests served outside an engine.
//!
//! A transport that can run a request in the task that received it (the HTTP transport does
//! for stateless requests: each is its own HTTP exchange) need not pass it through a
//! connection, an engine and back. The service behind the connection offers a
//! [`DirectHandler`] in the connection's [`DirectSlot`]; the transport calls it with a context
//! made by [`Detached`], whose related messages (progress, log messages) arrive on the
//! request's own [`RelatedReceiver`]. Until a handler is offered, or for anything it does not
//! take, the connection serves as before.
//!
//! A transport whose connection is a session (HTTP: a stateful session, whose requests are
//! each their own HTTP exchange too) uses [`DirectSlot::engine_context`] instead: the context
//! belongs to the engine serving the connection, so the handler's requests to the peer work
//! (their responses come back through the connection), and the peer's
//! `notifications/cancelled` and the engine's shutdown cancel it.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::queue::{RequestRx, Tx, request_queue};
use super::{Cancellation, Config, Peer, Queued, RequestContext, Shared};
use crate::connection::{Extensions, Outbound};
use crate::error::ErrorObject;
use crate::id::Id;
use crate::message::{Request, Response};
use crate::raw::RawJson;

/// A request handler a service offers to its transport: called once per request, in the
/// transport's task, with a context made by [`Detached::context`].
pub type DirectHandler = Arc<
    dyn Fn(Request, RequestContext) -> BoxFuture<'static, Result<RawJson, ErrorObject>>
        + Send
        + Sync,
>;

/// How a request handler ended, as the engine and a transport serving requests itself see it:
/// its result, or the panic that ended it (caught with `catch_unwind`).
pub type HandlerOutcome = std::thread::Result<Result<RawJson, ErrorObject>>;

/// A [`DirectHandler`]'s run for one request, made by [`direct_run`]: caught if it panics, and
/// watched for the request's cancellation once it has had to wait (see [`Cancellable`]).
pub type DirectRun = Cancellable<
    futures_util::future::CatchUnwind<
        std::panic::AssertUnwindSafe<BoxFuture<'static, Result<RawJson, ErrorObject>>>,
    >,
>;

/// Starts `handler` on `request`; nothing runs until the result is polled.
pub fn direct_run(handler: &DirectHandler, request: Request, cx: RequestContext) -> DirectRun {
    use futures_util::FutureExt as _;
    Cancellable::new(std::panic::AssertUnwindSafe(handler(request, cx)).catch_unwind())
}

/// The response to request `id` for how its handler ended. A panic (which the panic hook has
/// reported, what and where) is logged with the request's id and answered with `-32603`, as
/// the engine answers one.
pub fn handler_response(id: Id, outcome: HandlerOutcome) -> Response {
    let result = outcome.unwrap_or_else(|_| {
        tracing::error!(%id, "request handler panicked");
        Err(ErrorObject::internal_error("the request handler failed"))
    });
    Response {
        id: Some(id),
        result,
    }
}

/// Where the service behind a connection may offer a [`DirectHandler`] to the transport that
/// made the connection (see [`Connection::with_direct_slot`](crate::Connection::with_direct_slot)).
/// Cheap to clone: clones share the slot.
///
/// ```
/// use std::sync::Arc;
/// use mcp_jsonrpc::{DirectSlot, ErrorObject};
///
/// let slot = DirectSlot::new();
/// assert!(slot.handler().is_none());
/// assert!(slot.offer(Arc::new(|request, _cx| {
///     Box::pin(async move { Err(ErrorObject::method_not_found(&request.method)) })
/// })));
/// assert!(slot.handler().is_some());
/// ```
#[derive(Clone, Default)]
pub struct DirectSlot {
    inner: Arc<SlotInner>,
}

#[derive(Default)]
struct SlotInner {
    handler: OnceLock<DirectHandler>,
    /// The engine serving the connection, once started, with its outbound queue.
    engine: OnceLock<(Arc<Shared>, mpsc::Sender<Queued>)>,
}

/// Why [`DirectSlot::engine_context`] made no context.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EngineContextError {
    /// No engine serves the connection (yet): hand the request to the connection instead.
    NoEngine,
    /// A request with this id is already being handled.
    DuplicateId,
    /// The engine is shutting down.
    Closed,
}

impl fmt::Display for EngineContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EngineContextError::NoEngine => "no engine serves the connection",
            EngineContextError::DuplicateId => "a request with this id is already in flight",
            EngineContextError::Closed => "the connection is closing",
        })
    }
}

impl std::error::Error for EngineContextError {}

impl fmt::Debug for DirectSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectSlot")
            .field("offered", &self.inner.handler.get().is_some())
            .finish()
    }
}

impl DirectSlot {
    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Offers the handler; `false` when one was offered before (the first one stays).
    pub fn offer(&self, handler: DirectHandler) -> bool {
        self.inner.handler.set(handler).is_ok()
    }

    /// The handler, once offered.
    pub fn handler(&self) -> Option<&DirectHandler> {
        self.inner.handler.get()
    }

    /// Called by the engine that serves the connection.
    pub(super) fn bind(&self, shared: Arc<Shared>, tx: mpsc::Sender<Queued>) {
        let _ = self.inner.engine.set((shared, tx));
    }

    /// The peer of the engine serving the connection, once started: what it sends is written
    /// to the connection in order with the engine's other output (for a transport that serves
    /// a request in a task of its own and writes through the engine, not by itself).
    pub fn engine_peer(&self) -> Option<Peer> {
        let (shared, tx) = self.inner.engine.get()?;
        Some(Peer::new(Arc::clone(shared), Tx::Engine(tx.clone()), None))
    }

    /// One of the engine's request permits for a request with `method` (pings fall back on
    /// a few permits of their own), or `None` when every one is taken or no engine serves the
    /// connection yet. A transport that runs a request where it read it holds the permit
    /// while the request runs; without one it hands the request to the connection, where the
    /// engine keeps it waiting for a permit while it goes on reading.
    pub fn try_permit(&self, method: &str) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let (shared, _) = self.inner.engine.get()?;
        shared.try_permit(method)
    }

    /// Whether an engine serves the connection, so [`engine_context`](Self::engine_context)
    /// can make contexts.
    pub fn has_engine(&self) -> bool {
        self.inner.engine.get().is_some()
    }

    /// The context of request `id`, served by the transport in its own task as the engine
    /// serving the connection would serve it:
    ///
    /// - the handler's requests to the peer are registered with the engine (their responses,
    ///   arriving on the connection, complete them; its timeouts and limits apply);
    /// - the peer's `notifications/cancelled` naming `id`, and the engine's shutdown, cancel
    ///   the context's token;
    /// - everything the handler sends (its requests included) arrives, in order, on the
    ///   returned receiver, for the transport to deliver with the request's answer. At most
    ///   `capacity` messages wait there before the handler's sends wait for room.
    ///
    /// The request counts as in flight (its id cannot be reused) until the receiver is dropped.
    pub fn engine_context(
        &self,
        id: Id,
        extensions: Extensions,
        capacity: usize,
    ) -> Result<(RequestContext, RelatedReceiver), EngineContextError> {
        self.context(id, extensions, capacity, true)
    }

    /// [`engine_context`](Self::engine_context) for a transport that polls the handler once
    /// where it read the request, before it reads the peer's next message (stdio's reader
    /// thread). The request is checked as there (its id not in flight, the engine not
    /// closing) but counts as in flight only once [`RelatedReceiver::register`] is called,
    /// which the transport does when the handler has to wait: a handler that answers on its
    /// first poll (most do) costs no entry in the engine's in-flight map, added and removed
    /// under its lock.
    ///
    /// Until then nothing cancels the request: the peer's `notifications/cancelled` naming it
    /// is among the messages not read yet, and the engine's shutdown is seen at registration.
    /// The caller must not read another request before it registers or drops the receiver:
    /// one with the same id would not be seen as a duplicate.
    pub fn engine_context_unregistered(
        &self,
        id: Id,
        extensions: Extensions,
        capacity: usize,
    ) -> Result<(RequestContext, RelatedReceiver), EngineContextError> {
        self.context(id, extensions, capacity, false)
    }

    fn context(
        &self,
        id: Id,
        extensions: Extensions,
        capacity: usize,
        register: bool,
    ) -> Result<(RequestContext, RelatedReceiver), EngineContextError> {
        let (shared, _) = self
            .inner
            .engine
            .get()
            .ok_or(EngineContextError::NoEngine)?;
        // Its token is made when something asks for it (the handler, or a cancellation).
        let cancel = Cancellation::lazy();
        let inflight = if register {
            if !shared.enter_inflight(&id, &cancel) {
                return Err(EngineContextError::DuplicateId);
            }
            Inflight::Registered {
                _entry: InflightEntry {
                    shared: Arc::clone(shared),
                    id: id.clone(),
                },
                cancel: cancel.clone(),
            }
        } else {
            if shared.is_inflight(&id) {
                return Err(EngineContextError::DuplicateId);
            }
            Inflight::Unregistered {
                shared: Arc::clone(shared),
                id: id.clone(),
                cancel: cancel.clone(),
            }
        };
        // Shutdown cancels the tokens in the map; it may have run before the insert.
        if shared.is_shutting_down() {
            return Err(EngineContextError::Closed);
        }
        let (tx, rx) = request_queue(capacity);
        let cx = RequestContext {
            peer: Peer::new(Arc::clone(shared), Tx::Request(tx), Some(id.clone())),
            id,
            cancel,
            extensions,
        };
        Ok((cx, RelatedReceiver { rx, inflight }))
    }
}

/// A request handler's future that ends with `None` once the request is cancelled, as the
/// engine runs its own handlers (a cancelled request gets no response, even when its handler
/// finished at the same moment).
///
/// The token is only watched once [`watch`](Self::watch) gives it, which the caller does when
/// the handler has had to wait: a handler that answers on its first poll (most do) costs no
/// clone of the token (tokio-util takes a lock to clone, drop and read one) and no waiter.
/// [`RelatedReceiver::cancellation`] fetches the token of an engine context.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use futures_util::FutureExt;
/// use mcp_jsonrpc::Cancellable;
/// use tokio_util::sync::CancellationToken;
///
/// let mut quick = Cancellable::new(std::future::ready(7));
/// assert_eq!((&mut quick).now_or_never(), Some(Some(7)));
///
/// let token = CancellationToken::new();
/// let mut slow = Cancellable::new(Box::pin(std::future::pending::<u8>()));
/// assert_eq!((&mut slow).now_or_never(), None);
/// slow.watch(Some(token.clone()));
/// token.cancel();
/// assert_eq!(slow.await, None);
/// # }
/// ```
pub struct Cancellable<F> {
    run: F,
    watch: Option<(CancellationToken, Pin<Box<WaitForCancellationFutureOwned>>)>,
}

impl<F> fmt::Debug for Cancellable<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cancellable")
            .field("watching", &self.watch.is_some())
            .finish_non_exhaustive()
    }
}

impl<F: Future + Unpin> Cancellable<F> {
    /// The handler's future, not watched yet.
    pub fn new(run: F) -> Self {
        Cancellable { run, watch: None }
    }

    /// Watches the request's token from now on; `None` (no token: the request is over) ends
    /// the run as cancelled. Poll again afterwards to register with the token.
    pub fn watch(&mut self, token: Option<CancellationToken>) {
        let token = token.unwrap_or_else(|| {
            let gone = CancellationToken::new();
            gone.cancel();
            gone
        });
        let waiter = Box::pin(token.clone().cancelled_owned());
        self.watch = Some((token, waiter));
    }

    /// Whether a token is watched.
    pub fn is_watching(&self) -> bool {
        self.watch.is_some()
    }

    fn cancelled(&self) -> bool {
        self.watch
            .as_ref()
            .is_some_and(|(token, _)| token.is_cancelled())
    }
}

impl<F: Future + Unpin> Future for Cancellable<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<F::Output>> {
        let this = &mut *self;
        if this.cancelled() {
            return Poll::Ready(None);
        }
        if let Poll::Ready(outcome) = Pin::new(&mut this.run).poll(cx) {
            // Cancelled while it finished: no response either.
            return Poll::Ready(Some(outcome).filter(|_| !this.cancelled()));
        }
        match &mut this.watch {
            Some((_, waiter)) => waiter.as_mut().poll(cx).map(|()| None),
            None => Poll::Pending,
        }
    }
}

/// Keeps a request of [`DirectSlot::engine_context`] in the engine's in-flight map.
struct InflightEntry {
    shared: Arc<Shared>,
    id: Id,
}

impl Drop for InflightEntry {
    fn drop(&mut self) {
        super::lock(&self.shared.inflight).remove(&self.id);
    }
}

/// Makes [`RequestContext`]s for requests served outside an engine. Messages a handler sends
/// through the context's peer arrive on the request's own [`RelatedReceiver`]; requests to the
/// peer fail at once with [`CallError::Closed`](crate::CallError::Closed), as no connection
/// carries their responses back. One `Detached` serves any number of requests; it is cheap to
/// clone.
#[derive(Clone)]
pub struct Detached {
    shared: Arc<Shared>,
}

impl fmt::Debug for Detached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Detached").finish_non_exhaustive()
    }
}

impl Default for Detached {
    fn default() -> Self {
        Self::new()
    }
}

impl Detached {
    /// A context maker.
    pub fn new() -> Self {
        let mut shared = Shared::new(Config::default());
        shared.detached = true;
        Detached {
            shared: Arc::new(shared),
        }
    }

    /// The context of request `id`: `cancel` is the token its handler watches (the transport
    /// cancels it when the request is abandoned), `extensions` what the transport attaches, and
    /// at most `capacity` related messages wait in the receiver before the handler's sends wait
    /// for room.
    pub fn context(
        &self,
        id: Id,
        extensions: Extensions,
        cancel: CancellationToken,
        capacity: usize,
    ) -> (RequestContext, RelatedReceiver) {
        let (tx, rx) = request_queue(capacity);
        let cx = RequestContext {
            peer: Peer::new(self.shared.clone(), Tx::Request(tx), Some(id.clone())),
            id,
            cancel: cancel.into(),
            extensions,
        };
        (
            cx,
            RelatedReceiver {
                rx,
                inflight: Inflight::Detached,
            },
        )
    }
}

/// The messages a request's handler sent through its [`Detached`] context, in order. Ends
/// (`None`) once every clone of the context's peer is gone.
pub struct RelatedReceiver {
    rx: RequestRx,
    inflight: Inflight,
}

/// Where a [`RelatedReceiver`]'s request stands with the engine's in-flight map.
enum Inflight {
    /// A [`Detached`] context's: no engine.
    Detached,
    /// In the map until dropped (the map holds the same `cancel`).
    Registered {
        /// Held for its drop, which takes the request out of the map.
        _entry: InflightEntry,
        cancel: Cancellation,
    },
    /// Made by [`DirectSlot::engine_context_unregistered`] and not registered yet.
    Unregistered {
        shared: Arc<Shared>,
        id: Id,
        cancel: Cancellation,
    },
}

impl fmt::Debug for RelatedReceiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RelatedReceiver").finish_non_exhaustive()
    }
}

impl RelatedReceiver {
    /// The next message; `None` once every sender is gone. Cancel-safe.
    pub async fn recv(&mut self) -> Option<Outbound> {
        self.rx.recv().await.map(|b| *b)
    }

    /// The next message if one is waiting.
    pub fn try_recv(&mut self) -> Option<Outbound> {
        self.rx.try_recv().map(|b| *b)
    }

    /// For a context of [`DirectSlot`], a clone of the request's cancellation token, the one
    /// the engine cancels (`None` for a [`Detached`] context). Made and cloned on demand: a
    /// caller that only needs it once the handler waits spares both (a token takes a lock to
    /// clone and to drop) for handlers that answer at once.
    pub fn cancellation(&self) -> Option<CancellationToken> {
        match &self.inflight {
            Inflight::Detached => None,
            Inflight::Registered { cancel, .. } | Inflight::Unregistered { cancel, .. } => {
                Some(cancel.token().clone())
            }
        }
    }

    /// Counts the request of a [`DirectSlot::engine_context_unregistered`] context as in
    /// flight from now on, until the receiver is dropped: the peer's `notifications/cancelled`
    /// naming it and the engine's shutdown cancel it, and its id cannot be reused. Does
    /// nothing for other contexts, or when called again.
    ///
    /// Fails with [`EngineContextError::DuplicateId`] when another request took the id
    /// meanwhile (the caller read one before registering), and with
    /// [`EngineContextError::Closed`] when the engine is shutting down; the request's token
    /// is then cancelled, as shutdown cancels the requests in flight.
    pub fn register(&mut self) -> Result<(), EngineContextError> {
        let (shared, id, cancel) = match std::mem::replace(&mut self.inflight, Inflight::Detached) {
            Inflight::Unregistered { shared, id, cancel } => (shared, id, cancel),
            other => {
                self.inflight = other;
                return Ok(());
            }
        };
        if !shared.enter_inflight(&id, &cancel) {
            return Err(EngineContextError::DuplicateId);
        }
        // Shutdown cancels the tokens in the map; it may have run before the insert.
        let closing = shared.is_shutting_down();
        if closing {
            cancel.token().cancel();
        }
        self.inflight = Inflight::Registered {
            _entry: InflightEntry { shared, id },
            cancel,
        };
        if closing {
            Err(EngineContextError::Closed)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CallError, Message, RequestOptions};

    #[tokio::test]
    async fn related_messages_reach_the_request_channel_and_requests_fail_at_once() {
        let detached = Detached::new();
        let (cx, mut related) = detached.context(
            Id::Number(7),
            Extensions::default(),
            CancellationToken::new(),
            4,
        );
        assert_eq!(cx.id(), &Id::Number(7));
        cx.peer()
            .notify("notifications/progress", None)
            .await
            .unwrap();
        let got = related.try_recv().unwrap();
        assert_eq!(got.related, Some(Id::Number(7)));
        assert!(matches!(
            got.frame,
            crate::Frame::Single(Message::Notification(ref n)) if n.method == "notifications/progress"
        ));
        let err = cx
            .peer()
            .request("sampling/createMessage", None, RequestOptions::new())
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::Closed(_)), "{err:?}");
        assert!(related.try_recv().is_none(), "no request was queued");
        assert!(
            related.cancellation().is_none(),
            "a detached context has no engine"
        );
        drop(cx);
        assert!(related.recv().await.is_none());
    }

    #[tokio::test]
    async fn a_slot_keeps_the_first_handler() {
        let slot = DirectSlot::new();
        let first: DirectHandler =
            Arc::new(|_r, _cx| Box::pin(async { Ok(RawJson::serialize(&1).unwrap()) }));
        let second: DirectHandler =
            Arc::new(|_r, _cx| Box::pin(async { Ok(RawJson::serialize(&2).unwrap()) }));
        assert!(slot.offer(first));
        assert!(!slot.clone().offer(second));
        let (cx, _rx) = Detached::new().context(
            Id::Number(1),
            Extensions::default(),
            CancellationToken::new(),
            1,
        );
        let handler = slot.handler().unwrap();
        let out = handler(crate::Request::new(1, "x", None), cx)
            .await
            .unwrap();
        assert_eq!(out.get(), "1");
    }

    /// A server engine over one end of a memory pair whose slot is bound; the other end's
    /// writer and inbound stream play the client.
    fn engine_with_slot() -> (DirectSlot, crate::Connection, tokio::task::JoinHandle<()>) {
        let (client, server) = crate::memory_pair(8);
        let slot = DirectSlot::new();
        assert_eq!(
            slot.engine_context(Id::Number(1), Extensions::default(), 4)
                .unwrap_err(),
            EngineContextError::NoEngine
        );
        let (_peer, driver) =
            super::super::Engine::builder().start(server.with_direct_slot(slot.clone()), ());
        let task = tokio::spawn(async move {
            let _ = driver.await;
        });
        assert!(slot.has_engine());
        (slot, client, task)
    }

    #[tokio::test]
    async fn an_engine_context_asks_the_peer_through_the_engine() {
        use futures_util::SinkExt;
        let (slot, client, _task) = engine_with_slot();
        let (_client_in, mut client_out) = client.into_parts();
        let (cx, mut related) = slot
            .engine_context(Id::Number(5), Extensions::default(), 4)
            .unwrap();
        let call = tokio::spawn({
            let peer = cx.peer().clone();
            async move {
                peer.request("roots/list", None, RequestOptions::new())
                    .await
            }
        });
        // The request comes out on the request's own receiver, tagged with it.
        let out = related.recv().await.unwrap();
        assert_eq!(out.related, Some(Id::Number(5)));
        let crate::Frame::Single(Message::Request(request)) = out.frame else {
            panic!("not a request: {:?}", out.frame);
        };
        assert_eq!(request.method, "roots/list");
        // Its response arrives on the connection and completes it.
        let result = crate::to_raw(&serde_json::json!({"roots": []})).unwrap();
        client_out
            .send(Outbound::from(Message::Response(crate::Response::success(
                request.id, result,
            ))))
            .await
            .unwrap();
        let answer = call.await.unwrap().unwrap();
        assert_eq!(answer.get(), r#"{"roots":[]}"#);
    }

    /// The client sends `notifications/cancelled` for `id`; `cx` sees it within 5 s.
    async fn peer_cancels(client_out: &mut crate::OutboundSink, id: &str, cx: &RequestContext) {
        use futures_util::SinkExt;
        let cancel = crate::Notification::with_params(
            crate::CANCELLED_METHOD,
            &serde_json::json!({"requestId": id, "reason": "enough"}),
        )
        .unwrap();
        client_out
            .send(Outbound::from(Message::Notification(cancel)))
            .await
            .unwrap();
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            cx.cancellation().cancelled(),
        )
        .await
        .expect("the peer's cancellation reached the context");
    }

    #[tokio::test]
    async fn the_peer_cancels_an_engine_context_and_its_id_stays_taken_until_done() {
        let (slot, client, task) = engine_with_slot();
        let (_client_in, mut client_out) = client.into_parts();
        let (cx, related) = slot
            .engine_context(Id::from("r"), Extensions::default(), 4)
            .unwrap();
        assert_eq!(
            slot.engine_context(Id::from("r"), Extensions::default(), 4)
                .unwrap_err(),
            EngineContextError::DuplicateId
        );
        peer_cancels(&mut client_out, "r", &cx).await;
        let fetched = related.cancellation().expect("an engine context's token");
        assert!(fetched.is_cancelled(), "the fetched token is the request's");
        drop(related);
        let (cx2, _related) = slot
            .engine_context(Id::from("r"), Extensions::default(), 4)
            .unwrap();
        assert!(!cx2.is_cancelled());
        // Shutdown cancels the contexts in flight and refuses new ones.
        task.abort();
        let _ = task.await;
        assert!(cx2.is_cancelled());
        assert_eq!(
            slot.engine_context(Id::from("s"), Extensions::default(), 4)
                .unwrap_err(),
            EngineContextError::Closed
        );
    }

    #[tokio::test]
    async fn an_unregistered_context_is_in_flight_only_once_registered() {
        let (slot, client, task) = engine_with_slot();
        let (_client_in, mut client_out) = client.into_parts();
        let (_taken, _held) = slot
            .engine_context(Id::from("t"), Extensions::default(), 4)
            .unwrap();
        // Checked as `engine_context` checks: a taken id is refused.
        assert_eq!(
            slot.engine_context_unregistered(Id::from("t"), Extensions::default(), 4)
                .unwrap_err(),
            EngineContextError::DuplicateId
        );
        let (cx, related) = slot
            .engine_context_unregistered(Id::from("r"), Extensions::default(), 4)
            .unwrap();
        // Not in the engine's map yet: the id is free, and the token is the context's.
        assert!(
            !super::super::lock(&slot.inner.engine.get().unwrap().0.inflight)
                .contains_key(&Id::from("r"))
        );
        let token = related.cancellation().expect("the context's token");
        token.cancel();
        assert!(cx.is_cancelled());
        let (cx, mut related) = slot
            .engine_context_unregistered(Id::from("q"), Extensions::default(), 4)
            .unwrap();
        related.register().unwrap();
        related.register().unwrap();
        assert_eq!(
            slot.engine_context(Id::from("q"), Extensions::default(), 4)
                .unwrap_err(),
            EngineContextError::DuplicateId
        );
        // Registered: the peer's cancellation reaches it.
        peer_cancels(&mut client_out, "q", &cx).await;
        drop(related);
        assert!(
            slot.engine_context(Id::from("q"), Extensions::default(), 4)
                .is_ok()
        );
        // Registered while the engine shuts down: refused, and cancelled.
        let (cx, mut related) = slot
            .engine_context_unregistered(Id::from("p"), Extensions::default(), 4)
            .unwrap();
        task.abort();
        let _ = task.await;
        assert_eq!(related.register().unwrap_err(), EngineContextError::Closed);
        assert!(cx.is_cancelled());
    }
}
