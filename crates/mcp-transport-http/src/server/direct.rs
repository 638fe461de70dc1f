//! Stateless requests served in the task of their own HTTP exchange.
//!
//! Once the server of the shared stateless connection has offered a direct handler (see
//! [`mcp_jsonrpc::DirectSlot`]), a stateless request no longer goes through that connection
//! (its engine, the hub's routing and rewritten ids): the POST's task calls the handler and
//! answers with its result. Messages the handler sends about the request (progress, log
//! messages, subscription notifications) arrive on the request's own channel; the first one
//! turns the answer into an SSE stream, fed by a task of its own until the result, as the hub
//! would do. A client that only accepts JSON gets the result alone.
//!
//! A request on a stateful session is served in its POST's task too ([`serve_session`]), on
//! the session's engine (see [`mcp_jsonrpc::DirectSlot::engine_context`]): the hub routes it
//! as if the connection had it (its slot, its streams, its event ids), and what the handler
//! sends, then its response, are delivered to the hub in order, as the connection's writer
//! would deliver them. The session's server sees no difference.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt;
use http::{Response, StatusCode};
use mcp_jsonrpc::{
    Detached, DirectHandler, Extensions, Frame, Id, Message, Outbound, RelatedReceiver,
};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::body::{self, HttpBody, SseBody, encode_message_event, message_bytes};
use super::config::HttpServerConfig;
use super::hub::{Decision, Hub, PostError, SlotGuard};
use super::service::Dispatch;
use super::{SseStreamControl, stateless};

/// What the service keeps for direct requests: the context maker and the in-flight bound.
pub(crate) struct Direct {
    detached: Detached,
    permits: Arc<Semaphore>,
}

/// Why a direct request got no answer from the server.
pub(crate) enum Refused {
    /// [`HttpServerConfig::max_pending_stateless`] requests are in flight.
    Busy,
    /// The shared connection closed while the request ran.
    Closed,
}

use mcp_jsonrpc::{DirectRun, HandlerOutcome as Outcome, direct_run, handler_response as answer};

impl Direct {
    pub(crate) fn new(config: &HttpServerConfig) -> Self {
        Direct {
            detached: Detached::new(),
            permits: Arc::new(Semaphore::new(config.max_pending_stateless)),
        }
    }

    /// Serves `request` with `handler`; `closed` is the shared connection's token (closing it
    /// cancels the request).
    pub(crate) async fn serve(
        &self,
        config: &HttpServerConfig,
        closed: &CancellationToken,
        handler: &DirectHandler,
        request: mcp_jsonrpc::Request,
        extensions: Extensions,
        how: &Dispatch,
    ) -> Result<Response<HttpBody>, Refused> {
        // Borrowed, not owned: an owned permit counts a reference to the semaphore all
        // stateless requests share. One that outlives this call (an SSE stream) becomes a
        // `HeldPermit` below.
        let permit = self.permits.try_acquire().map_err(|_| Refused::Busy)?;
        let id = request.id.clone();
        // A token of its own, not a child of the connection's: a child is linked into (and out
        // of) its parent under the parent's lock, one lock every concurrent request would
        // share. The connection's closing is watched below instead, and cancels this token
        // through the guard.
        let cancel = CancellationToken::new();
        let (cx, mut related) =
            self.detached
                .context(id.clone(), extensions, cancel.clone(), config.stream_buffer);
        // Cancels the handler's token if the exchange is abandoned before the result (the
        // client went away, the connection closed); disarmed once the handler has answered.
        let abandon = cancel.drop_guard();
        let mut run = AssertUnwindSafe(handler(request, cx)).catch_unwind();
        let mut first = Vec::new();
        let mut open = true;
        loop {
            tokio::select! {
                biased;
                outcome = &mut run => {
                    abandon.disarm();
                    let response = answer(id, outcome);
                    // What the handler sent before answering goes first, in order.
                    while let Some(m) = related.try_recv() {
                        if how.sse_allowed {
                            push_events(&mut first, &m);
                        }
                    }
                    if first.is_empty() && !(how.force_sse && how.sse_allowed) {
                        let code = response.result.as_ref().err().map(|e| e.code);
                        let bytes = message_bytes(&Message::Response(response));
                        return Ok(body::json(stateless::status_for(code), bytes));
                    }
                    first.push(event(&Message::Response(response)));
                    return Ok(body::sse(SseBody::new(first, None, None, None)));
                }
                m = related.recv(), if open => match m {
                    Some(m) if how.sse_allowed => {
                        push_events(&mut first, &m);
                        break;
                    }
                    // A client that takes only JSON gets the result alone.
                    Some(_) => {}
                    None => open = false,
                },
                () = closed.cancelled() => return Err(Refused::Closed),
            }
        }
        let (tx, rx) = mpsc::channel(config.stream_buffer);
        tokio::spawn(stream(
            Box::pin(run),
            related,
            open,
            tx,
            Running {
                id,
                closed: closed.clone(),
                abandon,
                _permit: HeldPermit::from(permit, &self.permits),
            },
        ));
        Ok(body::sse(SseBody::new(
            first,
            Some(rx),
            config.sse_keep_alive,
            None,
        )))
    }
}

