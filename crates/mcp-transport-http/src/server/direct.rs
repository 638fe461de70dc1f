//! Stateless requests served in the task of their own HTTP exchange.
//!
//! Once the server of the shared stateless connection has offered a direct handler (see
//! [`mcp_jsonrpc::DirectSlot`]), a stateless request no longer goes through that connection
//! (its engine, the hub's routing and rewritten ids): the POST's task calls the handler and
//! answers with its result. Messages the handler sends about the request (progress, log
//! messages, subscription notifications) arrive on the request's own channel; the first one
//! turns the answer into an SSE stream, fed by a task of its own until the result, as the hub
//! would do. A client that only accepts JSON gets the result alone.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt;
use http::{Response, StatusCode};
use mcp_jsonrpc::{
    Detached, DirectHandler, ErrorObject, Extensions, Frame, Id, Message, Outbound, RelatedReceiver,
};
use serde_json::value::RawValue;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::body::{self, HttpBody, SseBody, encode_message_event, message_bytes};
use super::config::HttpServerConfig;
use super::service::Dispatch;
use super::stateless;

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

type Outcome = Result<Result<Box<RawValue>, ErrorObject>, Box<dyn std::any::Any + Send>>;

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
        let permit = self
            .permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| Refused::Busy)?;
        let id = request.id.clone();
        let method = request.method.clone();
        let cancel = closed.child_token();
        let (cx, mut related) =
            self.detached
                .context(id.clone(), extensions, cancel.clone(), config.stream_buffer);
        // Cancels the handler's token if the exchange is abandoned before the result (the
        // client went away); disarmed once the handler has answered.
        let abandon = cancel.clone().drop_guard();
        let mut run = AssertUnwindSafe(handler(request, cx)).catch_unwind();
        let mut first = Vec::new();
        let mut open = true;
        loop {
            tokio::select! {
                biased;
                outcome = &mut run => {
                    abandon.disarm();
                    let response = answer(id, &method, outcome);
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
                () = cancel.cancelled() => return Err(Refused::Closed),
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
                method,
                cancel,
                abandon,
                _permit: permit,
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
    method: String,
    cancel: CancellationToken,
    abandon: DropGuard,
    _permit: OwnedSemaphorePermit,
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
                let response = answer(running.id, &running.method, outcome);
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
            () = running.cancel.cancelled() => return,
        }
    }
}

/// The response to send for a handler's outcome.
fn answer(id: Id, method: &str, outcome: Outcome) -> mcp_jsonrpc::Response {
    let result = outcome.unwrap_or_else(|_| {
        tracing::error!(%method, %id, "request handler panicked");
        Err(ErrorObject::internal_error("the request handler failed"))
    });
    mcp_jsonrpc::Response {
        id: Some(id),
        result,
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
