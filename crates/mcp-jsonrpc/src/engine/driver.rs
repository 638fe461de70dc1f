//! The engine's driver: one hand-written future that reads, dispatches and writes.
//!
//! Work done on the driver's own task: decoding results are routed (responses to waiting
//! callers, progress to callbacks, cancellations to handler tokens), notifications run one at a
//! time in wire order, and all writes go through one sink with a flush only when the outbound
//! queue is momentarily empty. A request handler is first polled right here; one that does not
//! finish at once moves onto a spawned task. Running handlers are bounded by a semaphore: a
//! request read while every permit is taken waits in a bounded queue until one is free, and
//! only when that queue is full is the transport no longer read (backpressure instead of
//! unbounded buffering). Reading never waits for a handler otherwise: the peer's answers to
//! this side's requests, its cancellations and the end of input are seen while every handler
//! waits for exactly those.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use serde::Deserialize;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio_util::sync::PollSemaphore;

use super::inlet::{Admitted, Door, Refusal, Run, duplicate};
use super::poll::caught;
use super::queue::Tx;
use super::{
    CANCELLED_METHOD, Handler, NotificationContext, PING_METHOD, PROGRESS_METHOD, Peer, Progress,
    Queued, Shared, lock,
};
use crate::connection::{Connection, Extensions, InboundStream, Incoming, Outbound, OutboundSink};
use crate::error::{CallError, ErrorObject, FrameError, InvalidMessage, TransportError};
use crate::id::Id;
use crate::message::{Frame, Inbound, Message, Notification, Request, Response};
use crate::raw::RawJson;

/// Frames read per poll before yielding to the runtime.
const READ_BUDGET: usize = 64;
/// Frames written per poll before flushing and yielding.
const WRITE_BUDGET: usize = 256;

type BoxFuture<T = ()> = Pin<Box<dyn Future<Output = T> + Send>>;

enum Phase {
    Running,
    Draining(Pin<Box<tokio::time::Sleep>>),
    Done,
}

pub(super) struct DriverState<H> {
    shared: Arc<Shared>,
    /// Where every request enters its handler (see [`Door`]).
    door: Door,
    /// For notifications, which run here one at a time.
    handler: Arc<H>,
    reader: InboundStream,
    writer: OutboundSink,
    rx: mpsc::Receiver<Queued>,
    tx: mpsc::Sender<Queued>,
    /// Frames produced by the driver itself (error answers, cancellations), written first.
    local: VecDeque<(Outbound, Option<OwnedSemaphorePermit>)>,
    /// A frame taken from the queue while the sink was not ready.
    staged: Option<Outbound>,
    unflushed: bool,
    permits: PollSemaphore,
    /// A permit taken and not used yet: a request answered on its first poll leaves it here
    /// for the next one.
    permit: Option<OwnedSemaphorePermit>,
    /// Requests (and batches) read while every permit was taken, in wire order; at most
    /// `queue_capacity`. Already counted as in flight, so the peer can cancel them.
    waiting: VecDeque<Parked>,
    notifications: VecDeque<(Notification, Extensions)>,
    current: Option<BoxFuture>,
    /// Requests the current read pass may still run inline (first poll on the driver's task).
    /// One per pass on a multi-threaded runtime: when several requests arrive together the
    /// others start on tasks of their own, so a busy connection's handlers spread over the
    /// runtime's workers while the driver keeps reading. On a current-thread runtime a task
    /// would run on this same thread anyway, so every request of a pass is first polled here.
    inline_left: u8,
    /// What `inline_left` starts each pass at.
    inline_per_pass: u8,
    phase: Phase,
    result: Option<Result<(), TransportError>>,
}

#[derive(Deserialize)]
struct CancelledParams {
    #[serde(rename = "requestId")]
    request_id: Id,
}

#[derive(Deserialize)]
struct ProgressParams {
    #[serde(rename = "progressToken")]
    token: Id,
    #[serde(flatten)]
    progress: Progress,
}

