//! One served `Connection` and the routing of its outbound frames to HTTP responses.
//!
//! A hub owns the inbound channel of a connection and a pump task that drains the connection's
//! outbound channel. Each POST that carries requests gets a *slot*: the response (and every frame
//! related to one of its requests) goes there, as one JSON document or as an SSE stream. Slot 0
//! is the standalone stream (the GET stream, or the 2024-11-05 SSE stream). The pump is the only
//! task that assigns event ids and appends to the event store, and it also serves the commands
//! that attach streams (GET, `Last-Event-ID` replay, polling), so a replay never misses an event
//! that is being stored concurrently. The one exception is the common case of a response that
//! completes a plain JSON answer while the pump has nothing queued: the server's task routes it
//! itself (no event, nothing stored, one task hand-off less per request).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use mcp_jsonrpc::{
    BuildIdHasher, Connection, Extensions, Frame, Id, IdMap, IdSet, Inbound, Incoming, Message,
    Notification, Outbound, TransportError,
};
use mcp_types::{Feature, ProtocolVersion};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, PollSender};

use super::body::{encode_event, encode_message_event, message_bytes};
use super::config::HttpServerConfig;
use super::store::EventStore;

/// The key of the standalone stream.
pub(crate) const STANDALONE: u64 = 0;
/// The most server-to-client requests a session tracks as awaiting an answer.
const MAX_AWAITED: usize = 256;

/// What kind of connection a hub serves.
pub(crate) enum HubKind {
    /// A stateful Streamable HTTP session.
    Session {
        id: String,
        store: Option<Arc<dyn EventStore>>,
    },
    /// The one connection shared by stateless requests; ids are rewritten.
    Shared,
    /// A 2024-11-05 HTTP+SSE session: every outbound frame goes on the SSE stream.
    Legacy { id: String },
}

/// How a POST's answer was decided.
pub(crate) enum Decision {
    /// One JSON document (a response or an array of responses) and the error code of a single
    /// error response, for HTTP status mapping.
    Json(Bytes, Option<i64>),
    /// An SSE stream: events known now, then the live channel.
    Sse {
        first: Vec<Bytes>,
        rx: mpsc::Receiver<Bytes>,
    },
}

impl Decision {
    /// The JSON answer made of one response.
    pub(crate) fn json(response: mcp_jsonrpc::Response) -> Self {
        let code = response.result.as_ref().err().map(|e| e.code);
        Decision::Json(message_bytes(&Message::Response(response)), code)
    }
}

enum Mode {
    /// No frame yet: the POST handler waits for the decision.
    Deciding {
        reply: Option<oneshot::Sender<Decision>>,
        collected: Vec<Message>,
    },
    /// An attached SSE stream.
    Live(mpsc::Sender<Bytes>),
    /// No stream attached (client gone, closed for polling, or no GET open yet). The standalone
    /// stream keeps a bounded backlog here.
    Detached(VecDeque<Bytes>),
}

struct Slot {
    pending: PendingIds,
    mode: Mode,
    seq: u64,
    resumable: bool,
    sse_allowed: bool,
    batch: bool,
    generation: u64,
}

/// The requests of a slot still waiting for their responses: most slots have one, which needs
/// no set of its own.
#[derive(Default)]
enum PendingIds {
    #[default]
    None,
    One(Id),
    Many(IdSet),
}

impl PendingIds {
    fn insert(&mut self, id: Id) {
        *self = match std::mem::take(self) {
            PendingIds::None => PendingIds::One(id),
            PendingIds::One(first) if first == id => PendingIds::One(first),
            PendingIds::One(first) => PendingIds::Many(IdSet::from_iter([first, id])),
            PendingIds::Many(mut set) => {
                set.insert(id);
                PendingIds::Many(set)
            }
        };
    }

    fn remove(&mut self, id: &Id) {
        match self {
            PendingIds::One(only) if only == id => *self = PendingIds::None,
            PendingIds::Many(set) => {
                set.remove(id);
            }
            _ => {}
        }
    }

    fn len(&self) -> usize {
        match self {
            PendingIds::None => 0,
            PendingIds::One(_) => 1,
            PendingIds::Many(set) => set.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn into_vec(self) -> Vec<Id> {
        match self {
            PendingIds::None => Vec::new(),
            PendingIds::One(id) => vec![id],
            PendingIds::Many(set) => set.into_iter().collect(),
        }
    }
}

impl Slot {
    fn new(mode: Mode, resumable: bool) -> Self {
        Slot {
            pending: PendingIds::None,
            mode,
            seq: 0,
            resumable,
            sse_allowed: true,
            batch: false,
            generation: 0,
        }
    }
}

#[derive(Default)]
struct State {
    routes: IdMap<u64>,
    original: IdMap<Id>,
    /// Boxed: the table of an idle session then holds pointers, not whole slots. Keys are the
    /// hub's own counter.
    slots: HashMap<u64, Box<Slot>, BuildIdHasher>,
    next_slot: u64,
    next_internal: i64,
    protocol_version: Option<String>,
    init_id: Option<Id>,
    /// The ids of the server's requests to the client still waiting for an answer (bounded by
    /// [`MAX_AWAITED`]): an answer to another id may belong to another replica.
    awaited: Vec<Id>,
    closed: bool,
    /// Outbound frames handed to the pump and not yet routed by it. While any are, every frame
    /// goes through the pump, so frames are routed in the order the server wrote them.
    pump_backlog: usize,
}

/// Commands served by the pump, in order with outbound frames.
enum Command {
    Attach {
        key: u64,
        after: Option<u64>,
        tx: mpsc::Sender<Bytes>,
        reply: oneshot::Sender<Result<Attached, AttachError>>,
    },
    StartSse(u64),
    PollClose {
        request: Id,
        reply: oneshot::Sender<bool>,
    },
    /// Store appends of a frame routed outside the pump.
    Store(Vec<Job>),
}

/// A stream attached by [`Hub::attach`].
pub(crate) struct Attached {
    pub first: Vec<Bytes>,
    pub generation: u64,
}

/// Why a stream could not be attached.
#[derive(Debug)]
pub(crate) enum AttachError {
    /// A GET stream is already open.
    Conflict,
    /// The `Last-Event-ID` names no known stream.
    UnknownEvent,
    /// The event store failed.
    Store(String),
    /// The connection is gone.
    Closed,
}

/// Why a POST could not be handed to the connection.
#[derive(Debug)]
pub(crate) enum PostError {
    /// A request id is already in flight on this connection.
    DuplicateId(Id),
    /// Too many stateless requests in flight.
    Busy,
    /// The connection is gone.
    Closed,
}

/// What [`Hub::post`] gives the HTTP handler.
pub(crate) enum Posted {
    /// Only notifications and responses: answer 202.
    Accepted,
    /// Wait for the decision; keep the guard alive with the response.
    Pending {
        decision: oneshot::Receiver<Decision>,
        guard: SlotGuard,
    },
}

pub(crate) struct Hub {
    pub kind: HubKind,
    /// The identity of the principal that created the session (with an authenticator).
    owner: Option<String>,
    config: Arc<HttpServerConfig>,
    inbound: Mutex<Option<mpsc::Sender<InboundItem>>>,
    commands: mpsc::UnboundedSender<Box<Command>>,
    state: Mutex<State>,
    closed: CancellationToken,
    /// Set just before `closed` fires: what [`is_closed`](Self::is_closed) reads, without
    /// the lock tokio-util takes to read a token (every request of the session reads it).
    closing: AtomicBool,
    /// What the idle sweep last saw of `busy`, and since when (see [`idle_for`](Self::idle_for)).
    last_look: Mutex<Seen>,
    /// Low 32 bits: the busy guards alive; high 32 bits: the guards ever made (wrapping), so a
    /// sweep tells a hub that stayed idle from one that was busy in between.
    busy: AtomicU64,
    streams: AtomicUsize,
    /// Where the engine serving the connection leaves its inlet, for requests served in the
    /// task of their POST (the shared stateless connection and sessions).
    inlet: mcp_jsonrpc::InletLink,
    /// The pump's queue, for frames of requests served directly (weak: the pump ends when the
    /// connection's writer is gone).
    pump: mpsc::WeakSender<Box<Outbound>>,
    /// When the session store was last told the session is in use (see
    /// [`touch_due`](Self::touch_due)).
    store_touched: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("id", &self.session_id())
            .finish_non_exhaustive()
    }
}

/// What the hub's inbound channel carries. The hub's channels carry boxes: a channel allocates
/// its first block of 32 slots up front, and with slots the size of a pointer an idle session
/// costs a few hundred bytes per channel instead of kilobytes.
type InboundItem = Box<Result<Incoming, TransportError>>;

/// The inbound stream of a hub's connection.
fn inbound_stream(
    mut rx: mpsc::Receiver<InboundItem>,
) -> impl futures_core::Stream<Item = Result<Incoming, TransportError>> + Send + 'static {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx).map(|item| item.map(|b| *b)))
}