/// A request whose answer became an SSE stream.
struct Running {
    id: Id,
    /// The shared connection's token: its closing ends the stream.
    closed: CancellationToken,
    abandon: DropGuard,
    _permit: HeldPermit,
}

/// A request permit that outlives the exchange that took it: given back when dropped.
struct HeldPermit(Arc<Semaphore>);

impl HeldPermit {
    fn from(permit: tokio::sync::SemaphorePermit<'_>, semaphore: &Arc<Semaphore>) -> Self {
        permit.forget();
        HeldPermit(Arc::clone(semaphore))
    }
}

impl Drop for HeldPermit {
    fn drop(&mut self) {
        self.0.add_permits(1);
    }
}

/// Feeds the stream until the handler answers; stops (and so cancels the handler) when the
/// client goes away or the shared connection closes.
async fn stream(
    mut run: std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send>>,
    mut related: RelatedReceiver,
    mut open: bool,
    tx: mpsc::Sender<Bytes>,
    running: Running,
) {
    let mut events = Vec::new();
    loop {
        tokio::select! {
            biased;
            outcome = &mut run => {
                running.abandon.disarm();
                while let Some(m) = related.try_recv() {
                    push_events(&mut events, &m);
                }
                let response = answer(running.id, outcome);
                events.push(event(&Message::Response(response)));
                for e in events {
                    if tx.send(e).await.is_err() {
                        return;
                    }
                }
                return;
            }
            m = related.recv(), if open => match m {
                Some(m) => {
                    push_events(&mut events, &m);
                    for e in events.drain(..) {
                        if tx.send(e).await.is_err() {
                            return;
                        }
                    }
                }
                None => open = false,
            },
            () = tx.closed() => return,
            () = running.closed.cancelled() => return,
        }
    }
}

fn event(message: &Message) -> Bytes {
    encode_message_event(None, None, message).0
}

fn push_events(events: &mut Vec<Bytes>, outbound: &Outbound) {
    match &outbound.frame {
        Frame::Single(m) => events.push(event(m)),
        Frame::Batch(ms) => events.extend(ms.iter().map(event)),
    }
}

/// The HTTP answer to a refused direct request.
pub(crate) fn refused(refused: Refused) -> Response<HttpBody> {
    let (status, text) = match refused {
        Refused::Busy => (
            StatusCode::SERVICE_UNAVAILABLE,
            "too many requests in flight",
        ),
        Refused::Closed => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the server connection closed",
        ),
    };
    body::http_error(status, super::service::TRANSPORT_ERROR, text)
}