impl<H: Handler> DriverState<H> {
    pub(super) fn new(
        door: Door,
        connection: Connection,
        handler: Arc<H>,
        rx: mpsc::Receiver<Queued>,
    ) -> Self {
        let shared = Arc::clone(&door.shared);
        let tx = door.tx.clone();
        let (reader, writer) = connection.into_parts();
        let permits = PollSemaphore::new(Arc::clone(&shared.permits));
        let current_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread);
        let inline_per_pass = if current_thread { u8::MAX } else { 1 };
        DriverState {
            shared,
            door,
            handler,
            reader,
            writer,
            rx,
            tx,
            // Room for one: a connection answering one request at a time never grows these,
            // and an idle one (a parked HTTP session) keeps 160 bytes instead of the 640 that
            // a first push's four slots would hold for the connection's lifetime.
            local: VecDeque::with_capacity(1),
            staged: None,
            unflushed: false,
            permits,
            permit: None,
            waiting: VecDeque::new(),
            notifications: VecDeque::with_capacity(1),
            current: None,
            inline_left: inline_per_pass,
            inline_per_pass,
            phase: Phase::Running,
            result: None,
        }
    }

    fn peer(&self, related: Option<Id>) -> Peer {
        Peer::new(
            self.shared.clone(),
            super::queue::Tx::Engine(self.tx.clone()),
            related,
        )
    }

    fn push_local(&mut self, frame: impl Into<Frame>) {
        self.local.push_back((Outbound::new(frame), None));
    }

    fn begin_shutdown(&mut self, result: Result<(), TransportError>, reason: String) {
        if !matches!(self.phase, Phase::Running) {
            return;
        }
        tracing::debug!(%reason, "closing connection");
        lock(&self.shared.close_reason).get_or_insert(reason);
        self.result = Some(result);
        self.shared.cancel_handlers();
        let pending: Vec<_> = lock(&self.shared.pending).drain().collect();
        let error = self.shared.close_reason();
        for (_, entry) in pending {
            let _ = entry.tx.send(Err(CallError::Closed(error.clone())));
        }
        lock(&self.shared.cancels).clear();
        self.notifications.clear();
        // Their entries in the in-flight map go with them.
        self.waiting.clear();
        self.current = None;
        self.permit = None;
        self.rx.close();
        self.phase = Phase::Draining(Box::pin(tokio::time::sleep(
            self.shared.config.shutdown_timeout,
        )));
    }

    fn drain_cancels(&mut self) {
        let notices = std::mem::take(&mut *lock(&self.shared.cancels));
        for notice in notices {
            let params = serde_json::json!({"requestId": notice.id, "reason": notice.reason});
            match Notification::with_params(CANCELLED_METHOD, &params) {
                Ok(n) => self
                    .local
                    .push_back((Outbound::new(Message::Notification(n)), notice.permit)),
                Err(e) => tracing::warn!(error = %e, "could not encode a cancellation"),
            }
        }
    }

    /// The next frame to write: the one held back while the sink was busy, then driver frames,
    /// then the shared queue.
    fn next_outbound(&mut self, cx: &mut Context<'_>) -> Option<Outbound> {
        if let Some(o) = self.staged.take() {
            return Some(o);
        }
        if let Some((o, _permit)) = self.local.pop_front() {
            return Some(o);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(o) => o.map(|b| *b),
            Poll::Pending => None,
        }
    }

    /// Writes whatever is queued; flushes once nothing more is waiting.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> Result<(), TransportError> {
        let mut budget = WRITE_BUDGET;
        loop {
            if budget == 0 {
                cx.waker().wake_by_ref();
                break;
            }
            let Some(item) = self.next_outbound(cx) else {
                break;
            };
            match self.writer.as_mut().poll_ready(cx) {
                Poll::Ready(Ok(())) => {
                    self.writer.as_mut().start_send(item)?;
                    self.unflushed = true;
                    budget -= 1;
                }
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => {
                    self.staged = Some(item);
                    return Ok(());
                }
            }
        }
        if self.unflushed {
            match self.writer.as_mut().poll_flush(cx) {
                Poll::Ready(Ok(())) => self.unflushed = false,
                Poll::Ready(Err(e)) => return Err(e),
                Poll::Pending => {}
            }
        }
        Ok(())
    }

    fn poll_notifications(&mut self, cx: &mut Context<'_>) {
        loop {
            if let Some(fut) = self.current.as_mut() {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(()) => self.current = None,
                    Poll::Pending => return,
                }
            }
            let Some((notification, extensions)) = self.notifications.pop_front() else {
                return;
            };
            let handler = self.handler.clone();
            let cx = NotificationContext {
                peer: self.peer(None),
                extensions,
            };
            let method = notification.method.clone();
            self.current = Some(Box::pin(async move {
                if caught(handler.handle_notification(notification, cx))
                    .await
                    .is_err()
                {
                    tracing::error!(%method, "notification handler panicked");
                }
            }));
        }
    }

    /// Whether the driver's own queues are full, which stops reading.
    fn queues_full(&self) -> bool {
        let capacity = self.shared.config.queue_capacity;
        self.notifications.len() >= capacity
            || self.local.len() >= capacity
            || self.waiting.len() >= capacity
    }

    /// Takes a request permit unless one is already held; `false` when none is free.
    fn take_permit(&mut self) -> bool {
        if self.permit.is_none() {
            self.permit = Arc::clone(&self.shared.permits).try_acquire_owned().ok();
        }
        self.permit.is_some()
    }

    /// Starts the requests that waited for a permit, in wire order, while permits are free;
    /// with none free, the semaphore wakes the driver when one is.
    fn poll_waiting(&mut self, cx: &mut Context<'_>) {
        while !self.waiting.is_empty() {
            if self.permit.is_none() {
                match self.permits.poll_acquire(cx) {
                    Poll::Ready(Some(p)) => self.permit = Some(p),
                    Poll::Ready(None) | Poll::Pending => return,
                }
            }
            match self.waiting.pop_front() {
                Some(Parked::Request(request, rcx)) => self.start_request(request, rcx, cx),
                Some(Parked::Batch(batch)) => self.start_batch(batch),
                None => return,
            }
        }
    }

    /// Reads and dispatches frames while there is room; returns after the budget is spent.
    /// Returns `true` when it stopped because a queue of the driver was full: nothing was
    /// polled then, so no waker waits on the reader.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> bool {
        self.inline_left = self.inline_per_pass;
        for _ in 0..READ_BUDGET {
            if self.queues_full() {
                return true;
            }
            match self.reader.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(incoming))) => self.dispatch(incoming, cx),
                Poll::Ready(Some(Err(e))) => {
                    let reason = e.to_string();
                    self.begin_shutdown(Err(e), reason);
                    return false;
                }
                Poll::Ready(None) => {
                    self.begin_shutdown(Ok(()), "the peer closed the connection".into());
                    return false;
                }
                Poll::Pending => return false,
            }
        }
        cx.waker().wake_by_ref();
        false
    }

    fn dispatch(&mut self, incoming: Incoming, cx: &mut Context<'_>) {
        let Incoming { frame, extensions } = incoming;
        match frame {
            Ok(Inbound::Single(message)) => self.dispatch_message(message, extensions, None, cx),
            Ok(Inbound::Batch(items)) => self.dispatch_batch(items, extensions, cx),
            Err(error) => {
                tracing::warn!(%error, "bad inbound frame");
                if let FrameError::Invalid(invalid) = &error {
                    self.fail_pending_with(invalid);
                }
                if let FrameError::TooLarge { limit } = &error {
                    self.fail_pending_too_large(*limit);
                }
                if let Some(response) = error.to_response() {
                    self.push_local(Message::Response(response));
                }
            }
        }
    }

    /// A frame over the size limit was skipped unread, so which request it answered (if any)
    /// is unknown: every request pending now fails at once rather than waiting out its timeout
    /// for a response that will never come. Later requests are unaffected.
    fn fail_pending_too_large(&mut self, limit: usize) {
        let pending: Vec<_> = lock(&self.shared.pending).drain().collect();
        if pending.is_empty() {
            return;
        }
        tracing::warn!(
            requests = pending.len(),
            limit,
            "an inbound message exceeded the size limit; failing the requests pending"
        );
        for (_, entry) in pending {
            let _ = entry.tx.send(Err(CallError::InvalidResponse(format!(
                "response exceeds the maximum size of {limit} bytes"
            ))));
        }
    }

    /// A malformed response to one of our requests fails that request.
    fn fail_pending_with(&mut self, invalid: &InvalidMessage) {
        if !invalid.response_like {
            return;
        }
        let Some(id) = &invalid.id else { return };
        if let Some(entry) = lock(&self.shared.pending).remove(id) {
            let _ = entry.tx.send(Err(CallError::InvalidResponse(
                invalid.error.message.clone(),
            )));
        }
    }

    fn dispatch_batch(
        &mut self,
        items: Vec<Result<Message, InvalidMessage>>,
        extensions: Extensions,
        cx: &mut Context<'_>,
    ) {
        if !self.shared.batches_allowed() {
            tracing::warn!("batch received but the negotiated revision forbids batches");
            self.push_local(Message::Response(Response::error(
                None,
                ErrorObject::invalid_request(
                    "batches are not supported by the negotiated protocol revision",
                ),
            )));
            return;
        }
        let mut batch = Batch::default();
        for item in items {
            match item {
                Ok(message) => {
                    self.dispatch_message(message, extensions.clone(), Some(&mut batch), cx)
                }
                Err(invalid) => {
                    tracing::warn!(%invalid, "bad batch element");
                    self.fail_pending_with(&invalid);
                    if let Some(response) = invalid.to_response() {
                        batch.responses.push(response);
                    }
                }
            }
        }
        if batch.requests.is_empty() {
            if !batch.responses.is_empty() {
                self.push_local(Frame::Batch(
                    batch.responses.into_iter().map(Message::Response).collect(),
                ));
            }
            return;
        }
        if !self.waiting.is_empty() || !self.take_permit() {
            self.waiting.push_back(Parked::Batch(batch));
            return;
        }
        self.start_batch(batch);
    }

    /// Runs a batch's requests on a task of their own, with the permit the driver holds.
    fn start_batch(&mut self, batch: Batch) {
        let door = self.door.clone();
        let tx = self.tx.clone();
        let permit = self.permit.take();
        tokio::spawn(async move {
            let _permit = permit;
            let mut responses = batch.responses;
            let mut running = tokio::task::JoinSet::new();
            for (request, admitted) in batch.requests {
                running.spawn(door.start(request, admitted));
            }
            while let Some(joined) = running.join_next().await {
                // A request's own panic is already its error response; a task that failed
                // anyway has nothing to add.
                responses.extend(joined.ok().flatten());
            }
            if !responses.is_empty() {
                let frame = Frame::Batch(responses.into_iter().map(Message::Response).collect());
                let _ = tx.send(Box::new(Outbound::new(frame))).await;
            }
        });
    }

    fn dispatch_message(
        &mut self,
        message: Message,
        extensions: Extensions,
        batch: Option<&mut Batch>,
        cx: &mut Context<'_>,
    ) {
        match message {
            Message::Request(request) => self.dispatch_request(request, extensions, batch, cx),
            Message::Notification(notification) => {
                self.dispatch_notification(notification, extensions)
            }
            Message::Response(response) => self.dispatch_response(response),
        }
    }

    fn dispatch_request(
        &mut self,
        request: Request,
        extensions: Extensions,
        batch: Option<&mut Batch>,
        cx: &mut Context<'_>,
    ) {
        let tx = Tx::Engine(self.tx.clone());
        let rcx = match self.door.admit(&request.id, extensions, tx, true) {
            Ok(admitted) => admitted,
            Err(Refusal::Duplicate) => {
                let response = duplicate(request.id);
                match batch {
                    Some(b) => b.responses.push(response),
                    None => self.push_local(Message::Response(response)),
                }
                return;
            }
            // Shutting down: nothing runs any more.
            Err(Refusal::Closed) => return,
        };
        if let Some(b) = batch {
            b.requests.push((request, rcx));
            return;
        }
        if self.waiting.is_empty() && self.take_permit() {
            self.start_request(request, rcx, cx);
            return;
        }
        // Every permit is taken (or earlier requests wait for one): a ping still runs on a
        // control permit, anything else waits its turn.
        if request.method == PING_METHOD {
            if let Ok(control) = Arc::clone(&self.shared.control).try_acquire_owned() {
                let held = self.permit.replace(control);
                self.start_request(request, rcx, cx);
                // Back to the permit held before (a control permit not taken by a spawned
                // task is released here).
                self.permit = held;
                return;
            }
        }
        self.waiting.push_back(Parked::Request(request, rcx));
    }

    /// Runs a request whose permit the driver holds: first polled here when it may be, else
    /// on a task of its own.
    fn start_request(&mut self, request: Request, rcx: Admitted, cx: &mut Context<'_>) {
        let id = request.id.clone();
        // Notifications that arrived before this request are handled first (wire order: a
        // client's `notifications/initialized` precedes its first request).
        self.poll_notifications(cx);
        if self.current.is_some() || !self.notifications.is_empty() || self.inline_left == 0 {
            self.spawn_request(request, rcx);
            return;
        }
        self.inline_left -= 1;
        // The handler's first poll happens here, on the driver's task: a handler that finishes
        // without waiting (most do) costs no task spawn and no thread hand-off. One that waits
        // moves, already started, onto a task of its own; the next poll there registers that
        // task's waker (every future re-registers on each poll), so it makes progress on its
        // own from then on.
        let mut running = self.door.start(request, rcx);
        match running.as_mut().poll(cx) {
            Poll::Ready(None) => {}
            Poll::Ready(Some(response)) => {
                // The permit stays with the driver for the next frame: nothing is left running.
                let outbound = Outbound::related(Message::Response(response), Some(id));
                // Never ahead of what the handler sent while it ran (progress, log messages):
                // straight to the driver's own queue when the shared queue is empty (it sent
                // nothing), otherwise through the shared queue, behind what it sent.
                if self.rx.is_empty() {
                    self.local.push_back((outbound, None));
                    return;
                }
                match self.tx.try_send(Box::new(outbound)) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(outbound)) => {
                        let tx = self.tx.clone();
                        let permit = self.permit.take();
                        tokio::spawn(async move {
                            let _permit = permit;
                            let _ = tx.send(outbound).await;
                        });
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => {}
                }
            }
            Poll::Pending => self.spawn_running(running, id),
        }
    }

    /// Runs a request handler on a task of its own.
    fn spawn_request(&mut self, request: Request, rcx: Admitted) {
        let id = request.id.clone();
        let running = self.door.start(request, rcx);
        self.spawn_running(running, id);
    }

    /// Moves a started (or not yet started) handler onto a task of its own.
    fn spawn_running(&mut self, running: Run, id: Id) {
        let tx = self.tx.clone();
        let permit = self.permit.take();
        tokio::spawn(async move {
            let _permit = permit;
            if let Some(response) = running.await {
                let _ = tx
                    .send(Box::new(Outbound::related(
                        Message::Response(response),
                        Some(id),
                    )))
                    .await;
            }
        });
    }

    fn dispatch_notification(&mut self, notification: Notification, extensions: Extensions) {
        match notification.method.as_str() {
            CANCELLED_METHOD => {
                if let Ok(params) = notification.params_as::<CancelledParams>() {
                    let cancel = lock(&self.shared.inflight).get(&params.request_id).cloned();
                    if let Some(cancel) = cancel {
                        tracing::debug!(id = %params.request_id, "peer cancelled a request");
                        cancel.token().cancel();
                        return;
                    }
                }
            }
            PROGRESS_METHOD => {
                if let Ok(params) = notification.params_as::<ProgressParams>() {
                    let callback = {
                        let pending = lock(&self.shared.pending);
                        pending.get(&params.token).and_then(|entry| {
                            let f = entry.progress.clone()?;
                            entry
                                .activity
                                .store(self.shared.now_ms(), Ordering::Relaxed);
                            Some(f)
                        })
                    };
                    if let Some(callback) = callback {
                        callback(params.progress);
                        return;
                    }
                }
            }
            _ => {}
        }
        self.notifications.push_back((notification, extensions));
    }

    fn dispatch_response(&mut self, response: Response) {
        let Some(id) = response.id else {
            match &response.result {
                Err(error) => tracing::warn!(%error, "peer reported an error without a request id"),
                Ok(_) => tracing::warn!("peer sent a result without a request id"),
            }
            return;
        };
        let entry = lock(&self.shared.pending).remove(&id);
        match entry {
            Some(entry) => {
                let _ = entry.tx.send(
                    response
                        .result
                        .map(RawJson::into_raw_value)
                        .map_err(CallError::Rpc),
                );
            }
            None => tracing::debug!(%id, "response for an unknown request id ignored"),
        }
    }

    /// Writes what is left and closes the sink; `true` once done.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> bool {
        while let Some(item) = self.next_outbound(cx) {
            match self.writer.as_mut().poll_ready(cx) {
                Poll::Ready(Ok(())) => {
                    if self.writer.as_mut().start_send(item).is_err() {
                        return true;
                    }
                }
                Poll::Ready(Err(_)) => return true,
                Poll::Pending => {
                    self.staged = Some(item);
                    return false;
                }
            }
        }
        !matches!(self.writer.as_mut().poll_close(cx), Poll::Pending)
    }

    fn finish(&mut self) -> Result<(), TransportError> {
        self.phase = Phase::Done;
        self.shared.finished.cancel();
        self.result.take().unwrap_or(Ok(()))
    }
}

