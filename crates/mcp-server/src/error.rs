//! Errors: tool errors, errors of server-to-client calls, of building a server and of serving a
//! connection. JSON-RPC errors are [`ErrorObject`]s from `mcp-jsonrpc`, with the codes of
//! `mcp_types::error_codes`.

use std::fmt;

use mcp_jsonrpc::{ErrorObject, TransportError};
use mcp_types::error_codes as codes;
use serde::Serialize;

/// The code of the error answering a request that arrived before `initialize` (`-32002`, in the
/// implementation-defined server-error range; the TypeScript and Python SDKs use the same code).
/// No schema defines it, so it lives here rather than in `mcp_types::error_codes`.
pub const NOT_INITIALIZED: i64 = -32002;

/// Attaches `data` to an error. Data that cannot be serialized (a map with non-string keys) is
/// left out rather than failing the answer.
///
/// ```
/// let e = mcp_server::with_data(
///     mcp_server::ErrorObject::invalid_params("no such city"),
///     &serde_json::json!({"city": "Atlantis"}),
/// );
/// assert_eq!(e.data.unwrap().get(), r#"{"city":"Atlantis"}"#);
/// ```
pub fn with_data<T: Serialize + ?Sized>(mut error: ErrorObject, data: &T) -> ErrorObject {
    match mcp_jsonrpc::to_raw(data) {
        Ok(raw) => error.data = Some(raw),
        Err(e) => tracing::warn!(error = %e, "error data is not serializable; sent without it"),
    }
    error
}

/// The error for a resource URI that does not exist: `-32602` with `data.uri`.
pub fn resource_not_found(uri: &str) -> ErrorObject {
    with_data(
        ErrorObject::new(codes::INVALID_PARAMS, format!("Resource not found: {uri}")),
        &serde_json::json!({ "uri": uri }),
    )
}

/// The error for a request that arrived before `initialize` ([`NOT_INITIALIZED`]).
pub(crate) fn not_initialized(method: &str) -> ErrorObject {
    ErrorObject::new(
        NOT_INITIALIZED,
        format!("the session is not initialized: send `initialize` before `{method}`"),
    )
}

/// An error returned by a tool.
///
/// An *execution* error (the tool ran and failed, or its arguments were wrong) becomes a result
/// with `isError: true` that the model can read; a *protocol* error becomes a JSON-RPC error
/// response.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool failed; the message is shown to the model as an `isError` result.
    Execution(String),
    /// A protocol-level failure, sent as a JSON-RPC error.
    Protocol(ErrorObject),
    /// The tool needs input from the client first (the explicit way to ask): under 2026-07-28
    /// the call answers `input_required`, in a session the requests are sent to the client and
    /// the tool runs again with the answers.
    InputRequired(Box<crate::InputRequired>),
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Execution(e) => fmt::Display::fmt(e, f),
            ToolError::Protocol(e) => fmt::Display::fmt(e, f),
            ToolError::InputRequired(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for ToolError {}

impl From<crate::InputRequired> for ToolError {
    fn from(ask: crate::InputRequired) -> Self {
        Self::InputRequired(Box::new(ask))
    }
}

impl ToolError {
    /// An execution error with a message.
    pub fn execution(message: impl fmt::Display) -> Self {
        Self::Execution(message.to_string())
    }
}

impl From<ErrorObject> for ToolError {
    fn from(e: ErrorObject) -> Self {
        Self::Protocol(e)
    }
}

impl From<AskError> for ToolError {
    fn from(e: AskError) -> Self {
        Self::Execution(e.to_string())
    }
}

/// Why a request from the server to the client (sampling, elicitation, roots) failed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AskError {
    /// The client answered with an error.
    Rpc(ErrorObject),
    /// The client did not declare the capability the request needs.
    MissingCapability(&'static str),
    /// The negotiated revision does not have the method or feature.
    NotInRevision {
        /// What was asked for.
        feature: &'static str,
        /// The negotiated revision.
        version: String,
    },
    /// The request that asked was cancelled.
    Cancelled,
    /// The client did not answer in time.
    Timeout,
    /// The connection closed.
    Closed,
    /// What the server was about to send is invalid (for example an elicitation schema that is
    /// not a flat form).
    InvalidRequest(String),
    /// The client's answer did not have the expected shape.
    InvalidResponse(String),
    /// Under the stateless revision: the client has not answered yet. The request is answered
    /// with `input_required` (whatever the handler does with this error) and the handler runs
    /// again when the client retries with the answer. Propagate it with `?`.
    InputRequired,
    /// The client cannot be asked while answering this request: under the stateless revision
    /// only `tools/call`, `prompts/get` and `resources/read` may ask for input.
    NoInputChannel(String),
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskError::Rpc(e) => write!(f, "the client answered with an error: {e}"),
            AskError::MissingCapability(e) => {
                write!(f, "the client did not declare the `{e}` capability")
            }
            AskError::NotInRevision { feature, version } => write!(
                f,
                "`{feature}` is not available in protocol revision {version}"
            ),
            AskError::Cancelled => f.write_str("the request was cancelled"),
            AskError::Timeout => f.write_str("the client did not answer within the timeout"),
            AskError::Closed => f.write_str("the connection is closed"),
            AskError::InvalidRequest(e) => write!(f, "invalid request to the client: {e}"),
            AskError::InvalidResponse(e) => write!(f, "the client's answer is invalid: {e}"),
            AskError::InputRequired => f.write_str(
                "waiting for the client's input (the request is answered with input_required)",
            ),
            AskError::NoInputChannel(e) => {
                write!(f, "client input cannot be requested while answering {e}")
            }
        }
    }
}

