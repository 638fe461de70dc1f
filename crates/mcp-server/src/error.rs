//! Errors: JSON-RPC error objects, tool errors, errors of server-to-client calls and of building
//! a server.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// JSON-RPC and MCP error codes used by the server.
pub mod codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i32 = -32700;
    /// The JSON is not a valid request object.
    pub const INVALID_REQUEST: i32 = -32600;
    /// The method does not exist in the negotiated revision.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Invalid method parameters (unknown tool, bad cursor, unknown resource...).
    pub const INVALID_PARAMS: i32 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// A request arrived before the session was initialized (the code the TypeScript and Python
    /// SDKs use for this, in the implementation-defined server-error range).
    pub const NOT_INITIALIZED: i32 = -32002;
    /// The client lacks a capability the request needs.
    pub const MISSING_CAPABILITY: i32 = -32021;
    /// The request was cancelled (used for server-to-client requests that were abandoned).
    pub const REQUEST_CANCELLED: i32 = -32800;
    /// A URL-mode elicitation is required (2025-11-25).
    pub const URL_ELICITATION_REQUIRED: i32 = -32042;
}

/// A JSON-RPC error object, as sent in an error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub struct ErrorData {
    /// The error code (see [`codes`]).
    pub code: i32,
    /// A short description.
    pub message: String,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl fmt::Display for ErrorData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl ErrorData {
    /// An error with a code and a message.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32602` invalid params.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    /// `-32601` method not found.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            codes::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    }

    /// `-32603` internal error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL_ERROR, message)
    }

    /// `-32600` invalid request.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_REQUEST, message)
    }
}

/// An error returned by a tool.
///
/// An *execution* error (the tool ran and failed, or its arguments were wrong) becomes a result
/// with `isError: true` that the model can read; a *protocol* error becomes a JSON-RPC error
/// response.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool failed; the message is shown to the model as an `isError` result.
    #[error("{0}")]
    Execution(String),
    /// A protocol-level failure, sent as a JSON-RPC error.
    #[error("{0}")]
    Protocol(ErrorData),
}

impl ToolError {
    /// An execution error with a message.
    pub fn execution(message: impl fmt::Display) -> Self {
        Self::Execution(message.to_string())
    }
}

impl From<ErrorData> for ToolError {
    fn from(e: ErrorData) -> Self {
        Self::Protocol(e)
    }
}

impl From<CallError> for ToolError {
    fn from(e: CallError) -> Self {
        Self::Execution(e.to_string())
    }
}

/// Why a request from the server to the client (sampling, elicitation, roots) failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The client answered with an error.
    #[error("the client answered with an error: {0}")]
    Rpc(ErrorData),
    /// The client did not declare the capability the request needs.
    #[error("the client did not declare the `{0}` capability")]
    MissingCapability(&'static str),
    /// The negotiated revision does not have the method or feature.
    #[error("`{feature}` is not available in protocol revision {version}")]
    NotInRevision {
        /// What was asked for.
        feature: &'static str,
        /// The negotiated revision.
        version: String,
    },
    /// The request that asked was cancelled.
    #[error("the request was cancelled")]
    Cancelled,
    /// The client did not answer in time.
    #[error("the client did not answer within the timeout")]
    Timeout,
    /// The connection closed.
    #[error("the connection is closed")]
    Closed,
    /// Too many server-to-client requests are waiting for an answer.
    #[error("too many requests to the client are pending")]
    Busy,
    /// The client's answer did not have the expected shape.
    #[error("the client's answer is invalid: {0}")]
    InvalidResponse(String),
}

impl CallError {
    /// The JSON-RPC error a handler can return for this failure.
    pub fn to_error_data(&self) -> ErrorData {
        match self {
            CallError::Rpc(e) => e.clone(),
            CallError::MissingCapability(cap) => ErrorData::new(
                codes::MISSING_CAPABILITY,
                format!("the client did not declare the `{cap}` capability"),
            )
            .with_data(serde_json::json!({"requiredCapabilities": {*cap: {}}})),
            other => ErrorData::internal(other.to_string()),
        }
    }
}

impl From<CallError> for ErrorData {
    fn from(e: CallError) -> Self {
        e.to_error_data()
    }
}

/// Why [`ServerBuilder::build`](crate::ServerBuilder::build) refused the configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools, prompts, resources or templates share a name or URI.
    #[error("duplicate {kind} {name:?}")]
    Duplicate {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The duplicated name or URI.
        name: String,
    },
    /// A tool's input or output schema is not a valid object schema.
    #[error("invalid {which} of tool {tool:?}: {reason}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A tool name outside the spec's 1-128 characters of `[A-Za-z0-9_.-]`.
    #[error("invalid tool name {0:?}: use 1-128 characters from A-Z a-z 0-9 _ - .")]
    InvalidToolName(String),
    /// A resource template is not a valid RFC 6570 template.
    #[error("invalid URI template {template:?}: {reason}")]
    InvalidTemplate {
        /// The template.
        template: String,
        /// What is wrong.
        reason: String,
    },
    /// A limit in the options is zero or otherwise unusable.
    #[error("invalid option: {0}")]
    InvalidOption(&'static str),
}
