//! The fixtures the official Model Context Protocol conformance suite runs against, written on
//! the SDK's public API only.
//!
//! * [`fixture::build`]: the server with every tool, resource, template and prompt the server
//!   scenarios call (the `everything-server` binary serves it over Streamable HTTP).
//! * [`client::run`]: what the `everything-client` binary does for each client scenario.
//! * [`skills::set`]: the skills the server serves (the Skills extension).
//!
//! Each HTTP session is served by [`mcp_server::Server::serve`] on the connection the transport
//! hands out:
//!
//! ```no_run
//! use mcp_conformance::fixture;
//! use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
//!
//! # #[tokio::main]
//! # async fn main() -> std::io::Result<()> {
//! let server = fixture::build();
//! let service = StreamableHttpService::builder(server.connection_handler())
//!     .config(HttpServerConfig::default().path("/mcp"))
//!     .build();
//! service.serve("127.0.0.1:3000".parse().unwrap()).await
//! # }
//! ```
#![deny(missing_docs)]

pub mod client;
pub mod fixture;
pub mod skills;
#[cfg(feature = "otel")]
pub mod telemetry;
