//! The HTTP client transport (feature `client`): Streamable HTTP (2025-03-26 to 2026-07-28),
//! with fallback to the HTTP+SSE transport of 2024-11-05.
//!
//! [`StreamableHttpClient::connect`] gives an [`mcp_jsonrpc::Connection`] that a client engine
//! runs over, and an [`HttpClientHandle`] to inspect and close the session:
//!
//! * every outbound frame is POSTed with `Accept: application/json, text/event-stream`; at most
//!   [`max_in_flight`](StreamableHttpClientBuilder::max_in_flight) POSTs are in progress at once.
//!   Notifications and responses wait for their `202` before the next frame is sent, so they
//!   reach the server in order; requests run concurrently;
//! * a request's answer may be `application/json` or a `text/event-stream` that also carries
//!   the server's notifications and requests for it; both feed the inbound stream;
//! * the transport sniffs what it needs from the messages it carries: the `Mcp-Session-Id` of
//!   the `initialize` response, the `protocolVersion` of the `initialize` result (sent as
//!   `MCP-Protocol-Version` from then on), and, for stateless (2026-07-28) requests, the version
//!   in `params._meta` plus the `Mcp-Method` and `Mcp-Name` headers;
//! * it learns each tool's `x-mcp-header` parameters from the `tools/list` results it carries
//!   and mirrors their values into `Mcp-Param-<Name>` headers of stateless `tools/call`
//!   requests (plain text when header-safe, `=?base64?...?=` otherwise);
//! * once `notifications/initialized` is accepted it opens the standalone GET stream and lets
//!   the next message wait until the server has answered that GET (a `405` means the server
//!   offers none; a broken stream is resumed with `Last-Event-ID`, with bounded backoff);
//! * a stateless request is cancelled by closing its response stream, without a
//!   `notifications/cancelled` POST;
//! * a broken SSE stream that carried event ids is resumed with a GET carrying
//!   `Last-Event-ID`, after the server's `retry` delay (or the [`Reconnect`] backoff);
//! * a `404` to a request carrying the session id ends the connection with
//!   [`HttpError::SessionExpired`]: connect again and re-initialize;
//! * closing the connection's sink (or [`HttpClientHandle::close`]) sends `DELETE` with the
//!   session id;
//! * in [`ClientMode::Auto`], a `400`, `404` or `405` to the first `initialize` POST switches
//!   to the 2024-11-05 HTTP+SSE transport (GET for the `endpoint` event, then POSTs there);
//! * HTTP failures of a request are answered locally with a JSON-RPC error response (code
//!   `-32603`, `data.httpStatus` when there is one), so callers never wait for an answer that
//!   cannot come; 2026-07-28 error statuses with a JSON-RPC error body pass through unchanged.
//!
//! ```no_run
//! use mcp_transport_http::client::StreamableHttpClient;
//!
//! # async fn run() -> Result<(), mcp_transport_http::client::HttpError> {
//! let client = StreamableHttpClient::builder("http://127.0.0.1:8080/mcp")
//!     .header(
//!         http::HeaderName::from_static("x-tenant"),
//!         http::HeaderValue::from_static("acme"),
//!     )
//!     .build()?;
//! let (connection, handle) = client.connect().await?;
//! // hand `connection` to the client engine, for example `Client::connect(connection)`
//! # drop(connection);
//! handle.close().await;
//! # Ok(()) }
//! ```

mod error;
mod headers;
mod net;
mod transport;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use futures_util::Sink;
use http::Uri;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use mcp_jsonrpc::{Connection, Outbound, TransportError};
use tokio::sync::mpsc;
use tokio_util::sync::PollSender;

pub use error::HttpError;

use net::{Net, NetConfig};
use transport::{InboundItem, Shared};

/// Which HTTP transport the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClientMode {
    /// Streamable HTTP, falling back to HTTP+SSE when the server refuses the first
    /// `initialize` POST with `400`, `404` or `405` (the spec's backward compatibility rule).
    #[default]
    Auto,
    /// Streamable HTTP only.
    StreamableHttp,
    /// The 2024-11-05 HTTP+SSE transport only: the URL is the SSE endpoint.
    HttpSse,
}

/// The transport in use on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// Streamable HTTP.
    StreamableHttp,
    /// The 2024-11-05 HTTP+SSE transport.
    HttpSse,
}

