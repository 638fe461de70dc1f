//! Shared helpers for the cross-crate tests in `tests/tests/`: reading results
//! ([`content`]), serving and driving Streamable HTTP without the SDK's client ([`http`]),
//! finding the npm packages of the interop tests ([`interop`]), and calls through a bare
//! JSON-RPC peer ([`rpc`]). The `mcp` command's tests are `mcp-cli`'s own.
//!
//! The test files under `tests/tests/` each build as their own crate; what more than one of them
//! needs lives here, once.

pub mod content;
pub mod http;
pub mod interop;
pub mod rpc;

/// The code blocks of `README.md`, compiled as doctests so the tour cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// The code blocks of `docs/server.md`, compiled as doctests too (`docs/client.md` and
/// `docs/auth.md` are doctests of their crates).
#[cfg(doctest)]
#[doc = include_str!("../../docs/server.md")]
pub struct ServerGuideDoctests;