impl Hub {
    /// Creates a hub and its connection; the caller hands the connection to the server and the
    /// hub starts its pump.
    pub(crate) fn new(
        kind: HubKind,
        config: Arc<HttpServerConfig>,
        owner: Option<String>,
    ) -> (Arc<Hub>, Connection) {
        let (in_tx, in_rx) = mpsc::channel(config.inbound_capacity);
        let (out_tx, out_rx) = mpsc::channel::<Box<Outbound>>(config.inbound_capacity);
        let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
        let resumable = matches!(&kind, HubKind::Session { store: Some(_), .. });
        let inlet = mcp_jsonrpc::InletLink::new(config.stream_buffer);
        let mut state = State {
            next_slot: 1,
            next_internal: 1,
            ..State::default()
        };
        state.slots.insert(
            STANDALONE,
            Box::new(Slot::new(Mode::Detached(VecDeque::new()), resumable)),
        );
        let hub = Arc::new(Hub {
            kind,
            owner,
            config,
            inbound: Mutex::new(Some(in_tx)),
            commands: cmd_tx,
            state: Mutex::new(state),
            closed: CancellationToken::new(),
            closing: AtomicBool::new(false),
            last_look: Mutex::new(Seen {
                busy: 0,
                since: Instant::now(),
            }),
            busy: AtomicU64::new(0),
            streams: AtomicUsize::new(0),
            inlet,
            pump: out_tx.downgrade(),
            store_touched: Mutex::new(None),
        });
        let writer = HubWriter {
            hub: Arc::clone(&hub),
            pump: PollSender::new(out_tx),
        };
        let mut connection = Connection::new(inbound_stream(in_rx), writer);
        if !matches!(hub.kind, HubKind::Legacy { .. }) {
            connection = connection.with_extension(hub.inlet.clone());
        }
        tokio::spawn(pump(hub.clone(), out_rx, cmd_rx));
        (hub, connection)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn session_id(&self) -> Option<&str> {
        match &self.kind {
            HubKind::Session { id, .. } | HubKind::Legacy { id } => Some(id),
            HubKind::Shared => None,
        }
    }

    fn store(&self) -> Option<&Arc<dyn EventStore>> {
        match &self.kind {
            HubKind::Session { store, .. } => store.as_ref(),
            _ => None,
        }
    }

    /// Whether a request made by `identity` (`None` without an authenticator) may use this
    /// hub's session.
    pub(crate) fn owned_by(&self, identity: Option<&str>) -> bool {
        self.owner.as_deref() == identity
    }

    pub(crate) fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// The inlet of the engine serving the connection, once it runs: requests served in the
    /// task of their POST enter their handler there.
    pub(crate) fn inlet(&self) -> Option<&mcp_jsonrpc::Inlet> {
        self.inlet.get()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    pub(crate) fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    /// Whether the session store is due to hear that the session is in use (at most once per
    /// `interval`); a `true` starts the next interval.
    pub(crate) fn touch_due(&self, interval: Duration) -> bool {
        let mut touched = self
            .store_touched
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        match *touched {
            Some(at) if now.duration_since(at) < interval => false,
            _ => {
                *touched = Some(now);
                true
            }
        }
    }

    /// Makes the next [`touch_due`](Self::touch_due) true (the last touch failed).
    pub(crate) fn touch_failed(&self) {
        *self
            .store_touched
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Starts the ids of this hub's streams and of its standalone stream's events at `base`: a
    /// session rebuilt on another replica must not reuse the stream ids (nor, on the standalone
    /// stream, the event numbers) its earlier replicas gave out, since they share the event
    /// store.
    pub(crate) fn start_ids_at(&self, base: u64) {
        let mut st = self.lock();
        st.next_slot = st.next_slot.max(base);
        if let Some(slot) = st.slots.get_mut(&STANDALONE) {
            slot.seq = slot.seq.max(base);
        }
    }

    /// Whether the session's server waits for an answer with this id.
    pub(crate) fn awaits(&self, id: &Id) -> bool {
        self.lock().awaited.contains(id)
    }

    pub(crate) fn protocol_version(&self) -> Option<String> {
        self.lock().protocol_version.clone()
    }

    /// Keeps the hub busy (not idle) while the guard is alive (see [`idle_for`](Self::idle_for)).
    /// One atomic add when made and one when dropped: no clock and no lock on the path of a
    /// request.
    ///
    /// The guard borrows the hub (no count of the hub's references, which every request of the
    /// session would share); [`BusyGuard::held`] makes one that outlives the borrow.
    pub(crate) fn busy(&self) -> BusyGuard<&Hub> {
        self.busy.fetch_add(BUSY_MADE | 1, Ordering::SeqCst);
        BusyGuard { hub: self }
    }

    /// Counts as activity for [`idle_for`](Self::idle_for): something was sent.
    fn touch(&self) {
        self.busy.fetch_add(BUSY_MADE, Ordering::Relaxed);
    }

    /// Whether the hub has been idle (nothing in flight, nothing open) for longer than `idle`,
    /// as far as the calls to this method saw: the idle time counts from the first call that
    /// found the hub idle with no guard made since the call before. Called periodically (the
    /// idle sweep), a hub is found idle at most one period after the last guard dropped.
    pub(crate) fn idle_for(&self, idle: Duration) -> bool {
        let busy = self.busy.load(Ordering::SeqCst);
        let mut seen = self
            .last_look
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if busy & BUSY_ALIVE != 0 || busy != seen.busy {
            *seen = Seen {
                busy,
                since: Instant::now(),
            };
            return false;
        }
        seen.since.elapsed() > idle
    }

    /// The number of open streams (SSE responses and POSTs waiting for an answer).
    pub(crate) fn open_streams(&self) -> usize {
        self.streams.load(Ordering::SeqCst)
    }

    /// Counts a stream until the guard drops (borrowing the hub, as [`busy`](Self::busy)
    /// does; [`StreamCount::held`] makes one that outlives the borrow).
    pub(crate) fn stream_guard(&self) -> StreamCount<&Hub> {
        self.streams.fetch_add(1, Ordering::SeqCst);
        StreamCount { hub: self }
    }

    /// Ends the connection: the server sees the inbound stream end, every stream closes.
    pub(crate) fn close(&self) {
        let mut st = self.lock();
        st.closed = true;
        st.slots.clear();
        st.routes.clear();
        st.original.clear();
        drop(st);
        self.inbound
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        self.closing.store(true, Ordering::Release);
        self.closed.cancel();
    }

    /// Closes the standalone stream (graceful shutdown); requests in flight keep their streams.
    pub(crate) fn close_standalone(&self) {
        if let Some(slot) = self.lock().slots.get_mut(&STANDALONE) {
            slot.mode = Mode::Detached(VecDeque::new());
        }
    }

    async fn send_inbound(&self, incoming: Incoming) -> bool {
        let tx = self
            .inbound
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(tx) = tx else { return false };
        tokio::select! {
            sent = tx.send(Box::new(Ok(incoming))) => sent.is_ok(),
            () = self.closed.cancelled() => false,
        }
    }

    fn try_send_inbound(&self, incoming: Incoming) {
        let tx = self
            .inbound
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(tx) = tx {
            if tx.try_send(Box::new(Ok(incoming))).is_err() {
                tracing::warn!("inbound queue full: a cancellation was not delivered");
            }
        }
    }

    /// Hands the messages of one POST to the connection.
    ///
    /// `base` is copied into every message's extensions. Requests get a slot whose answer the
    /// caller awaits; `sse_allowed` says whether the client accepts `text/event-stream`.
    pub(crate) async fn post(
        self: &Arc<Self>,
        messages: Vec<Message>,
        batch: bool,
        answers: Vec<Message>,
        base: Extensions,
        sse_allowed: bool,
        force_sse: bool,
    ) -> Result<Posted, PostError> {
        let shared = matches!(self.kind, HubKind::Shared);
        let legacy = matches!(self.kind, HubKind::Legacy { .. });
        let mut outgoing = Vec::with_capacity(messages.len());
        let mut slot_key = None;
        let mut internal_ids = Vec::new();
        {
            let mut st = self.lock();
            if st.closed {
                return Err(PostError::Closed);
            }
            let has_requests = messages.iter().any(|m| matches!(m, Message::Request(_)));
            if has_requests && !legacy {
                for m in &messages {
                    if let Message::Request(r) = m {
                        if !shared && st.routes.contains_key(&r.id) {
                            return Err(PostError::DuplicateId(r.id.clone()));
                        }
                    }
                }
                if shared && st.routes.len() >= self.config.max_pending_stateless {
                    return Err(PostError::Busy);
                }
                slot_key = Some(self.open_slot(&mut st, answers, sse_allowed, batch));
            }
            for m in &messages {
                if let Message::Response(mcp_jsonrpc::Response { id: Some(id), .. }) = m {
                    st.awaited.retain(|a| a != id);
                }
            }
            for m in messages {
                let m = match m {
                    Message::Request(mut r) => {
                        if let Some((key, _)) = &slot_key {
                            if shared {
                                let internal = Id::Number(st.next_internal);
                                st.next_internal += 1;
                                let original = std::mem::replace(&mut r.id, internal.clone());
                                st.original.insert(internal.clone(), original);
                            }
                            if r.method == "initialize" {
                                st.init_id = Some(r.id.clone());
                            }
                            st.routes.insert(r.id.clone(), *key);
                            if let Some(slot) = st.slots.get_mut(key) {
                                slot.pending.insert(r.id.clone());
                            }
                            internal_ids.push(r.id.clone());
                        }
                        Message::Request(r)
                    }
                    other => other,
                };
                outgoing.push(m);
            }
        }
        let guard = slot_key.as_ref().map(|(key, _)| SlotGuard {
            hub: self.clone(),
            key: *key,
            generation: 0,
            armed: true,
        });
        if let (Some((key, _)), true) = (&slot_key, force_sse && sse_allowed) {
            // Ordered before the requests' frames: the pump opens the stream right away.
            let _ = self.commands.send(Box::new(Command::StartSse(*key)));
        }
        let count = outgoing.len();
        let mut base = Some(base);
        for (i, m) in outgoing.into_iter().enumerate() {
            // The last message takes the base itself: a single-message POST copies nothing.
            let mut extensions = if i + 1 == count {
                base.take().unwrap_or_default()
            } else {
                base.clone().unwrap_or_default()
            };
            if let (Message::Request(r), HubKind::Session { .. }) = (&m, &self.kind) {
                extensions.insert(super::SseStreamControl {
                    hub: Arc::downgrade(self),
                    request: r.id.clone(),
                });
            }
            let incoming = Incoming {
                frame: Ok(Inbound::Single(m)),
                extensions,
            };
            if !self.send_inbound(incoming).await {
                return Err(PostError::Closed);
            }
        }
        match (slot_key, guard) {
            (Some((_, decision)), Some(guard)) => Ok(Posted::Pending { decision, guard }),
            _ => Ok(Posted::Accepted),
        }
    }

    /// Opens the slot of a POST that carries requests; the receiver gets its decision.
    fn open_slot(
        &self,
        st: &mut State,
        collected: Vec<Message>,
        sse_allowed: bool,
        batch: bool,
    ) -> (u64, oneshot::Receiver<Decision>) {
        let key = st.next_slot;
        st.next_slot += 1;
        let (reply_tx, reply_rx) = oneshot::channel();
        let mut slot = Slot::new(
            Mode::Deciding {
                reply: Some(reply_tx),
                collected,
            },
            self.store().is_some(),
        );
        slot.sse_allowed = sse_allowed;
        slot.batch = batch;
        st.slots.insert(key, Box::new(slot));
        (key, reply_rx)
    }

    /// Opens the slot of a POST whose one request the HTTP handler serves itself (see
    /// [`Hub::deliver`]): the request is routed like one handed to the connection, but nothing
    /// goes to the connection. Returns the decision to wait for and the slot's guard.
    pub(crate) fn open_direct(
        self: &Arc<Self>,
        id: &Id,
        sse_allowed: bool,
        force_sse: bool,
    ) -> Result<(oneshot::Receiver<Decision>, SlotGuard), PostError> {
        let (key, decision) = {
            let mut st = self.lock();
            if st.closed {
                return Err(PostError::Closed);
            }
            if st.routes.contains_key(id) {
                return Err(PostError::DuplicateId(id.clone()));
            }
            let (key, decision) = self.open_slot(&mut st, Vec::new(), sse_allowed, false);
            st.routes.insert(id.clone(), key);
            if let Some(slot) = st.slots.get_mut(&key) {
                slot.pending.insert(id.clone());
            }
            (key, decision)
        };
        if force_sse && sse_allowed {
            let _ = self.commands.send(Box::new(Command::StartSse(key)));
        }
        Ok((decision, SlotGuard::for_stream(Arc::clone(self), key, 0)))
    }

    /// Completes a request served directly whose POST still waits for one JSON answer, with
    /// nothing queued before its response: the answer is returned to the caller (the POST's
    /// own task), with no event, no collected list and no decision sent. Anything else is
    /// given back, to be [delivered](Hub::deliver).
    pub(crate) fn complete_direct(
        &self,
        response: mcp_jsonrpc::Response,
    ) -> Result<Decision, Outbound> {
        let id = response.id.clone();
        {
            let mut st = self.lock();
            let key = id.as_ref().and_then(|id| st.routes.get(id)).copied();
            let lone = key.and_then(|key| st.slots.get(&key)).is_some_and(|slot| {
                !slot.batch
                    && slot.pending.len() == 1
                    && matches!(&slot.mode, Mode::Deciding { collected, .. } if collected.is_empty())
            });
            match (key, &id) {
                (Some(key), Some(id)) if lone && st.pump_backlog == 0 && !st.closed => {
                    st.routes.remove(id);
                    st.slots.remove(&key);
                }
                _ => return Err(Outbound::related(Message::Response(response), id)),
            }
        }
        self.touch();
        Ok(Decision::json(response))
    }

    /// Delivers a frame of a request served directly (its response, or what its handler sent),
    /// as the connection's writer would: a response completing a JSON answer is routed here,
    /// anything else queues for the pump, behind what the pump still holds. `false` once the
    /// connection is gone.
    pub(crate) async fn deliver(&self, outbound: Outbound) -> bool {
        let Err(outbound) = self.route_now(outbound) else {
            return true;
        };
        let sent = match self.pump.upgrade() {
            Some(pump) => pump.send(Box::new(outbound)).await.is_ok(),
            None => false,
        };
        if !sent {
            let mut st = self.lock();
            st.pump_backlog = st.pump_backlog.saturating_sub(1);
        }
        sent
    }

    /// Attaches an SSE stream: the standalone stream (`key` 0, no `after`) or a replay after a
    /// `Last-Event-ID`.
    pub(crate) async fn attach(
        &self,
        key: u64,
        after: Option<u64>,
        tx: mpsc::Sender<Bytes>,
    ) -> Result<Attached, AttachError> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Box::new(Command::Attach {
                key,
                after,
                tx,
                reply,
            }))
            .map_err(|_| AttachError::Closed)?;
        rx.await.map_err(|_| AttachError::Closed)?
    }

    /// Sends a message of the transport's own (an answer to an invalid batch element) the way
    /// the connection's messages go.
    pub(crate) fn push_outbound(&self, message: Message) {
        // Only 2024-11-05 hubs use this, and they have no event store: nothing to append.
        let _ = self.route(message, None);
    }

    /// Attaches the 2024-11-05 SSE stream directly (it exists from the start).
    pub(crate) fn attach_legacy(&self, tx: mpsc::Sender<Bytes>) {
        if let Some(slot) = self.lock().slots.get_mut(&STANDALONE) {
            slot.mode = Mode::Live(tx);
        }
    }

    /// Called when the HTTP side of a slot goes away.
    fn abandon(&self, key: u64, generation: u64) {
        let mut cancels = Vec::new();
        {
            let mut st = self.lock();
            let shared = matches!(self.kind, HubKind::Shared);
            let Some(slot) = st.slots.get_mut(&key) else {
                return;
            };
            if slot.generation != generation {
                return;
            }
            if key == STANDALONE {
                if matches!(self.kind, HubKind::Legacy { .. }) {
                    drop(st);
                    self.close();
                    return;
                }
                slot.mode = Mode::Detached(VecDeque::new());
                return;
            }
            let started = matches!(slot.mode, Mode::Live(_) | Mode::Detached(_));
            if !shared && slot.resumable && started {
                // The client may come back with Last-Event-ID; keep storing the stream.
                slot.mode = Mode::Detached(VecDeque::new());
                return;
            }
            if let Some(slot) = st.slots.remove(&key) {
                for id in slot.pending.into_vec() {
                    st.routes.remove(&id);
                    if shared {
                        st.original.remove(&id);
                        cancels.push(id);
                    }
                }
            }
        }
        for id in cancels {
            tracing::debug!(%id, "HTTP response dropped before the result: cancelling");
            let params = serde_json::json!({
                "requestId": id,
                "reason": "the HTTP client disconnected",
            });
            if let Ok(n) = Notification::with_params(mcp_jsonrpc::CANCELLED_METHOD, &params) {
                self.try_send_inbound(Incoming::from(Frame::Single(Message::Notification(n))));
            }
        }
    }

    fn priming_enabled(&self, st: &State) -> bool {
        self.store().is_some()
            && st
                .protocol_version
                .as_deref()
                .and_then(ProtocolVersion::from_date)
                .is_some_and(|v| v.has(Feature::SsePriming))
    }

    fn event_id(key: u64, seq: u64) -> String {
        format!("{key}-{seq}")
    }

    /// Parses an event id written by this transport.
    pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
        let (key, seq) = id.trim().split_once('-')?;
        Some((key.parse().ok()?, seq.parse().ok()?))
    }

