//! The library half of the `mcp` command: the bundled [example] server and the [bridge] that
//! `mcp proxy` runs. The command itself is documented in `docs/cli.md`.
#![deny(missing_docs)]

pub mod bridge;
pub mod example;
