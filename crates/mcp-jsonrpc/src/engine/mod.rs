//! The request engine: transport-agnostic request/response plumbing used by both roles.

mod cancel;
mod driver;
mod inlet;
mod peer;
mod poll;
mod queue;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use cancel::Cancellation;
pub use inlet::{Inlet, InletLink, Running, Served, Step};
pub use peer::{Peer, Progress, RequestOptions, ResponseFuture};
pub use poll::WhenWoken;

use poll::WakerSlot;

use crate::connection::{Connection, Extensions};
use crate::error::{ErrorObject, TransportError};
use crate::id::{Id, IdMap};
use crate::message::{Notification, Request};
use crate::raw::RawJson;

/// The method of the cancellation notification.
pub const CANCELLED_METHOD: &str = "notifications/cancelled";
/// The method of the progress notification.
pub const PROGRESS_METHOD: &str = "notifications/progress";
/// The method of the liveness check. A `ping` is answered even when every request permit is
/// taken: it runs on one of a few permits of its own ([`CONTROL_PERMITS`]).
pub const PING_METHOD: &str = "ping";
/// Requests beyond `max_in_flight` that may still run at once when they are pings: a client
/// checking that a busy server is alive gets an answer.
const CONTROL_PERMITS: usize = 4;

/// What the engine calls for inbound requests and notifications.
///
/// The methods return `impl Future + Send` (no boxing); the engine is generic over the handler,
/// so object safety is not needed. Both methods have defaults: requests are answered with
/// `-32601` and notifications are ignored, so `()` is a handler for a side that serves nothing.
///
/// Requests run concurrently (at most `max_in_flight`): a request handler is first polled on the
/// engine's own task, and one that has to wait continues on a spawned task, so a handler that
/// answers at once costs no task and no thread hand-off. Handlers must therefore not block the
/// thread (use `tokio::task::spawn_blocking` for blocking work). Notifications run one at a time
/// in wire order on the engine's own task, so a notification handler should be quick (it may
/// await requests to the peer: responses keep flowing while it runs).
pub trait Handler: Send + Sync + 'static {
    /// Answers a request with a raw result or an error.
    fn handle_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> impl Future<Output = Result<RawJson, ErrorObject>> + Send {
        let _ = cx;
        async move { Err(ErrorObject::method_not_found(&request.method)) }
    }

    /// Handles a notification.
    fn handle_notification(
        &self,
        notification: Notification,
        cx: NotificationContext,
    ) -> impl Future<Output = ()> + Send {
        let _ = (notification, cx);
        async {}
    }
}

impl Handler for () {}

impl<H: Handler> Handler for Arc<H> {
    fn handle_request(
        &self,
        request: Request,
        cx: RequestContext,
    ) -> impl Future<Output = Result<RawJson, ErrorObject>> + Send {
        (**self).handle_request(request, cx)
    }

    fn handle_notification(
        &self,
        notification: Notification,
        cx: NotificationContext,
    ) -> impl Future<Output = ()> + Send {
        (**self).handle_notification(notification, cx)
    }
}

/// What a request handler gets besides the request.
#[derive(Debug, Clone)]
pub struct RequestContext {
    id: Id,
    cancel: Cancellation,
    peer: Peer,
    extensions: Extensions,
}

impl RequestContext {
    /// The id of the request being handled.
    pub fn id(&self) -> &Id {
        &self.id
    }

    /// Fires when the peer cancels this request or the connection closes. The engine then drops
    /// the handler's future and sends no response; the token lets blocking work stop early.
    pub fn cancellation(&self) -> &CancellationToken {
        self.cancel.token()
    }

    /// The request's [`Cancellation`], to keep without making its token (see there).
    pub fn cancellation_handle(&self) -> &Cancellation {
        &self.cancel
    }

    /// Whether the request was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// A handle to the peer whose outbound messages are tagged as related to this request.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// What the transport attached to the frame that carried the request.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The context taken apart, for a handler that keeps its pieces: cloning a cancellation
    /// token takes a lock, moving it does not.
    pub fn into_parts(self) -> RequestParts {
        RequestParts {
            id: self.id,
            cancellation: self.cancel,
            peer: self.peer,
            extensions: self.extensions,
        }
    }
}