    /// Encodes a message as an event of stream `key` (one allocation), queueing its store
    /// append when the stream is resumable.
    fn encode(&self, key: u64, slot: &mut Slot, message: &Message, jobs: &mut Vec<Job>) -> Bytes {
        let event = if matches!(self.kind, HubKind::Legacy { .. }) {
            Some("message")
        } else {
            None
        };
        if slot.resumable {
            let seq = slot.seq;
            slot.seq += 1;
            let (bytes, data) =
                encode_message_event(Some(&Self::event_id(key, seq)), event, message);
            jobs.push(Job { key, seq, data });
            bytes
        } else {
            encode_message_event(None, event, message).0
        }
    }

    fn priming(&self, key: u64, slot: &mut Slot, jobs: &mut Vec<Job>) -> Bytes {
        let seq = slot.seq;
        slot.seq += 1;
        jobs.push(Job {
            key,
            seq,
            data: Bytes::new(),
        });
        encode_event(
            Some(&Self::event_id(key, seq)),
            None,
            b"",
            Some(self.config.sse_retry),
        )
    }

    /// Opens the SSE stream of a deciding slot; returns whether it is now live.
    fn start_sse(&self, st_priming: bool, key: u64, slot: &mut Slot, jobs: &mut Vec<Job>) -> bool {
        let Mode::Deciding { reply, collected } = &mut slot.mode else {
            return matches!(slot.mode, Mode::Live(_));
        };
        let reply = reply.take();
        let collected = std::mem::take(collected);
        let (tx, rx) = mpsc::channel(self.config.stream_buffer);
        let mut first = Vec::with_capacity(collected.len() + 1);
        if st_priming {
            first.push(self.priming(key, slot, jobs));
        }
        for m in &collected {
            first.push(self.encode(key, slot, m, jobs));
        }
        let delivered = reply.is_some_and(|r| r.send(Decision::Sse { first, rx }).is_ok());
        slot.mode = if delivered {
            Mode::Live(tx)
        } else {
            Mode::Detached(VecDeque::new())
        };
        delivered
    }

