//! `subscriptions/listen` (2026-07-28): a long-lived request whose response stream carries the
//! change notifications the client opted in to, each tagged with the subscription's id.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll};

use futures_core::Stream;
use mcp_types::SubscriptionFilter;
use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};

use crate::notify::ServerNotification;

/// The acknowledgement that opens a subscription.
pub(crate) const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// A `subscriptions/listen` sent but not yet acknowledged. Openings are serialized per
/// session, so the next acknowledgement with an unknown subscription id is its.
pub(crate) struct PendingListen {
    pub(crate) tx: mpsc::Sender<ServerNotification>,
    pub(crate) ack: oneshot::Sender<SubscriptionFilter>,
    pub(crate) end: Arc<Notify>,
    pub(crate) key: Arc<OnceLock<String>>,
}

struct Route {
    tx: mpsc::Sender<ServerNotification>,
    end: Arc<Notify>,
}

/// Where notifications tagged with a subscription id go.
#[derive(Default)]
pub(crate) struct Routes {
    pending: Option<PendingListen>,
    active: HashMap<String, Route>,
}

/// The routing key of a JSON-RPC id (its JSON text: `5` and `"5"` differ).
pub(crate) fn key_of(id: &Value) -> String {
    id.to_string()
}

/// The subscription id a notification's params carry, as a routing key.
pub(crate) fn subscription_key(params: Option<&Value>) -> Option<String> {
    params?
        .get("_meta")?
        .get(mcp_types::wire::META_SUBSCRIPTION_ID)
        .filter(|id| id.is_string() || id.is_number())
        .map(key_of)
}

/// The shared routing table, held by the incoming handler.
#[derive(Default, Clone)]
pub(crate) struct Subscriptions {
    routes: Arc<Mutex<Routes>>,
}

impl Subscriptions {
    fn routes(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn expect(&self, pending: PendingListen) {
        self.routes().pending = Some(pending);
    }

    /// Forgets the pending opening if it is the one whose end signal is `end`.
    pub(crate) fn abandon(&self, end: &Arc<Notify>) {
        let mut routes = self.routes();
        if routes
            .pending
            .as_ref()
            .is_some_and(|p| Arc::ptr_eq(&p.end, end))
        {
            routes.pending = None;
        }
    }

    /// Removes a subscription's route, ending its stream.
    pub(crate) fn remove(&self, key: &str) {
        self.routes().active.remove(key);
    }

    /// Routes one notification. Returns `false` for the acknowledgement of a subscription (it
    /// is consumed here) and `true` for anything that should also reach the session's general
    /// notification stream.
    pub(crate) fn route(
        &self,
        method: &str,
        params: Option<&Value>,
        decoded: &ServerNotification,
    ) -> bool {
        if method == "notifications/cancelled" {
            // On stdio the server ends a subscription by cancelling its listen request.
            if let Some(id) = params.and_then(|p| p.get("requestId")) {
                if let Some(route) = self.routes().active.remove(&key_of(id)) {
                    route.end.notify_one();
                }
            }
            return true;
        }
        let Some(key) = subscription_key(params) else {
            return true;
        };
        let mut routes = self.routes();
        if method == ACKNOWLEDGED {
            if routes.active.contains_key(&key) {
                return false;
            }
            let Some(pending) = routes.pending.take() else {
                tracing::debug!(subscription = %key, "acknowledgement of no pending subscription");
                return false;
            };
            let filter = params
                .and_then(|p| p.get("notifications"))
                .cloned()
                .and_then(|f| serde_json::from_value(f).ok())
                .unwrap_or_default();
            let _ = pending.key.set(key.clone());
            routes.active.insert(
                key,
                Route {
                    tx: pending.tx,
                    end: pending.end,
                },
            );
            let _ = pending.ack.send(filter);
            return false;
        }
        if let Some(route) = routes.active.get(&key) {
            match route.tx.try_send(decoded.clone()) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::warn!(subscription = %key, method, "subscription reader fell behind; dropped a notification");
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    routes.active.remove(&key);
                }
            }
        }
        true
    }
}

/// An open `subscriptions/listen` subscription: a stream of the change notifications the
/// server agreed to send (see [`Subscription::acknowledged`]). Get one with
/// [`ClientSession::listen`](crate::ClientSession::listen).
///
/// The stream ends when the server ends the subscription or the connection closes. Dropping
/// the subscription cancels the listen request (over HTTP: closes its response stream).
pub struct Subscription {
    pub(crate) acknowledged: SubscriptionFilter,
    pub(crate) key: String,
    pub(crate) rx: mpsc::Receiver<ServerNotification>,
    pub(crate) subscriptions: Subscriptions,
    pub(crate) task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.key)
            .field("acknowledged", &self.acknowledged)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// The notification types the server agreed to send: the subset of the requested filter
    /// it supports.
    pub fn acknowledged(&self) -> &SubscriptionFilter {
        &self.acknowledged
    }

    /// The subscription id (the JSON text of the listen request's id).
    pub fn id(&self) -> &str {
        &self.key
    }

    /// The next notification, or `None` once the subscription has ended.
    pub async fn recv(&mut self) -> Option<ServerNotification> {
        self.rx.recv().await
    }
}

impl Stream for Subscription {
    type Item = ServerNotification;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.subscriptions.remove(&self.key);
        self.task.abort();
    }
}
