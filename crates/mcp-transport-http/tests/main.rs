//! The integration tests of this package, one module per file of `tests/`, in one test binary
//! (one link of the dependencies instead of one per file). A new file `tests/NAME.rs` runs
//! once it is declared here as `mod NAME;` (`mcp-tests` checks every package for this).

// Shared by several test modules.
mod common;

// One module per test file.
mod client_sse;
mod server_auth;
mod server_direct;
mod server_http;
mod server_http2;
mod server_limits;
mod server_session_direct;
