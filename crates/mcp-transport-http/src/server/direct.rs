//! Requests served in the task of their own HTTP exchange.
//!
//! The engine serving a hub's connection hands its [`Inlet`] to the hub when it starts. A
//! stateless request is then served in its POST's task ([`Direct::serve`]) as a request that
//! stands alone: it enters its handler through the engine as every request does (permits,
//! cancellation, the handler's run), and only the first poll and the answer happen here,
//! without the connection's queues, the hub's routing and rewritten ids. Messages the handler
//! sends about the request (progress, log messages, subscription notifications) come back as
//! [`Step`]s; the first one turns the answer into an SSE stream, fed by a task of its own
//! until the result, as the hub would do. A client that only accepts JSON gets the result
//! alone.
//!
//! A request on a stateful session is served in its POST's task too ([`serve_session`]),
//! through the session engine's inlet (its id among the session's requests in flight, the
//! client's `notifications/cancelled` cancels it): the hub routes it as if the connection had
//! it (its slot, its streams, its event ids), and what the handler sends, then its response,
//! are delivered to the hub in order, as the connection's writer would deliver them. The
//! session's server sees no difference. A request that finds every permit of the engine taken
//! goes to the connection instead, where the engine keeps it waiting.

use std::sync::Arc;

use bytes::Bytes;
use http::{Response, StatusCode};
use mcp_jsonrpc::{Extensions, Frame, Inlet, Message, Outbound, Running, Served, Step};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::body::{self, HttpBody, SseBody, encode_message_event, message_bytes};
use super::config::HttpServerConfig;
use super::hub::{Decision, Hub, PostError, SlotGuard};
use super::service::Dispatch;
use super::{SseStreamControl, stateless};

/// What the service keeps for stateless requests served in their POST's task: the bound on
/// those in flight.
pub(crate) struct Direct {
    permits: Arc<Semaphore>,
}

/// Why a direct request got no answer from the server.
pub(crate) enum Refused {
    /// [`HttpServerConfig::max_pending_stateless`] requests are in flight.
    Busy,
    /// The shared connection closed while the request ran.
    Closed,
    /// Every permit of the engine is taken: the request goes to the connection, given back.
    Queue(mcp_jsonrpc::Request, Extensions),
}

impl Direct {
    pub(crate) fn new(config: &HttpServerConfig) -> Self {
        Direct {
            permits: Arc::new(Semaphore::new(config.max_pending_stateless)),
        }
    }

    /// Serves `request` through `inlet` (the shared connection's engine); `closed` is the
    /// shared connection's token (closing it ends the request).
    pub(crate) async fn serve(
        &self,
        config: &HttpServerConfig,
        closed: &CancellationToken,
        inlet: &Inlet,
        request: mcp_jsonrpc::Request,
        extensions: Extensions,
        how: &Dispatch,
    ) -> Result<Response<HttpBody>, Refused> {
        // Borrowed, not owned: an owned permit counts a reference to the semaphore all
        // stateless requests share. One that outlives this call (an SSE stream) becomes a
        // `HeldPermit` below.
        let permit = self.permits.try_acquire().map_err(|_| Refused::Busy)?;
        let mut running = match inlet.serve_alone(request, extensions) {
            Served::Answered(response) | Served::Refused(response) => {
                return Ok(json_or_sse(Vec::new(), response, how));
            }
            Served::Running(running) => running,
            Served::Busy(request, extensions) => return Err(Refused::Queue(request, extensions)),
            Served::Closed => return Err(Refused::Closed),
        };
        // Dropping `running` before its answer (the client went away, the connection closed)
        // cancels the handler.
        let mut first = Vec::new();
        loop {
            tokio::select! {
                biased;
                step = running.next() => match step {
                    Some(Step::Answered(response)) => return Ok(json_or_sse(first, response, how)),
                    Some(Step::Sent(m)) if how.sse_allowed => {
                        push_events(&mut first, &m);
                        break;
                    }
                    // A client that takes only JSON gets the result alone.
                    Some(Step::Sent(_)) => {}
                    None => return Err(Refused::Closed),
                },
                () = closed.cancelled() => return Err(Refused::Closed),
            }
        }
        let (tx, rx) = mpsc::channel(config.stream_buffer);
        tokio::spawn(stream(
            running,
            tx,
            closed.clone(),
            HeldPermit::from(permit, &self.permits),
        ));
        Ok(body::sse(SseBody::new(
            first,
            Some(rx),
            config.sse_keep_alive,
            None,
        )))
    }
}

/// The answer of a stateless request whose handler answered: JSON, unless it sent something
/// first (`first`, its events) or the client asked for SSE.
fn json_or_sse(
    mut first: Vec<Bytes>,
    response: mcp_jsonrpc::Response,
    how: &Dispatch,
) -> Response<HttpBody> {
    if first.is_empty() && !(how.force_sse && how.sse_allowed) {
        let code = response.result.as_ref().err().map(|e| e.code);
        let bytes = message_bytes(&Message::Response(response));
        return body::json(stateless::status_for(code), bytes);
    }
    first.push(event(&Message::Response(response)));
    body::sse(SseBody::new(first, None, None, None))
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
    mut running: Running,
    tx: mpsc::Sender<Bytes>,
    closed: CancellationToken,
    _permit: HeldPermit,
) {
    let mut events = Vec::new();
    loop {
        tokio::select! {
            biased;
            step = running.next() => match step {
                Some(Step::Sent(m)) => push_events(&mut events, &m),
                Some(Step::Answered(response)) => events.push(event(&Message::Response(response))),
                None => return,
            },
            () = tx.closed() => return,
            () = closed.cancelled() => return,
        }
        for e in events.drain(..) {
            if tx.send(e).await.is_err() {
                return;
            }
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
        Refused::Closed | Refused::Queue(..) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the server connection closed",
        ),
    };
    body::http_error(status, super::service::TRANSPORT_ERROR, text)
}