    /// Routes one outbound message; returns the store appends to perform.
    fn route(&self, message: Message, related: Option<Id>) -> Vec<Job> {
        self.route_locked(&mut self.lock(), message, related)
    }

    /// Routes a frame from the server's own task when it is a response that completes a request
    /// answered with one JSON document and nothing is waiting in the pump before it: no event
    /// to store, no stream to start, and no hand-off to the pump task. Anything else is given
    /// back, to be queued for the pump (and counted, so later frames queue behind it).
    fn route_now(&self, outbound: Outbound) -> Result<(), Outbound> {
        let mut st = self.lock();
        match outbound {
            Outbound {
                frame: Frame::Single(Message::Response(response)),
                related,
            } if st.pump_backlog == 0 && !st.closed && completes_json(&st, &response) => {
                let jobs = self.route_locked(&mut st, Message::Response(response), related);
                drop(st);
                self.touch();
                if !jobs.is_empty() {
                    // A JSON answer stores nothing; should that change, the pump still stores
                    // in order.
                    let _ = self.commands.send(Box::new(Command::Store(jobs)));
                }
                Ok(())
            }
            other => {
                st.pump_backlog += 1;
                Err(other)
            }
        }
    }

    /// [`Hub::route`] under the caller's lock.
    fn route_locked(&self, st: &mut State, message: Message, related: Option<Id>) -> Vec<Job> {
        let mut jobs = Vec::new();
        if st.closed {
            return jobs;
        }
        if let (Message::Request(r), HubKind::Session { .. }) = (&message, &self.kind) {
            if st.awaited.len() >= MAX_AWAITED {
                st.awaited.remove(0);
            }
            st.awaited.push(r.id.clone());
        }
        let shared = matches!(self.kind, HubKind::Shared);
        let legacy = matches!(self.kind, HubKind::Legacy { .. });
        let mut message = message;
        let mut finishes = None;
        let key = if legacy {
            STANDALONE
        } else {
            match &mut message {
                Message::Response(r) => {
                    let Some(id) = r.id.clone() else {
                        tracing::debug!("dropping an outbound response without id");
                        return jobs;
                    };
                    if st.init_id.as_ref() == Some(&id) {
                        st.init_id = None;
                        if let Ok(result) = &r.result {
                            #[derive(serde::Deserialize)]
                            struct Init {
                                #[serde(rename = "protocolVersion")]
                                protocol_version: String,
                            }
                            if let Ok(init) = serde_json::from_str::<Init>(result.get()) {
                                st.protocol_version = Some(init.protocol_version);
                            }
                        }
                    }
                    let Some(key) = st.routes.remove(&id) else {
                        tracing::debug!(%id, "dropping a response whose HTTP request is gone");
                        return jobs;
                    };
                    if shared {
                        match st.original.remove(&id) {
                            Some(original) => r.id = Some(original),
                            None => return jobs,
                        }
                    }
                    finishes = Some(id);
                    key
                }
                Message::Notification(n) => {
                    if let (true, Some(id)) = (shared, &related) {
                        if let Some(original) = st.original.get(id) {
                            super::stateless::retag_subscription(n, id, original);
                        }
                    }
                    related
                        .as_ref()
                        .and_then(|id| st.routes.get(id).copied())
                        .unwrap_or(STANDALONE)
                }
                _ => related
                    .as_ref()
                    .and_then(|id| st.routes.get(id).copied())
                    .unwrap_or(STANDALONE),
            }
        };
        let priming = self.priming_enabled(st);
        let backlog_cap = if shared {
            0
        } else {
            self.config.standalone_backlog
        };
        let mut key = key;
        let mut slot_gone = false;
        loop {
            let Some(slot) = st.slots.get_mut(&key) else {
                if key != STANDALONE && finishes.is_none() {
                    key = STANDALONE;
                    continue;
                }
                return jobs;
            };
            if let Some(id) = &finishes {
                slot.pending.remove(id);
            }
            let is_response = matches!(message, Message::Response(_));
            if let Mode::Deciding { reply, collected } = &mut slot.mode {
                if is_response {
                    collected.push(message);
                    if !slot.pending.is_empty() {
                        return jobs;
                    }
                    let collected = std::mem::take(collected);
                    let code = match collected.as_slice() {
                        [Message::Response(r)] => r.result.as_ref().err().map(|e| e.code),
                        _ => None,
                    };
                    let bytes = if slot.batch {
                        let mut buf = bytes::BytesMut::new();
                        if let Err(e) =
                            serde_json::to_writer(bytes::BufMut::writer(&mut buf), &collected)
                        {
                            tracing::error!(error = %e, "could not encode a batch response");
                        }
                        buf.freeze()
                    } else {
                        collected.first().map(message_bytes).unwrap_or_default()
                    };
                    if let Some(reply) = reply.take() {
                        let _ = reply.send(Decision::Json(bytes, code));
                    }
                    st.slots.remove(&key);
                    return jobs;
                }
                if !slot.sse_allowed || self.config.response_mode == super::ResponseMode::Json {
                    // This client only takes JSON: the message goes to the standalone stream.
                    if key == STANDALONE {
                        return jobs;
                    }
                    key = STANDALONE;
                    continue;
                }
                self.start_sse(priming, key, slot, &mut jobs);
            }
            let event = self.encode(key, slot, &message, &mut jobs);
            match &mut slot.mode {
                Mode::Live(tx) => match tx.try_send(event) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        tracing::warn!(
                            stream = key,
                            "SSE client too slow: disconnecting the stream (it may resume)"
                        );
                        slot.mode = Mode::Detached(VecDeque::new());
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => {
                        slot.mode = Mode::Detached(VecDeque::new());
                    }
                },
                Mode::Detached(backlog) if key == STANDALONE => {
                    if backlog_cap == 0 {
                        tracing::debug!("no standalone stream: dropping a message");
                    } else {
                        if backlog.len() >= backlog_cap {
                            backlog.pop_front();
                            tracing::warn!("standalone backlog full: dropping the oldest message");
                        }
                        backlog.push_back(event);
                    }
                }
                Mode::Detached(_) => {
                    if !slot.resumable {
                        tracing::debug!(stream = key, "stream closed: dropping a message");
                    }
                }
                Mode::Deciding { .. } => {}
            }
            if finishes.is_some() && slot.pending.is_empty() && key != STANDALONE {
                slot_gone = true;
            }
            break;
        }
        if slot_gone {
            st.slots.remove(&key);
        }
        jobs
    }

    async fn store_jobs(&self, jobs: Vec<Job>) {
        let (Some(store), Some(session)) = (self.store(), self.session_id()) else {
            return;
        };
        for job in jobs {
            if let Err(e) = store
                .append(session, &job.key.to_string(), job.seq, job.data)
                .await
            {
                tracing::warn!(error = %e, "event store append failed");
            }
        }
    }

    async fn serve_attach(
        &self,
        key: u64,
        after: Option<u64>,
        tx: mpsc::Sender<Bytes>,
    ) -> Result<Attached, AttachError> {
        let mut jobs = Vec::new();
        let mut first = Vec::new();
        if let Some(after) = after {
            let (Some(store), Some(session)) = (self.store(), self.session_id()) else {
                return Err(AttachError::UnknownEvent);
            };
            let known = self.lock().slots.contains_key(&key);
            let events = store
                .replay_after(session, &key.to_string(), after)
                .await
                .map_err(|e| AttachError::Store(e.to_string()))?;
            let events = match events {
                Some(events) => events,
                None if known => Vec::new(),
                None => return Err(AttachError::UnknownEvent),
            };
            for e in events.iter().filter(|e| !e.data.is_empty()) {
                first.push(encode_event(
                    Some(&Self::event_id(key, e.seq)),
                    None,
                    &e.data,
                    None,
                ));
            }
        }
        let generation = self.attach_locked(key, after.is_none(), tx, &mut first, &mut jobs)?;
        self.store_jobs(jobs).await;
        Ok(Attached { first, generation })
    }

    fn attach_locked(
        &self,
        key: u64,
        fresh: bool,
        tx: mpsc::Sender<Bytes>,
        first: &mut Vec<Bytes>,
        jobs: &mut Vec<Job>,
    ) -> Result<u64, AttachError> {
        let mut st = self.lock();
        if st.closed {
            return Err(AttachError::Closed);
        }
        let priming = self.priming_enabled(&st);
        let Some(slot) = st.slots.get_mut(&key) else {
            // A finished stream: the replay is all there is.
            return Ok(0);
        };
        if key == STANDALONE && fresh {
            if let Mode::Live(old) = &slot.mode {
                if !old.is_closed() {
                    return Err(AttachError::Conflict);
                }
            }
            if priming {
                first.push(self.priming(key, slot, jobs));
            }
            if let Mode::Detached(backlog) = &mut slot.mode {
                first.extend(backlog.drain(..));
            }
        } else if let Mode::Detached(backlog) = &mut slot.mode {
            // Replayed from the store already.
            backlog.clear();
        }
        if let Mode::Deciding { .. } = slot.mode {
            // Resuming a stream that never started: nothing to replay yet.
            return Err(AttachError::UnknownEvent);
        }
        slot.generation += 1;
        slot.mode = Mode::Live(tx);
        Ok(slot.generation)
    }

    async fn serve_poll_close(&self, request: &Id) -> bool {
        let mut jobs = Vec::new();
        let done = {
            let mut st = self.lock();
            let priming = self.priming_enabled(&st);
            let Some(key) = st.routes.get(request).copied() else {
                return false;
            };
            let retry = self.config.sse_retry;
            match st.slots.get_mut(&key) {
                Some(slot) if slot.resumable => {
                    if matches!(slot.mode, Mode::Deciding { .. }) {
                        if !slot.sse_allowed || !self.start_sse(priming, key, slot, &mut jobs) {
                            return false;
                        }
                        if !priming {
                            // Give the client an event id to resume from.
                            let event = self.priming(key, slot, &mut jobs);
                            if let Mode::Live(tx) = &slot.mode {
                                let _ = tx.try_send(event);
                            }
                        }
                    }
                    if let Mode::Live(tx) = &slot.mode {
                        let _ = tx.try_send(retry_event(retry));
                    }
                    slot.mode = Mode::Detached(VecDeque::new());
                    true
                }
                _ => false,
            }
        };
        self.store_jobs(jobs).await;
        done
    }
}

