//! Redis-backed stores for the Streamable HTTP server of `mcp-transport-http` and the change
//! bus of `mcp-server`: sessions, resumable SSE streams, answers to server-to-client requests and
//! list changes shared by every replica behind one load balancer (`docs/deploy.md`).
//!
//! [`RedisStore`] implements [`SessionStore`], [`EventStore`], [`MessageBus`] and (feature
//! `server`, on by default) `mcp_server::ChangeBus`:
//!
//! * a session is one string key, `<prefix>:session:<id>`, holding its record as compact JSON
//!   (negotiated revision, owner, creation time and the client's `initialize` params, from
//!   which a replica that never saw the session rebuilds it); it expires after
//!   [`RedisConfig::session_ttl`] without activity;
//! * the events of a resumable stream are one Redis stream, `<prefix>:events:<session>:<stream>`
//!   (fields `seq` and `data`), capped at [`RedisConfig::max_events_per_stream`] entries and
//!   expiring after [`RedisConfig::event_ttl`] without appends; `<prefix>:streams:<session>` is
//!   the set of a session's stream names, so that a session's events go with it;
//! * answers travel on the pub/sub channel `<prefix>:answers`, changes on `<prefix>:changes`;
//! * (feature `server`) the tasks of the extension, as `mcp_server::TaskBackend`: one hash per
//!   task, `<prefix>:task:<id>`, with a lease its replica renews, and signals on
//!   `<prefix>:tasks` (see `docs/deploy.md`).
//!
//! Every command is bounded by [`RedisConfig::timeout`]: with Redis unreachable a call fails
//! with a [`StoreError`] within that time (the HTTP server answers `503`), and the connection
//! manager reconnects in the background, so the replica serves again as soon as Redis is back.
//!
//! ```ignore
//! use std::sync::Arc;
//! use mcp_store_redis::{RedisConfig, RedisStore};
//! use mcp_transport_http::server::StreamableHttpService;
//!
//! let store = Arc::new(RedisStore::connect("redis://127.0.0.1:6379/0", RedisConfig::default()).await?);
//! let server = mcp_server::Server::builder(info)
//!     .change_bus(store.clone())
//!     .task_backend(store.clone())
//!     // .tool(...) ...
//!     .build()?;
//! let service = StreamableHttpService::builder(server.connection_handler())
//!     .session_store(store.clone())
//!     .event_store(store.clone())
//!     .message_bus(store)
//!     .build();
//! ```
#![deny(missing_docs)]

#[cfg(feature = "server")]
mod tasks;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::sync::{Arc, Weak};

use bytes::Bytes;
use futures_util::StreamExt;
use mcp_transport_http::server::{
    BusHandler, EventStore, MessageBus, SessionRecord, SessionStore, StoreError, StoreFuture,
    StoredEvent,
};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, Value};

/// Limits and names of a [`RedisStore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// The prefix of every key (default `mcp`); replicas of one deployment share it.
    pub prefix: String,
    /// How long a session record lives without activity (default 30 min; refreshed by every
    /// request through [`SessionStore::touch`]).
    pub session_ttl: Duration,
    /// How long a stream's events live after its last append (default 30 min).
    pub event_ttl: Duration,
    /// The most events kept per stream (default 1024; the oldest are trimmed first).
    pub max_events_per_stream: usize,
    /// The most bytes of one event's data (default 4 MiB); a larger event is not stored (its
    /// replay skips it, with a warning).
    pub max_event_bytes: usize,
    /// The longest one store call waits for Redis, connecting included (default 2 s).
    pub timeout: Duration,
    /// How long the replica running a task vouches for it (default 5 s; renewed three times as
    /// often). A task whose lease ran out before it ended is ended `failed` by the next replica
    /// that reads it.
    pub task_lease: Duration,
    /// The most tasks of the extension kept in Redis at the same time, over every replica
    /// (default 100 000); a call that would create one more is refused.
    pub max_tasks: usize,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            prefix: "mcp".to_owned(),
            session_ttl: Duration::from_secs(30 * 60),
            event_ttl: Duration::from_secs(30 * 60),
            max_events_per_stream: 1024,
            max_event_bytes: 4 * 1024 * 1024,
            timeout: Duration::from_secs(2),
            task_lease: Duration::from_secs(5),
            max_tasks: 100_000,
        }
    }
}

