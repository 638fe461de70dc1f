//! The library half of the `mcp` command: the [bridge] that `mcp proxy` runs. The bundled
//! example server is the `mcp-example` crate. The command itself is documented in
//! `docs/cli.md`.
#![deny(missing_docs)]

pub mod bridge;
#[cfg(feature = "otel")]
pub mod proxy_otel;
