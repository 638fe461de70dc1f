//! Configuration of the HTTP server transport.

use std::time::Duration;

use mcp_types::ProtocolVersion;
use mcp_types::wire;

/// How the response to a POSTed request is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ResponseMode {
    /// Wait for the first outbound frame of the request: when it is the response itself, answer
    /// with `application/json`; when a notification or a request comes first (progress, logging,
    /// sampling), answer with `text/event-stream` and stream until the response. A client that
    /// does not accept `text/event-stream` always gets JSON (its related notifications then go
    /// to the standalone GET stream).
    #[default]
    Auto,
    /// Always answer requests with `text/event-stream` when the client accepts it.
    Sse,
    /// Always answer with `application/json`; messages related to the request go to the
    /// standalone GET stream (stateful sessions) or are dropped (stateless requests).
    Json,
}

/// Which `Host` (and `Origin`) values are accepted, against DNS rebinding.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HostPolicy {
    /// Loopback names only (`localhost`, `127.0.0.1`, `[::1]`, any port), unless the serving
    /// helpers report that the listener is bound to a non-loopback address: then any `Host` is
    /// accepted and an `Origin`, when present, must name the request's own `Host`.
    #[default]
    Auto,
    /// Loopback names only, any port.
    Loopback,
    /// These hosts only: `name` matches any port, `name:port` only that port. IPv6 literals are
    /// written in brackets (`[::1]`).
    Allow(Vec<String>),
    /// No `Host` check (an `Origin`, when present, must still be allowed: see
    /// [`HttpServerConfig::allowed_origins`]).
    Any,
}

/// The paths of the deprecated HTTP+SSE transport of protocol revision 2024-11-05.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacySsePaths {
    /// The path of the GET that opens the SSE stream (default `/sse`).
    pub sse: String,
    /// The path announced in the `endpoint` event, where clients POST (default `/messages`).
    /// It may be an absolute URL when the service is mounted under a prefix.
    pub messages: String,
}

impl Default for LegacySsePaths {
    fn default() -> Self {
        LegacySsePaths {
            sse: "/sse".into(),
            messages: "/messages".into(),
        }
    }
}

/// Settings of a [`StreamableHttpService`](super::StreamableHttpService). Every limit has a
/// default and a setter.
///
/// ```
/// use std::time::Duration;
/// use mcp_transport_http::server::{HttpServerConfig, HostPolicy};
///
/// let config = HttpServerConfig::default()
///     .path("/mcp")
///     .max_body_size(1 << 20)
///     .session_idle_timeout(Some(Duration::from_secs(600)))
///     .host_policy(HostPolicy::Allow(vec!["mcp.example.com".into()]));
/// assert_eq!(config.max_body_size_limit(), 1 << 20);
/// ```
#[derive(Debug, Clone)]
pub struct HttpServerConfig {
    pub(crate) path: Option<String>,
    pub(crate) stateful: bool,
    pub(crate) response_mode: ResponseMode,
    pub(crate) get_stream: bool,
    pub(crate) allow_delete: bool,
    pub(crate) session_versions: Vec<String>,
    pub(crate) stateless_versions: Vec<String>,
    pub(crate) host_policy: HostPolicy,
    pub(crate) allowed_origins: Option<Vec<String>>,
    pub(crate) max_body_size: usize,
    pub(crate) max_header_size: usize,
    pub(crate) max_batch_len: usize,
    pub(crate) max_sessions: usize,
    pub(crate) max_streams_per_session: usize,
    pub(crate) stream_buffer: usize,
    pub(crate) standalone_backlog: usize,
    pub(crate) inbound_capacity: usize,
    pub(crate) max_pending_stateless: usize,
    pub(crate) session_idle_timeout: Option<Duration>,
    pub(crate) store_touch_interval: Duration,
    pub(crate) sse_keep_alive: Option<Duration>,
    pub(crate) sse_retry: Duration,
    pub(crate) legacy_sse: Option<LegacySsePaths>,
    pub(crate) shutdown_timeout: Duration,
    pub(crate) header_read_timeout: Option<Duration>,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) request_body_timeout: Option<Duration>,
    pub(crate) http2_keep_alive_interval: Option<Duration>,
    pub(crate) http2_keep_alive_timeout: Duration,
    pub(crate) max_connections: usize,
}

/// The date strings of `versions`.
fn names(versions: &[ProtocolVersion]) -> Vec<String> {
    versions.iter().map(|v| v.as_str().to_owned()).collect()
}

