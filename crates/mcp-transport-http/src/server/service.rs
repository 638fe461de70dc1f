//! The service: classifies each HTTP request once and hands it to the right connection.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockWriteGuard, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::header::{ACCEPT, ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use http::request::Parts;
use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Body;
use mcp_jsonrpc::{Connection, ErrorObject, ExtensionGroup, Extensions, Inbound, Message};
use tokio::sync::mpsc;

use super::auth::{Auth, Authenticator, Granted};
use super::body::{self, HttpBody, SseBody, encode_event};
use super::config::{HttpServerConfig, ResponseMode};
use super::direct::{self, Direct};
use super::hub::{
    AttachError, BusyGuard, Decision, Hub, HubKind, PostError, Posted, STANDALONE, SlotGuard,
    StreamCount,
};
use super::stateless::{self, PROTOCOL_VERSION, header};
use super::store::{
    EventStore, InMemoryEventStore, InMemorySessionStore, MessageBus, SessionRecord, SessionStore,
};
use super::{McpParamHeaders, SessionId, SseStreamControl, security};
use mcp_types::wire;

/// `Mcp-Session-Id`.
const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `Last-Event-ID`.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
/// The JSON-RPC code of transport-level refusals (no such session, forbidden origin, ...).
pub(crate) const TRANSPORT_ERROR: i64 = -32000;
const SESSION_NOT_FOUND: i64 = -32001;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type ServeFn = Arc<dyn Fn(Connection) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Builds a [`StreamableHttpService`].
pub struct StreamableHttpServiceBuilder {
    serve: ServeFn,
    config: HttpServerConfig,
    event_store: Option<Arc<dyn EventStore>>,
    session_store: Arc<dyn SessionStore>,
    bus: Option<Arc<dyn MessageBus>>,
    auth: Option<Auth>,
}

impl std::fmt::Debug for StreamableHttpServiceBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttpServiceBuilder")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl StreamableHttpServiceBuilder {
    /// Sets the configuration.
    pub fn config(mut self, config: HttpServerConfig) -> Self {
        self.config = config;
        self
    }

    /// Keeps resumable stream events in this store (default: a bounded [`InMemoryEventStore`]).
    pub fn event_store(mut self, store: Arc<dyn EventStore>) -> Self {
        self.event_store = Some(store);
        self
    }

    /// Disables resumability: SSE events get no ids and `Last-Event-ID` is refused.
    pub fn without_event_store(mut self) -> Self {
        self.event_store = None;
        self
    }

    /// Records sessions in this store (default: [`InMemorySessionStore`]).
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.session_store = store;
        self
    }

    /// Routes the client's answers to server-to-client requests through `bus` when this
    /// replica does not wait for them: another replica of the deployment does (see
    /// [`MessageBus`]). Without a bus, pin sessions to replicas at the load balancer.
    pub fn message_bus(mut self, bus: Arc<dyn MessageBus>) -> Self {
        self.bus = Some(bus);
        self
    }

    /// Protects the endpoint: every request to it (POST, the GET stream, DELETE, the
    /// 2024-11-05 endpoints) must pass `authenticator` before its body is read or a session is
    /// looked up, each message is checked with [`Authenticator::authorize`], the principal goes
    /// into the extensions of every message, and a session answers only the identity that
    /// created it (another gets `404`, as if the session did not exist). What the
    /// authenticator serves publicly (the OAuth protected resource metadata, with
    /// `mcp_auth::ResourceServer`) is answered without credentials.
    pub fn auth<A: Authenticator>(mut self, authenticator: A) -> Self {
        self.auth = Some(Auth::new(authenticator));
        self
    }

    /// Builds the service.
    pub fn build(self) -> StreamableHttpService {
        let bus = self.bus.clone();
        let service = StreamableHttpService {
            inner: Arc::new(Inner {
                direct: Direct::new(&self.config),
                config: Arc::new(self.config),
                serve: self.serve,
                event_store: self.event_store,
                shared_store: self.session_store.is_shared(),
                session_store: self.session_store,
                restoring: Mutex::default(),
                bus: self.bus,
                auth: self.auth,
                sessions: RwLock::default(),
                shared: Mutex::default(),
                shutting_down: AtomicBool::new(false),
                reaper: AtomicBool::new(false),
            }),
        };
        if let Some(bus) = bus {
            let inner = Arc::downgrade(&service.inner);
            bus.subscribe(Arc::new(move |session: String, message: Bytes| {
                if let Some(inner) = inner.upgrade() {
                    inner.deliver_forwarded(&session, &message);
                }
            }));
        }
        service
    }
}

/// The MCP HTTP endpoint as a hyper and tower service; cheap to clone.
///
/// Build it with [`StreamableHttpService::builder`] from a function that serves one
/// [`Connection`] (a session, the shared stateless connection, or a 2024-11-05 SSE session);
/// each is spawned on the Tokio runtime. Serve it with [`serve`](Self::serve) or mount it in any
/// router that takes a tower service.
#[derive(Clone)]
pub struct StreamableHttpService {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for StreamableHttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttpService")
            .field("sessions", &self.session_count())
            .finish_non_exhaustive()
    }
}

struct Inner {
    config: Arc<HttpServerConfig>,
    serve: ServeFn,
    event_store: Option<Arc<dyn EventStore>>,
    session_store: Arc<dyn SessionStore>,
    /// Carries answers this replica does not wait for to the one that does.
    bus: Option<Arc<dyn MessageBus>>,
    /// [`SessionStore::is_shared`]: sessions unknown here are looked up in the store.
    shared_store: bool,
    /// Sessions being rebuilt from the shared store, one at a time per id.
    restoring: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    auth: Option<Auth>,
    /// Keyed by the ids this service drew at random, so a fast unkeyed hash is safe: a
    /// client can look ids up but cannot choose the ones stored.
    /// Read by every request of every session, written when one opens or closes: readers do
    /// not wait for each other.
    sessions: RwLock<Sessions>,
    shared: Mutex<Option<Arc<Hub>>>,
    /// [`StreamableHttpService::begin_shutdown`] was called: a flag, not a token, as every
    /// request reads it (tokio-util locks a token to read it).
    shutting_down: AtomicBool,
    reaper: AtomicBool,
    direct: Direct,
}

/// The sessions by id.
type Sessions = HashMap<String, Arc<Hub>, mcp_jsonrpc::BuildIdHasher>;

/// The parsed `Accept` header.
#[derive(Clone, Copy)]
struct Accepts {
    json: bool,
    sse: bool,
}

fn accepts(parts: &Parts) -> Accepts {
    let Some(value) = parts.headers.get(ACCEPT) else {
        return Accepts {
            json: true,
            sse: true,
        };
    };
    let mut a = Accepts {
        json: false,
        sse: false,
    };
    // What the specification tells clients to send, as nearly all do: no parsing.
    if value.as_bytes() == b"application/json, text/event-stream" {
        return Accepts {
            json: true,
            sse: true,
        };
    }
    // Bytes, not `str` splitting and Unicode trimming: every POST comes through here. A value
    // that is not visible ASCII accepts nothing, as before.
    let Ok(value) = value.to_str() else {
        return a;
    };
    for item in value.as_bytes().split(|&b| b == b',') {
        let media = item
            .split(|&b| b == b';')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        let is = |name: &str| media.eq_ignore_ascii_case(name.as_bytes());
        if is("*/*") {
            a.json = true;
            a.sse = true;
        } else if is("application/json") || is("application/*") {
            a.json = true;
        } else if is("text/event-stream") || is("text/*") {
            a.sse = true;
        }
    }
    a
}

fn error_status(status: StatusCode, message: impl Into<String>) -> Response<HttpBody> {
    body::http_error(status, TRANSPORT_ERROR, message)
}