/// A [`RequestContext`] taken apart by [`RequestContext::into_parts`].
#[derive(Debug)]
#[non_exhaustive]
pub struct RequestParts {
    /// The id of the request being handled.
    pub id: Id,
    /// See [`RequestContext::cancellation_handle`].
    pub cancellation: Cancellation,
    /// See [`RequestContext::peer`].
    pub peer: Peer,
    /// See [`RequestContext::extensions`].
    pub extensions: Extensions,
}

/// What a notification handler gets besides the notification.
#[derive(Debug, Clone)]
pub struct NotificationContext {
    peer: Peer,
    extensions: Extensions,
}

impl NotificationContext {
    /// A handle to the peer.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// What the transport attached to the frame that carried the notification.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }
}

#[derive(Debug, Clone)]
struct Config {
    max_in_flight: usize,
    max_outgoing: usize,
    queue_capacity: usize,
    request_timeout: Option<Duration>,
    max_timeout: Option<Duration>,
    shutdown_timeout: Duration,
    batches_allowed: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_in_flight: 64,
            max_outgoing: 1024,
            queue_capacity: 256,
            request_timeout: Some(Duration::from_secs(60)),
            max_timeout: Some(Duration::from_secs(600)),
            shutdown_timeout: Duration::from_secs(5),
            batches_allowed: false,
        }
    }
}

/// Entry point of the request engine.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use mcp_jsonrpc::{
///     Engine, ErrorObject, Handler, RawJson, Request, RequestContext, RequestOptions, memory_pair,
/// };
///
/// struct Echo;
/// impl Handler for Echo {
///     async fn handle_request(&self, req: Request, _cx: RequestContext) -> Result<RawJson, ErrorObject> {
///         match req.method.as_str() {
///             "echo" => Ok(req.params.map_or_else(|| RawJson::serialize(&()).unwrap(), RawJson::from)),
///             other => Err(ErrorObject::method_not_found(other)),
///         }
///     }
/// }
///
/// let (client_conn, server_conn) = memory_pair(16);
/// let (_server, _server_task) = Engine::builder().spawn(server_conn, Echo);
/// let (client, _client_task) = Engine::builder().spawn(client_conn, ());
///
/// let answer: serde_json::Value = client
///     .call("echo", &serde_json::json!({"hello": "world"}), RequestOptions::new())
///     .await
///     .unwrap();
/// assert_eq!(answer, serde_json::json!({"hello": "world"}));
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Engine;

impl Engine {
    /// A builder with the default limits.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }
}

/// Configures and starts an engine over a [`Connection`].
#[derive(Debug, Clone, Default)]
pub struct EngineBuilder {
    config: Config,
}

