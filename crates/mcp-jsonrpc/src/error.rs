//! Error codes, the JSON-RPC error object and the crate's error types.

use std::fmt;
use std::io;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::Id;
use crate::message::Response;

/// The error codes: JSON-RPC 2.0's, which the engine itself answers with, and MCP's. The same
/// module as `mcp_types::error_codes`, their one home.
pub use mcp_types::error_codes as codes;

/// The `error` member of a JSON-RPC error response.
///
/// ```
/// use mcp_jsonrpc::{ErrorObject, codes};
///
/// let e = ErrorObject::method_not_found("tools/frobnicate");
/// assert_eq!(e.code, codes::METHOD_NOT_FOUND);
/// let with_data = ErrorObject::invalid_params("missing `name`")
///     .with_data(&serde_json::json!({"field": "name"}))
///     .unwrap();
/// assert_eq!(with_data.data.unwrap().get(), r#"{"field":"name"}"#);
/// ```
#[derive(Debug, Clone, Serialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: i64,
    /// A short description of the error.
    pub message: String,
    /// Additional information, kept as raw JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<RawValue>>,
}

impl PartialEq for ErrorObject {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.data.as_ref().map(|d| d.get()) == other.data.as_ref().map(|d| d.get())
    }
}

impl ErrorObject {
    /// An error with the given code and message and no data.
    #[cold]
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data`, serialized from any [`Serialize`] value.
    pub fn with_data<T: Serialize + ?Sized>(mut self, data: &T) -> Result<Self, serde_json::Error> {
        self.data = Some(serde_json::value::to_raw_value(data)?);
        Ok(self)
    }

    /// `-32700`: the bytes received are not valid JSON.
    #[cold]
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        Self::new(codes::PARSE_ERROR, format!("Parse error: {detail}"))
    }

    /// `-32600`: the JSON received is not a valid request.
    #[cold]
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        Self::new(codes::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }

    /// `-32601`: the method does not exist.
    #[cold]
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    /// `-32602`: the parameters are invalid.
    #[cold]
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        Self::new(codes::INVALID_PARAMS, format!("Invalid params: {detail}"))
    }

    /// `-32603`: an internal error.
    #[cold]
    pub fn internal_error(detail: impl fmt::Display) -> Self {
        Self::new(codes::INTERNAL_ERROR, format!("Internal error: {detail}"))
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// A JSON value that is not a valid JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidMessage {
    /// The request id, when the value carried a valid one.
    pub id: Option<Id>,
    /// The error to answer with (`-32600`).
    pub error: ErrorObject,
    /// Whether the value looked like a response (no `method`, but `result` or `error`).
    /// Responses are never answered, so the engine only logs these.
    pub response_like: bool,
}

impl InvalidMessage {
    /// The error response to send back, or `None` for a malformed response (never answered).
    pub fn to_response(&self) -> Option<Response> {
        if self.response_like {
            None
        } else {
            Some(Response::error(self.id.clone(), self.error.clone()))
        }
    }
}

impl fmt::Display for InvalidMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.id {
            Some(id) => write!(f, "{} (id {id})", self.error.message),
            None => f.write_str(&self.error.message),
        }
    }
}

impl std::error::Error for InvalidMessage {}

/// A frame that could not be turned into a message or batch.
///
/// Every variant is recoverable: the codec has already skipped to the next frame boundary, and
/// [`FrameError::to_response`] gives the error answer (with `id: null` unless the frame carried a
/// valid id) that the spec requires.
#[derive(Debug)]
#[non_exhaustive]
pub enum FrameError {
    /// The frame is not valid JSON (or not valid UTF-8). Answered with `-32700`.
    Parse(serde_json::Error),
    /// The frame is valid JSON but not a valid message. Answered with `-32600`.
    Invalid(InvalidMessage),
    /// The frame is an empty JSON array. Answered with `-32600`.
    EmptyBatch,
    /// The frame is a batch with more elements than allowed. Answered with `-32600`.
    BatchTooLarge {
        /// The configured maximum number of batch elements.
        limit: usize,
    },
    /// The frame is larger than the configured maximum; it was skipped without being buffered.
    /// Answered with `-32600`.
    TooLarge {
        /// The configured maximum frame size in bytes.
        limit: usize,
    },
    /// A framing header is malformed (`Content-Length` framing, SSE). Answered with `-32700`.
    Header(String),
    /// The stream ended in the middle of a frame. Not answered: the peer is gone.
    Truncated(usize),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Parse(e) => write!(f, "parse error: {e}"),
            FrameError::Invalid(m) => write!(f, "invalid message: {m}"),
            FrameError::EmptyBatch => f.write_str("empty batch"),
            FrameError::BatchTooLarge { limit } => {
                write!(f, "batch has more than {limit} elements")
            }
            FrameError::TooLarge { limit } => {
                write!(f, "frame exceeds the maximum size of {limit} bytes")
            }
            FrameError::Header(h) => write!(f, "bad frame header: {h}"),
            FrameError::Truncated(n) => {
                write!(f, "stream ended inside a frame ({n} bytes left over)")
            }
        }
    }
}

impl std::error::Error for FrameError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FrameError::Parse(e) => Some(e),
            FrameError::Invalid(m) => Some(m),
            _ => None,
        }
    }
}

impl FrameError {
    /// The JSON-RPC error object describing this failure.
    pub fn error_object(&self) -> ErrorObject {
        match self {
            FrameError::Parse(e) => ErrorObject::parse_error(e),
            FrameError::Invalid(m) => m.error.clone(),
            FrameError::EmptyBatch => ErrorObject::invalid_request("empty batch"),
            FrameError::BatchTooLarge { limit } => {
                ErrorObject::invalid_request(format!("batch has more than {limit} elements"))
            }
            FrameError::TooLarge { limit } => ErrorObject::invalid_request(format!(
                "message exceeds the maximum size of {limit} bytes"
            )),
            FrameError::Header(h) => ErrorObject::parse_error(format!("bad frame header: {h}")),
            FrameError::Truncated(n) => {
                ErrorObject::parse_error(format!("stream ended inside a frame ({n} bytes)"))
            }
        }
    }

    /// The error response to send back, if the spec asks for one.
    pub fn to_response(&self) -> Option<Response> {
        match self {
            FrameError::Invalid(m) => m.to_response(),
            FrameError::Truncated(_) => None,
            other => Some(Response::error(None, other.error_object())),
        }
    }
}

/// A failure of the underlying transport.
#[derive(Debug)]
#[non_exhaustive]
pub enum TransportError {
    /// An I/O error.
    Io(io::Error),
    /// The transport closed, with a human-readable reason (for example a child's exit status).
    Closed(String),
    /// Any other transport failure.
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Io(e) => write!(f, "I/O error: {e}"),
            TransportError::Closed(reason) => write!(f, "connection closed: {reason}"),
            TransportError::Other(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TransportError::Io(e) => Some(e),
            // transparent: the wrapped error's own source
            TransportError::Other(e) => e.source(),
            TransportError::Closed(_) => None,
        }
    }
}

impl From<io::Error> for TransportError {
    fn from(e: io::Error) -> Self {
        TransportError::Io(e)
    }
}

/// Why an outgoing request did not produce a result.
#[derive(Debug)]
#[non_exhaustive]
pub enum CallError {
    /// The peer answered with an error.
    Rpc(ErrorObject),
    /// No response arrived in time; `notifications/cancelled` was sent.
    Timeout,
    /// The request was cancelled locally.
    Cancelled,
    /// The connection closed before a response arrived.
    Closed(String),
    /// The transport failed.
    Transport(TransportError),
    /// Params could not be encoded, or the result could not be decoded into the requested type.
    Decode(serde_json::Error),
    /// The peer sent a malformed response for this request.
    InvalidResponse(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Rpc(e) => write!(f, "peer returned an error: {e}"),
            CallError::Timeout => f.write_str("request timed out"),
            CallError::Cancelled => f.write_str("request cancelled"),
            CallError::Closed(reason) => write!(f, "connection closed: {reason}"),
            CallError::Transport(e) => write!(f, "transport error: {e}"),
            CallError::Decode(e) => write!(f, "could not encode or decode a payload: {e}"),
            CallError::InvalidResponse(why) => write!(f, "invalid response: {why}"),
        }
    }
}

impl std::error::Error for CallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CallError::Transport(e) => Some(e),
            CallError::Decode(e) => Some(e),
            _ => None,
        }
    }
}
