//! Requests served outside an engine.
//!
//! A transport that can run a request in the task that received it (the HTTP transport does
//! for stateless requests: each is its own HTTP exchange) need not pass it through a
//! connection, an engine and back. The service behind the connection offers a
//! [`DirectHandler`] in the connection's [`DirectSlot`]; the transport calls it with a context
//! made by [`Detached`], whose related messages (progress, log messages) arrive on the
//! request's own [`RelatedReceiver`]. Until a handler is offered, or for anything it does not
//! take, the connection serves as before.

use std::fmt;
use std::sync::{Arc, OnceLock};

use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Config, Peer, Queued, RequestContext, Shared};
use crate::connection::{Extensions, Outbound};
use crate::error::ErrorObject;
use crate::id::Id;
use crate::message::Request;

/// A request handler a service offers to its transport: called once per request, in the
/// transport's task, with a context made by [`Detached::context`].
pub type DirectHandler = Arc<
    dyn Fn(Request, RequestContext) -> BoxFuture<'static, Result<Box<RawValue>, ErrorObject>>
        + Send
        + Sync,
>;

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
    handler: Arc<OnceLock<DirectHandler>>,
}

impl fmt::Debug for DirectSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectSlot")
            .field("offered", &self.handler.get().is_some())
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
        self.handler.set(handler).is_ok()
    }

    /// The handler, once offered.
    pub fn handler(&self) -> Option<&DirectHandler> {
        self.handler.get()
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
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let cx = RequestContext {
            peer: Peer::new(self.shared.clone(), tx, Some(id.clone())),
            id,
            cancel,
            extensions,
        };
        (cx, RelatedReceiver { rx })
    }
}

/// The messages a request's handler sent through its [`Detached`] context, in order. Ends
/// (`None`) once every clone of the context's peer is gone.
pub struct RelatedReceiver {
    rx: mpsc::Receiver<Queued>,
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
        self.rx.try_recv().ok().map(|b| *b)
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
        drop(cx);
        assert!(related.recv().await.is_none());
    }

    #[tokio::test]
    async fn a_slot_keeps_the_first_handler() {
        let slot = DirectSlot::new();
        let first: DirectHandler =
            Arc::new(|_r, _cx| Box::pin(async { Ok(crate::to_raw(&1).unwrap()) }));
        let second: DirectHandler =
            Arc::new(|_r, _cx| Box::pin(async { Ok(crate::to_raw(&2).unwrap()) }));
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
}
