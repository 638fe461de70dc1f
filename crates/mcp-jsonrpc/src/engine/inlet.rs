//! The one way into a request handler.
//!
//! Every request, whichever way it arrives, goes through the engine's [`Door`]: its id is
//! admitted into the engine's in-flight map (a duplicate is refused), it gets its
//! [`Cancellation`] (the peer's `notifications/cancelled` and the engine's shutdown fire it),
//! one of the engine's permits, a context whose peer sends where its answer goes, and its
//! handler runs inside [`run_handler`] (caught if it panics, watched for cancellation once it
//! has had to wait, its id freed before its answer is sent).
//!
//! The engine's driver calls the door for the requests it reads from the connection. A
//! transport that reads requests in a task of its own (stdio's reader thread, an HTTP POST's
//! task) calls it through an [`Inlet`], which the engine hands to the transport's
//! [`InletLink`] when it starts: the request's handler is then first polled in the
//! transport's task, and a handler that answers at once (most do) is answered from there
//! without a hand-off to the engine's task. What such a handler sends before its answer, and
//! the answer, come back in order as [`Step`]s of a [`Running`] request.

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};

use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::poll::CatchUnwind;
use super::queue::{RequestRx, Tx, request_queue};
use super::{Cancellation, Handler, Peer, Queued, RequestContext, Shared, lock};
use crate::connection::{Extensions, Outbound};
use crate::error::ErrorObject;
use crate::id::Id;
use crate::message::{Message, Request, Response};
use crate::raw::RawJson;

/// A request handler's run, as the engine starts it: `None` when the request was cancelled
/// (no response is sent).
pub(super) type Run = Pin<Box<dyn Future<Output = Option<Response>> + Send>>;

type Start = Arc<dyn Fn(Request, RequestContext, Option<InflightEntry>) -> Run + Send + Sync>;

/// The engine's side of every request: admission and the handler's run.
#[derive(Clone)]
pub(super) struct Door {
    pub(super) shared: Arc<Shared>,
    /// The engine's outbound queue.
    pub(super) tx: mpsc::Sender<Queued>,
    start: Start,
}

/// Why a request was not admitted.
pub(super) enum Refusal {
    /// A request in flight has its id.
    Duplicate,
    /// The engine is shutting down.
    Closed,
}

/// An admitted request's context, and its place in the in-flight map (`None` for a request
/// that stands alone).
pub(super) struct Admitted {
    pub(super) cx: RequestContext,
    pub(super) entry: Option<InflightEntry>,
}

impl Door {
    pub(super) fn new<H: Handler>(
        shared: Arc<Shared>,
        tx: mpsc::Sender<Queued>,
        handler: Arc<H>,
    ) -> Self {
        let start: Start = Arc::new(move |request, cx, entry| {
            Box::pin(run_handler(Arc::clone(&handler), request, cx, entry))
        });
        Door { shared, tx, start }
    }

    /// Admits request `id`, whose handler's messages go to `tx`: counted as in flight (unless
    /// `keyed` is false: a request that stands alone, whose id is not the connection's), with
    /// a cancellation the in-flight map shares.
    pub(super) fn admit(
        &self,
        id: &Id,
        extensions: Extensions,
        tx: Tx,
        keyed: bool,
    ) -> Result<Admitted, Refusal> {
        // A token of its own rather than a child of `shutdown` (no tree to lock and unlink per
        // request), made when first asked for: shutdown cancels every request in flight.
        let cancel = Cancellation::lazy();
        let entry = if keyed {
            if !self.shared.enter_inflight(id, &cancel) {
                return Err(Refusal::Duplicate);
            }
            Some(InflightEntry {
                shared: Arc::clone(&self.shared),
                id: id.clone(),
            })
        } else {
            None
        };
        // Shutdown cancels the tokens in the map; it may have run before the insert.
        if self.shared.is_shutting_down() {
            return Err(Refusal::Closed);
        }
        let cx = RequestContext {
            peer: Peer::new(Arc::clone(&self.shared), tx, Some(id.clone())),
            id: id.clone(),
            cancel,
            extensions,
        };
        Ok(Admitted { cx, entry })
    }