/// A Redis error, or a call that did not finish in time.
#[derive(Debug, thiserror::Error)]
pub enum RedisStoreError {
    /// Redis answered with an error, or the connection failed.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// Redis did not answer within [`RedisConfig::timeout`].
    #[error("redis did not answer within {0:?}")]
    Timeout(Duration),
    /// A stored value could not be read.
    #[error("a stored value is malformed: {0}")]
    Malformed(String),
}

impl From<RedisStoreError> for StoreError {
    fn from(e: RedisStoreError) -> Self {
        StoreError::new(e)
    }
}

/// Sessions and resumable streams in Redis; cheap to clone (one multiplexed connection,
/// reconnected in the background).
#[derive(Clone)]
pub struct RedisStore {
    client: redis::Client,
    connection: ConnectionManager,
    config: RedisConfig,
    /// Dropped with the last clone: the bus subscriptions end then.
    alive: Arc<()>,
    /// Tells this store's own published changes from the other replicas' (the change bus).
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    origin: Arc<str>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (`redis://HOST:PORT[/DB]`, `rediss://` is not compiled in); fails
    /// within [`RedisConfig::timeout`] when Redis is unreachable.
    pub async fn connect(url: &str, config: RedisConfig) -> Result<Self, RedisStoreError> {
        let client = redis::Client::open(url)?;
        let subscriber = client.clone();
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(config.timeout)
            .set_response_timeout(config.timeout)
            // One attempt per call: a call that finds Redis down fails at once (the caller
            // answers 503); the next call tries again.
            .set_number_of_retries(1)
            .set_max_delay(200);
        let connection = tokio::time::timeout(
            config.timeout,
            ConnectionManager::new_with_config(client, manager),
        )
        .await
        .map_err(|_| RedisStoreError::Timeout(config.timeout))??;
        Ok(RedisStore {
            client: subscriber,
            connection,
            config,
            alive: Arc::new(()),
            origin: origin_id().into(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RedisConfig {
        &self.config
    }

    /// Runs one command or pipeline within the configured timeout.
    async fn run<T: FromRedisValue>(
        &self,
        what: &'static str,
        command: impl FnOnce(&mut redis::Pipeline),
    ) -> Result<T, RedisStoreError> {
        let mut pipe = redis::pipe();
        command(&mut pipe);
        let mut connection = self.connection.clone();
        let result = tokio::time::timeout(self.config.timeout, pipe.query_async(&mut connection))
            .await
            .map_err(|_| RedisStoreError::Timeout(self.config.timeout))
            .and_then(|r| r.map_err(RedisStoreError::from));
        if let Err(e) = &result {
            tracing::warn!(error = %e, what, "redis call failed");
        }
        result
    }

    fn session_key(&self, id: &str) -> String {
        format!("{}:session:{id}", self.config.prefix)
    }

    fn stream_key(&self, session: &str, stream: &str) -> String {
        format!("{}:events:{session}:{stream}", self.config.prefix)
    }

    fn bus_channel(&self) -> String {
        format!("{}:answers", self.config.prefix)
    }

    fn streams_key(&self, session: &str) -> String {
        format!("{}:streams:{session}", self.config.prefix)
    }

    fn ttl_secs(ttl: Duration) -> u64 {
        ttl.as_secs().max(1)
    }

    async fn put_session(&self, record: &SessionRecord) -> Result<(), RedisStoreError> {
        let key = self.session_key(&record.id);
        let value = encode_record(record);
        let ttl = Self::ttl_secs(self.config.session_ttl);
        self.run::<()>("session write", |p| {
            p.cmd("SET")
                .arg(&key)
                .arg(value)
                .arg("EX")
                .arg(ttl)
                .ignore();
        })
        .await
    }

    async fn get_session(&self, id: &str) -> Result<Option<SessionRecord>, RedisStoreError> {
        let key = self.session_key(id);
        let (value,): (Option<Vec<u8>>,) = self
            .run("session read", |p| {
                p.cmd("GET").arg(&key);
            })
            .await?;
        value.map(|v| decode_record(id, &v)).transpose()
    }

    async fn touch_session(&self, id: &str) -> Result<bool, RedisStoreError> {
        let key = self.session_key(id);
        let ttl = Self::ttl_secs(self.config.session_ttl);
        let (found,): (i64,) = self
            .run("session touch", |p| {
                p.cmd("EXPIRE").arg(&key).arg(ttl);
            })
            .await?;
        Ok(found == 1)
    }

    async fn delete_session(&self, id: &str) -> Result<(), RedisStoreError> {
        let key = self.session_key(id);
        self.run::<()>("session delete", |p| {
            p.cmd("DEL").arg(&key).ignore();
        })
        .await
    }

    async fn append_event(
        &self,
        session: &str,
        stream: &str,
        seq: u64,
        data: Bytes,
    ) -> Result<(), RedisStoreError> {
        if data.len() > self.config.max_event_bytes {
            tracing::warn!(
                session,
                stream,
                seq,
                bytes = data.len(),
                "event larger than the store's limit: not stored"
            );
            return Ok(());
        }
        let key = self.stream_key(session, stream);
        let streams = self.streams_key(session);
        let ttl = Self::ttl_secs(self.config.event_ttl);
        let cap = self.config.max_events_per_stream.max(1);
        self.run::<()>("event append", |p| {
            p.cmd("XADD")
                .arg(&key)
                .arg("MAXLEN")
                .arg(cap)
                .arg("*")
                .arg("seq")
                .arg(seq)
                .arg("data")
                .arg(data.as_ref())
                .ignore()
                .cmd("EXPIRE")
                .arg(&key)
                .arg(ttl)
                .ignore()
                .cmd("SADD")
                .arg(&streams)
                .arg(stream)
                .ignore()
                .cmd("EXPIRE")
                .arg(&streams)
                .arg(ttl)
                .ignore();
        })
        .await
    }

    async fn replay(
        &self,
        session: &str,
        stream: &str,
        after: u64,
    ) -> Result<Option<Vec<StoredEvent>>, RedisStoreError> {
        let key = self.stream_key(session, stream);
        let cap = self.config.max_events_per_stream.max(1);
        let (entries,): (Value,) = self
            .run("event replay", |p| {
                p.cmd("XRANGE")
                    .arg(&key)
                    .arg("-")
                    .arg("+")
                    .arg("COUNT")
                    .arg(cap);
            })
            .await?;
        let entries = match entries {
            Value::Array(entries) => entries,
            Value::Nil => return Ok(None),
            other => {
                return Err(RedisStoreError::Malformed(format!(
                    "XRANGE answered {other:?}"
                )));
            }
        };
        if entries.is_empty() {
            // A stream key exists only while it holds events: an empty answer is a stream
            // that was never written or has expired.
            return Ok(None);
        }
        let mut events = Vec::with_capacity(entries.len());
        for entry in entries {
            let Some(event) = decode_entry(entry) else {
                return Err(RedisStoreError::Malformed(format!(
                    "an entry of stream {key} has no seq or data"
                )));
            };
            if event.seq > after {
                events.push(event);
            }
        }
        events.sort_by_key(|e| e.seq);
        events.dedup_by_key(|e| e.seq);
        Ok(Some(events))
    }

    async fn delete_streams(&self, session: &str) -> Result<(), RedisStoreError> {
        let streams = self.streams_key(session);
        let (names,): (Vec<String>,) = self
            .run("stream list", |p| {
                p.cmd("SMEMBERS").arg(&streams);
            })
            .await?;
        let keys: Vec<String> = names
            .iter()
            .map(|name| self.stream_key(session, name))
            .chain(std::iter::once(streams))
            .collect();
        self.run::<()>("stream delete", |p| {
            p.cmd("DEL").arg(&keys).ignore();
        })
        .await
    }
}

/// One `XRANGE` entry: `[id, [field, value, ...]]`.
fn decode_entry(entry: Value) -> Option<StoredEvent> {
    let Value::Array(mut parts) = entry else {
        return None;
    };
    let Some(Value::Array(fields)) = parts.pop() else {
        return None;
    };
    let mut seq = None;
    let mut data = None;
    let mut fields = fields.into_iter();
    while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
        let Value::BulkString(name) = name else {
            continue;
        };
        let Value::BulkString(value) = value else {
            continue;
        };
        match name.as_slice() {
            b"seq" => seq = std::str::from_utf8(&value).ok()?.parse::<u64>().ok(),
            b"data" => data = Some(Bytes::from(value)),
            _ => {}
        }
    }
    Some(StoredEvent {
        seq: seq?,
        data: data?,
    })
}

fn unix_millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn encode_record(record: &SessionRecord) -> Vec<u8> {
    let value = serde_json::json!({
        "v": record.protocol_version,
        "c": unix_millis(record.created_at),
        "o": record.owner,
        "i": record.initialize,
    });
    serde_json::to_vec(&value).unwrap_or_default()
}

#[derive(serde::Deserialize)]
struct StoredRecord {
    v: Option<String>,
    c: u64,
    o: Option<String>,
    i: Option<String>,
}

fn decode_record(id: &str, bytes: &[u8]) -> Result<SessionRecord, RedisStoreError> {
    let stored: StoredRecord = serde_json::from_slice(bytes)
        .map_err(|e| RedisStoreError::Malformed(format!("session {id}: {e}")))?;
    Ok(SessionRecord {
        id: id.to_owned(),
        protocol_version: stored.v,
        created_at: UNIX_EPOCH
            .checked_add(Duration::from_millis(stored.c))
            .unwrap_or(UNIX_EPOCH),
        owner: stored.o,
        initialize: stored.i,
    })
}

impl SessionStore for RedisStore {
    fn create(&self, record: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.put_session(&record).await?) })
    }

