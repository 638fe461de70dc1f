//! The integration tests of this package, one module per file of `tests/`, in one test binary
//! (one link of the dependencies instead of one per file). A new file `tests/NAME.rs` runs
//! once it is declared here as `mod NAME;` (`mcp-tests` checks every package for this).

// Shared by several test modules.
#[cfg(feature = "server")]
#[path = "support/http.rs"]
mod http;
mod support;

// One module per test file.
#[cfg(feature = "server")]
mod replicas;
mod store;
#[cfg(feature = "server")]
mod tasks;
