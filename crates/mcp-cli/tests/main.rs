//! The integration tests of the `mcp` command, one module per file of `tests/`, in one test
//! binary (one link of the dependencies instead of one per file). A new file `tests/NAME.rs`
//! runs once it is declared here as `mod NAME;` (`mcp-tests` checks every package for this).
//! `tests/otel_cli.rs` is a binary of its own: it needs the `otel` feature.

// Shared by several test modules.
mod cli;
#[path = "../../mcp-auth/tests/support/mod.rs"]
mod support;

// One module per test file.
mod cli_e2e;
mod cli_login;
mod cli_shell;
mod plain_logs;