    fn update(&self, record: SessionRecord) -> StoreFuture<'_, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.put_session(&record).await?) })
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> StoreFuture<'a, Result<Option<SessionRecord>, StoreError>> {
        Box::pin(async move { Ok(self.get_session(id).await?) })
    }

    fn touch<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move { Ok(self.touch_session(id).await?) })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.delete_session(id).await?) })
    }

    fn is_shared(&self) -> bool {
        true
    }
}

impl EventStore for RedisStore {
    fn append<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        seq: u64,
        data: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.append_event(session, stream, seq, data).await?) })
    }

    fn replay_after<'a>(
        &'a self,
        session: &'a str,
        stream: &'a str,
        after: u64,
    ) -> StoreFuture<'a, Result<Option<Vec<StoredEvent>>, StoreError>> {
        Box::pin(async move { Ok(self.replay(session, stream, after).await?) })
    }

    fn remove_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { Ok(self.delete_streams(session).await?) })
    }
}

/// `<session>\n<message>`: session ids are visible ASCII, so the first newline ends the id.
fn bus_payload(session: &str, message: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(session.len() + 1 + message.len());
    payload.extend_from_slice(session.as_bytes());
    payload.push(b'\n');
    payload.extend_from_slice(message);
    payload
}

fn parse_bus_payload(payload: &[u8]) -> Option<(String, Bytes)> {
    let split = payload.iter().position(|&b| b == b'\n')?;
    let session = std::str::from_utf8(&payload[..split]).ok()?.to_owned();
    Some((session, Bytes::copy_from_slice(&payload[split + 1..])))
}

