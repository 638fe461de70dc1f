//! Benchmark harness of the MCP SDK: echo servers built on the SDK, "limit" echo servers built
//! with nothing but `serde_json` and hyper, and a load driver speaking raw JSON-RPC (so it
//! measures servers, not a client). `scripts/bench` runs everything in interleaved rounds and
//! writes `docs/performance.md`.
//!
//! The binaries: `limit-stdio`, `limit-http`, `sdk-echo` (servers), `driver` (the raw load
//! generator), `sdk-client-driver` (the SDK's client as a load generator, for client-side
//! figures) and `bench-run` (the orchestrator).
#![deny(missing_docs)]

pub mod args;
pub mod driver;
pub mod echo;
pub mod lines;
pub mod load;
#[cfg(feature = "otel")]
pub mod otel;
pub mod procfs;
pub mod report;
pub mod runtime;
pub mod stats;