/// The session or event store failed (Redis unreachable, say): the client may retry.
fn store_unavailable() -> Response<HttpBody> {
    let mut r = error_status(
        StatusCode::SERVICE_UNAVAILABLE,
        "Service Unavailable: the session store is unavailable",
    );
    r.headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

fn method_not_allowed(allow: &'static str) -> Response<HttpBody> {
    let mut r = error_status(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed");
    r.headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    r
}

fn session_not_found() -> Response<HttpBody> {
    body::http_error(
        StatusCode::NOT_FOUND,
        SESSION_NOT_FOUND,
        "Session not found",
    )
}

fn new_session_id() -> Option<String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).ok()?;
    Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

fn header_size(parts: &Parts) -> usize {
    parts
        .headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum::<usize>()
        + parts.uri.scheme_str().map_or(0, |s| s.len() + 3)
        + parts.uri.authority().map_or(0, |a| a.as_str().len())
        + parts.uri.path_and_query().map_or(1, |p| p.as_str().len())
}

/// Reads a body up to the configured size, within the configured time: a body still
/// incomplete at [`request_body_timeout`] is answered with 408 (on HTTP/1.1 with
/// `Connection: close`: the rest of the body is never read).
///
/// [`request_body_timeout`]: HttpServerConfig::request_body_timeout
async fn read_body_within<B>(
    parts: &Parts,
    body: B,
    config: &HttpServerConfig,
) -> Result<Bytes, Response<HttpBody>>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let mut read = std::pin::pin!(read_body(parts, body, config.max_body_size));
    let Some(limit) = config.request_body_timeout else {
        return read.await;
    };
    // A body that has arrived with its headers (most do) is read without arming a timer.
    let first = std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await;
    if let Poll::Ready(read) = first {
        return read;
    }
    match tokio::time::timeout(limit, read).await {
        Ok(read) => read,
        Err(_) => {
            tracing::debug!(?limit, "request body incomplete in time: answering 408");
            let mut r = error_status(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} ms",
                    limit.as_millis()
                ),
            );
            if parts.version < http::Version::HTTP_2 {
                r.headers_mut()
                    .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
            }
            Err(r)
        }
    }
}

/// Reads a body up to `limit` bytes.
async fn read_body<B>(parts: &Parts, body: B, limit: usize) -> Result<Bytes, Response<HttpBody>>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let too_large = || {
        error_status(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body exceeds {limit} bytes"),
        )
    };
    let declared = parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let mut body = std::pin::pin!(Limited::new(body, limit));
    // A small body usually arrives as one frame, with the end of the stream known from its
    // length: that frame is the body, with no buffer list to gather it in.
    let first = match body.frame().await {
        None => return Ok(Bytes::new()),
        Some(Ok(frame)) => frame,
        Some(Err(e)) => return Err(body_error(&e, too_large)),
    };
    let first = match first.into_data() {
        Ok(mut data) => data.copy_to_bytes(data.remaining()),
        // Trailers: nothing of the body.
        Err(_) => Bytes::new(),
    };
    if body.is_end_stream() {
        return Ok(first);
    }
    let mut whole = BytesMut::from(first);
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Ok(data) = frame.into_data() {
                    whole.put(data);
                }
            }
            Err(e) => return Err(body_error(&e, too_large)),
        }
    }
    Ok(whole.freeze())
}

/// The answer to a body that could not be read.
fn body_error(e: &BoxError, too_large: impl Fn() -> Response<HttpBody>) -> Response<HttpBody> {
    if e.downcast_ref::<LengthLimitError>().is_some() {
        return too_large();
    }
    error_status(
        StatusCode::BAD_REQUEST,
        format!("could not read the request body: {e}"),
    )
}

/// The `MCP-Protocol-Version` header, when it is there and readable.
fn version_header(parts: &Parts) -> Option<&str> {
    header(&parts.headers, &PROTOCOL_VERSION).ok().flatten()
}

/// The answer to a batch on session traffic of `revision` (the negotiated one, else the
/// header's; neither means the revision from before the header) when that revision has no
/// batches ([`body::batch_refused`]). From 2025-06-18 on a POST's body must be a single message.
fn refuse_batch(revision: Option<&str>) -> Option<Response<HttpBody>> {
    let allowed = match revision {
        Some(revision) => wire::batches_allowed_in(revision),
        None => wire::batches_allowed(wire::HTTP_VERSION_WITHOUT_HEADER),
    };
    (!allowed).then(body::batch_refused)
}

/// The messages of a POST, and the answers to its invalid batch elements.
struct Posting {
    messages: Vec<Message>,
    batch: bool,
    answers: Vec<Message>,
}

/// The messages of a POST: its body read within the configured limits, parsed, and each
/// message authorized for the grant.
async fn read_posting<B>(
    parts: &Parts,
    body: B,
    config: &HttpServerConfig,
    granted: Option<&Granted>,
) -> Result<Posting, Response<HttpBody>>
where
    B: Body + Send,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let bytes = read_body_within(parts, body, config).await?;
    let posting = parse_post(&bytes, config.max_batch_len)?;
    if let Some(g) = granted {
        g.authorize(&posting.messages)?;
    }
    Ok(posting)
}

fn parse_post(bytes: &[u8], max_batch: usize) -> Result<Posting, Response<HttpBody>> {
    match Inbound::from_slice(bytes, max_batch) {
        Ok(Inbound::Single(m)) => Ok(Posting {
            messages: vec![m],
            batch: false,
            answers: Vec::new(),
        }),
        Ok(Inbound::Batch(items)) => {
            let mut p = Posting {
                messages: Vec::new(),
                batch: true,
                answers: Vec::new(),
            };
            for item in items {
                match item {
                    Ok(m) => p.messages.push(m),
                    Err(invalid) => {
                        if let Some(r) = invalid.to_response() {
                            p.answers.push(Message::Response(r));
                        }
                    }
                }
            }
            Ok(p)
        }
        Err(e) => {
            let error = e.error_object();
            let id = e.to_response().and_then(|r| r.id);
            Err(body::rpc_error(StatusCode::BAD_REQUEST, id, error))
        }
    }
}

/// Which endpoint a request is for.
#[derive(Clone, Copy)]
enum Route {
    /// The 2024-11-05 SSE stream.
    LegacySse,
    /// The 2024-11-05 message endpoint.
    LegacyMessages,
    /// The Streamable HTTP endpoint.
    Mcp,
}

/// The answer when the connection behind a POST is gone.
fn gone(shared: bool) -> Response<HttpBody> {
    if shared {
        error_status(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server connection closed",
        )
    } else {
        session_not_found()
    }
}

/// The answer to a POST the hub refused.
fn post_error(e: PostError, shared: bool) -> Response<HttpBody> {
    match e {
        PostError::DuplicateId(id) => body::rpc_error(
            StatusCode::BAD_REQUEST,
            Some(id),
            ErrorObject::invalid_request("a request with this id is already in flight"),
        ),
        PostError::Busy => error_status(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many requests in flight",
        ),
        PostError::Closed => gone(shared),
    }
}

/// The inlet and the request of a POST to serve in its own task: one request (not
/// `initialize`, not in a batch) on a session whose engine runs. Anything else is given back,
/// for the connection.
fn direct_session_request(
    hub: &Hub,
    mut posting: Posting,
) -> Result<(&mcp_jsonrpc::Inlet, mcp_jsonrpc::Request, Posting), Posting> {
    let inlet = match (&hub.kind, posting.messages.as_slice(), hub.inlet()) {
        (HubKind::Session { .. }, [Message::Request(r)], Some(inlet))
            if !posting.batch && r.method != "initialize" =>
        {
            inlet
        }
        _ => return Err(posting),
    };
    match posting.messages.pop() {
        Some(Message::Request(request)) => Ok((inlet, request, posting)),
        // Checked above.
        other => {
            posting.messages.extend(other);
            Err(posting)
        }
    }
}

