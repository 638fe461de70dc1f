//! The server side: a hyper (and tower) service serving Streamable HTTP (2025-03-26,
//! 2025-06-18, 2025-11-25), stateless 2026-07-28 requests and, when enabled, the 2024-11-05
//! HTTP+SSE transport, handing each session to your server as an [`mcp_jsonrpc::Connection`].
//!
//! ```no_run
//! use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
//!
//! # async fn serve_one(connection: mcp_jsonrpc::Connection) {}
//! # #[tokio::main]
//! # async fn main() -> std::io::Result<()> {
//! let service = StreamableHttpService::builder(|connection| serve_one(connection))
//!     .config(HttpServerConfig::default().path("/mcp"))
//!     .build();
//! service.serve("127.0.0.1:8080".parse().unwrap()).await
//! # }
//! ```
//!
//! What each HTTP request becomes:
//!
//! | request | answer |
//! |---|---|
//! | POST `initialize` without `Mcp-Session-Id` | a new session (one `Connection`); the response carries `Mcp-Session-Id` |
//! | POST with `Mcp-Session-Id` | the messages go into that session's connection; requests are answered with JSON or SSE ([`ResponseMode`]), the rest with 202 |
//! | POST of a 2026-07-28 request (no session; `_meta` protocol version or a non-session `MCP-Protocol-Version`) | header checks, then the shared stateless connection; the answer's status follows the JSON-RPC error code (400/404) |
//! | GET with `Mcp-Session-Id` | the standalone SSE stream; with `Last-Event-ID`, a replay of the stream that id belongs to |
//! | DELETE with `Mcp-Session-Id` | ends the session |
//! | GET `/sse`, POST `/messages?sessionId=` | the 2024-11-05 transport (when enabled) |
//!
//! Every request first passes the `Origin`/`Host` check (403), then the size limits (413, 431).

// Early-return helpers hand back a finished `Response` on their error path; it is built once
// per refused request, so boxing it would only add an allocation.
#![allow(clippy::result_large_err)]

mod auth;
mod body;
mod config;
mod direct;
mod hub;
mod reaper;
mod security;
mod serve;
mod service;
mod stateless;
mod store;
mod tracker;

use std::sync::Arc;

pub use auth::{AuthFuture, Authenticator};
pub use body::HttpBody;
pub use config::{HostPolicy, HttpServerConfig, LegacySsePaths, ResponseMode};
pub use security::LocalAddr;
pub use service::{StreamableHttpService, StreamableHttpServiceBuilder};
pub use store::{
    BusHandler, EventStore, EventStoreLimits, InMemoryEventStore, InMemorySessionStore, MessageBus,
    SessionRecord, SessionStore, StoreError, StoreFuture, StoredEvent,
};

/// The session a message arrived on (in the message's extensions, stateful sessions only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionId(pub String);

/// The decoded `Mcp-Param-*` headers of a stateless request, in the message's extensions.
///
/// The transport checks their encoding (`=?base64?...?=` values must decode to UTF-8, or the
/// request gets 400 and `-32020`); whether they match the arguments the tool's `x-mcp-header`
/// annotations designate is for the server to check, as only it knows the tool schemas.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpParamHeaders(pub Vec<(String, String)>);

impl McpParamHeaders {
    /// The decoded value of `Mcp-Param-<name>` (name compared case-insensitively).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Control over the SSE stream that carries a request's answer, in the extensions of requests
/// on stateful sessions.
///
/// A handler uses it for the 2025-11-25 polling pattern: [`close_for_polling`] ends the HTTP
/// connection after an event id and a `retry` field; the client reconnects with GET and
/// `Last-Event-ID` and gets what was sent in between, the result included.
///
/// [`close_for_polling`]: SseStreamControl::close_for_polling
#[derive(Debug, Clone)]
pub struct SseStreamControl {
    pub(crate) hub: hub::WeakHub,
    pub(crate) request: mcp_jsonrpc::Id,
}

impl SseStreamControl {
    /// Closes the request's stream for polling. Returns `false` when that is not possible: no
    /// event store, a client that does not accept SSE, or a finished request.
    pub async fn close_for_polling(&self) -> bool {
        // A session request's slot may be opened only once its handler first waits (see
        // `direct::serve_session`): yielding first makes this the handler's first wait, so the
        // slot exists before the hub looks for it.
        tokio::task::yield_now().await;
        match self.hub.upgrade() {
            Some(hub) => Arc::clone(&hub).poll_close(&self.request).await,
            None => false,
        }
    }
}