/// An id for this store's published changes: the process and the time it connected.
fn origin_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos:x}", std::process::id())
}

/// What a subscription hands each payload to.
type PayloadHandler = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// Reads a channel until the store is dropped, reconnecting after failures.
async fn subscription(
    client: redis::Client,
    channel: String,
    timeout: Duration,
    alive: Weak<()>,
    deliver: PayloadHandler,
) {
    while alive.upgrade().is_some() {
        let connected = tokio::time::timeout(timeout, async {
            let mut pubsub = client.get_async_pubsub().await?;
            pubsub.subscribe(&channel).await?;
            Ok::<_, redis::RedisError>(pubsub)
        })
        .await;
        let pubsub = match connected {
            Ok(Ok(pubsub)) => pubsub,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "message bus: cannot subscribe; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Err(_) => {
                tracing::warn!("message bus: subscribing timed out; retrying");
                continue;
            }
        };
        tracing::debug!(channel, "message bus subscribed");
        let mut messages = pubsub.into_on_message();
        loop {
            tokio::select! {
                message = messages.next() => {
                    let Some(message) = message else {
                        tracing::warn!("message bus: connection lost; resubscribing");
                        break;
                    };
                    deliver(message.get_payload_bytes());
                }
                () = tokio::time::sleep(Duration::from_secs(1)) => {
                    if alive.upgrade().is_none() {
                        return;
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

impl MessageBus for RedisStore {
    fn publish<'a>(
        &'a self,
        session: &'a str,
        message: Bytes,
    ) -> StoreFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let channel = self.bus_channel();
            let payload = bus_payload(session, &message);
            self.run::<()>("bus publish", |p| {
                p.cmd("PUBLISH").arg(&channel).arg(payload).ignore();
            })
            .await?;
            Ok(())
        })
    }

    fn subscribe(&self, deliver: BusHandler) {
        tokio::spawn(subscription(
            self.client.clone(),
            self.bus_channel(),
            self.config.timeout,
            Arc::downgrade(&self.alive),
            Arc::new(move |payload: &[u8]| match parse_bus_payload(payload) {
                Some((session, bytes)) => deliver(session, bytes),
                None => tracing::warn!("message bus: a malformed payload: dropped"),
            }),
        ));
    }
}

/// List changes and resource updates shared by the replicas of a server (feature `server`):
/// channel `<prefix>:changes`, payload `<origin>\n<change>`.
#[cfg(feature = "server")]
impl mcp_server::ChangeBus for RedisStore {
    fn publish(&self, change: mcp_server::ServerChange) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("change bus: no Tokio runtime to publish on; the change stays local");
            return;
        };
        let store = self.clone();
        runtime.spawn(async move {
            let channel = format!("{}:changes", store.config.prefix);
            let payload = format!("{}\n{}", store.origin, change.encode());
            let _ = store
                .run::<()>("change publish", |p| {
                    p.cmd("PUBLISH").arg(&channel).arg(payload).ignore();
                })
                .await;
        });
    }

    fn subscribe(&self, deliver: mcp_server::bus::ChangeHandler) {
        let origin = self.origin.clone();
        tokio::spawn(subscription(
            self.client.clone(),
            format!("{}:changes", self.config.prefix),
            self.config.timeout,
            Arc::downgrade(&self.alive),
            Arc::new(move |payload: &[u8]| {
                let Some((from, change)) = std::str::from_utf8(payload)
                    .ok()
                    .and_then(|text| text.split_once('\n'))
                else {
                    tracing::warn!("change bus: a malformed payload: dropped");
                    return;
                };
                if from == &*origin {
                    return;
                }
                match mcp_server::ServerChange::decode(change) {
                    Some(change) => deliver(change),
                    None => tracing::warn!("change bus: an unknown change: dropped"),
                }
            }),
        ));
    }
}
