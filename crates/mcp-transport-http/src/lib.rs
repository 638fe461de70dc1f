//! Streamable HTTP transport of the Model Context Protocol on hyper, server and client, plus the
//! HTTP+SSE transport of 2024-11-05 for older peers.
//!
//! Features: `server` (the [`server::StreamableHttpService`]), `client`, both on by default;
//! `rustls` for https URLs on the client; `auth` (an `mcp_auth::AuthProvider` on the client)
//! and `server-auth` (`mcp_auth::ResourceServer` as the server's [`server::Authenticator`]).
#![deny(missing_docs)]

#[cfg(feature = "server")]
pub mod server;

#[cfg(feature = "client")]
pub mod client;

/// The guide `docs/auth.md`: its Rust examples (protecting an HTTP server among them) are
/// compiled as doctests of this crate.
#[cfg(all(doctest, feature = "server-auth"))]
#[doc = include_str!("../../../docs/auth.md")]
pub struct AuthGuide;
