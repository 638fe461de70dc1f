//! The fixtures the official Model Context Protocol conformance suite runs against, written on
//! the SDK's public API only.
//!
//! * [`fixture::build`]: the server with every tool, resource, template and prompt the server
//!   scenarios call (the `everything-server` binary serves it over Streamable HTTP).
//! * [`client::run`]: what the `everything-client` binary does for each client scenario.
//! * [`bridge::serve_connection`]: runs a [`mcp_server::Server`] session over one
//!   [`mcp_jsonrpc::Connection`] handed out by the HTTP transport.
//!
//! ```no_run
//! use mcp_conformance::{bridge, fixture};
//! use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
//!
//! # #[tokio::main]
//! # async fn main() -> std::io::Result<()> {
//! let server = fixture::build();
//! let service = StreamableHttpService::builder(move |connection| {
//!     bridge::serve_connection(server.clone(), connection)
//! })
//! .config(HttpServerConfig::default().path("/mcp"))
//! .build();
//! service.serve("127.0.0.1:3000".parse().unwrap()).await
//! # }
//! ```
#![deny(missing_docs)]

pub mod bridge;
pub mod client;
pub mod fixture;