/// Serves one request of a session in the POST's task, through the session engine's inlet;
/// `request` is known not to be `initialize`. Gives how the POST is answered (`None` once the
/// session is gone), at once or through a future that also yields the slot's guard, as
/// [`Hub::post`] would; `Err` for what [`Hub::post`] would refuse.
///
/// The hub's slot (its routes, its decision channel, its lock) is opened only when the request
/// needs one: an SSE answer is forced, or the handler sent something before its response or
/// has to wait. A handler that answers on its first poll with nothing sent before (most do)
/// is answered with JSON without the slot. `extensions` carry the request's
/// [`SseStreamControl`] (the POST attaches it with its other values).
pub(crate) fn serve_session<'a>(
    hub: &'a Arc<Hub>,
    inlet: &Inlet,
    request: mcp_jsonrpc::Request,
    extensions: Extensions,
    how: &'a Dispatch,
) -> Result<SessionServed<'a>, PostError> {
    let slot = if how.force_sse {
        Some(hub.open_direct(&request.id, how.sse_allowed, how.force_sse)?)
    } else if hub.is_closed() {
        return Err(PostError::Closed);
    } else {
        None
    };
    // Attached by the POST with its other values (one allocation for them all).
    debug_assert!(extensions.get::<SseStreamControl>().is_some());
    let id = request.id.clone();
    let work = match inlet.serve(request, extensions) {
        // Answered with nothing before: no slot. (The request left the engine's in-flight map
        // before its response existed.)
        Served::Answered(response) if slot.is_none() => {
            return Ok(SessionServed::Now(lone_answer(hub, response)));
        }
        Served::Answered(response) => Work::Answered(response),
        Served::Running(running) => Work::Running(running),
        // The guard, dropped, closes the slot.
        Served::Refused(_) => return Err(PostError::DuplicateId(id)),
        Served::Busy(request, extensions) => {
            drop(slot);
            return Ok(SessionServed::Queue(request, extensions));
        }
        Served::Closed => return Err(PostError::Closed),
    };
    Ok(SessionServed::Later(Box::pin(serve_in_slot(
        hub, how, id, slot, work,
    ))))
}

/// How a session request is served (see [`serve_session`]): answered at once without a slot
/// (`None`: the session is gone), by a future that waits for the slot's decision, or by the
/// connection (every permit of the engine is taken: given back). The future is boxed: held
/// in place, it would make the future of every POST (which hyper moves per request) a
/// kilobyte larger.
pub(crate) enum SessionServed<'a> {
    Now(Option<Decision>),
    Later(futures_util::future::BoxFuture<'a, SessionAnswer>),
    Queue(mcp_jsonrpc::Request, Extensions),
}

/// How the POST of a session request is answered (`None`: the session is gone), with the
/// slot's guard when one was opened.
pub(crate) type SessionAnswer = Result<(Option<Decision>, Option<SlotGuard>), PostError>;

/// What a session request routed through the hub's slot has left to do.
enum Work {
    /// Its handler answered on the first poll (an SSE answer was forced).
    Answered(mcp_jsonrpc::Response),
    Running(Running),
}

/// The rest of [`serve_session`] for a request routed through the hub's slot.
async fn serve_in_slot(
    hub: &Arc<Hub>,
    how: &Dispatch,
    id: mcp_jsonrpc::Id,
    slot: Option<(tokio::sync::oneshot::Receiver<Decision>, SlotGuard)>,
    work: Work,
) -> SessionAnswer {
    let (mut decision, guard) = match slot {
        Some(opened) => opened,
        // The handler waits or sent something: routed through a slot, opened now.
        None => hub.open_direct(&id, how.sse_allowed, false)?,
    };
    let mut run = SessionRequest {
        hub: Arc::clone(hub),
        running: None,
    };
    match work {
        Work::Answered(response) => {
            if let Some(decided) = answered(hub, response).await {
                return Ok((Some(decided), Some(guard)));
            }
        }
        Work::Running(running) => run.running = Some(running),
    }
    let closed = hub.closed();
    while let Some(running) = run.running.as_mut() {
        tokio::select! {
            biased;
            step = running.next() => match step {
                Some(Step::Sent(m)) => {
                    hub.deliver(m).await;
                }
                Some(Step::Answered(response)) => {
                    run.running = None;
                    if let Some(decided) = answered(hub, response).await {
                        return Ok((Some(decided), Some(guard)));
                    }
                }
                // Cancelled: no answer.
                None => run.running = None,
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
    running: Option<Running>,
}

/// The POST's answer when the response alone completes it (see [`Hub::complete_direct`]);
/// otherwise the response is delivered.
async fn answered(hub: &Hub, response: mcp_jsonrpc::Response) -> Option<Decision> {
    match hub.complete_direct(response) {
        Ok(decided) => Some(decided),
        Err(outbound) => {
            hub.deliver(outbound).await;
            None
        }
    }
}

impl Drop for SessionRequest {
    fn drop(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(run_on(Arc::clone(&self.hub), running));
    }
}

/// The rest of a session request whose POST no longer waits for it.
async fn run_on(hub: Arc<Hub>, mut running: Running) {
    let closed = hub.closed().clone();
    loop {
        tokio::select! {
            biased;
            step = running.next() => match step {
                Some(Step::Sent(m)) => {
                    hub.deliver(m).await;
                }
                Some(Step::Answered(response)) => {
                    // The POST is gone: an answer it would have taken has nowhere to go.
                    let _ = answered(&hub, response).await;
                    return;
                }
                None => return,
            },
            () = closed.cancelled() => return,
        }
    }
}