#[derive(Default)]
struct Batch {
    requests: Vec<(Request, Admitted)>,
    responses: Vec<Response>,
}

/// What waits for a permit (admitted: counted in flight, so the peer can cancel it).
enum Parked {
    Request(Request, Admitted),
    Batch(Batch),
}

impl<H: Handler> Future for DriverState<H> {
    type Output = Result<(), TransportError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.shared.driver_waker.register(cx.waker());
        if matches!(this.phase, Phase::Running)
            && this.shared.close_requested.load(Ordering::Acquire)
        {
            this.begin_shutdown(Ok(()), "closed locally".into());
        }
        if matches!(this.phase, Phase::Running) {
            this.drain_cancels();
            if let Err(e) = this.poll_write(cx) {
                let reason = e.to_string();
                this.begin_shutdown(Err(e), reason);
            }
        }
        let mut read_blocked = false;
        if matches!(this.phase, Phase::Running) {
            this.poll_notifications(cx);
            this.poll_waiting(cx);
            read_blocked = this.poll_read(cx);
            // Reading may have queued answers and notifications, and requests that wait for a
            // permit (polling the semaphore registers the driver's waker for them).
            this.poll_notifications(cx);
            this.poll_waiting(cx);
        }
        if matches!(this.phase, Phase::Running) {
            if let Err(e) = this.poll_write(cx) {
                let reason = e.to_string();
                this.begin_shutdown(Err(e), reason);
            } else if read_blocked && !this.queues_full() {
                // Writing made room, and nothing else would wake the driver to read again.
                cx.waker().wake_by_ref();
            }
        }
        let drained = match &mut this.phase {
            Phase::Running => return Poll::Pending,
            Phase::Done => return Poll::Ready(Ok(())),
            Phase::Draining(deadline) => {
                if deadline.as_mut().poll(cx).is_ready() {
                    tracing::debug!("shutdown timed out with output still queued");
                    true
                } else {
                    false
                }
            }
        };
        if drained || this.poll_drain(cx) {
            return Poll::Ready(this.finish());
        }
        Poll::Pending
    }
}

impl<H> Drop for DriverState<H> {
    fn drop(&mut self) {
        if matches!(self.phase, Phase::Done) {
            return;
        }
        lock(&self.shared.close_reason).get_or_insert_with(|| "engine driver dropped".into());
        self.shared.cancel_handlers();
        let reason = self.shared.close_reason();
        let pending: Vec<_> = lock(&self.shared.pending).drain().collect();
        for (_, entry) in pending {
            let _ = entry.tx.send(Err(CallError::Closed(reason.clone())));
        }
        self.shared.finished.cancel();
    }
}
