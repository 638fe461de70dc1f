//! The integration tests of this package, one module per file of `tests/`, in one test binary
//! (one link of the dependencies instead of one per file). A new file `tests/NAME.rs` runs
//! once it is declared here as `mod NAME;` (`mcp-tests` checks every package for this).

// Shared by several test modules.
mod support;

// One module per test file.
mod inlet;
#[cfg(feature = "http")]
mod param_headers;
// Their schemas state constraints the types do not enforce.
#[cfg(feature = "validation")]
mod schemas;
mod session;
mod typed_args;
