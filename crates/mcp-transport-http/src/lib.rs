//! Streamable HTTP transport of the Model Context Protocol on hyper, server and client, plus the
//! HTTP+SSE transport of 2024-11-05 for older peers.
//!
//! Features: `server` (the [`server::StreamableHttpService`]), `client`, both on by default,
//! and `rustls` for https URLs on the client.
#![deny(missing_docs)]

#[cfg(feature = "server")]
pub mod server;

#[cfg(feature = "client")]
pub mod client;