impl Default for HttpServerConfig {
    fn default() -> Self {
        HttpServerConfig {
            path: None,
            stateful: true,
            response_mode: ResponseMode::Auto,
            get_stream: true,
            allow_delete: true,
            session_versions: names(wire::session_versions()),
            stateless_versions: names(wire::stateless_versions()),
            host_policy: HostPolicy::Auto,
            allowed_origins: None,
            max_body_size: 4 * 1024 * 1024,
            max_header_size: 16 * 1024,
            max_batch_len: 64,
            max_sessions: 1024,
            max_streams_per_session: 16,
            stream_buffer: 256,
            standalone_backlog: 256,
            inbound_capacity: 64,
            max_pending_stateless: 4096,
            session_idle_timeout: Some(Duration::from_secs(30 * 60)),
            store_touch_interval: Duration::from_secs(1),
            sse_keep_alive: Some(Duration::from_secs(15)),
            sse_retry: Duration::from_secs(1),
            legacy_sse: None,
            shutdown_timeout: Duration::from_secs(10),
            header_read_timeout: Some(Duration::from_secs(10)),
            idle_timeout: Some(Duration::from_secs(60)),
            request_body_timeout: Some(Duration::from_secs(30)),
            http2_keep_alive_interval: Some(Duration::from_secs(30)),
            http2_keep_alive_timeout: Duration::from_secs(20),
            max_connections: default_max_connections(),
        }
    }
}

/// The most connections served at once by default: 1024, or three quarters of the process's
/// limit on open files when that is lower (Unix), so that refusing happens before `accept`
/// runs out of descriptors.
fn default_max_connections() -> usize {
    const DEFAULT: usize = 1024;
    #[cfg(unix)]
    {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        match limit.and_then(|n| usize::try_from(n).ok()) {
            Some(n) => DEFAULT.min(n / 4 * 3).max(1),
            None => DEFAULT,
        }
    }
    #[cfg(not(unix))]
    {
        DEFAULT
    }
}

impl HttpServerConfig {
    /// Serves the MCP endpoint on this path only (other paths get 404). Default: every path
    /// (except the legacy HTTP+SSE paths, when enabled), which suits mounting in a router.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Stateful sessions (`Mcp-Session-Id`, default `true`). With `false`, 2025-era requests are
    /// served without sessions on one shared connection (for deployments behind load
    /// balancers); GET and DELETE then get 405.
    pub fn stateful(mut self, stateful: bool) -> Self {
        self.stateful = stateful;
        self
    }

    /// How responses to requests are sent (default [`ResponseMode::Auto`]).
    pub fn response_mode(mut self, mode: ResponseMode) -> Self {
        self.response_mode = mode;
        self
    }

    /// Whether GET opens the standalone SSE stream (default `true`; `false` answers GET with 405).
    pub fn get_stream(mut self, enabled: bool) -> Self {
        self.get_stream = enabled;
        self
    }

    /// Whether DELETE ends a session (default `true`; `false` answers DELETE with 405).
    pub fn allow_delete(mut self, allowed: bool) -> Self {
        self.allow_delete = allowed;
        self
    }

    /// The `MCP-Protocol-Version` values accepted on session traffic (default: every session
    /// revision, [`mcp_types::wire::session_versions`]). Others get 400.
    pub fn session_versions<I, S>(mut self, versions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.session_versions = versions.into_iter().map(Into::into).collect();
        self
    }

    /// The stateless protocol versions served (default: every stateless revision,
    /// [`mcp_types::wire::stateless_versions`]). Others get 400 with `-32022`.
    pub fn stateless_versions<I, S>(mut self, versions: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.stateless_versions = versions.into_iter().map(Into::into).collect();
        self
    }

    /// Which `Host` values are accepted (default [`HostPolicy::Auto`]); others get 403.
    pub fn host_policy(mut self, policy: HostPolicy) -> Self {
        self.host_policy = policy;
        self
    }