/// Serves one request of a session in the POST's task; `request` is known not to be
/// `initialize` and the slot's engine is running. Gives how the POST is answered (`None` once
/// the session is gone), at once or through a future that also yields the slot's guard, as
/// [`Hub::post`] would; `Err` for what [`Hub::post`] would refuse.
///
/// The hub's slot (its routes, its decision channel, its lock) is opened only when the request
/// needs one: an SSE answer is forced, or the handler sent something before its response or
/// has to wait. A handler that answers on its first poll with nothing sent before (most do)
/// is answered with JSON without the slot: its id is still checked against the requests in
/// flight on the session's engine, which also cancels it on the client's
/// `notifications/cancelled`. `extensions` carry the request's [`SseStreamControl`] (the POST
/// attaches it with its other values).
pub(crate) fn serve_session<'a>(
    hub: &'a Arc<Hub>,
    config: &HttpServerConfig,
    handler: &DirectHandler,
    request: mcp_jsonrpc::Request,
    extensions: Extensions,
    how: &'a Dispatch,
) -> Result<SessionServed<'a>, PostError> {
    let id = request.id.clone();
    let slot = if how.force_sse {
        Some(hub.open_direct(&id, how.sse_allowed, how.force_sse)?)
    } else if hub.is_closed() {
        return Err(PostError::Closed);
    } else {
        None
    };
    // Attached by the POST with its other values (one allocation for them all).
    debug_assert!(extensions.get::<SseStreamControl>().is_some());
    let (cx, mut related) =
        match hub
            .direct_slot()
            .engine_context(id.clone(), extensions, config.stream_buffer)
        {
            Ok(made) => made,
            // The guard, dropped, closes the slot.
            Err(mcp_jsonrpc::EngineContextError::DuplicateId) => {
                return Err(PostError::DuplicateId(id));
            }
            Err(_) => return Err(PostError::Closed),
        };
    let mut handler_run = direct_run(handler, request, cx);
    // The first poll here, without a waker that matters (the select below polls it again):
    // a handler that answers at once is done without its token ever being watched.
    let first = (&mut handler_run).now_or_never();
    // What the handler sent before its response, taken to see whether there is any.
    let mut sent = None;
    if slot.is_none() && first.is_some() {
        sent = related.try_recv();
        if sent.is_none() {
            // Answered with nothing before: no slot. The request leaves the engine's in-flight
            // map before its response is sent. (`None` inside: cancelled, which it cannot be
            // before its token is watched; nothing to send.)
            drop(related);
            let answered = first
                .flatten()
                .and_then(|outcome| lone_answer(hub, answer(id, outcome)));
            return Ok(SessionServed::Now(answered));
        }
    }
    Ok(SessionServed::Later(Box::pin(serve_in_slot(
        hub,
        how,
        Waiting {
            id,
            slot,
            handler_run,
            related,
            first,
            sent,
        },
    ))))
}

/// How a session request is served (see [`serve_session`]): answered at once without a slot
/// (`None`: the session is gone), or by a future that waits for the slot's decision. That
/// future is boxed: held in place, it would make the future of every POST (which hyper moves
/// per request) a kilobyte larger.
pub(crate) enum SessionServed<'a> {
    Now(Option<Decision>),
    Later(futures_util::future::BoxFuture<'a, SessionAnswer>),
}

/// How the POST of a session request is answered (`None`: the session is gone), with the
/// slot's guard when one was opened.
pub(crate) type SessionAnswer = Result<(Option<Decision>, Option<SlotGuard>), PostError>;

/// A session request that needs the hub's slot, as [`serve_session`] leaves it.
struct Waiting {
    id: Id,
    slot: Option<(tokio::sync::oneshot::Receiver<Decision>, SlotGuard)>,
    handler_run: DirectRun,
    related: RelatedReceiver,
    /// The handler's first poll: `Some` when it answered (`None` inside: cancelled).
    first: Option<Option<Outcome>>,
    /// The first message it sent, taken to see whether there was any.
    sent: Option<Outbound>,
}