/// The `Mcp-Session-Id` of a GET or DELETE: a missing one is 400, an unreadable one 404.
fn required_session_id(parts: &Parts) -> Result<String, Response<HttpBody>> {
    match header(&parts.headers, &SESSION_ID) {
        Ok(Some(s)) => Ok(s.to_owned()),
        Ok(None) => Err(error_status(
            StatusCode::BAD_REQUEST,
            "Bad Request: Mcp-Session-Id header is required",
        )),
        Err(()) => Err(session_not_found()),
    }
}

/// The identity of a granted request, if any.
fn identity(granted: Option<&Granted>) -> Option<&str> {
    granted.map(Granted::identity)
}

/// The extensions every message of a request starts from: the principal, when authenticated.
fn base_extensions(granted: Option<&Granted>) -> Extensions {
    granted.map(Granted::extensions).unwrap_or_default()
}

/// What the transport attaches to a POST's requests, inserted as one extension group: the
/// HTTP request's parts, and the session, the stream control, the parameter headers or a
/// stateless request's lifted params when there are any.
struct PostValues {
    parts: Parts,
    session: Option<SessionId>,
    params: Option<McpParamHeaders>,
    control: Option<SseStreamControl>,
}

impl ExtensionGroup for PostValues {
    fn member(&self, id: TypeId) -> Option<&(dyn Any + Send + Sync)> {
        fn some<T: Any + Send + Sync>(value: Option<&T>) -> Option<&(dyn Any + Send + Sync)> {
            value.map(|v| v as &(dyn Any + Send + Sync))
        }
        if id == TypeId::of::<Parts>() {
            Some(&self.parts)
        } else if id == TypeId::of::<SessionId>() {
            some(self.session.as_ref())
        } else if id == TypeId::of::<McpParamHeaders>() {
            some(self.params.as_ref())
        } else if id == TypeId::of::<SseStreamControl>() {
            some(self.control.as_ref())
        } else {
            None
        }
    }
}

/// How a POST is answered (through a hub or directly).
pub(super) struct Dispatch {
    /// The client accepts `text/event-stream` and the service may use it.
    pub(super) sse_allowed: bool,
    /// Always answer with an SSE stream.
    pub(super) force_sse: bool,
    /// Map the JSON-RPC error code of a JSON answer to the HTTP status (stateless requests).
    map_status: bool,
}

impl StreamableHttpService {
    /// Starts building a service around the function that serves one connection, typically
    /// `move |conn| server.clone().serve(conn)`.
    pub fn builder<F, Fut>(serve: F) -> StreamableHttpServiceBuilder
    where
        F: Fn(Connection) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        StreamableHttpServiceBuilder {
            serve: Arc::new(move |c| Box::pin(serve(c))),
            config: HttpServerConfig::default(),
            event_store: Some(Arc::new(InMemoryEventStore::default())),
            session_store: Arc::new(InMemorySessionStore::default()),
            bus: None,
            auth: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &HttpServerConfig {
        &self.inner.config
    }

    /// The number of live sessions (Streamable HTTP and 2024-11-05 SSE).
    pub fn session_count(&self) -> usize {
        self.inner
            .lock_sessions()
            .values()
            .filter(|h| !h.is_closed())
            .count()
    }

    /// Starts a graceful shutdown: new requests get 503, standalone and 2024-11-05 streams
    /// close; requests in flight keep their streams until they are answered.
    pub fn begin_shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::Release);
        let hubs: Vec<_> = self.inner.lock_sessions().values().cloned().collect();
        for hub in hubs {
            match hub.kind {
                HubKind::Legacy { .. } => hub.close(),
                _ => hub.close_standalone(),
            }
        }
    }

    /// Ends every session and the shared connection: their servers see the inbound stream end
    /// and every stream closes.
    pub fn close_all(&self) {
        let hubs: Vec<_> = self.inner.lock_sessions().drain().map(|(_, h)| h).collect();
        for hub in hubs {
            // A shared store's sessions outlive this replica: another one takes them over.
            self.inner.forget(&hub, !self.inner.shared_store);
        }
        if let Some(shared) = self.inner.lock_shared().take() {
            shared.close();
        }
    }

    /// Answers one HTTP request.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<HttpBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        self.handle_on(request, None).await
    }

    /// [`handle`](Self::handle) for a request of a connection that keeps a
    /// [`ConnectionCache`] (the listener's connections do).
    pub(crate) async fn handle_on<B>(
        &self,
        request: Request<B>,
        cache: Option<&ConnectionCache>,
    ) -> Response<HttpBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let (mut parts, body) = request.into_parts();
        let inner = &self.inner;
        let config = &inner.config;
        if inner.shutting_down.load(Ordering::Acquire) {
            return error_status(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is shutting down",
            );
        }
        if header_size(&parts) > config.max_header_size {
            return error_status(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "request headers are too large",
            );
        }
        if let Err(reason) = security::check(config, &parts) {
            tracing::warn!(%reason, "request refused by the Host/Origin check");
            return error_status(StatusCode::FORBIDDEN, format!("Forbidden: {reason}"));
        }
        if let Some(response) = inner.auth.as_ref().and_then(|a| a.public_response(&parts)) {
            return response;
        }
        let path = parts.uri.path();
        let route = match &config.legacy_sse {
            Some(legacy) if path == legacy.sse => Route::LegacySse,
            Some(legacy)
                if path == legacy.messages.split('?').next().unwrap_or_default()
                    || legacy
                        .messages
                        .split_once("://")
                        .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
                        .is_some_and(|p| p == path) =>
            {
                Route::LegacyMessages
            }
            _ if config.path.as_deref().is_some_and(|p| p != path) => {
                return error_status(StatusCode::NOT_FOUND, "Not found");
            }
            _ => Route::Mcp,
        };
        let granted = match &inner.auth {
            Some(auth) => match auth.authenticate(&mut parts).await {
                Ok(g) => Some(g),
                Err(response) => return response,
            },
            None => None,
        };
        match (route, parts.method.clone()) {
            (Route::LegacySse, Method::GET) => inner.legacy_open(&parts, granted.as_ref()),
            (Route::LegacySse, _) => method_not_allowed("GET"),
            // Boxed, as the rarer paths below: held in place, their futures would make every
            // POST's future larger (hyper moves it per request).
            (Route::LegacyMessages, Method::POST) => {
                Box::pin(inner.legacy_post(parts, body, granted)).await
            }
            (Route::LegacyMessages, _) => method_not_allowed("POST"),
            (Route::Mcp, Method::POST) => inner.post(parts, body, granted, cache).await,
            (Route::Mcp, Method::GET) => Box::pin(inner.get(parts, granted.as_ref())).await,
            (Route::Mcp, Method::DELETE) => Box::pin(inner.delete(&parts, granted.as_ref())).await,
            (Route::Mcp, _) => method_not_allowed("GET, POST, DELETE"),
        }
    }
}

/// What one connection keeps between its requests: the session its last request used, so
/// the next request on that session skips the sessions map (its lock and a count of the
/// session's references, both shared by every connection).
#[derive(Default)]
pub(crate) struct ConnectionCache {
    last: Mutex<Option<CachedSession>>,
}

impl ConnectionCache {
    /// The cached session if it is `id` (anything else cached is dropped: the request's own
    /// session replaces it when the request is done).
    fn take(&self, id: &str) -> Option<CachedSession> {
        let cached = self
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        (*cached.id == *id).then_some(cached)
    }

    /// Keeps `session` for the connection's next request (a closed one is not kept). A request
    /// that ends early (its POST abandoned) gives nothing back: the next one looks it up.
    fn put(&self, session: CachedSession) {
        if !session.hub.is_closed() {
            *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(session);
        }
    }
}

