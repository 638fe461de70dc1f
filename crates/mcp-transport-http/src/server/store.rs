//! Storage behind sessions and resumable streams: the [`EventStore`] and [`SessionStore`] traits
//! and their bounded in-memory defaults.
//!
//! Both traits are async and object-safe, and the data they hold is plain (strings, bytes,
//! timestamps): no handle to a live in-process object is ever stored, so a shared backend (a
//! Redis stream per session, say) can implement them without changing the transport.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use bytes::Bytes;

/// A boxed future, as the store traits return them.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A store backend failed.
#[derive(Debug, thiserror::Error)]
#[error("store error: {0}")]
pub struct StoreError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

impl StoreError {
    /// A store error from any message or error.
    pub fn new(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        StoreError(error.into())
    }
}

/// One stored event of a resumable stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// The position of the event in its stream (strictly increasing).
    pub seq: u64,
    /// The JSON-RPC message as compact JSON; empty for a priming event, which carries no data.
    pub data: Bytes,
}

/// Where the events of resumable SSE streams are kept for `Last-Event-ID` replay.
///
/// A stream is identified by its session id and a stream id unique within the session; events
/// are appended in `seq` order. Implementations may evict old events to stay bounded; a replay
/// then starts at the oldest event still kept.
///
/// ```
/// use mcp_transport_http::server::{EventStore, InMemoryEventStore};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let store = InMemoryEventStore::default();
/// store.append("s1", "1", 0, bytes::Bytes::new()).await.unwrap();
/// store.append("s1", "1", 1, bytes::Bytes::from_static(b"{}")).await.unwrap();
/// let events = store.replay_after("s1", "1", 0).await.unwrap().unwrap();
/// assert_eq!(events.len(), 1);
/// assert!(store.replay_after("s1", "2", 0).await.unwrap().is_none());
/// # }
/// ```
pub trait EventStore: Send + Sync + 'static {
    /// Appends an event to a stream, creating the stream on its first event.
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        seq: u64,
        data: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// The events of a stream after `after`, in order; `None` when the stream is unknown.
    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
    ) -> StoreFuture<'a, Result<Option<Vec<StoredEvent>>, StoreError>>;

    /// Forgets every stream of a session.
    fn remove_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<(), StoreError>>;
}

/// Limits of an [`InMemoryEventStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventStoreLimits {
    /// The most events kept per session (default 1024); the oldest are evicted first.
    pub max_events_per_session: usize,
    /// The most payload bytes kept per session (default 8 MiB); the oldest are evicted first.
    pub max_bytes_per_session: usize,
    /// The most sessions with stored events (default 4096); the session that stored least
    /// recently is evicted first.
    pub max_sessions: usize,
}

impl Default for EventStoreLimits {
    fn default() -> Self {
        EventStoreLimits {
            max_events_per_session: 1024,
            max_bytes_per_session: 8 * 1024 * 1024,
            max_sessions: 4096,
        }
    }
}

#[derive(Default)]
struct SessionEvents {
    events: VecDeque<(String, StoredEvent)>,
    bytes: usize,
    /// Streams ever seen (bounded by the events kept: a stream whose last event was evicted is
    /// still known, so its replay is empty rather than unknown).
    streams: HashMap<String, u64>,
    stamp: u64,
}

#[derive(Default)]
struct MemoryState {
    sessions: HashMap<String, SessionEvents>,
    clock: u64,
}

/// The default [`EventStore`]: bounded per session and in the number of sessions.
#[derive(Default)]
pub struct InMemoryEventStore {
    limits: EventStoreLimits,
    state: Mutex<MemoryState>,
}

impl std::fmt::Debug for InMemoryEventStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryEventStore")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl InMemoryEventStore {
    /// A store with the given limits.
    pub fn new(limits: EventStoreLimits) -> Self {
        InMemoryEventStore {
            limits,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, MemoryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn append_sync(&self, session: &str, stream: &str, seq: u64, data: Bytes) {
        let mut state = self.lock();
        state.clock += 1;
        let stamp = state.clock;
        if !state.sessions.contains_key(session) && state.sessions.len() >= self.limits.max_sessions
        {
            let oldest = state
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.stamp)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                tracing::warn!(session = %oldest, "event store full: evicting a session's events");
                state.sessions.remove(&oldest);
            }
        }
        let entry = state.sessions.entry(session.to_owned()).or_default();
        entry.stamp = stamp;
        entry.bytes += data.len();
        entry.streams.insert(stream.to_owned(), seq);
        entry
            .events
            .push_back((stream.to_owned(), StoredEvent { seq, data }));
        while entry.events.len() > self.limits.max_events_per_session.max(1)
            || (entry.bytes > self.limits.max_bytes_per_session && entry.events.len() > 1)
        {
            if let Some((_, old)) = entry.events.pop_front() {
                entry.bytes -= old.data.len();
            }
        }
    }
}

impl EventStore for InMemoryEventStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        seq: u64,
        data: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        self.append_sync(session, stream, seq, data);
        Box::pin(async { Ok(()) })
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
    ) -> StoreFuture<'a, Result<Option<Vec<StoredEvent>>, StoreError>> {
        let result = {
            let state = self.lock();
            state.sessions.get(session).and_then(|s| {
                s.streams.get(stream).map(|_| {
                    s.events
                        .iter()
                        .filter(|(name, e)| name == stream && e.seq > after)
                        .map(|(_, e)| e.clone())
                        .collect()
                })
            })
        };
        Box::pin(async move { Ok(result) })
    }

    fn remove_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<(), StoreError>> {
        self.lock().sessions.remove(session);
        Box::pin(async { Ok(()) })
    }
}