/// How broken SSE streams are resumed.
///
/// The server's `retry` field, when it sent one, replaces the computed delay. Attempts count
/// reconnections that delivered no event; any event resets the count.
///
/// ```
/// use std::time::Duration;
/// use mcp_transport_http::client::Reconnect;
///
/// let policy = Reconnect::default()
///     .initial_delay(Duration::from_millis(200))
///     .max_attempts(10);
/// # let _ = policy;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reconnect {
    initial_delay: Duration,
    max_delay: Duration,
    max_attempts: u32,
}

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect {
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_attempts: 5,
        }
    }
}

impl Reconnect {
    /// The delay before the first reconnection when the server gave no `retry` (default 1 s);
    /// it doubles with every failed attempt.
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// The longest computed delay (default 30 s).
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// How many reconnections in a row may fail before the stream is given up (default 5).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(16);
        self.initial_delay
            .saturating_mul(factor)
            .min(self.max_delay)
    }
}

/// Settings shared by the transport's tasks.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    mode: ClientMode,
    max_in_flight: usize,
    max_body_size: usize,
    max_event_size: usize,
    max_batch_len: usize,
    channel_capacity: usize,
    reconnect: Reconnect,
    standalone_stream: bool,
    standalone_open_timeout: Duration,
    ack_timeout: Duration,
    max_tools: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: ClientMode::Auto,
            max_in_flight: 32,
            max_body_size: 16 * 1024 * 1024,
            max_event_size: 16 * 1024 * 1024,
            max_batch_len: 1024,
            channel_capacity: 64,
            reconnect: Reconnect::default(),
            standalone_stream: true,
            standalone_open_timeout: Duration::from_secs(5),
            ack_timeout: Duration::from_secs(30),
            max_tools: 4096,
        }
    }
}

/// Builds a [`StreamableHttpClient`].
#[must_use]
pub struct StreamableHttpClientBuilder {
    url: String,
    headers: HeaderMap,
    config: Config,
    net: NetConfig,
    #[cfg(feature = "auth")]
    auth: Option<Arc<dyn mcp_auth::AuthProvider>>,
}

