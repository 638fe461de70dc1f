//! The client's errors.

use mcp_jsonrpc::{ErrorObject, TransportError};
use mcp_types::ProtocolVersion;

/// Why a call to the server produced no result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The server answered with a JSON-RPC error.
    #[error("the server returned error {}: {}", .0.code, .0.message)]
    Rpc(ErrorObject),
    /// No response arrived in time; `notifications/cancelled` was sent.
    #[error("the request timed out")]
    Timeout,
    /// The request was cancelled locally.
    #[error("the request was cancelled")]
    Cancelled,
    /// The connection closed before a response arrived (the server exited or hung up).
    #[error("the connection to the server closed: {0}")]
    Closed(String),
    /// The transport failed.
    #[error("transport error")]
    Transport(#[source] TransportError),
    /// The params could not be encoded, or the result did not decode into its type.
    #[error("could not encode the request or decode the server's result")]
    Decode(#[source] serde_json::Error),
    /// The server sent a malformed response.
    #[error("invalid response from the server: {0}")]
    InvalidResponse(String),
    /// The negotiated protocol revision has no such method; nothing was sent.
    #[error("`{method}` does not exist in protocol revision {version}")]
    NotInRevision {
        /// The method.
        method: &'static str,
        /// The negotiated revision.
        version: ProtocolVersion,
    },
    /// The server did not declare the capability the method needs; nothing was sent.
    #[error("the server did not declare the `{capability}` capability that `{method}` needs")]
    MissingCapability {
        /// The method.
        method: &'static str,
        /// The capability, as a path (`resources.subscribe`).
        capability: &'static str,
    },
    /// A tool's `structuredContent` does not match the `outputSchema` it declared.
    #[error(
        "tool `{tool}` returned structured content that does not match its output schema: {reason}"
    )]
    InvalidStructuredContent {
        /// The tool.
        tool: String,
        /// What did not match.
        reason: String,
    },
    /// Listing every page took more pages than the configured limit, or the server repeated a
    /// cursor.
    #[error("pagination stopped: {0}")]
    Pagination(String),
    /// No server in the host has that name, or no server offers that item.
    #[error("{0}")]
    NotFound(String),
    /// The task was cancelled before it ended: it has no result.
    #[error("task {0} was cancelled")]
    TaskCancelled(String),
    /// The server still asked for input after the configured number of rounds
    /// ([`ClientBuilder::max_input_rounds`](crate::ClientBuilder::max_input_rounds)).
    #[error("`{method}` still required input after {rounds} rounds")]
    RoundsExceeded {
        /// The method.
        method: &'static str,
        /// How many rounds were answered.
        rounds: usize,
    },
    /// One of the server's `inputRequests` could not be answered (no handler for it, or the
    /// handler failed), so the request was not retried.
    #[error("could not answer input request `{key}` ({method}): {}", .error.message)]
    InputRequest {
        /// The server's key for the input request.
        key: String,
        /// Its method (`elicitation/create`, `sampling/createMessage`, `roots/list`).
        method: String,
        /// Why it could not be answered.
        error: ErrorObject,
    },
}

impl CallError {
    /// The server's JSON-RPC error, if that is what this is.
    pub fn rpc(&self) -> Option<&ErrorObject> {
        match self {
            CallError::Rpc(error) => Some(error),
            _ => None,
        }
    }
}

impl From<mcp_jsonrpc::CallError> for CallError {
    fn from(error: mcp_jsonrpc::CallError) -> Self {
        match error {
            mcp_jsonrpc::CallError::Rpc(error) => CallError::Rpc(error),
            mcp_jsonrpc::CallError::Timeout => CallError::Timeout,
            mcp_jsonrpc::CallError::Cancelled => CallError::Cancelled,
            mcp_jsonrpc::CallError::Closed(reason) => CallError::Closed(reason),
            mcp_jsonrpc::CallError::Transport(error) => CallError::Transport(error),
            mcp_jsonrpc::CallError::Decode(error) => CallError::Decode(error),
            mcp_jsonrpc::CallError::InvalidResponse(reason) => CallError::InvalidResponse(reason),
            other => CallError::InvalidResponse(other.to_string()),
        }
    }
}

/// Why connecting to a server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The server process could not be started.
    #[error("could not start the server `{command}`")]
    Spawn {
        /// The command.
        command: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The `initialize` request failed.
    #[error("the initialize request failed")]
    Initialize(#[source] CallError),
    /// `server/discover` failed in a way that rules out falling back to `initialize`: the
    /// server is a stateless-era server that refused the request (`-32020`, `-32021`), kept
    /// refusing the version, or the connection failed.
    #[error("the server/discover request failed")]
    Discover(#[source] CallError),
    /// The server answered with a protocol revision this client does not speak; the connection
    /// was closed.
    #[error(
        "the server answered protocol version {answered:?} to our {requested}; this client supports {}",
        supported_list(.min, .requested)
    )]
    UnsupportedVersion {
        /// What the client asked for.
        requested: ProtocolVersion,
        /// The oldest revision the client accepts.
        min: ProtocolVersion,
        /// What the server answered.
        answered: String,
    },
    /// The `initialize` result does not decode.
    #[error("the server's initialize result is invalid")]
    InvalidInitializeResult(#[source] serde_json::Error),
    /// `notifications/initialized` could not be sent.
    #[error("could not send notifications/initialized")]
    Initialized(#[source] CallError),
    /// The server is configured with a transport this build cannot connect with.
    #[error("{0}")]
    Unsupported(String),
    /// The transport failed while connecting.
    #[error("transport error while connecting")]
    Transport(#[source] TransportError),
}

fn supported_list(min: &ProtocolVersion, max: &ProtocolVersion) -> String {
    ProtocolVersion::ALL
        .iter()
        .filter(|v| *v >= min && *v <= max)
        .map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