impl std::error::Error for AskError {}

impl AskError {
    /// The JSON-RPC error a handler can return for this failure: the client's own error, the
    /// missing-capability error (`-32021` with `data.requiredCapabilities`), or an internal error.
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            AskError::Rpc(e) => e.clone(),
            AskError::MissingCapability(cap) => {
                let mut required = serde_json::Map::new();
                let mut node = serde_json::Value::Object(serde_json::Map::new());
                // `elicitation.url` declares `{"elicitation": {"url": {}}}`.
                let mut path: Vec<&str> = cap.split('.').collect();
                let top = path.remove(0);
                for key in path.iter().rev() {
                    let mut m = serde_json::Map::new();
                    m.insert((*key).to_owned(), node);
                    node = serde_json::Value::Object(m);
                }
                required.insert(top.to_owned(), node);
                with_data(
                    ErrorObject::new(
                        codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
                        format!("the client did not declare the `{cap}` capability"),
                    ),
                    &serde_json::json!({ "requiredCapabilities": required }),
                )
            }
            other => ErrorObject::internal_error(other),
        }
    }

    pub(crate) fn from_rpc(e: mcp_jsonrpc::CallError) -> Self {
        match e {
            mcp_jsonrpc::CallError::Rpc(e) => AskError::Rpc(e),
            mcp_jsonrpc::CallError::Timeout => AskError::Timeout,
            mcp_jsonrpc::CallError::Cancelled => AskError::Cancelled,
            mcp_jsonrpc::CallError::Closed(_) | mcp_jsonrpc::CallError::Transport(_) => {
                AskError::Closed
            }
            mcp_jsonrpc::CallError::Decode(e) => AskError::InvalidResponse(e.to_string()),
            mcp_jsonrpc::CallError::InvalidResponse(e) => AskError::InvalidResponse(e),
            other => AskError::InvalidResponse(other.to_string()),
        }
    }
}

impl From<AskError> for ErrorObject {
    fn from(e: AskError) -> Self {
        e.to_error_object()
    }
}

/// Why [`ServerBuilder::build`](crate::ServerBuilder::build) refused the configuration.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools, prompts, resources or templates share a name or URI.
    Duplicate {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The duplicated name or URI.
        name: String,
    },
    /// A tool's input or output schema is not a valid object schema.
    InvalidSchema {
        /// The tool.
        tool: String,
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A tool name outside the spec's 1-128 characters of `[A-Za-z0-9_.-]`.
    InvalidToolName(String),
    /// A resource template is not a valid RFC 6570 template.
    InvalidTemplate {
        /// The template.
        template: String,
        /// What is wrong.
        reason: String,
    },
    /// A completion was registered for a prompt or template that does not exist.
    UnknownCompletionTarget {
        /// `prompt` or `resource template`.
        kind: &'static str,
        /// Its name or URI template.
        name: String,
    },
    /// A limit in the options is zero or otherwise unusable.
    InvalidOption(&'static str),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Duplicate { kind, name } => write!(f, "duplicate {kind} {name:?}"),
            BuildError::InvalidSchema {
                tool,
                which,
                reason,
            } => write!(f, "invalid {which} of tool {tool:?}: {reason}"),
            BuildError::InvalidToolName(e) => write!(
                f,
                "invalid tool name {e:?}: use 1-128 characters from A-Z a-z 0-9 _ - ."
            ),
            BuildError::InvalidTemplate { template, reason } => {
                write!(f, "invalid URI template {template:?}: {reason}")
            }
            BuildError::UnknownCompletionTarget { kind, name } => {
                write!(f, "completion for unknown {kind} {name:?}")
            }
            BuildError::InvalidOption(e) => write!(f, "invalid option: {e}"),
        }
    }
}

impl std::error::Error for BuildError {}

/// Why [`Server::serve`](crate::Server::serve) stopped with an error: the transport failed.
/// A clean close (end of input, the peer hung up) is `Ok`.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The transport failed (an I/O error reading or writing, a transport-specific failure).
    Transport(TransportError),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Transport(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Transport(e) => e.source(),
        }
    }
}

impl From<TransportError> for ServeError {
    fn from(e: TransportError) -> Self {
        ServeError::Transport(e)
    }
}

impl From<ServeError> for std::io::Error {
    fn from(e: ServeError) -> Self {
        match e {
            ServeError::Transport(TransportError::Io(io)) => io,
            other => std::io::Error::other(other),
        }
    }
}

/// A JSON-RPC error of the model (`mcp-types`) as the engine sends it.
pub(crate) fn rpc_error(e: mcp_types::RpcError) -> mcp_jsonrpc::ErrorObject {
    let error = mcp_jsonrpc::ErrorObject::new(e.code, e.message);
    match &e.data {
        Some(data) => with_data(error, data),
        None => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_capability_names_the_nested_path() {
        let e = AskError::MissingCapability("elicitation.url").to_error_object();
        assert_eq!(e.code, codes::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            e.data.unwrap().get(),
            r#"{"requiredCapabilities":{"elicitation":{"url":{}}}}"#
        );
        let e = AskError::MissingCapability("sampling").to_error_object();
        assert_eq!(
            e.data.unwrap().get(),
            r#"{"requiredCapabilities":{"sampling":{}}}"#
        );
    }

    #[test]
    fn resource_not_found_carries_the_uri() {
        let e = resource_not_found("test://x");
        assert_eq!(e.code, codes::INVALID_PARAMS);
        assert_eq!(e.data.unwrap().get(), r#"{"uri":"test://x"}"#);
    }
}