/// What the transport records about a stateful session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The negotiated protocol revision, once the `initialize` result was sent.
    pub protocol_version: Option<String>,
    /// When the session was created.
    pub created_at: SystemTime,
    /// The identity of the principal that created the session, when the service has an
    /// authenticator ([`Authenticator::identity`](super::Authenticator::identity)); the
    /// session answers no one else.
    pub owner: Option<String>,
    /// The params of the client's `initialize` request as compact JSON, recorded once the
    /// session is initialized: a replica that does not hold the session rebuilds it from them
    /// (its server gets the same `initialize` and `notifications/initialized` again).
    pub initialize: Option<String>,
}

/// A registry of stateful sessions.
///
/// The transport keeps each session's live connection in process; the store records which
/// sessions exist. With a [shared](SessionStore::is_shared) store, a replica that receives a
/// request for a session it does not hold loads its record and rebuilds the session from it
/// (the client's `initialize` is replayed to a new server), so no pinning is needed at the load
/// balancer (except for answers to server-to-client requests, which reach only the replica
/// whose handler waits for them).
pub trait SessionStore: Send + Sync + 'static {
    /// Records a new session.
    fn create(&self, record: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>>;
    /// Updates a session's record (for example once the protocol version is known).
    fn update(&self, record: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>>;
    /// The record of a session, if it exists.
    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>>;
    /// Forgets a session.
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Result<(), StoreError>>;

    /// Marks a session as used (a shared store extends its time to live); `false` when the
    /// session no longer exists (ended through another replica, or expired). The transport
    /// calls it at most once per [`store_touch_interval`] per session.
    ///
    /// [`store_touch_interval`]: super::HttpServerConfig::store_touch_interval
    fn touch<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Result<bool, StoreError>> {
        let _ = id;
        Box::pin(async { Ok(true) })
    }

    /// Whether other replicas share these records (default `false`). A shared store's records
    /// outlive this process: a session that goes idle here, or this server's shutdown, drops
    /// only the local copy, and sessions unknown here are looked up in the store.
    fn is_shared(&self) -> bool {
        false
    }
}

/// What a [`MessageBus`] calls with each message published by any replica: the session id and
/// the message as compact JSON.
pub type BusHandler = std::sync::Arc<dyn Fn(String, Bytes) + Send + Sync>;

/// Carries the client's answers to server-to-client requests (sampling, elicitation, roots)
/// between replicas: the answer's POST may reach any replica, while the handler waiting for it
/// runs on the one that sent the request.
///
/// A replica that receives answers it is not waiting for publishes them; every replica's
/// subscription hands them to the session they belong to, and the one whose session awaits
/// that id takes it. Without a bus, answers must reach the replica that asked: pin sessions at
/// the load balancer (affinity on `Mcp-Session-Id`).
pub trait MessageBus: Send + Sync + 'static {
    /// Publishes a message for `session` to every replica.
    fn publish<'a>(
        &'a self,
        session: &'a str,
        message: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>>;

    /// Starts handing every published message to `deliver` (called once, when the service is
    /// built; the subscription lives as long as the bus).
    fn subscribe(&self, deliver: BusHandler);
}

/// The default [`SessionStore`]: a map in memory. The transport bounds the number of sessions.
#[derive(Debug, Default)]
pub struct InMemorySessionStore {
    records: Mutex<HashMap<String, SessionRecord>>,
}

impl InMemorySessionStore {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, SessionRecord>> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SessionStore for InMemorySessionStore {
    fn create(&self, record: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>> {
        self.lock().insert(record.id.clone(), record);
        Box::pin(async { Ok(()) })
    }

    fn update(&self, record: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>> {
        self.lock().insert(record.id.clone(), record);
        Box::pin(async { Ok(()) })
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        let found = self.lock().get(id).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Result<(), StoreError>> {
        self.lock().remove(id);
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn evicts_oldest_events_and_keeps_streams_known() {
        let store = InMemoryEventStore::new(EventStoreLimits {
            max_events_per_session: 3,
            max_bytes_per_session: 1 << 20,
            max_sessions: 2,
        });
        for seq in 0..5 {
            store
                .append("a", "1", seq, Bytes::from(format!("{seq}")))
                .await
                .unwrap();
        }
        let kept = store.replay_after("a", "1", 0).await.unwrap().unwrap();
        assert_eq!(kept.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3, 4]);
        let after3 = store.replay_after("a", "1", 3).await.unwrap().unwrap();
        assert_eq!(after3.iter().map(|e| e.seq).collect::<Vec<_>>(), [4]);
        assert!(store.replay_after("a", "9", 0).await.unwrap().is_none());
        // A third session evicts the least recently written one.
        store.append("b", "1", 0, Bytes::new()).await.unwrap();
        store.append("c", "1", 0, Bytes::new()).await.unwrap();
        assert!(store.replay_after("a", "1", 0).await.unwrap().is_none());
        assert!(store.replay_after("c", "1", 0).await.unwrap().is_some());
        store.remove_session("c").await.unwrap();
        assert!(store.replay_after("c", "1", 0).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn byte_limit_evicts() {
        let store = InMemoryEventStore::new(EventStoreLimits {
            max_events_per_session: 100,
            max_bytes_per_session: 10,
            max_sessions: 10,
        });
        for seq in 0..4 {
            store
                .append("s", "0", seq, Bytes::from_static(b"xxxx"))
                .await
                .unwrap();
        }
        let kept = store.replay_after("s", "0", 0).await.unwrap().unwrap();
        assert_eq!(kept.iter().map(|e| e.seq).collect::<Vec<_>>(), [2, 3]);
    }
}