impl EngineBuilder {
    /// Maximum number of inbound requests handled at once (default 64). A request read while
    /// all are busy waits, with up to `queue_capacity` others, for one to finish; only with
    /// that many waiting does the engine stop reading from the transport. Everything else
    /// (responses to this side's requests, cancellations, notifications, the end of input) is
    /// read and dispatched whatever the handlers do, so handlers that wait for the peer's
    /// answers never starve them.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.config.max_in_flight = n.max(1);
        self
    }

    /// Maximum number of outbound requests awaiting a response (default 1024); further calls
    /// wait for a slot.
    pub fn max_outgoing(mut self, n: usize) -> Self {
        self.config.max_outgoing = n.max(1);
        self
    }

    /// Capacity of the outbound queue, of the inbound notification queue and of the requests
    /// waiting for a permit (default 256).
    pub fn queue_capacity(mut self, n: usize) -> Self {
        self.config.queue_capacity = n.max(1);
        self
    }

    /// Default timeout of an outbound request without progress (default 60 s); `None` waits
    /// forever. Each progress notification restarts it.
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.request_timeout = timeout;
        self
    }

    /// Default cap on an outbound request's total time, whatever progress arrives (default
    /// 10 minutes); `None` for no cap.
    pub fn max_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.max_timeout = timeout;
        self
    }

    /// How long shutdown may spend writing what is still queued (default 5 s).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.config.shutdown_timeout = timeout;
        self
    }

    /// Whether inbound batches are accepted at first (default `false`); change it later with
    /// [`Peer::set_batches_allowed`] once the revision is known. The engine knows nothing of
    /// revisions: whoever negotiates one says whether it has batches.
    pub fn batches_allowed(mut self, allowed: bool) -> Self {
        self.config.batches_allowed = allowed;
        self
    }

    /// Starts the engine: returns the peer handle and the driver future, which must be polled
    /// (spawned or awaited) for anything to happen. The driver completes when the connection
    /// closes.
    pub fn start<H: Handler>(self, connection: Connection, handler: H) -> (Peer, Driver) {
        let (tx, rx) = mpsc::channel(self.config.queue_capacity);
        let shared = Arc::new(Shared::new(self.config));
        let handler = Arc::new(handler);
        let door = inlet::Door::new(Arc::clone(&shared), tx.clone(), Arc::clone(&handler));
        if let Some(link) = connection.extensions().get::<InletLink>() {
            link.bind(door.clone());
        }
        let peer = Peer::new(shared.clone(), queue::Tx::Engine(tx.clone()), None);
        let state = driver::DriverState::new(door, connection, handler, rx);
        (peer, Driver::new(Box::pin(state)))
    }

    /// Starts the engine and spawns its driver on the current Tokio runtime.
    pub fn spawn<H: Handler>(
        self,
        connection: Connection,
        handler: H,
    ) -> (Peer, JoinHandle<Result<(), TransportError>>) {
        let (peer, driver) = self.start(connection, handler);
        (peer, tokio::spawn(driver))
    }
}

/// The future that runs an engine: reads, dispatches, writes. It resolves when the connection
/// closes: `Ok` for a clean close (end of input or [`Peer::close`]), `Err` for a transport
/// failure.
///
/// On a multi-threaded Tokio runtime the first poll moves the engine onto a task of its own and
/// the `Driver` then waits for that task (dropping the `Driver` stops it). The engine thus always
/// runs on a worker thread, next to the I/O reactor and the request handlers it spawns, even when
/// it is awaited from `block_on` (as `#[tokio::main]` does): no thread hand-off per message.
#[must_use = "the engine does nothing unless its driver is polled"]
pub struct Driver {
    inner: DriverInner,
}

type EngineFuture = Pin<Box<dyn Future<Output = Result<(), TransportError>> + Send>>;

enum DriverInner {
    Local(EngineFuture),
    Spawned(JoinHandle<Result<(), TransportError>>),
    Finished,
}

impl Driver {
    fn new(future: EngineFuture) -> Self {
        Driver {
            inner: DriverInner::Local(future),
        }
    }
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver").finish_non_exhaustive()
    }
}

impl Future for Driver {
    type Output = Result<(), TransportError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if matches!(this.inner, DriverInner::Local(_)) && on_multi_thread_runtime() {
            if let DriverInner::Local(future) =
                std::mem::replace(&mut this.inner, DriverInner::Finished)
            {
                this.inner = DriverInner::Spawned(tokio::spawn(future));
            }
        }
        let out = match &mut this.inner {
            DriverInner::Local(future) => std::task::ready!(future.as_mut().poll(cx)),
            DriverInner::Spawned(handle) => match std::task::ready!(Pin::new(handle).poll(cx)) {
                Ok(out) => out,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => Err(TransportError::Closed(format!("engine task ended: {e}"))),
            },
            DriverInner::Finished => Err(TransportError::Closed(
                "the engine driver was polled after it finished".into(),
            )),
        };
        this.inner = DriverInner::Finished;
        Poll::Ready(out)
    }
}

fn on_multi_thread_runtime() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread)
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let DriverInner::Spawned(handle) = &self.inner {
            handle.abort();
        }
    }
}

type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// What the outbound queue carries: a box, so the queue's first block (32 slots, allocated when
/// the engine starts) costs a few hundred bytes per connection rather than kilobytes.
type Queued = Box<crate::connection::Outbound>;