/// A session hub and its id, as a connection's cache keeps them.
pub(crate) struct CachedSession {
    id: Box<str>,
    hub: Arc<Hub>,
}

impl Inner {
    fn lock_sessions(&self) -> RwLockWriteGuard<'_, Sessions> {
        self.sessions
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_shared(&self) -> MutexGuard<'_, Option<Arc<Hub>>> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn spawn_server(&self, connection: Connection) {
        tokio::spawn((self.serve)(connection));
    }

    /// Closes a hub and, with `stored`, forgets its stored state.
    fn forget(&self, hub: &Arc<Hub>, stored: bool) {
        hub.close();
        if !stored {
            return;
        }
        if let Some(id) = hub.session_id().map(str::to_owned) {
            let events = self.event_store.clone();
            let sessions = self.session_store.clone();
            tokio::spawn(async move {
                if let Some(events) = events {
                    if let Err(e) = events.remove_session(&id).await {
                        tracing::warn!(error = %e, "could not remove a session's events");
                    }
                }
                if let Err(e) = sessions.remove(&id).await {
                    tracing::warn!(error = %e, "could not remove a session record");
                }
            });
        }
    }

    /// The live session `id`, if `identity` may use it. A session of another identity is
    /// reported as absent: the specification's session-hijacking mitigation keys sessions by
    /// `<user_id>:<session_id>`, under which another user's session id finds nothing (`404`).
    fn session(&self, id: &str, identity: Option<&str>) -> Option<Arc<Hub>> {
        let hub = self
            .sessions
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)?
            .clone();
        if hub.is_closed() {
            let mut sessions = self.lock_sessions();
            // Still the closed one (not a session opened since under the same id).
            if sessions.get(id).is_some_and(|h| Arc::ptr_eq(h, &hub)) {
                sessions.remove(id);
            }
            return None;
        }
        if !hub.owned_by(identity) {
            tracing::warn!(session = %id, "a session id was used by another principal: refused");
            return None;
        }
        Some(hub)
    }

    /// [`session`](Self::session), taken from the connection's cache when its last request
    /// used the same session (the caller gives it back, see [`ConnectionCache::put`]).
    fn session_on(
        &self,
        id: &str,
        identity: Option<&str>,
        cache: Option<&ConnectionCache>,
    ) -> Option<CachedSession> {
        if let Some(cached) = cache.and_then(|c| c.take(id)) {
            if !cached.hub.is_closed() && cached.hub.owned_by(identity) {
                return Some(cached);
            }
        }
        let hub = self.session(id, identity)?;
        Some(CachedSession { id: id.into(), hub })
    }

    /// Records a session whose `initialize` succeeded, with its negotiated revision and (for a
    /// shared store) the client's `initialize` params. Awaited before the answer goes out: the
    /// client's next request may reach another replica, which must find the record.
    async fn record_session(
        &self,
        hub: &Hub,
        sid: &str,
        initialize: Option<String>,
    ) -> Result<(), Response<HttpBody>> {
        let record = SessionRecord {
            id: sid.to_owned(),
            protocol_version: hub.protocol_version(),
            created_at: SystemTime::now(),
            owner: hub.owner().map(str::to_owned),
            initialize,
        };
        if !self.shared_store {
            // The in-memory registry: nothing to wait for, nothing another replica reads.
            let store = self.session_store.clone();
            tokio::spawn(async move {
                if let Err(e) = store.create(record).await {
                    tracing::warn!(error = %e, "could not record a session");
                }
            });
            return Ok(());
        }
        self.session_store.create(record).await.map_err(|e| {
            tracing::warn!(error = %e, session = %sid, "could not record a session");
            store_unavailable()
        })
    }

    /// Tells a shared session store that the session is in use (at most once per
    /// `store_touch_interval`): 404 when the session ended through another replica or expired
    /// there (the local copy is closed), 503 when the store fails.
    async fn touch(&self, hub: &Arc<Hub>) -> Result<(), Response<HttpBody>> {
        if !self.shared_store || !hub.touch_due(self.config.store_touch_interval) {
            return Ok(());
        }
        let Some(id) = hub.session_id() else {
            return Ok(());
        };
        match self.session_store.touch(id).await {
            Ok(true) => Ok(()),
            Ok(false) => {
                tracing::debug!(session = %id, "session ended elsewhere: closing the local copy");
                {
                    let mut sessions = self.lock_sessions();
                    if sessions.get(id).is_some_and(|h| Arc::ptr_eq(h, hub)) {
                        sessions.remove(id);
                    }
                }
                self.forget(hub, false);
                Err(session_not_found())
            }
            Err(e) => {
                tracing::warn!(error = %e, session = %id, "session store unavailable");
                // Try again with the next request rather than an interval later.
                hub.touch_failed();
                Err(store_unavailable())
            }
        }
    }

    /// A session this replica does not hold, rebuilt from a shared store's record: a new
    /// connection under the same id whose server gets the client's `initialize` and
    /// `notifications/initialized` again. `None` when the store has no such session (or it
    /// belongs to another identity, or cannot be rebuilt); 503 when the store fails.
    async fn restore(
        self: &Arc<Self>,
        sid: &str,
        granted: Option<&Granted>,
        parts: &Parts,
    ) -> Result<Option<Arc<Hub>>, Response<HttpBody>> {
        if !self.shared_store || !self.config.stateful {
            return Ok(None);
        }
        let gate = {
            let mut restoring = self
                .restoring
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if restoring.len() >= self.config.max_sessions && !restoring.contains_key(sid) {
                return Err(error_status(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many sessions",
                ));
            }
            restoring.entry(sid.to_owned()).or_default().clone()
        };
        let restored = {
            let _one_at_a_time = gate.lock().await;
            match self.session(sid, identity(granted)) {
                Some(hub) => Ok(Some(hub)),
                None => self.restore_now(sid, granted, parts).await,
            }
        };
        {
            let mut restoring = self
                .restoring
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if restoring.get(sid).is_some_and(|g| Arc::ptr_eq(g, &gate)) {
                restoring.remove(sid);
            }
        }
        restored
    }

    async fn restore_now(
        self: &Arc<Self>,
        sid: &str,
        granted: Option<&Granted>,
        parts: &Parts,
    ) -> Result<Option<Arc<Hub>>, Response<HttpBody>> {
        let record = match self.session_store.load(sid).await {
            Ok(Some(record)) => record,
            Ok(None) => return Ok(None),
            Err(e) => {
                tracing::warn!(error = %e, session = %sid, "session store unavailable");
                return Err(store_unavailable());
            }
        };
        if record.owner.as_deref() != identity(granted) {
            tracing::warn!(session = %sid, "a session id was used by another principal: refused");
            return Ok(None);
        }
        let Some(params) = record
            .initialize
            .and_then(|p| serde_json::value::RawValue::from_string(p).ok())
        else {
            tracing::debug!(session = %sid, "a stored session without its initialize params");
            return Ok(None);
        };
        let kind = HubKind::Session {
            id: sid.to_owned(),
            store: self.event_store.clone(),
        };
        let (hub, connection) = self.register_hub(sid.to_owned(), kind, record.owner)?;
        // Stream ids above every id an earlier replica of the session gave out (those count
        // from 1): microseconds since the epoch.
        let base = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX / 2))
            .unwrap_or(1);
        hub.start_ids_at(base);
        self.spawn_server(connection);
        self.ensure_reaper();
        let drop_hub = |inner: &Self| {
            {
                let mut sessions = inner.lock_sessions();
                if sessions.get(sid).is_some_and(|h| Arc::ptr_eq(h, &hub)) {
                    sessions.remove(sid);
                }
            }
            inner.forget(&hub, false);
        };
        let mut base = base_extensions(granted);
        base.insert(SessionId(sid.to_owned()));
        base.insert(parts.clone());
        let request = mcp_jsonrpc::Request::new(
            mcp_jsonrpc::Id::String("mcp-session-restore".to_owned()),
            "initialize",
            Some(params),
        );
        let posted = hub
            .post(
                vec![Message::Request(request)],
                false,
                Vec::new(),
                base.clone(),
                false,
                false,
            )
            .await;
        let answered = match posted {
            Ok(Posted::Pending { decision, guard }) => {
                let answer = tokio::time::timeout(self.config.shutdown_timeout, decision).await;
                guard.disarm();
                matches!(answer, Ok(Ok(Decision::Json(_, None))))
            }
            _ => false,
        };
        if !answered {
            tracing::warn!(session = %sid, "a stored session could not be rebuilt");
            drop_hub(self);
            return Ok(None);
        }
        let initialized = mcp_jsonrpc::Notification::new("notifications/initialized", None);
        if hub
            .post(
                vec![Message::Notification(initialized)],
                false,
                Vec::new(),
                base,
                false,
                false,
            )
            .await
            .is_err()
        {
            drop_hub(self);
            return Ok(None);
        }
        tracing::debug!(session = %sid, "session rebuilt from the shared store");
        Ok(Some(hub))
    }

    /// DELETE of a session this replica does not hold, with a shared store: its record and
    /// events go (the replicas holding it notice on their next touch).
    async fn delete_stored(&self, sid: &str, identity: Option<&str>) -> Response<HttpBody> {
        match self.session_store.load(sid).await {
            Ok(Some(record)) if record.owner.as_deref() == identity => {}
            Ok(_) => return session_not_found(),
            Err(e) => {
                tracing::warn!(error = %e, session = %sid, "session store unavailable");
                return store_unavailable();
            }
        }
        self.remove_stored(sid).await
    }

    /// Removes a session's record and events from the stores (200), or 503.
    async fn remove_stored(&self, sid: &str) -> Response<HttpBody> {
        if let Err(e) = self.session_store.remove(sid).await {
            tracing::warn!(error = %e, session = %sid, "session store unavailable");
            return store_unavailable();
        }
        if let Some(events) = &self.event_store {
            if let Err(e) = events.remove_session(sid).await {
                tracing::warn!(error = %e, "could not remove a session's events");
            }
        }
        tracing::debug!(session = %sid, "stored session deleted by the client");
        body::empty(StatusCode::OK)
    }

    /// With a message bus: a POST of answers to server-to-client requests this replica did not
    /// send is published for the replica that did (202), or 503 when the bus fails. `None`: the
    /// POST is served here.
    async fn forward_answers(
        &self,
        hub: &Hub,
        sid: &str,
        posting: &Posting,
    ) -> Option<Response<HttpBody>> {
        let bus = self.bus.as_ref()?;
        let all_elsewhere = !posting.messages.is_empty()
            && posting.messages.iter().all(|m| match m {
                Message::Response(mcp_jsonrpc::Response { id: Some(id), .. }) => !hub.awaits(id),
                _ => false,
            });
        if !all_elsewhere {
            return None;
        }
        for message in &posting.messages {
            let bytes = body::message_bytes(message);
            if let Err(e) = bus.publish(sid, bytes).await {
                tracing::warn!(error = %e, session = %sid, "message bus unavailable");
                return Some(store_unavailable());
            }
        }
        tracing::debug!(session = %sid, "answers forwarded to the replica that asked");
        Some(body::empty(StatusCode::ACCEPTED))
    }

    /// A message another replica published: handed to the session when this replica holds it
    /// and its server waits for that answer.
    fn deliver_forwarded(&self, session: &str, bytes: &[u8]) {
        let Some(hub) = self
            .sessions
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session)
            .cloned()
        else {
            return;
        };
        let Ok(message) = Message::from_slice(bytes) else {
            tracing::warn!(session, "a malformed message on the bus: dropped");
            return;
        };
        match &message {
            Message::Response(mcp_jsonrpc::Response { id: Some(id), .. }) if hub.awaits(id) => {}
            _ => return,
        }
        tokio::spawn(async move {
            let posted = hub
                .post(
                    vec![message],
                    false,
                    Vec::new(),
                    Extensions::default(),
                    false,
                    false,
                )
                .await;
            if posted.is_err() {
                tracing::debug!("a forwarded answer found its session closed");
            }
        });
    }

    /// Registers a hub of `kind` under the session id `id`, or answers 503 at the session
    /// limit (sessions already closed are dropped first).
    fn register_hub(
        &self,
        id: String,
        kind: HubKind,
        owner: Option<String>,
    ) -> Result<(Arc<Hub>, Connection), Response<HttpBody>> {
        let mut sessions = self.lock_sessions();
        if sessions.len() >= self.config.max_sessions {
            sessions.retain(|_, h| !h.is_closed());
        }
        if sessions.len() >= self.config.max_sessions {
            tracing::warn!(limit = self.config.max_sessions, "session limit reached");
            return Err(error_status(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many sessions",
            ));
        }
        let (hub, connection) = Hub::new(kind, self.config.clone(), owner);
        sessions.insert(id, hub.clone());
        Ok((hub, connection))
    }

    /// Registers a new session hub, or answers 503 at the session limit.
    fn create_session(
        self: &Arc<Self>,
        make: impl FnOnce(String) -> HubKind,
        owner: Option<&str>,
    ) -> Result<Arc<Hub>, Response<HttpBody>> {
        let Some(id) = new_session_id() else {
            return Err(error_status(
                StatusCode::INTERNAL_SERVER_ERROR,
                "no randomness for a session id",
            ));
        };
        let (hub, connection) =
            self.register_hub(id.clone(), make(id.clone()), owner.map(str::to_owned))?;
        self.spawn_server(connection);
        self.ensure_reaper();
        if matches!(hub.kind, HubKind::Legacy { .. }) {
            // A Streamable HTTP session is recorded once its `initialize` succeeded (see
            // `record_session`); a 2024-11-05 one, bound to its stream, right away.
            let store = self.session_store.clone();
            let owner = owner.map(str::to_owned);
            tokio::spawn(async move {
                let record = SessionRecord {
                    id,
                    protocol_version: None,
                    created_at: SystemTime::now(),
                    owner,
                    initialize: None,
                };
                if let Err(e) = store.create(record).await {
                    tracing::warn!(error = %e, "could not record a session");
                }
            });
        }
        Ok(hub)
    }

    fn shared_hub(&self) -> Arc<Hub> {
        let mut shared = self.lock_shared();
        if let Some(hub) = shared.as_ref().filter(|h| !h.is_closed()) {
            return hub.clone();
        }
        let (hub, connection) = Hub::new(HubKind::Shared, self.config.clone(), None);
        *shared = Some(hub.clone());
        drop(shared);
        self.spawn_server(connection);
        hub
    }

    fn ensure_reaper(self: &Arc<Self>) {
        let Some(idle) = self.config.session_idle_timeout else {
            return;
        };
        if self.reaper.swap(true, Ordering::SeqCst) {
            return;
        }
        let period = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        let weak: Weak<Inner> = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let Some(inner) = weak.upgrade() else { break };
                let expired: Vec<Arc<Hub>> = {
                    let mut sessions = inner.lock_sessions();
                    let ids: Vec<String> = sessions
                        .iter()
                        .filter(|(_, h)| h.is_closed() || h.idle_for(idle))
                        .map(|(id, _)| id.clone())
                        .collect();
                    ids.iter().filter_map(|id| sessions.remove(id)).collect()
                };
                for hub in expired {
                    if !hub.is_closed() {
                        tracing::info!(session = ?hub.session_id(), "session expired");
                    }
                    // A shared record has its own time to live, kept by every replica's use.
                    inner.forget(&hub, !inner.shared_store);
                }
            }
        });
    }

    /// Checks `MCP-Protocol-Version` on session traffic: 400 on an unsupported value.
    fn check_session_version(&self, parts: &Parts) -> Result<(), Response<HttpBody>> {
        match header(&parts.headers, &PROTOCOL_VERSION) {
            Ok(None) => Ok(()),
            Ok(Some(v)) if self.config.session_versions.iter().any(|s| s == v) => Ok(()),
            Ok(Some(v)) => Err(error_status(
                StatusCode::BAD_REQUEST,
                format!(
                    "Bad Request: unsupported MCP-Protocol-Version {v:?} (supported: {})",
                    self.config.session_versions.join(", ")
                ),
            )),
            Err(()) => Err(error_status(
                StatusCode::BAD_REQUEST,
                "Bad Request: MCP-Protocol-Version is not ASCII",
            )),
        }
    }

    async fn post<B>(
        self: &Arc<Self>,
        parts: Parts,
        body: B,
        granted: Option<Granted>,
        cache: Option<&ConnectionCache>,
    ) -> Response<HttpBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        if let Some(ct) = parts.headers.get(CONTENT_TYPE) {
            let media = ct
                .to_str()
                .unwrap_or("")
                .split(';')
                .next()
                .unwrap_or("")
                .trim();
            if !media.eq_ignore_ascii_case("application/json") {
                return error_status(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "Unsupported Media Type: the body must be application/json",
                );
            }
        }
        let accept = accepts(&parts);
        if !accept.json && !accept.sse {
            return error_status(
                StatusCode::NOT_ACCEPTABLE,
                "Not Acceptable: accept application/json and text/event-stream",
            );
        }
        let posting = match read_posting(&parts, body, &self.config, granted.as_ref()).await {
            Ok(p) => p,
            Err(r) => return r,
        };
        let granted = granted.as_ref();
        let mode = self.config.response_mode;
        let dispatch = |map_status| Dispatch {
            sse_allowed: accept.sse && mode != ResponseMode::Json,
            force_sse: mode == ResponseMode::Sse,
            map_status,
        };
        let session_header = match header(&parts.headers, &SESSION_ID) {
            Ok(v) => v.map(str::to_owned),
            Err(()) => return session_not_found(),
        };
        if let Some(sid) = session_header {
            if !self.config.stateful {
                return error_status(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: this server does not use sessions",
                );
            }
            let session = match self.session_on(&sid, identity(granted), cache) {
                Some(s) if matches!(s.hub.kind, HubKind::Session { .. }) => s,
                Some(_) => return session_not_found(),
                // Boxed, as every path that only a shared store takes: held in place, their
                // futures would make every POST's future larger.
                None => match Box::pin(self.restore(&sid, granted, &parts)).await {
                    Ok(Some(hub)) => CachedSession {
                        id: sid.as_str().into(),
                        hub,
                    },
                    Ok(None) => return session_not_found(),
                    Err(r) => return r,
                },
            };
            let hub = &session.hub;
            if self.shared_store {
                if let Err(r) = Box::pin(self.touch(hub)).await {
                    return r;
                }
            }
            if self.bus.is_some() {
                if let Some(r) = Box::pin(self.forward_answers(hub, &sid, &posting)).await {
                    return r;
                }
            }
            if let Err(r) = self.check_session_version(&parts) {
                return r;
            }
            if posting.batch {
                let negotiated = hub.protocol_version();
                if let Some(r) = refuse_batch(negotiated.as_deref().or(version_header(&parts))) {
                    return r;
                }
            }
            // One allocation for the values every request of the POST carries. A lone request's
            // stream control is in it too (a request routed through the hub gets its own).
            let control = match posting.messages.as_slice() {
                [Message::Request(r)] if !posting.batch => Some(SseStreamControl {
                    hub: Arc::downgrade(hub),
                    request: r.id.clone(),
                }),
                _ => None,
            };
            let mut base = base_extensions(granted);
            base.insert_group(PostValues {
                session: Some(SessionId(sid)),
                params: None,
                control,
                parts,
            });
            let answer = self.dispatch(hub, posting, base, dispatch(false)).await.0;
            if let Some(cache) = cache {
                cache.put(session);
            }
            return answer;
        }
        let single = match posting.messages.as_slice() {
            [m] if !posting.batch => Some(m),
            _ => None,
        };
        if let Some(checked) = stateless::check_post(&self.config, &parts, single) {
            let (message, checked) = match checked {
                Ok(c) => c,
                Err(r) => return r,
            };
            let hub = self.shared_hub();
            let mut base = base_extensions(granted);
            base.insert_group(PostValues {
                session: None,
                params: Some(checked.params),
                control: None,
                parts,
            });
            if let (Some(inlet), Message::Request(_)) = (hub.inlet(), message) {
                let mut posting = posting;
                let Some(Message::Request(request)) = posting.messages.pop() else {
                    return error_status(StatusCode::INTERNAL_SERVER_ERROR, "no request");
                };
                let served = self
                    .direct
                    .serve(
                        &self.config,
                        hub.closed(),
                        inlet,
                        request,
                        base,
                        &dispatch(true),
                    )
                    .await;
                return match served {
                    Ok(response) => response,
                    // Every permit of the engine is taken: the connection queues it.
                    Err(direct::Refused::Queue(request, base)) => {
                        posting.messages.push(Message::Request(request));
                        self.dispatch(&hub, posting, base, dispatch(true)).await.0
                    }
                    Err(refused) => direct::refused(refused),
                };
            }
            return self.dispatch(&hub, posting, base, dispatch(true)).await.0;
        }
        let is_initialize = matches!(single, Some(Message::Request(r)) if r.method == "initialize");
        // Kept for the session record: another replica rebuilds the session from them.
        let init_params = match single {
            Some(Message::Request(r)) if is_initialize && self.shared_store => {
                r.params.as_ref().map(|p| p.get().to_owned())
            }
            _ => None,
        };
        if !self.config.stateful {
            if let Err(r) = self.check_session_version(&parts) {
                return r;
            }
            if posting.batch {
                if let Some(r) = refuse_batch(version_header(&parts)) {
                    return r;
                }
            }
            let hub = self.shared_hub();
            let mut base = base_extensions(granted);
            base.insert(parts);
            return self.dispatch(&hub, posting, base, dispatch(false)).await.0;
        }
        if !is_initialize {
            return error_status(
                StatusCode::BAD_REQUEST,
                "Bad Request: Mcp-Session-Id header is required",
            );
        }
        if let Err(r) = self.check_session_version(&parts) {
            return r;
        }
        let hub = match self.create_session(
            |id| HubKind::Session {
                id,
                store: self.event_store.clone(),
            },
            identity(granted),
        ) {
            Ok(h) => h,
            Err(r) => return r,
        };
        let Some(sid) = hub.session_id().map(str::to_owned) else {
            return error_status(StatusCode::INTERNAL_SERVER_ERROR, "session without id");
        };
        let mut base = base_extensions(granted);
        base.insert(SessionId(sid.clone()));
        base.insert(parts);
        let (mut response, failed) = self.dispatch(&hub, posting, base, dispatch(false)).await;
        if failed || !response.status().is_success() {
            tracing::debug!(session = %sid, "initialize failed: dropping the session");
            self.lock_sessions().remove(&sid);
            self.forget(&hub, true);
            return response;
        }
        if let Err(r) = Box::pin(self.record_session(&hub, &sid, init_params)).await {
            self.lock_sessions().remove(&sid);
            self.forget(&hub, false);
            return r;
        }
        if let Ok(v) = HeaderValue::from_str(&sid) {
            response.headers_mut().insert(SESSION_ID, v);
        }
        response
    }

    /// Hands a POST to a hub and waits for the way its answer goes; the flag says whether a
    /// JSON answer was a single error response.
    async fn dispatch(
        &self,
        hub: &Arc<Hub>,
        posting: Posting,
        base: Extensions,
        how: Dispatch,
    ) -> (Response<HttpBody>, bool) {
        let busy = hub.busy();
        let shared = matches!(hub.kind, HubKind::Shared);
        let has_requests = posting
            .messages
            .iter()
            .any(|m| matches!(m, Message::Request(_)));
        if has_requests && !shared && hub.open_streams() >= self.config.max_streams_per_session {
            return (
                error_status(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too many open streams on this session",
                ),
                true,
            );
        }
        let count = hub.stream_guard();
        let (posting, base) = match direct_session_request(hub, posting) {
            Ok((inlet, request, posting)) => {
                // A session's lone request: served in this task, through the session's engine.
                let served = match direct::serve_session(hub, inlet, request, base, &how) {
                    Ok(direct::SessionServed::Now(decided)) => Ok((decided, None)),
                    Ok(direct::SessionServed::Later(serving)) => serving.await,
                    // Every permit of the engine is taken: the connection queues it.
                    Ok(direct::SessionServed::Queue(request, base)) => {
                        let mut posting = posting;
                        posting.messages.push(Message::Request(request));
                        return Box::pin(self.post_to_hub(hub, posting, base, &how, (count, busy)))
                            .await;
                    }
                    Err(e) => Err(e),
                };
                return match served {
                    Ok((decided, guard)) => {
                        self.answer(hub, decided, guard, (count, busy), &how, shared)
                    }
                    Err(e) => (post_error(e, shared), true),
                };
            }
            Err(posting) => (posting, base),
        };
        Box::pin(self.post_to_hub(hub, posting, base, &how, (count, busy))).await
    }

    /// Hands a POST's messages to the hub's connection and waits for the way its answer goes.
    async fn post_to_hub(
        &self,
        hub: &Arc<Hub>,
        posting: Posting,
        base: Extensions,
        how: &Dispatch,
        keep: (StreamCount<&Hub>, BusyGuard<&Hub>),
    ) -> (Response<HttpBody>, bool) {
        let shared = matches!(hub.kind, HubKind::Shared);
        let answers = posting.answers;
        let posted = hub
            .post(
                posting.messages,
                posting.batch,
                answers.clone(),
                base,
                how.sse_allowed,
                how.force_sse,
            )
            .await;
        match posted {
            Err(e) => (post_error(e, shared), true),
            Ok(Posted::Accepted) if answers.is_empty() => {
                (body::empty(StatusCode::ACCEPTED), false)
            }
            Ok(Posted::Accepted) => {
                let bytes = serde_json::to_vec(&answers).unwrap_or_default();
                (body::json(StatusCode::OK, Bytes::from(bytes)), true)
            }
            Ok(Posted::Pending { decision, guard }) => {
                let closed = hub.closed().clone();
                let decided = tokio::select! {
                    d = decision => d.ok(),
                    () = closed.cancelled() => None,
                };
                self.answer(hub, decided, Some(guard), keep, how, shared)
            }
        }
    }

    /// The HTTP answer to a POST whose requests were decided (`None`: the connection is gone);
    /// an SSE answer keeps the slot's guard and the stream count alive.
    fn answer(
        &self,
        hub: &Arc<Hub>,
        decided: Option<Decision>,
        guard: Option<SlotGuard>,
        keep: (StreamCount<&Hub>, BusyGuard<&Hub>),
        how: &Dispatch,
        shared: bool,
    ) -> (Response<HttpBody>, bool) {
        match decided {
            Some(Decision::Json(bytes, code)) => {
                if let Some(guard) = guard {
                    guard.disarm();
                }
                let status = if how.map_status {
                    stateless::status_for(code)
                } else {
                    StatusCode::OK
                };
                (body::json(status, bytes), code.is_some())
            }
            Some(Decision::Sse { first, rx }) => {
                let keep = Box::new((guard, keep.0.held(hub), keep.1.held(hub)));
                let sse = SseBody::new(first, Some(rx), self.config.sse_keep_alive, Some(keep));
                (body::sse(sse), false)
            }
            None => (gone(shared), true),
        }
    }

    async fn get(self: &Arc<Self>, parts: Parts, granted: Option<&Granted>) -> Response<HttpBody> {
        if !self.config.stateful || !self.config.get_stream {
            return method_not_allowed("POST, DELETE");
        }
        if !accepts(&parts).sse {
            return error_status(
                StatusCode::NOT_ACCEPTABLE,
                "Not Acceptable: the GET stream is text/event-stream",
            );
        }
        let sid = match required_session_id(&parts) {
            Ok(sid) => sid,
            Err(r) => return r,
        };
        let hub = match self.session(&sid, identity(granted)) {
            Some(h) if matches!(h.kind, HubKind::Session { .. }) => h,
            Some(_) => return session_not_found(),
            None => match self.restore(&sid, granted, &parts).await {
                Ok(Some(hub)) => hub,
                Ok(None) => return session_not_found(),
                Err(r) => return r,
            },
        };
        if let Err(r) = self.touch(&hub).await {
            return r;
        }
        if let Err(r) = self.check_session_version(&parts) {
            return r;
        }
        if hub.open_streams() >= self.config.max_streams_per_session {
            return error_status(
                StatusCode::TOO_MANY_REQUESTS,
                "too many open streams on this session",
            );
        }
        let (key, after) = match header(&parts.headers, &LAST_EVENT_ID) {
            Ok(None) => (STANDALONE, None),
            Ok(Some(id)) => match Hub::parse_event_id(id) {
                Some((key, seq)) => (key, Some(seq)),
                None => {
                    return error_status(
                        StatusCode::BAD_REQUEST,
                        "Bad Request: unknown Last-Event-ID",
                    );
                }
            },
            Err(()) => {
                return error_status(StatusCode::BAD_REQUEST, "Bad Request: bad Last-Event-ID");
            }
        };
        let busy = hub.busy().held(&hub);
        let count = hub.stream_guard().held(&hub);
        let (tx, rx) = mpsc::channel(self.config.stream_buffer);
        match hub.attach(key, after, tx).await {
            Ok(attached) => {
                let guard = SlotGuard::for_stream(hub.clone(), key, attached.generation);
                let keep = Box::new((guard, count, busy));
                let sse = SseBody::new(
                    attached.first,
                    Some(rx),
                    self.config.sse_keep_alive,
                    Some(keep),
                );
                body::sse(sse)
            }
            Err(AttachError::Conflict) => error_status(
                StatusCode::CONFLICT,
                "Conflict: a GET stream is already open for this session",
            ),
            Err(AttachError::UnknownEvent) => error_status(
                StatusCode::BAD_REQUEST,
                "Bad Request: unknown Last-Event-ID",
            ),
            Err(AttachError::Store(e)) => {
                tracing::warn!(error = %e, "event replay failed");
                store_unavailable()
            }
            Err(AttachError::Closed) => session_not_found(),
        }
    }

    async fn delete(&self, parts: &Parts, granted: Option<&Granted>) -> Response<HttpBody> {
        if !self.config.stateful || !self.config.allow_delete {
            return method_not_allowed("GET, POST");
        }
        let sid = match required_session_id(parts) {
            Ok(sid) => sid,
            Err(r) => return r,
        };
        let hub = {
            let mut sessions = self.lock_sessions();
            match sessions.get(&sid) {
                Some(h)
                    if matches!(h.kind, HubKind::Session { .. })
                        && !h.is_closed()
                        && h.owned_by(identity(granted)) =>
                {
                    sessions.remove(&sid)
                }
                _ => None,
            }
        };
        match hub {
            Some(hub) if self.shared_store => {
                // Gone from the store before the answer: the next request, on any replica,
                // finds nothing.
                self.forget(&hub, false);
                self.remove_stored(&sid).await
            }
            Some(hub) => {
                tracing::debug!(session = %sid, "session deleted by the client");
                self.forget(&hub, true);
                body::empty(StatusCode::OK)
            }
            None if self.shared_store => self.delete_stored(&sid, identity(granted)).await,
            None => session_not_found(),
        }
    }

    fn legacy_open(
        self: &Arc<Self>,
        parts: &Parts,
        granted: Option<&Granted>,
    ) -> Response<HttpBody> {
        let Some(paths) = &self.config.legacy_sse else {
            return error_status(StatusCode::NOT_FOUND, "Not found");
        };
        if !accepts(parts).sse {
            return error_status(
                StatusCode::NOT_ACCEPTABLE,
                "Not Acceptable: text/event-stream",
            );
        }
        let hub = match self.create_session(|id| HubKind::Legacy { id }, identity(granted)) {
            Ok(h) => h,
            Err(r) => return r,
        };
        let Some(sid) = hub.session_id().map(str::to_owned) else {
            return error_status(StatusCode::INTERNAL_SERVER_ERROR, "session without id");
        };
        let (tx, rx) = mpsc::channel(self.config.stream_buffer);
        hub.attach_legacy(tx);
        let separator = if paths.messages.contains('?') {
            '&'
        } else {
            '?'
        };
        let endpoint = format!("{}{separator}sessionId={sid}", paths.messages);
        let first = vec![encode_event(
            None,
            Some("endpoint"),
            endpoint.as_bytes(),
            None,
        )];
        let busy = hub.busy().held(&hub);
        let count = hub.stream_guard().held(&hub);
        let guard = SlotGuard::for_stream(hub, STANDALONE, 0);
        let keep = Box::new((guard, count, busy));
        body::sse(SseBody::new(
            first,
            Some(rx),
            self.config.sse_keep_alive,
            Some(keep),
        ))
    }

    async fn legacy_post<B>(
        self: &Arc<Self>,
        parts: Parts,
        body: B,
        granted: Option<Granted>,
    ) -> Response<HttpBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let sid = parts.uri.query().and_then(|q| {
            q.split('&')
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| *k == "sessionId")
                .map(|(_, v)| v.to_owned())
        });
        let Some(sid) = sid else {
            return error_status(
                StatusCode::BAD_REQUEST,
                "Bad Request: sessionId is required",
            );
        };
        let hub = match self.session(&sid, identity(granted.as_ref())) {
            Some(h) if matches!(h.kind, HubKind::Legacy { .. }) => h,
            _ => return session_not_found(),
        };
        let posting = match read_posting(&parts, body, &self.config, granted.as_ref()).await {
            Ok(p) => p,
            Err(r) => return r,
        };
        let _busy = hub.busy();
        let mut base = base_extensions(granted.as_ref());
        base.insert(SessionId(sid));
        base.insert(parts);
        // Invalid batch elements are answered on the SSE stream, like everything else.
        let answers = posting.answers;
        match hub
            .post(
                posting.messages,
                posting.batch,
                Vec::new(),
                base,
                true,
                false,
            )
            .await
        {
            Ok(_) => {
                for a in answers {
                    hub.push_outbound(a);
                }
                let mut r = Response::new(HttpBody::full("Accepted"));
                *r.status_mut() = StatusCode::ACCEPTED;
                r
            }
            Err(_) => session_not_found(),
        }
    }
}

