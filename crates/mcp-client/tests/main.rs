//! The integration tests of this package, one module per file of `tests/`, in one test binary
//! (one link of the dependencies instead of one per file). A new file `tests/NAME.rs` runs
//! once it is declared here as `mod NAME;` (`mcp-tests` checks every package for this).

// Shared by the test modules (and compiled into `mcp-tests` too).
mod support;

// One module per test file.
mod connect_budget;
mod negotiation;