/// An outbound request awaiting its response.
struct Pending {
    tx: tokio::sync::oneshot::Sender<Result<Box<RawValue>, crate::CallError>>,
    progress: Option<ProgressFn>,
    /// Milliseconds since the engine's epoch at the last sign of life (sending, progress).
    activity: Arc<std::sync::atomic::AtomicU64>,
}

/// A `notifications/cancelled` the driver still has to write.
struct CancelNotice {
    id: Id,
    reason: String,
    permit: Option<OwnedSemaphorePermit>,
}

/// State shared by the driver and every [`Peer`].
struct Shared {
    config: Config,
    next_id: AtomicI64,
    pending: Mutex<IdMap<Pending>>,
    inflight: Mutex<IdMap<Cancellation>>,
    cancels: Mutex<Vec<CancelNotice>>,
    driver_waker: WakerSlot,
    close_requested: AtomicBool,
    /// Fires when shutdown begins: handlers are cancelled, new requests fail.
    shutdown: CancellationToken,
    /// Set just before `shutdown` fires: what [`is_shutting_down`](Self::is_shutting_down)
    /// reads, without the lock tokio-util takes to read a token (every request reads it).
    shutting_down: AtomicBool,
    /// Fires when the driver has finished.
    finished: CancellationToken,
    close_reason: Mutex<Option<String>>,
    batches_allowed: AtomicBool,
    outgoing: Arc<Semaphore>,
    /// One permit per inbound request running (`max_in_flight`), whichever way it was read.
    permits: Arc<Semaphore>,
    /// The permits of pings beyond `max_in_flight` ([`CONTROL_PERMITS`]).
    control: Arc<Semaphore>,
    epoch: tokio::time::Instant,
}

impl Shared {
    fn new(config: Config) -> Self {
        Shared {
            next_id: AtomicI64::new(1),
            pending: Mutex::default(),
            inflight: Mutex::default(),
            cancels: Mutex::default(),
            driver_waker: WakerSlot::default(),
            close_requested: AtomicBool::new(false),
            shutdown: CancellationToken::new(),
            shutting_down: AtomicBool::new(false),
            finished: CancellationToken::new(),
            close_reason: Mutex::default(),
            batches_allowed: AtomicBool::new(config.batches_allowed),
            outgoing: Arc::new(Semaphore::new(config.max_outgoing)),
            permits: Arc::new(Semaphore::new(config.max_in_flight)),
            control: Arc::new(Semaphore::new(CONTROL_PERMITS)),
            epoch: tokio::time::Instant::now(),
            config,
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn instant_at(&self, ms: u64) -> tokio::time::Instant {
        self.epoch + Duration::from_millis(ms)
    }

    fn close_reason(&self) -> String {
        lock(&self.close_reason)
            .clone()
            .unwrap_or_else(|| "connection closed".to_owned())
    }

    fn closed_error(&self) -> crate::CallError {
        crate::CallError::Closed(self.close_reason())
    }

    /// Starts shutting down: new calls fail and every running request handler is cancelled.
    fn cancel_handlers(&self) {
        self.shutting_down.store(true, Ordering::Release);
        self.shutdown.cancel();
        for cancel in lock(&self.inflight).values() {
            cancel.token().cancel();
        }
    }

    /// Counts request `id` as in flight, with `cancel` for the peer's cancellation and for
    /// shutdown to cancel; `false` when a request in flight already has the id.
    fn enter_inflight(&self, id: &Id, cancel: &Cancellation) -> bool {
        // One lookup under the lock: the map's entry for the id.
        match lock(&self.inflight).entry(id.clone()) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(cancel.clone());
                true
            }
        }
    }

    /// Whether shutdown has begun (`shutdown` has fired or is firing).
    fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    /// A permit for a request with `method`, if one is free: pings fall back on the control
    /// permits.
    fn try_permit(&self, method: &str) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.permits)
            .try_acquire_owned()
            .ok()
            .or_else(|| {
                (method == PING_METHOD)
                    .then(|| Arc::clone(&self.control).try_acquire_owned().ok())
                    .flatten()
            })
    }

    fn batches_allowed(&self) -> bool {
        self.batches_allowed.load(Ordering::Relaxed)
    }
}

/// Locks a mutex, ignoring poisoning: the maps stay consistent because every critical section
/// is a single insert or remove.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
