//! The HTTP client's error type.

use http::StatusCode;
use mcp_jsonrpc::TransportError;

/// Why the HTTP client could not do what was asked.
///
/// When one of these ends a [`Connection`](mcp_jsonrpc::Connection), the connection's inbound
/// stream yields it as [`TransportError::Other`]; [`HttpError::from_transport`] gets it back, for
/// example to tell an expired session (re-initialize) from a dead server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The server URL is malformed or not `http`/`https`.
    #[error("invalid server URL: {0}")]
    InvalidUrl(String),
    /// An `https` URL was given but the crate was built without the `rustls` feature.
    #[error("https URLs need the `rustls` feature of mcp-transport-http")]
    TlsUnavailable,
    /// The TLS configuration could not be built.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// The HTTP exchange failed (connection refused, reset, protocol error).
    #[error("HTTP request failed: {0}")]
    Request(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The server answered with an unexpected status.
    #[error("server answered HTTP {status}{}", if .body.is_empty() { String::new() } else { format!(": {}", .body) })]
    Status {
        /// The status code.
        status: StatusCode,
        /// The start of the response body, for diagnostics.
        body: String,
    },
    /// The server answered `404` to a request carrying our `Mcp-Session-Id`: the session has
    /// expired or was terminated. Start a new session by connecting again and re-initializing.
    #[error("the server ended the MCP session (HTTP 404 for session {session_id})")]
    SessionExpired {
        /// The session id the server no longer knows.
        session_id: String,
    },
    /// The server's `Mcp-Session-Id` header is not visible ASCII.
    #[error("the server sent an invalid Mcp-Session-Id header")]
    InvalidSessionId,
    /// A response body or server-sent event exceeded the configured limit.
    #[error("response exceeds the maximum size of {limit} bytes")]
    TooLarge {
        /// The configured limit in bytes.
        limit: usize,
    },
    /// A response was not what the transport expected (content type, SSE syntax, endpoint).
    #[error("unexpected response: {0}")]
    Protocol(String),
    /// No answer came within the configured time.
    #[error("timed out waiting for {0}")]
    Timeout(&'static str),
    /// The authorization provider failed to obtain a token.
    #[cfg(feature = "auth")]
    #[error("authorization failed: {0}")]
    Auth(#[source] mcp_auth::AuthError),
    /// The transport was closed.
    #[error("the HTTP transport is closed")]
    Closed,
}

impl HttpError {
    /// The [`HttpError`] inside a transport error produced by this crate, if any.
    ///
    /// ```
    /// use mcp_transport_http::client::HttpError;
    ///
    /// let err: mcp_jsonrpc::TransportError =
    ///     HttpError::SessionExpired { session_id: "abc".into() }.into();
    /// assert!(matches!(
    ///     HttpError::from_transport(&err),
    ///     Some(HttpError::SessionExpired { .. })
    /// ));
    /// ```
    pub fn from_transport(err: &TransportError) -> Option<&HttpError> {
        match err {
            TransportError::Other(e) => e.downcast_ref::<HttpError>(),
            _ => None,
        }
    }

    /// Whether this error means the session is gone and the client must re-initialize.
    pub fn is_session_expired(&self) -> bool {
        matches!(self, HttpError::SessionExpired { .. })
    }
}

impl From<HttpError> for TransportError {
    fn from(value: HttpError) -> Self {
        TransportError::Other(Box::new(value))
    }
}
