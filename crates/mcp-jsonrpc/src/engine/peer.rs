//! The handle used to talk to the peer.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::sync::{OwnedSemaphorePermit, oneshot};

use super::queue::Tx;
use super::{CancelNotice, Pending, ProgressFn, Shared, lock};
use crate::connection::Outbound;
use crate::error::CallError;
use crate::id::Id;
use crate::message::{Message, Notification, Request, from_raw, to_raw};

/// One `notifications/progress` update for an outbound request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Progress {
    /// Progress so far; increases with each update.
    pub progress: f64,
    /// The total, if known.
    #[serde(default)]
    pub total: Option<f64>,
    /// A human-readable message, if any.
    #[serde(default)]
    pub message: Option<String>,
}

/// Options for one outbound request.
///
/// ```
/// use std::time::Duration;
/// use mcp_jsonrpc::RequestOptions;
///
/// let options = RequestOptions::new()
///     .timeout(Some(Duration::from_secs(5)))
///     .on_progress(|p| tracing::info!(progress = p.progress, "working"));
/// # let _ = options;
/// ```
#[derive(Clone, Default)]
pub struct RequestOptions {
    timeout: Option<Option<Duration>>,
    max_timeout: Option<Option<Duration>>,
    progress: Option<ProgressFn>,
    related: Option<Id>,
    no_cancel: bool,
    on_id: Option<IdFn>,
}

/// What [`RequestOptions::on_id`] is given.
type IdFn = Arc<dyn Fn(&Id) + Send + Sync>;

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("max_timeout", &self.max_timeout)
            .field("progress", &self.progress.is_some())
            .field("related", &self.related)
            .field("no_cancel", &self.no_cancel)
            .field("on_id", &self.on_id.is_some())
            .finish()
    }
}

impl RequestOptions {
    /// The engine's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Timeout without progress for this request (`None`: wait forever).
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Cap on this request's total time whatever progress arrives (`None`: no cap).
    pub fn max_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.max_timeout = Some(timeout);
        self
    }

    /// Asks for progress: the engine sets `params._meta.progressToken` to a unique token, calls
    /// `f` for each `notifications/progress` carrying it (on the engine's task: keep it quick)
    /// and restarts the timeout.
    pub fn on_progress(mut self, f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// Tags the request as belonging to the inbound request `id` (see [`Outbound::related`]).
    pub fn related(mut self, id: Option<Id>) -> Self {
        self.related = id;
        self
    }

    /// Calls `f` with the id the engine gives the request, once, before the request is sent
    /// (for example to name it in the caller's telemetry).
    pub fn on_id(mut self, f: impl Fn(&Id) + Send + Sync + 'static) -> Self {
        self.on_id = Some(Arc::new(f));
        self
    }

    /// Sends no `notifications/cancelled` when the call is dropped or times out (MCP forbids
    /// cancelling `initialize`).
    pub fn no_cancel(mut self) -> Self {
        self.no_cancel = true;
        self
    }
}

/// The future of an outbound request. Nothing is sent until it is first polled. Dropping it
/// before it resolves forgets the request and sends `notifications/cancelled`.
#[must_use = "a request is sent only when its future is polled"]
pub struct ResponseFuture {
    inner: Pin<Box<dyn Future<Output = Result<Box<RawValue>, CallError>> + Send>>,
}