    /// The origins accepted in an `Origin` header, as `scheme://host[:port]` or a bare host
    /// (any scheme and port). Default: the hosts the [`HostPolicy`] accepts. Others get 403.
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = Some(origins.into_iter().map(Into::into).collect());
        self
    }

    /// The largest POST body in bytes (default 4 MiB); larger ones get 413.
    pub fn max_body_size(mut self, bytes: usize) -> Self {
        self.max_body_size = bytes.max(1);
        self
    }

    /// The configured body limit.
    pub fn max_body_size_limit(&self) -> usize {
        self.max_body_size
    }

    /// The largest total size of a request's headers in bytes (default 16 KiB); larger ones get
    /// 431. The serving helpers also configure hyper's header buffers from it.
    pub fn max_header_size(mut self, bytes: usize) -> Self {
        self.max_header_size = bytes.max(1024);
        self
    }

    /// The most messages in one POSTed batch (default 64; batches exist in 2025-03-26 only).
    pub fn max_batch_len(mut self, len: usize) -> Self {
        self.max_batch_len = len.max(1);
        self
    }

    /// The most concurrent stateful sessions, 2024-11-05 SSE sessions included (default 1024);
    /// an `initialize` beyond it gets 503.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// The most open SSE streams per session (default 16); more get 429.
    pub fn max_streams_per_session(mut self, streams: usize) -> Self {
        self.max_streams_per_session = streams.max(1);
        self
    }

    /// The events buffered per open SSE stream (default 256). A client that falls this far
    /// behind is disconnected; with an event store it resumes with `Last-Event-ID` and loses
    /// nothing, without one the events are lost (with a warning).
    pub fn stream_buffer(mut self, events: usize) -> Self {
        self.stream_buffer = events.max(1);
        self
    }

    /// Messages for the standalone GET stream kept while no GET stream is open (default 256);
    /// beyond it the oldest are dropped with a warning.
    pub fn standalone_backlog(mut self, messages: usize) -> Self {
        self.standalone_backlog = messages;
        self
    }

    /// Inbound messages queued per connection before POSTs wait (default 64).
    pub fn inbound_capacity(mut self, messages: usize) -> Self {
        self.inbound_capacity = messages.max(1);
        self
    }

    /// The most requests in flight on the shared stateless connection (default 4096); more get
    /// 503.
    pub fn max_pending_stateless(mut self, requests: usize) -> Self {
        self.max_pending_stateless = requests.max(1);
        self
    }

    /// How long a session may stay idle (no request in flight, no stream open) before it is
    /// ended (default 30 minutes; `None`: never). Sessions are checked every quarter of it
    /// (at least every 50 ms, at most every 30 s), so one ends up to that much later.
    pub fn session_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// How often, at most, a session's use is reported to the session store
    /// ([`SessionStore::touch`](super::SessionStore::touch), default 1 s): a shared store keeps
    /// a session in use alive, and a session ended through another replica is noticed here
    /// (404) within that time. The in-memory default store does nothing on a touch.
    pub fn store_touch_interval(mut self, interval: Duration) -> Self {
        self.store_touch_interval = interval;
        self
    }

    /// The interval of SSE keep-alive comments (default 15 s; `None`: none).
    pub fn sse_keep_alive(mut self, interval: Option<Duration>) -> Self {
        self.sse_keep_alive = interval;
        self
    }

    /// The `retry` delay announced on resumable streams, before the server closes a connection
    /// for polling (default 1 s).
    pub fn sse_retry(mut self, delay: Duration) -> Self {
        self.sse_retry = delay;
        self
    }

    /// Serves the deprecated 2024-11-05 HTTP+SSE transport beside Streamable HTTP (default: off).
    pub fn legacy_sse(mut self, paths: LegacySsePaths) -> Self {
        self.legacy_sse = Some(paths);
        self
    }

    /// How long graceful shutdown waits for in-flight requests (default 10 s).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// How long an HTTP/1.1 client may take to send a request's headers, from their first byte
    /// (default 10 s; `None`: no limit); past it the connection is closed without an answer.
    /// Enforced by the serving helpers ([`serve`], [`serve_with_listener`]) only, not when the
    /// service is mounted in another server.
    ///
    /// [`serve`]: super::StreamableHttpService::serve
    /// [`serve_with_listener`]: super::StreamableHttpService::serve_with_listener
    pub fn header_read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.header_read_timeout = timeout.filter(|d| !d.is_zero());
        self
    }

    /// How long a connection may stay open with no request in flight (default 60 s; `None`:
    /// no limit): HTTP/1.1 keep-alive between requests, an HTTP/2 connection without streams.
    /// Past it the connection is closed. An open SSE stream is a request in flight. Enforced by
    /// the serving helpers only.
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout.filter(|d| !d.is_zero());
        self
    }

    /// How long reading a POST body may take, from the start of the read (default 30 s;
    /// `None`: no limit). A body that has not arrived in full by then is answered with 408 (and
    /// the HTTP/1.1 connection closed). Enforced by the service itself, wherever it is mounted.
    pub fn request_body_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_body_timeout = timeout.filter(|d| !d.is_zero());
        self
    }

    /// The interval of HTTP/2 keep-alive pings (default 30 s; `None`: none). A client that does
    /// not answer a ping within [`http2_keep_alive_timeout`](Self::http2_keep_alive_timeout)
    /// is disconnected. Serving helpers only.
    pub fn http2_keep_alive_interval(mut self, interval: Option<Duration>) -> Self {
        self.http2_keep_alive_interval = interval.filter(|d| !d.is_zero());
        self
    }

    /// How long an HTTP/2 keep-alive ping may go unanswered (default 20 s).
    pub fn http2_keep_alive_timeout(mut self, timeout: Duration) -> Self {
        self.http2_keep_alive_timeout = timeout;
        self
    }

    /// The most connections served at once (default 1024, or three quarters of the process's
    /// open-file limit when that is lower, on Unix). A connection beyond it is accepted, answered
    /// `503 Service Unavailable` with `Connection: close` and closed at once; a warning is
    /// logged at most every 10 s while connections are being refused. Serving helpers only.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }
}