impl std::fmt::Debug for StreamableHttpClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttpClientBuilder")
            .field("url", &self.url)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl StreamableHttpClientBuilder {
    /// Adds a header sent with every HTTP request (for example an API key). Headers the
    /// transport manages (`Accept`, `Content-Type`, `Mcp-Session-Id`, `MCP-Protocol-Version`,
    /// `Last-Event-ID`, `Mcp-Method`, `Mcp-Name`, and whatever an auth provider adds, such as
    /// `Authorization` and `DPoP`) override custom ones of the same name.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// Adds every header of `headers`, like [`header`](Self::header).
    pub fn headers(mut self, headers: HeaderMap) -> Self {
        for (name, value) in &headers {
            self.headers.append(name, value.clone());
        }
        self
    }

    /// Uses an OAuth provider: it adds the credentials of every HTTP request from the
    /// request's method and URL ([`AuthProvider::authorize_request`]: `Authorization`, plus a
    /// fresh `DPoP` proof for a DPoP-bound token); it sees every response first and may ask
    /// for one immediate retry (a DPoP nonce challenge); a `401` lets it authorize and a
    /// `403 insufficient_scope` lets it step up, then the request is retried (at most three
    /// times).
    ///
    /// [`AuthProvider::authorize_request`]: mcp_auth::AuthProvider::authorize_request
    #[cfg(feature = "auth")]
    pub fn auth(mut self, provider: Arc<dyn mcp_auth::AuthProvider>) -> Self {
        self.auth = Some(provider);
        self
    }

    /// Chooses the transport (default [`ClientMode::Auto`]).
    pub fn mode(mut self, mode: ClientMode) -> Self {
        self.config.mode = mode;
        self
    }

    /// The maximum number of POSTs in progress at once (default 32). Further outbound frames
    /// wait, which backs up into the connection's sink.
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.config.max_in_flight = requests.max(1);
        self
    }

    /// The maximum size of a JSON response body (default 16 MiB).
    pub fn max_body_size(mut self, bytes: usize) -> Self {
        self.config.max_body_size = bytes.max(1024);
        self
    }

    /// The maximum size of one server-sent event (default 16 MiB).
    pub fn max_event_size(mut self, bytes: usize) -> Self {
        self.config.max_event_size = bytes.max(1024);
        self
    }

    /// The maximum number of messages in a JSON batch from the server (default 1024).
    pub fn max_batch_len(mut self, messages: usize) -> Self {
        self.config.max_batch_len = messages.max(1);
        self
    }

    /// How many frames the connection buffers in each direction (default 64).
    pub fn channel_capacity(mut self, frames: usize) -> Self {
        self.config.channel_capacity = frames.max(1);
        self
    }

    /// How broken SSE streams are resumed.
    pub fn reconnect(mut self, policy: Reconnect) -> Self {
        self.config.reconnect = policy;
        self
    }

    /// Whether to open the standalone GET stream once `notifications/initialized` is accepted
    /// (default `true`). It carries the server's requests and notifications that belong to no
    /// request (the specification lets a client open it; many servers send elicitations and
    /// list changes there). A `405` means the server has none; a stream that breaks is resumed
    /// with `Last-Event-ID` under the [`Reconnect`] policy. Stateless (2026-07-28) connections
    /// never open it.
    pub fn standalone_stream(mut self, enabled: bool) -> Self {
        self.config.standalone_stream = enabled;
        self
    }

    /// How long the first message after `notifications/initialized` waits for the server to
    /// answer the standalone stream's GET (default 5 s), so that nothing the server sends there
    /// in reaction to that message is lost.
    pub fn standalone_open_timeout(mut self, timeout: Duration) -> Self {
        self.config.standalone_open_timeout = timeout;
        self
    }

    /// How many tools' `x-mcp-header` parameters the connection remembers from `tools/list`
    /// results for the `Mcp-Param-*` headers of stateless `tools/call` requests (default 4096).
    pub fn max_tools(mut self, tools: usize) -> Self {
        self.config.max_tools = tools.max(1);
        self
    }

    /// How long to wait for the response headers of notifications, responses, GETs and the
    /// closing DELETE, and for the HTTP+SSE `endpoint` event (default 30 s). Requests have no
    /// transport deadline: the engine's request timeout governs them.
    pub fn ack_timeout(mut self, timeout: Duration) -> Self {
        self.config.ack_timeout = timeout;
        self
    }

    /// The TCP connect timeout (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.net.connect_timeout = timeout;
        self
    }

    /// Speaks HTTP/2 without negotiation on `http` URLs (h2c prior knowledge). Over `https`,
    /// HTTP/2 is negotiated with ALPN regardless.
    pub fn http2_prior_knowledge(mut self, enabled: bool) -> Self {
        self.net.http2_prior_knowledge = enabled;
        self
    }

    /// Checks the URL and builds the client.
    pub fn build(self) -> Result<StreamableHttpClient, HttpError> {
        let url: Uri = self
            .url
            .parse()
            .map_err(|e| HttpError::InvalidUrl(format!("{}: {e}", self.url)))?;
        match url.scheme_str() {
            Some("http") => {}
            Some("https") if cfg!(feature = "rustls") => {}
            Some("https") => return Err(HttpError::TlsUnavailable),
            _ => {
                return Err(HttpError::InvalidUrl(format!(
                    "{}: the scheme must be http or https",
                    self.url
                )));
            }
        }
        if url.authority().is_none() {
            return Err(HttpError::InvalidUrl(format!("{}: no host", self.url)));
        }
        let net = Net::new(
            &self.net,
            self.headers,
            #[cfg(feature = "auth")]
            self.auth,
        )?;
        Ok(StreamableHttpClient {
            inner: Arc::new(ClientInner {
                url,
                net,
                config: self.config,
            }),
        })
    }
}

#[derive(Debug)]
struct ClientInner {
    url: Uri,
    net: Net,
    config: Config,
}

/// An MCP client transport over HTTP. Cheap to clone; each [`connect`](Self::connect) starts
/// a new session over the shared connection pool.
#[derive(Clone, Debug)]
pub struct StreamableHttpClient {
    inner: Arc<ClientInner>,
}