impl fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl Future for ResponseFuture {
    type Output = Result<Box<RawValue>, CallError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

/// A cheap, cloneable handle to the other side of a connection: send requests and
/// notifications, adjust the batch policy, close.
#[derive(Clone)]
pub struct Peer {
    shared: Arc<Shared>,
    tx: Tx,
    related: Option<Id>,
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Peer")
            .field("related", &self.related)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl Peer {
    pub(super) fn new(shared: Arc<Shared>, tx: Tx, related: Option<Id>) -> Self {
        Peer {
            shared,
            tx,
            related,
        }
    }

    /// The same peer, with outbound messages tagged as related to the inbound request `id`.
    pub fn related_to(&self, id: Option<Id>) -> Peer {
        Peer {
            shared: self.shared.clone(),
            tx: self.tx.clone(),
            related: id,
        }
    }

    /// The inbound request this handle's messages are related to.
    pub fn related(&self) -> Option<&Id> {
        self.related.as_ref()
    }

    /// Sends a request with raw params and resolves with the raw result.
    pub fn request(
        &self,
        method: impl Into<String>,
        params: Option<Box<RawValue>>,
        options: RequestOptions,
    ) -> ResponseFuture {
        let shared = self.shared.clone();
        let tx = self.tx.clone();
        let related = options.related.clone().or_else(|| self.related.clone());
        let method = method.into();
        ResponseFuture {
            inner: Box::pin(run_request(shared, tx, related, method, params, options)),
        }
    }

    /// Sends a request with params serialized from `params` (`()` for none) and decodes the
    /// result into `R`.
    pub async fn call<P, R>(
        &self,
        method: &str,
        params: &P,
        options: RequestOptions,
    ) -> Result<R, CallError>
    where
        P: Serialize + ?Sized,
        R: DeserializeOwned,
    {
        let raw = to_raw(params).map_err(CallError::Decode)?;
        let params = (raw.get() != "null").then_some(raw);
        let result = self.request(method, params, options).await?;
        from_raw(&result).map_err(CallError::Decode)
    }

    /// Sends a notification with raw params. Waits for room in the outbound queue.
    pub async fn notify(
        &self,
        method: impl Into<String>,
        params: Option<Box<RawValue>>,
    ) -> Result<(), CallError> {
        let message = Message::Notification(Notification::new(method, params));
        self.send(Outbound::related(message, self.related.clone()))
            .await
    }

    /// Sends a notification with params serialized from `params`.
    pub async fn notify_with<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<(), CallError> {
        let raw = to_raw(params).map_err(CallError::Decode)?;
        self.notify(method, Some(raw)).await
    }

    /// Queues any outbound frame as is (for example a response produced outside a handler).
    pub async fn send(&self, outbound: Outbound) -> Result<(), CallError> {
        if self.shared.is_shutting_down() {
            return Err(self.shared.closed_error());
        }
        self.tx
            .send(Box::new(outbound))
            .await
            .map_err(|_| self.shared.closed_error())
    }

    /// Whether inbound batches are currently accepted.
    pub fn batches_allowed(&self) -> bool {
        self.shared.batches_allowed()
    }

    /// Accepts or rejects (with `-32600`) inbound batches from now on, as the negotiated
    /// revision says (only 2025-03-26 has them).
    pub fn set_batches_allowed(&self, allowed: bool) {
        self.shared
            .batches_allowed
            .store(allowed, Ordering::Relaxed);
    }

    /// Starts closing the connection: pending requests fail with [`CallError::Closed`], running
    /// handlers are cancelled, queued output is flushed and the driver completes.
    pub fn close(&self) {
        self.shared.close_requested.store(true, Ordering::Release);
        self.shared.driver_waker.wake();
    }

    /// Whether the connection is closing or closed.
    pub fn is_closed(&self) -> bool {
        self.shared.is_shutting_down()
    }

    /// Resolves once the driver has finished.
    pub async fn closed(&self) {
        self.shared.finished.cancelled().await;
    }

    /// Why the connection closed, once it has.
    pub fn close_reason(&self) -> Option<String> {
        lock(&self.shared.close_reason).clone()
    }
}

/// Removes the pending entry and queues `notifications/cancelled` unless the request completed.
struct PendingGuard {
    shared: Arc<Shared>,
    id: Id,
    sent: bool,
    completed: bool,
    send_cancel: bool,
    reason: &'static str,
    permit: Option<OwnedSemaphorePermit>,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        if self.completed {
            return;
        }
        let removed = lock(&self.shared.pending).remove(&self.id).is_some();
        if removed && self.sent && self.send_cancel && !self.shared.is_shutting_down() {
            lock(&self.shared.cancels).push(CancelNotice {
                id: self.id.clone(),
                reason: self.reason.to_owned(),
                permit: self.permit.take(),
            });
            self.shared.driver_waker.wake();
        }
    }
}

async fn run_request(
    shared: Arc<Shared>,
    tx: Tx,
    related: Option<Id>,
    method: String,
    params: Option<Box<RawValue>>,
    options: RequestOptions,
) -> Result<Box<RawValue>, CallError> {
    if shared.is_shutting_down() {
        return Err(shared.closed_error());
    }
    if matches!(tx, Tx::Alone(_)) {
        return Err(CallError::Closed(
            "this request is served without a connection: it cannot send requests to the peer"
                .to_owned(),
        ));
    }
    let permit = match shared
        .shutdown
        .run_until_cancelled(shared.outgoing.clone().acquire_owned())
        .await
    {
        Some(Ok(permit)) => permit,
        Some(Err(_)) | None => return Err(shared.closed_error()),
    };
    let id = Id::Number(shared.next_id.fetch_add(1, Ordering::Relaxed));
    if let Some(on_id) = &options.on_id {
        on_id(&id);
    }
    let params = match &options.progress {
        Some(_) => Some(with_progress_token(params.as_deref(), &id).map_err(CallError::Decode)?),
        None => params,
    };
    let (response_tx, mut response_rx) = oneshot::channel();
    let activity = Arc::new(AtomicU64::new(shared.now_ms()));
    lock(&shared.pending).insert(
        id.clone(),
        Pending {
            tx: response_tx,
            progress: options.progress.clone(),
            activity: activity.clone(),
        },
    );
    let mut guard = PendingGuard {
        shared: shared.clone(),
        id: id.clone(),
        sent: false,
        completed: false,
        send_cancel: !options.no_cancel,
        reason: "request cancelled by the caller",
        permit: Some(permit),
    };
    // Shutdown may have drained the pending map between the check above and the insert.
    if shared.is_shutting_down() {
        return Err(shared.closed_error());
    }
    let request = Message::Request(Request { id, method, params });
    let send = tx.send(Box::new(Outbound::related(request, related)));
    if !matches!(
        shared.shutdown.run_until_cancelled(send).await,
        Some(Ok(()))
    ) {
        return Err(shared.closed_error());
    }
    guard.sent = true;
    activity.store(shared.now_ms(), Ordering::Relaxed);

    let idle = options.timeout.unwrap_or(shared.config.request_timeout);
    let cap = options.max_timeout.unwrap_or(shared.config.max_timeout);
    let hard_deadline = cap.map(|c| tokio::time::Instant::now() + c);
    let outcome = loop {
        let deadline = match idle {
            None => hard_deadline,
            Some(idle) => {
                let soft = shared.instant_at(activity.load(Ordering::Relaxed)) + idle;
                Some(hard_deadline.map_or(soft, |h| soft.min(h)))
            }
        };
        match deadline {
            None => break (&mut response_rx).await,
            Some(deadline) => {
                if let Ok(r) = tokio::time::timeout_at(deadline, &mut response_rx).await {
                    break r;
                }
                // Progress may have moved the deadline while we slept.
                let now = tokio::time::Instant::now();
                let moved = idle.is_some_and(|idle| {
                    shared.instant_at(activity.load(Ordering::Relaxed)) + idle > now
                });
                let capped = hard_deadline.is_some_and(|h| h <= now);
                if !moved || capped {
                    guard.reason = "request timed out";
                    return Err(CallError::Timeout);
                }
            }
        }
    };
    guard.completed = true;
    match outcome {
        Ok(result) => result,
        Err(_) => Err(shared.closed_error()),
    }
}

/// Returns `params` with `_meta.progressToken` set to `token`; other members stay raw.
fn with_progress_token(
    params: Option<&RawValue>,
    token: &Id,
) -> Result<Box<RawValue>, serde_json::Error> {
    let mut object: BTreeMap<String, Box<RawValue>> = match params {
        Some(p) => serde_json::from_str(p.get())?,
        None => BTreeMap::new(),
    };
    let mut meta: BTreeMap<String, Box<RawValue>> = match object.get("_meta") {
        Some(m) => serde_json::from_str(m.get())?,
        None => BTreeMap::new(),
    };
    meta.insert("progressToken".to_owned(), to_raw(token)?);
    object.insert("_meta".to_owned(), to_raw(&meta)?);
    to_raw(&object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_token_is_merged_into_params() {
        let params = to_raw(&serde_json::json!({"name": "x", "_meta": {"other": [1]}})).unwrap();
        let out = with_progress_token(Some(&params), &Id::Number(9)).unwrap();
        let v: serde_json::Value = serde_json::from_str(out.get()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"name": "x", "_meta": {"other": [1], "progressToken": 9}})
        );
        let out = with_progress_token(None, &Id::from("t")).unwrap();
        assert_eq!(out.get(), r#"{"_meta":{"progressToken":"t"}}"#);
        let array = to_raw(&[1]).unwrap();
        assert!(with_progress_token(Some(&array), &Id::Number(1)).is_err());
    }
}