struct Job {
    key: u64,
    seq: u64,
    data: Bytes,
}

async fn pump(
    hub: Arc<Hub>,
    mut out_rx: mpsc::Receiver<Box<Outbound>>,
    mut cmd_rx: mpsc::UnboundedReceiver<Box<Command>>,
) {
    loop {
        tokio::select! {
            biased;
            cmd = cmd_rx.recv() => {
                let Some(cmd) = cmd else { break };
                match *cmd {
                    Command::Attach { key, after, tx, reply } => {
                        let result = hub.serve_attach(key, after, tx).await;
                        let _ = reply.send(result);
                    }
                    Command::StartSse(key) => {
                        let mut jobs = Vec::new();
                        {
                            let mut st = hub.lock();
                            let priming = hub.priming_enabled(&st);
                            if let Some(slot) = st.slots.get_mut(&key) {
                                hub.start_sse(priming, key, slot, &mut jobs);
                            }
                        }
                        hub.store_jobs(jobs).await;
                    }
                    Command::PollClose { request, reply } => {
                        let _ = reply.send(hub.serve_poll_close(&request).await);
                    }
                    Command::Store(jobs) => hub.store_jobs(jobs).await,
                }
            }
            out = out_rx.recv() => {
                let Some(out) = out else { break };
                hub.touch();
                let Outbound { frame, related } = *out;
                match frame {
                    Frame::Single(m) => {
                        let jobs = {
                            let mut st = hub.lock();
                            st.pump_backlog = st.pump_backlog.saturating_sub(1);
                            hub.route_locked(&mut st, m, related)
                        };
                        hub.store_jobs(jobs).await;
                    }
                    Frame::Batch(messages) => {
                        for m in messages {
                            let jobs = hub.route(m, related.clone());
                            hub.store_jobs(jobs).await;
                        }
                        let mut st = hub.lock();
                        st.pump_backlog = st.pump_backlog.saturating_sub(1);
                    }
                }
            }
        }
    }
    tracing::debug!(session = ?hub.session_id(), "connection finished: closing its streams");
    hub.close();
}