    /// The handler's run for an admitted request; nothing runs until it is polled.
    pub(super) fn start(&self, request: Request, admitted: Admitted) -> Run {
        (self.start)(request, admitted.cx, admitted.entry)
    }
}

/// The answer to a request whose id is in flight already.
pub(super) fn duplicate(id: Id) -> Response {
    tracing::warn!(%id, "duplicate request id");
    let error = ErrorObject::invalid_request(format!("request id {id} is already in use"));
    Response::error(Some(id), error)
}

/// Runs one request handler; `None` when the request was cancelled (no response is sent).
/// The request leaves the in-flight map (its `entry` is dropped) before the response exists,
/// so the peer may reuse the id as soon as it has the answer.
async fn run_handler<H: Handler>(
    handler: Arc<H>,
    request: Request,
    cx: RequestContext,
    entry: Option<InflightEntry>,
) -> Option<Response> {
    let id = request.id.clone();
    if cx.cancel.is_cancelled() {
        return None;
    }
    let cancel = cx.cancel.clone();
    // Pinned where it is built: the handler's future is the largest value of a request (its
    // whole call chain), and `select!` would move it once more.
    let mut handling = std::pin::pin!(handler.handle_request(request, cx));
    let mut run = Cancellable::new(CatchUnwind(handling.as_mut()));
    let outcome = std::future::poll_fn(|cx| match Pin::new(&mut run).poll(cx) {
        // The handler waits: from now on its token is watched, and the next poll registers
        // with it. A handler that answers on its first poll (most do) never makes the token.
        Poll::Pending if !run.is_watching() => {
            run.watch(cancel.token().clone());
            Pin::new(&mut run).poll(cx)
        }
        polled => polled,
    })
    .await;
    drop(entry);
    outcome.map(|outcome| handler_response(id, outcome))
}

/// The response to request `id` for how its handler ended. A panic (which the panic hook has
/// reported, what and where) is logged with the request's id and answered with `-32603`.
fn handler_response(
    id: Id,
    outcome: std::thread::Result<Result<RawJson, ErrorObject>>,
) -> Response {
    let result = outcome.unwrap_or_else(|_| {
        tracing::error!(%id, "request handler panicked");
        Err(ErrorObject::internal_error("the request handler failed"))
    });
    Response {
        id: Some(id),
        result,
    }
}

/// A request handler's future that ends with `None` once the request is cancelled (a
/// cancelled request gets no response, even when its handler finished at the same moment).
/// The token is watched only once [`watch`](Self::watch) gives it.
struct Cancellable<F> {
    run: F,
    watch: Option<(CancellationToken, Pin<Box<WaitForCancellationFutureOwned>>)>,
}

impl<F: Future + Unpin> Cancellable<F> {
    fn new(run: F) -> Self {
        Cancellable { run, watch: None }
    }

    fn watch(&mut self, token: CancellationToken) {
        let waiter = Box::pin(token.clone().cancelled_owned());
        self.watch = Some((token, waiter));
    }

    fn is_watching(&self) -> bool {
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

/// Keeps a request in the engine's in-flight map until dropped.
pub(super) struct InflightEntry {
    shared: Arc<Shared>,
    id: Id,
}

impl Drop for InflightEntry {
    fn drop(&mut self) {
        lock(&self.shared.inflight).remove(&self.id);
    }
}

/// Where a transport that serves requests in its own tasks receives the engine's [`Inlet`]:
/// it puts a link among the connection's [`extensions`](crate::Connection::extensions) before
/// handing the connection over, and the engine that serves the connection fills it when it
/// starts. Cheap to clone: clones share the link.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use mcp_jsonrpc::{Engine, InletLink, memory_pair};
///
/// let (_client, server) = memory_pair(8);
/// let link = InletLink::new(16);
/// let server = server.with_extension(link.clone());
/// assert!(link.get().is_none());
/// let (_peer, _task) = Engine::builder().spawn(server, ());
/// assert!(link.get().is_some());
/// # }
/// ```
#[derive(Clone)]
pub struct InletLink {
    inner: Arc<LinkInner>,
}

struct LinkInner {
    inlet: OnceLock<Inlet>,
    capacity: usize,
}

impl fmt::Debug for InletLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InletLink")
            .field("bound", &self.inner.inlet.get().is_some())
            .finish()
    }
}