/// The rest of [`serve_session`] for a request routed through the hub's slot.
async fn serve_in_slot(hub: &Arc<Hub>, how: &Dispatch, waiting: Waiting) -> SessionAnswer {
    let Waiting {
        id,
        slot,
        mut handler_run,
        related,
        first,
        sent,
    } = waiting;
    let (mut decision, guard) = match slot {
        Some(opened) => opened,
        // The handler waits or sent something: routed through a slot, opened now.
        None => hub.open_direct(&id, how.sse_allowed, false)?,
    };
    let mut run = SessionRequest {
        hub: Arc::clone(hub),
        id,
        run: None,
        related: Some(related),
    };
    if let Some(m) = sent {
        hub.deliver(m).await;
    }
    match first {
        Some(outcome) => {
            if let Some(decided) = run.finish(outcome).await {
                return Ok((Some(decided), Some(guard)));
            }
        }
        None => {
            handler_run.watch(run.related.as_ref().and_then(RelatedReceiver::cancellation));
            run.run = Some(handler_run);
        }
    }
    let closed = hub.closed();
    let mut open = true;
    while let (Some(fut), Some(related)) = (run.run.as_mut(), run.related.as_mut()) {
        tokio::select! {
            biased;
            outcome = fut => {
                run.run = None;
                if let Some(decided) = run.finish(outcome).await {
                    return Ok((Some(decided), Some(guard)));
                }
                break;
            }
            m = related.recv(), if open => match m {
                Some(m) => {
                    hub.deliver(m).await;
                }
                None => open = false,
            },
            // Decided before the result (an SSE stream): the POST answers now, the handler runs
            // on (dropping `run` moves it to a task of its own).
            d = &mut decision => return Ok((d.ok(), Some(guard))),
            () = closed.cancelled() => return Ok((None, Some(guard))),
        }
    }
    let decided = tokio::select! {
        d = decision => d.ok(),
        () = closed.cancelled() => None,
    };
    Ok((decided, Some(guard)))
}

/// The JSON answer of a session request served without a slot (`None` once the session is
/// closing). Nothing was routed for it, so nothing can be queued before it.
fn lone_answer(hub: &Hub, response: mcp_jsonrpc::Response) -> Option<Decision> {
    if hub.is_closed() {
        return None;
    }
    Some(Decision::json(response))
}

/// A session request being served. Dropped before its handler answered (the POST was
/// abandoned, or answered early with an SSE stream), it moves the handler to a task of its own:
/// a session request is not cancelled by its HTTP exchange going away, and its response is
/// routed (to a resumed stream, or nowhere) as the connection would route it.
struct SessionRequest {
    hub: Arc<Hub>,
    id: Id,
    run: Option<DirectRun>,
    related: Option<RelatedReceiver>,
}

impl SessionRequest {
    /// Delivers what the handler sent before answering, then its response; the POST's answer
    /// when the response alone completes it (see [`Hub::complete_direct`]).
    async fn finish(&mut self, outcome: Option<Outcome>) -> Option<Decision> {
        if let Some(related) = self.related.as_mut() {
            while let Some(m) = related.try_recv() {
                self.hub.deliver(m).await;
            }
        }
        // The request leaves the engine's in-flight map before its id is free in the hub.
        self.related = None;
        let response = answer(self.id.clone(), outcome?);
        match self.hub.complete_direct(response) {
            Ok(decided) => Some(decided),
            Err(outbound) => {
                self.hub.deliver(outbound).await;
                None
            }
        }
    }
}

impl Drop for SessionRequest {
    fn drop(&mut self) {
        let Some(run) = self.run.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let rest = SessionRequest {
            hub: Arc::clone(&self.hub),
            id: self.id.clone(),
            run: None,
            related: self.related.take(),
        };
        runtime.spawn(run_on(rest, run));
    }
}

/// The rest of a session request whose POST no longer waits for it.
async fn run_on(mut rest: SessionRequest, mut run: DirectRun) {
    let hub = Arc::clone(&rest.hub);
    let closed = hub.closed().clone();
    let mut open = rest.related.is_some();
    loop {
        let related = rest.related.as_mut();
        tokio::select! {
            biased;
            outcome = &mut run => {
                // The POST is gone: an answer it would have taken has nowhere to go.
                let _ = rest.finish(outcome).await;
                return;
            }
            m = async { related?.recv().await }, if open => match m {
                Some(m) => {
                    hub.deliver(m).await;
                }
                None => open = false,
            },
            () = closed.cancelled() => return,
        }
    }
}