/// Whether `response` answers a request of a POST still deciding between JSON and SSE: routing it
/// stores nothing and starts no stream (it completes the JSON answer, or joins a batch's).
fn completes_json(st: &State, response: &mcp_jsonrpc::Response) -> bool {
    response
        .id
        .as_ref()
        .and_then(|id| st.routes.get(id))
        .and_then(|key| st.slots.get(key))
        .is_some_and(|slot| matches!(slot.mode, Mode::Deciding { .. }))
}

/// The connection's writer: a response that completes a JSON answer is routed in the writing
/// task ([`Hub::route_now`]); every other frame is queued for the pump, whose queue bounds the
/// server's output.
struct HubWriter {
    hub: Arc<Hub>,
    pump: PollSender<Box<Outbound>>,
}

fn closed_error() -> TransportError {
    TransportError::Closed("the HTTP session was closed".into())
}

impl futures_util::Sink<Outbound> for HubWriter {
    type Error = TransportError;

    fn poll_ready(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), TransportError>> {
        self.get_mut()
            .pump
            .poll_reserve(cx)
            .map_err(|_| closed_error())
    }

    fn start_send(self: std::pin::Pin<&mut Self>, item: Outbound) -> Result<(), TransportError> {
        let this = self.get_mut();
        match this.hub.route_now(item) {
            Ok(()) => {
                // The slot reserved in `poll_ready` is not needed.
                this.pump.abort_send();
                Ok(())
            }
            Err(item) => this
                .pump
                .send_item(Box::new(item))
                .map_err(|_| closed_error()),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), TransportError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_close(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), TransportError>> {
        self.get_mut().pump.close();
        std::task::Poll::Ready(Ok(()))
    }
}

/// Keeps a hub busy (not idle) while alive; `H` is how it holds the hub (`&Hub`, or
/// `Arc<Hub>` for a guard an SSE body keeps).
pub(crate) struct BusyGuard<H: std::ops::Deref<Target = Hub> = Arc<Hub>> {
    hub: H,
}

impl BusyGuard<&Hub> {
    /// The same count, held by a guard of its own (`hub` is the borrowed hub's `Arc`).
    pub(crate) fn held(self, hub: &Arc<Hub>) -> BusyGuard {
        debug_assert!(std::ptr::eq(self.hub, &**hub));
        std::mem::forget(self);
        BusyGuard {
            hub: Arc::clone(hub),
        }
    }
}

impl<H: std::ops::Deref<Target = Hub>> Drop for BusyGuard<H> {
    fn drop(&mut self) {
        self.hub.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// [`Hub::busy`]'s count of guards made, one unit of it.
const BUSY_MADE: u64 = 1 << 32;
/// [`Hub::busy`]'s count of guards alive.
const BUSY_ALIVE: u64 = BUSY_MADE - 1;

/// The idle sweep's last look at a hub.
struct Seen {
    /// [`Hub::busy`] then.
    busy: u64,
    /// When it was first seen so.
    since: Instant,
}

/// Counts an open stream while alive; `H` as for [`BusyGuard`].
pub(crate) struct StreamCount<H: std::ops::Deref<Target = Hub> = Arc<Hub>> {
    hub: H,
}

impl StreamCount<&Hub> {
    /// The same count, held by a guard of its own (`hub` is the borrowed hub's `Arc`).
    pub(crate) fn held(self, hub: &Arc<Hub>) -> StreamCount {
        debug_assert!(std::ptr::eq(self.hub, &**hub));
        std::mem::forget(self);
        StreamCount {
            hub: Arc::clone(hub),
        }
    }
}

impl<H: std::ops::Deref<Target = Hub>> Drop for StreamCount<H> {
    fn drop(&mut self) {
        self.hub.streams.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Tells the hub when the HTTP side of a slot goes away.
pub(crate) struct SlotGuard {
    hub: Arc<Hub>,
    key: u64,
    generation: u64,
    armed: bool,
}

impl SlotGuard {
    pub(crate) fn for_stream(hub: Arc<Hub>, key: u64, generation: u64) -> Self {
        SlotGuard {
            hub,
            key,
            generation,
            armed: true,
        }
    }

    /// The answer was delivered completely (JSON): nothing to clean up.
    pub(crate) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if self.armed {
            self.hub.abandon(self.key, self.generation);
        }
    }
}

impl Hub {
    pub(crate) async fn poll_close(&self, request: &Id) -> bool {
        let (reply, rx) = oneshot::channel();
        if self
            .commands
            .send(Box::new(Command::PollClose {
                request: request.clone(),
                reply,
            }))
            .is_err()
        {
            return false;
        }
        rx.await.unwrap_or(false)
    }
}

/// A weak handle, for extensions that must not keep a session alive.
pub(crate) type WeakHub = Weak<Hub>;

/// An SSE block that only sets the reconnection delay.
fn retry_event(retry: Duration) -> Bytes {
    Bytes::from(format!("retry: {}\n\n", retry.as_millis()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::{SinkExt, StreamExt};
    use mcp_jsonrpc::{Request, Response};

    fn session() -> (Arc<Hub>, Connection) {
        let kind = HubKind::Session {
            id: "s".into(),
            store: None,
        };
        Hub::new(kind, Arc::new(HttpServerConfig::default()), None)
    }

    /// Moves the sweep's last look an hour back.
    fn an_hour_ago(hub: &Hub) {
        hub.last_look.lock().unwrap().since = Instant::now() - Duration::from_secs(3600);
    }

    fn alive(hub: &Hub) -> u64 {
        hub.busy.load(Ordering::SeqCst) & BUSY_ALIVE
    }

    #[tokio::test]
    async fn idle_time_counts_from_the_first_look_after_the_last_activity() {
        let (hub, _connection) = session();
        let minute = Duration::from_secs(60);
        assert!(!hub.idle_for(minute), "just made");
        an_hour_ago(&hub);
        assert!(hub.idle_for(minute), "unused for an hour");
        let guards: Vec<BusyGuard> = (0..16).map(|_| hub.busy().held(&hub)).collect();
        an_hour_ago(&hub);
        assert!(!hub.idle_for(minute), "busy");
        // Dropped from many threads at once.
        std::thread::scope(|s| {
            for guard in guards {
                s.spawn(move || drop(guard));
            }
        });
        assert_eq!(alive(&hub), 0);
        an_hour_ago(&hub);
        assert!(!hub.idle_for(minute), "busy at the last look");
        an_hour_ago(&hub);
        assert!(hub.idle_for(minute), "idle ever since");
        // A request that came and went between two looks is activity too.
        drop(hub.busy());
        assert!(!hub.idle_for(minute), "used since the last look");
        an_hour_ago(&hub);
        assert!(hub.idle_for(minute));
    }

    #[tokio::test]
    async fn a_held_guard_takes_over_the_borrowed_ones_count() {
        let (hub, _connection) = session();
        let busy = hub.busy();
        let streams = hub.stream_guard();
        assert_eq!((alive(&hub), hub.open_streams()), (1, 1));
        let held = (busy.held(&hub), streams.held(&hub));
        assert_eq!((alive(&hub), hub.open_streams()), (1, 1), "counted once");
        drop(held);
        assert_eq!((alive(&hub), hub.open_streams()), (0, 0));
        drop((hub.busy(), hub.stream_guard()));
        assert_eq!((alive(&hub), hub.open_streams()), (0, 0));
    }

    #[tokio::test]
    async fn a_closed_hub_says_so() {
        let (hub, _connection) = session();
        assert!(!hub.is_closed());
        hub.close();
        assert!(hub.is_closed());
        assert!(hub.closed().is_cancelled());
    }

    /// Posts one request (SSE allowed) and returns the decision it waits for.
    async fn post(hub: &Arc<Hub>, id: i64) -> (oneshot::Receiver<Decision>, SlotGuard) {
        let request = Message::Request(Request::new(id, "tools/call", None));
        match hub
            .post(
                vec![request],
                false,
                Vec::new(),
                Extensions::new(),
                true,
                false,
            )
            .await
        {
            Ok(Posted::Pending { decision, guard }) => (decision, guard),
            _ => panic!("the request was not accepted"),
        }
    }

    fn response(id: i64) -> Outbound {
        let result = mcp_jsonrpc::to_raw(&serde_json::json!({"n": id})).unwrap();
        Outbound::related(
            Message::Response(Response::success(Id::from(id), result)),
            Some(Id::from(id)),
        )
    }

    fn progress(id: i64) -> Outbound {
        let params = mcp_jsonrpc::to_raw(&serde_json::json!({"progress": 1})).unwrap();
        let n = Notification::new("notifications/progress", Some(params));
        Outbound::related(Message::Notification(n), Some(Id::from(id)))
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_lone_response_is_answered_as_json_without_the_pump() {
        let (hub, connection) = session();
        let (mut inbound, mut writer) = connection.into_parts();
        let (decision, _guard) = post(&hub, 1).await;
        assert!(
            inbound.next().await.is_some(),
            "the request reached the server"
        );
        writer.feed(response(1)).await.unwrap();
        // Routed in this task: the answer is there before the pump task ever runs.
        let mut decision = decision;
        match decision.try_recv() {
            Ok(Decision::Json(body, None)) => {
                assert!(std::str::from_utf8(&body).unwrap().contains(r#""n":1"#));
            }
            _ => panic!("no JSON answer yet"),
        }
        assert_eq!(hub.lock().pump_backlog, 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_response_never_overtakes_what_the_pump_still_holds() {
        let (hub, connection) = session();
        let (mut inbound, mut writer) = connection.into_parts();
        let (decision, _guard) = post(&hub, 7).await;
        assert!(inbound.next().await.is_some());
        // Progress then the response, both written before the pump task runs: the response
        // must queue behind the notification, which turns the answer into an SSE stream.
        writer.feed(progress(7)).await.unwrap();
        writer.feed(response(7)).await.unwrap();
        assert_eq!(hub.lock().pump_backlog, 2);
        let Decision::Sse { first, mut rx } = decision.await.unwrap() else {
            panic!("the response overtook the progress notification");
        };
        let mut events: Vec<Bytes> = first;
        while let Some(event) = rx.recv().await {
            events.push(event);
        }
        let text: String = events
            .iter()
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect();
        let progress_at = text.find("notifications/progress").expect("progress sent");
        let response_at = text.find(r#""n":7"#).expect("response sent");
        assert!(progress_at < response_at, "{text}");
        assert_eq!(hub.lock().pump_backlog, 0);
    }

    fn rpc_response(id: i64) -> mcp_jsonrpc::Response {
        let result = mcp_jsonrpc::to_raw(&serde_json::json!({"n": id})).unwrap();
        Response::success(Id::from(id), result)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_direct_request_answered_alone_is_completed_in_its_own_task() {
        let (hub, _connection) = session();
        let (mut decision, guard) = hub.open_direct(&Id::from(3), true, false).unwrap();
        assert!(matches!(
            hub.open_direct(&Id::from(3), true, false),
            Err(PostError::DuplicateId(_))
        ));
        match hub.complete_direct(rpc_response(3)) {
            Ok(Decision::Json(body, None)) => {
                assert!(std::str::from_utf8(&body).unwrap().contains(r#""n":3"#));
            }
            _ => panic!("not completed as JSON"),
        }
        // Nothing is left of the request: its id is free, no decision was sent.
        assert!(hub.lock().routes.is_empty());
        assert!(decision.try_recv().is_err());
        guard.disarm();
        assert!(hub.open_direct(&Id::from(3), true, false).is_ok());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_direct_response_behind_a_notification_goes_through_the_pump() {
        let (hub, _connection) = session();
        let (decision, _guard) = hub.open_direct(&Id::from(4), true, false).unwrap();
        assert!(hub.deliver(progress(4)).await);
        let Err(response) = hub.complete_direct(rpc_response(4)) else {
            panic!("the response overtook the notification");
        };
        assert!(hub.deliver(response).await);
        let Decision::Sse { first, mut rx } = decision.await.unwrap() else {
            panic!("not a stream");
        };
        let mut text: String = first
            .iter()
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect();
        while let Some(event) = rx.recv().await {
            text.push_str(&String::from_utf8_lossy(&event));
        }
        let progress_at = text.find("notifications/progress").expect("progress sent");
        let response_at = text.find(r#""n":4"#).expect("response sent");
        assert!(progress_at < response_at, "{text}");
    }

    #[test]
    fn pending_ids_count_each_request_once() {
        let mut p = PendingIds::default();
        assert!(p.is_empty());
        p.insert(Id::from(1));
        p.insert(Id::from(1));
        assert_eq!(p.len(), 1);
        p.insert(Id::from("b"));
        p.insert(Id::from(3));
        assert_eq!(p.len(), 3);
        p.remove(&Id::from(1));
        p.remove(&Id::from(9));
        assert_eq!(p.len(), 2);
        let left = p.into_vec();
        assert_eq!(left.len(), 2);
        assert!(left.contains(&Id::from(3)) && left.contains(&Id::from("b")));
        let mut one = PendingIds::default();
        one.insert(Id::from(7));
        one.remove(&Id::from(8));
        assert_eq!(one.len(), 1);
        one.remove(&Id::from(7));
        assert!(one.is_empty());
    }
}