impl InletLink {
    /// An empty link. At most `capacity` messages a waiting handler sends wait to be taken
    /// (see [`Running::next`]) before its sends wait for room.
    pub fn new(capacity: usize) -> Self {
        InletLink {
            inner: Arc::new(LinkInner {
                inlet: OnceLock::new(),
                capacity: capacity.max(1),
            }),
        }
    }

    /// The engine's inlet, once an engine serves the connection.
    pub fn get(&self) -> Option<&Inlet> {
        self.inner.inlet.get()
    }

    /// Called by the engine that starts on the connection.
    pub(super) fn bind(&self, door: Door) {
        let _ = self.inner.inlet.set(Inlet {
            door,
            capacity: self.inner.capacity,
        });
    }
}

/// The engine's entry for a transport that serves a request in the task that read it (see
/// the [module documentation](self) and [`InletLink`]).
///
/// The request goes through exactly what the engine does for the requests it reads itself:
/// admission (id, cancellation), one of the engine's permits, the handler's run. Only the
/// first poll happens in the caller's task; the handler's requests to the peer go out through
/// the engine, and their responses, read by the engine, complete them.
#[derive(Clone)]
pub struct Inlet {
    door: Door,
    capacity: usize,
}

impl fmt::Debug for Inlet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inlet").finish_non_exhaustive()
    }
}

/// What became of a request handed to an [`Inlet`].
#[derive(Debug)]
#[must_use]
pub enum Served {
    /// Answered on its first poll with nothing sent before: the response to send.
    Answered(Response),
    /// Not run: a request with the same id is in flight. The engine's answer (`-32600`).
    Refused(Response),
    /// The handler waits, or sent something before its answer: take the rest from the
    /// [`Running`] request, or hand it to the engine.
    Running(Running),
    /// Every permit is taken: not run here, and given back with its extensions. Hand it to
    /// the connection, where the engine keeps it waiting for a permit while it goes on
    /// reading.
    Busy(Request, Extensions),
    /// The engine is shutting down: nothing will answer.
    Closed,
}

/// What a [`Running`] request gives, in order: what its handler sent, then its answer.
#[derive(Debug)]
pub enum Step {
    /// A message the handler sent (tagged as related to the request).
    Sent(Outbound),
    /// The response; the last step.
    Answered(Response),
}

impl Inlet {
    /// Serves `request`, a request of the connection (its id counts among the connection's
    /// requests in flight), with what the transport attached to it.
    pub fn serve(&self, request: Request, extensions: Extensions) -> Served {
        self.serve_with(request, extensions, true)
    }

    /// Serves `request`, a request that stands alone (an exchange of its own, such as a
    /// stateless HTTP POST): its id is not the connection's (other exchanges may use the same
    /// at once), so it is not counted in flight and the peer cannot cancel it by id; dropping
    /// its [`Running`] cancels it. Its handler cannot send requests to the peer: nothing would
    /// carry their responses back.
    pub fn serve_alone(&self, request: Request, extensions: Extensions) -> Served {
        self.serve_with(request, extensions, false)
    }