impl StreamableHttpClient {
    /// A builder for the MCP endpoint at `url` (`http://` or, with the `rustls` feature,
    /// `https://`).
    pub fn builder(url: impl Into<String>) -> StreamableHttpClientBuilder {
        StreamableHttpClientBuilder {
            url: url.into(),
            headers: HeaderMap::new(),
            config: Config::default(),
            net: NetConfig {
                connect_timeout: Duration::from_secs(10),
                http2_prior_knowledge: false,
            },
            #[cfg(feature = "auth")]
            auth: None,
        }
    }

    /// Starts a connection. With Streamable HTTP nothing is sent until the first frame; with
    /// [`ClientMode::HttpSse`] the SSE stream is opened and its `endpoint` event awaited here.
    /// Must be called within a Tokio runtime. The connection's
    /// [`extensions`](Connection::extensions) hold a clone of the handle.
    pub async fn connect(&self) -> Result<(Connection, HttpClientHandle), HttpError> {
        let cap = self.inner.config.channel_capacity;
        let (in_tx, in_rx) = mpsc::channel::<InboundItem>(cap);
        let (out_tx, out_rx) = mpsc::channel::<Outbound>(cap);
        let shared = Shared::new(
            self.inner.net.clone(),
            self.inner.url.clone(),
            self.inner.config.clone(),
            in_tx,
        );
        if self.inner.config.mode == ClientMode::HttpSse {
            if let Err(e) = shared.start_legacy().await {
                shared.cancel.cancel();
                return Err(e);
            }
        }
        tokio::spawn(shared.clone().run(out_rx));
        let handle = HttpClientHandle { shared };
        // Among the connection's extensions, for what a client reads of its transport (the
        // session id and the transport in its telemetry).
        let connection = Connection::new(
            InboundReader { rx: in_rx },
            OutboundWriter {
                tx: PollSender::new(out_tx),
                shared: handle.shared.clone(),
            },
        )
        .with_extension(handle.clone());
        Ok((connection, handle))
    }
}

/// Inspects and closes one connection made by [`StreamableHttpClient::connect`].
#[derive(Clone)]
pub struct HttpClientHandle {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for HttpClientHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClientHandle")
            .field("session_id", &self.session_id())
            .field("protocol_version", &self.protocol_version())
            .field("transport", &self.transport())
            .finish()
    }
}

impl HttpClientHandle {
    /// The session id the server assigned, if any.
    pub fn session_id(&self) -> Option<String> {
        self.shared.state().session_id.clone()
    }

    /// The protocol version negotiated by `initialize` (sent as `MCP-Protocol-Version`).
    pub fn protocol_version(&self) -> Option<String> {
        self.shared.state().protocol_version.clone()
    }

    /// The transport in use (after a possible fallback to HTTP+SSE).
    pub fn transport(&self) -> Transport {
        self.shared.transport()
    }

    /// Whether the connection has shut down.
    pub fn is_closed(&self) -> bool {
        self.shared.finished.is_cancelled()
    }

    /// Closes the connection: stops reading streams, sends `DELETE` for the session (waiting
    /// at most the ack timeout) and ends the inbound stream. Closing the connection's sink
    /// has the same effect.
    pub async fn close(&self) {
        self.shared.cancel.cancel();
        self.shared.finished.cancelled().await;
    }

    /// Resolves once the connection has shut down, whatever the cause.
    pub async fn closed(&self) {
        self.shared.finished.cancelled().await;
    }
}

struct InboundReader {
    rx: mpsc::Receiver<InboundItem>,
}

impl Stream for InboundReader {
    type Item = InboundItem;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

struct OutboundWriter {
    tx: PollSender<Outbound>,
    shared: Arc<Shared>,
}

impl OutboundWriter {
    /// The error for a write after the transport stopped: why it stopped, when it failed
    /// (an expired session stays recognisable through [`HttpError::from_transport`]).
    fn closed<T>(&self, _: T) -> TransportError {
        self.shared.closed_error().into()
    }
}

impl Sink<Outbound> for OutboundWriter {
    type Error = TransportError;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let res = self.tx.poll_reserve(cx);
        res.map_err(|e| self.closed(e))
    }

    fn start_send(mut self: Pin<&mut Self>, item: Outbound) -> Result<(), Self::Error> {
        let res = self.tx.send_item(item);
        res.map_err(|e| self.closed(e))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.tx.close();
        Poll::Ready(Ok(()))
    }
}