type ServiceFuture = Pin<Box<dyn Future<Output = Result<Response<HttpBody>, Infallible>> + Send>>;

impl<B> hyper::service::Service<Request<B>> for StreamableHttpService
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future = ServiceFuture;

    fn call(&self, request: Request<B>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(request).await) })
    }
}

impl<B> tower_service::Service<Request<B>> for StreamableHttpService
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future = ServiceFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(request).await) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(value: Option<&[u8]>) -> (bool, bool) {
        let mut request = http::Request::builder();
        if let Some(value) = value {
            let value = HeaderValue::from_bytes(value).expect("a header value");
            request = request.header(ACCEPT, value);
        }
        let (parts, ()) = request.body(()).expect("a request").into_parts();
        let a = accepts(&parts);
        (a.json, a.sse)
    }

    #[test]
    fn accept_lists_are_read_by_media_type() {
        assert_eq!(accepted(None), (true, true));
        assert_eq!(
            accepted(Some(b"application/json, text/event-stream")),
            (true, true)
        );
        assert_eq!(accepted(Some(b"application/json;q=0.9")), (true, false));
        assert_eq!(accepted(Some(b"TEXT/EVENT-STREAM")), (false, true));
        assert_eq!(accepted(Some(b"*/*")), (true, true));
        assert_eq!(
            accepted(Some(b"  application/*  ;q=1 ,\ttext/* ")),
            (true, true)
        );
        assert_eq!(
            accepted(Some(b"text/html, application/xml")),
            (false, false)
        );
        assert_eq!(accepted(Some(b"")), (false, false));
        // Not visible ASCII: nothing is accepted.
        assert_eq!(
            accepted(Some(b"application/json, text/event-stream, \xff")),
            (false, false)
        );
    }

    /// A body of the given frames (`Err` items fail the stream).
    fn framed_body(
        frames: Vec<Result<&'static str, &'static str>>,
    ) -> impl Body<Data = Bytes, Error = BoxError> + Send {
        let frames = frames.into_iter().map(|f| match f {
            Ok(data) => Ok(hyper::body::Frame::data(Bytes::from_static(
                data.as_bytes(),
            ))),
            Err(e) => Err(BoxError::from(e)),
        });
        http_body_util::StreamBody::new(futures_util::stream::iter(frames))
    }

    fn parts_with_length(length: Option<usize>) -> Parts {
        let mut request = http::Request::builder();
        if let Some(n) = length {
            request = request.header(CONTENT_LENGTH, n);
        }
        request.body(()).expect("a request").into_parts().0
    }

    #[tokio::test]
    async fn bodies_are_read_whole_in_one_frame_or_many_within_the_limit() {
        let one = http_body_util::Full::new(Bytes::from_static(b"{\"a\":1}"));
        let body = read_body(&parts_with_length(Some(7)), one, 64).await;
        assert_eq!(body.ok().as_deref(), Some(&b"{\"a\":1}"[..]));
        let many = framed_body(vec![Ok("{\"a\""), Ok(":"), Ok(""), Ok("1}")]);
        let body = read_body(&parts_with_length(None), many, 64).await;
        assert_eq!(body.ok().as_deref(), Some(&b"{\"a\":1}"[..]));
        let empty = framed_body(vec![]);
        let body = read_body(&parts_with_length(None), empty, 64).await;
        assert_eq!(body.ok().as_deref(), Some(&b""[..]));
        // Over the limit, declared or not: 413.
        let declared = framed_body(vec![Ok("x")]);
        let refused = read_body(&parts_with_length(Some(65)), declared, 64).await;
        assert_eq!(
            refused.err().map(|r| r.status()),
            Some(StatusCode::PAYLOAD_TOO_LARGE)
        );
        let long: &'static str = Box::leak("y".repeat(40).into_boxed_str());
        let undeclared = framed_body(vec![Ok(long), Ok(long)]);
        let refused = read_body(&parts_with_length(None), undeclared, 64).await;
        assert_eq!(
            refused.err().map(|r| r.status()),
            Some(StatusCode::PAYLOAD_TOO_LARGE)
        );
        // A failing stream: 400.
        let broken = framed_body(vec![Ok("{"), Err("reset")]);
        let refused = read_body(&parts_with_length(None), broken, 64).await;
        assert_eq!(
            refused.err().map(|r| r.status()),
            Some(StatusCode::BAD_REQUEST)
        );
    }
}