    fn serve_with(&self, request: Request, extensions: Extensions, keyed: bool) -> Served {
        let shared = &self.door.shared;
        if shared.is_shutting_down() {
            return Served::Closed;
        }
        let Some(permit) = shared.try_permit(&request.method) else {
            return Served::Busy(request, extensions);
        };
        let id = request.id.clone();
        let (tx, mut related) = request_queue(self.capacity);
        let tx = if keyed {
            Tx::Request(tx)
        } else {
            Tx::Alone(tx)
        };
        let admitted = match self.door.admit(&id, extensions, tx, keyed) {
            Ok(admitted) => admitted,
            Err(Refusal::Duplicate) => return Served::Refused(duplicate(id)),
            Err(Refusal::Closed) => return Served::Closed,
        };
        let cancel = admitted.cx.cancel.clone();
        let mut run = self.door.start(request, admitted);
        // The first poll, here. (`None` inside: cancelled.)
        let (first, answer, run) =
            match Pin::new(&mut run).poll(&mut Context::from_waker(Waker::noop())) {
                Poll::Ready(answer) => {
                    let first = related.try_recv();
                    match (first, answer) {
                        // Answered with nothing sent before (most requests): nothing else is made.
                        (None, Some(response)) => return Served::Answered(response),
                        (None, None) => return Served::Closed,
                        (first, answer) => (first, answer, None),
                    }
                }
                Poll::Pending => (None, None, Some(run)),
            };
        Served::Running(Running {
            id,
            first,
            answer,
            run,
            related,
            related_open: true,
            cancel,
            tx: self.door.tx.clone(),
            _permit: permit,
        })
    }
}

/// A request served through an [`Inlet`] whose handler waits or sent something before its
/// answer. Take its [`Step`]s with [`next`](Self::next), or hand it to the engine with
/// [`into_engine`](Self::into_engine). Dropped before its answer, it is cancelled: its
/// handler's future is dropped and its token fires.
pub struct Running {
    id: Id,
    /// The first message the handler sent, taken to see whether there was any.
    first: Option<Queued>,
    /// The response, once the handler answered (before everything it sent is taken).
    answer: Option<Response>,
    /// The handler's run, until it ends.
    run: Option<Run>,
    related: RequestRx,
    related_open: bool,
    cancel: Cancellation,
    /// The engine's outbound queue, for [`into_engine`](Self::into_engine).
    tx: mpsc::Sender<Queued>,
    /// Its place among the requests running.
    _permit: OwnedSemaphorePermit,
}

impl fmt::Debug for Running {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Running")
            .field("id", &self.id)
            .field("answered", &self.run.is_none())
            .finish_non_exhaustive()
    }
}

impl Running {
    /// The request's id.
    pub fn id(&self) -> &Id {
        &self.id
    }

    /// The next step: what the handler sent, in order, then its response; `None` after the
    /// response, or when the request was cancelled (it gets no response). Cancel-safe.
    pub async fn next(&mut self) -> Option<Step> {
        if let Some(m) = self.first.take() {
            return Some(Step::Sent(*m));
        }
        if let Some(run) = self.run.as_mut() {
            loop {
                /// What the handler did first: answered, or sent (`None`: its queue closed).
                enum Event {
                    Answered(Option<Response>),
                    Sent(Option<Queued>),
                }
                // The handler's answer first, then what it sent (while its queue is open).
                let related_open = self.related_open;
                let related = &mut self.related;
                let event = poll_fn(|cx| {
                    if let Poll::Ready(answer) = run.as_mut().poll(cx) {
                        return Poll::Ready(Event::Answered(answer));
                    }
                    match related_open {
                        true => related.poll_recv(cx).map(Event::Sent),
                        false => Poll::Pending,
                    }
                })
                .await;
                match event {
                    Event::Answered(answer) => {
                        self.run = None;
                        self.answer = answer;
                        break;
                    }
                    Event::Sent(Some(m)) => return Some(Step::Sent(*m)),
                    Event::Sent(None) => self.related_open = false,
                }
            }
        }
        // What it sent just before answering goes first.
        if let Some(m) = self.related.try_recv() {
            return Some(Step::Sent(*m));
        }
        self.answer.take().map(Step::Answered)
    }

