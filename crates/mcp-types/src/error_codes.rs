//! JSON-RPC error codes used by MCP.
//!
//! The codes the schemas fix as constants (`ParseError` .. `UnsupportedProtocolVersionError`)
//! plus those the specification text defines (`RESOURCE_NOT_FOUND`).

/// Invalid JSON was received (`ParseError`).
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object (`InvalidRequestError`).
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available in the negotiated revision
/// (`MethodNotFoundError`).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters (`InvalidParamsError`).
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error (`InternalError`).
pub const INTERNAL_ERROR: i64 = -32603;
/// A resource was not found (`resources/read` of an unknown URI).
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// The request needs the user to complete a URL elicitation first
/// (`URLElicitationRequiredError`, 2025-11-25).
pub const URL_ELICITATION_REQUIRED: i64 = -32042;
/// HTTP headers do not match the request body (`HeaderMismatchError`, 2026-07-28).
pub const HEADER_MISMATCH: i64 = -32020;
/// The request needs a client capability the client did not declare
/// (`MissingRequiredClientCapabilityError`, 2026-07-28).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// The server does not support the requested protocol version
/// (`UnsupportedProtocolVersionError`, 2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