    /// Hands the rest to the engine, on a task of its own: what the handler sends and then its
    /// answer go out through the engine's outbound queue, in order, as for the requests the
    /// engine reads itself. Must be called inside a Tokio runtime.
    pub fn into_engine(mut self) {
        let tx = self.tx.clone();
        tokio::spawn(async move {
            while let Some(step) = self.next().await {
                let outbound = match step {
                    Step::Sent(m) => m,
                    Step::Answered(response) => {
                        let id = response.id.clone();
                        Outbound::related(Message::Response(response), id)
                    }
                };
                if tx.send(Box::new(outbound)).await.is_err() {
                    return;
                }
            }
        });
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.run.is_some() {
            self.cancel.token().cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures_util::SinkExt as _;

    use super::*;
    use crate::{CallError, Connection, Engine, OutboundSink, RequestOptions, memory_pair};

    /// A handler that answers `now` at once, `wait` once the peer's `roots/list` answers,
    /// `say` after a notification, and `slow` never (until cancelled).
    struct Test;

    impl Handler for Test {
        async fn handle_request(
            &self,
            request: Request,
            cx: RequestContext,
        ) -> Result<RawJson, ErrorObject> {
            match request.method.as_str() {
                "now" => RawJson::serialize(&1).map_err(ErrorObject::internal_error),
                "say" => {
                    cx.peer()
                        .notify("notifications/message", None)
                        .await
                        .map_err(ErrorObject::internal_error)?;
                    RawJson::serialize(&2).map_err(ErrorObject::internal_error)
                }
                "wait" => {
                    let answer = cx
                        .peer()
                        .request("roots/list", None, RequestOptions::new())
                        .await
                        .map_err(|e| ErrorObject::internal_error(e.to_string()))?;
                    Ok(RawJson::from(answer))
                }
                "ask" => match cx.peer().request("x", None, RequestOptions::new()).await {
                    Err(CallError::Closed(_)) => {
                        RawJson::serialize(&"refused").map_err(ErrorObject::internal_error)
                    }
                    other => Err(ErrorObject::internal_error(format!("{other:?}"))),
                },
                "slow" => {
                    cx.cancellation().cancelled().await;
                    Err(ErrorObject::internal_error("cancelled"))
                }
                "boom" => panic!("boom"),
                other => Err(ErrorObject::method_not_found(other)),
            }
        }
    }

    /// A server engine over one end of a memory pair with a bound link; the other end plays
    /// the client.
    fn engine(max_in_flight: usize) -> (Inlet, Connection, crate::Peer) {
        let (client, server) = memory_pair(8);
        let link = InletLink::new(4);
        let (peer, _task) = Engine::builder()
            .max_in_flight(max_in_flight)
            .spawn(server.with_extension(link.clone()), Test);
        (link.get().expect("bound at start").clone(), client, peer)
    }

    fn request(id: i64, method: &str) -> Request {
        Request::new(id, method, None)
    }

    #[tokio::test]
    async fn a_quick_handler_is_answered_in_place_and_its_id_is_free_again() {
        let (inlet, _client, _peer) = engine(4);
        for _ in 0..2 {
            let Served::Answered(response) = inlet.serve(request(1, "now"), Extensions::new())
            else {
                panic!("answered at once");
            };
            assert_eq!(response.result.unwrap().get(), "1");
        }
    }

    #[tokio::test]
    async fn a_panic_is_answered_with_an_internal_error() {
        let (inlet, _client, _peer) = engine(4);
        let Served::Answered(response) = inlet.serve(request(1, "boom"), Extensions::new()) else {
            panic!("answered at once");
        };
        assert_eq!(
            response.result.unwrap_err().code,
            crate::codes::INTERNAL_ERROR
        );
    }

    #[tokio::test]
    async fn what_a_handler_sends_comes_before_its_answer() {
        let (inlet, _client, _peer) = engine(4);
        let Served::Running(mut running) = inlet.serve(request(1, "say"), Extensions::new()) else {
            panic!("it sent something first");
        };
        let Some(Step::Sent(m)) = running.next().await else {
            panic!("the notification first");
        };
        assert_eq!(m.related, Some(Id::Number(1)));
        assert!(matches!(running.next().await, Some(Step::Answered(_))));
        assert!(running.next().await.is_none());
    }

    #[tokio::test]
    async fn ids_in_flight_are_refused_and_the_peer_cancels_by_id() {
        let (inlet, client, _peer) = engine(4);
        let (_client_in, mut client_out): (_, OutboundSink) = client.into_parts();
        let Served::Running(mut slow) = inlet.serve(request(7, "slow"), Extensions::new()) else {
            panic!("it waits");
        };
        let Served::Refused(refused) = inlet.serve(request(7, "now"), Extensions::new()) else {
            panic!("a duplicate id");
        };
        assert_eq!(
            refused.result.unwrap_err().code,
            crate::codes::INVALID_REQUEST
        );
        // A request that stands alone may reuse it.
        assert!(matches!(
            inlet.serve_alone(request(7, "now"), Extensions::new()),
            Served::Answered(_)
        ));
        let cancel = crate::Notification::with_params(
            crate::CANCELLED_METHOD,
            &serde_json::json!({"requestId": 7}),
        )
        .unwrap();
        client_out
            .send(Outbound::from(Message::Notification(cancel)))
            .await
            .unwrap();
        let ended = tokio::time::timeout(Duration::from_secs(5), slow.next()).await;
        assert!(matches!(ended, Ok(None)), "cancelled: no answer");
    }

    #[tokio::test]
    async fn a_waiting_handler_asks_the_peer_through_the_engine() {
        use futures_util::StreamExt as _;
        let (inlet, client, _peer) = engine(4);
        let (mut client_in, mut client_out) = client.into_parts();
        let Served::Running(running) = inlet.serve(request(3, "wait"), Extensions::new()) else {
            panic!("it waits");
        };
        running.into_engine();
        // Its request reaches the client through the connection; the answer completes it.
        let Some(Ok(incoming)) = client_in.next().await else {
            panic!("a request");
        };
        let Ok(crate::Inbound::Single(Message::Request(asked))) = incoming.frame else {
            panic!("a request");
        };
        assert_eq!(asked.method, "roots/list");
        let result = crate::to_raw(&serde_json::json!({"roots": []})).unwrap();
        client_out
            .send(Outbound::from(Message::Response(Response::success(
                asked.id, result,
            ))))
            .await
            .unwrap();
        let Some(Ok(incoming)) = client_in.next().await else {
            panic!("the answer");
        };
        let Ok(crate::Inbound::Single(Message::Response(answer))) = incoming.frame else {
            panic!("a response");
        };
        assert_eq!(answer.id, Some(Id::Number(3)));
        assert_eq!(answer.result.unwrap().get(), r#"{"roots":[]}"#);
    }

    #[tokio::test]
    async fn permits_are_the_engines_and_a_lone_request_cannot_ask_the_peer() {
        let (inlet, _client, _peer) = engine(1);
        let Served::Running(slow) = inlet.serve(request(1, "slow"), Extensions::new()) else {
            panic!("it waits");
        };
        assert!(matches!(
            inlet.serve(request(2, "now"), Extensions::new()),
            Served::Busy(..)
        ));
        // Pings run on permits of their own.
        assert!(matches!(
            inlet.serve(request(3, "ping"), Extensions::new()),
            Served::Answered(_)
        ));
        drop(slow);
        let Served::Answered(response) = inlet.serve_alone(request(4, "ask"), Extensions::new())
        else {
            panic!("answered at once");
        };
        assert_eq!(response.result.unwrap().get(), r#""refused""#);
    }

    #[tokio::test]
    async fn a_closed_engine_serves_nothing() {
        let (inlet, _client, peer) = engine(4);
        peer.close();
        peer.closed().await;
        assert!(matches!(
            inlet.serve(request(1, "now"), Extensions::new()),
            Served::Closed
        ));
    }
}
