//! The integration tests of this package, one module per file of `tests/`, in one test binary
//! (one link of the dependencies instead of one per file). A new file `tests/NAME.rs` runs
//! once it is declared here as `mod NAME;` (see the check at the end).

// Shared by several test modules.
mod client_support;
mod http_client_support;
mod stateless_support;
#[path = "../../crates/mcp-auth/tests/support/mod.rs"]
mod support;
mod tasks_support;

// One module per test file.
mod auth_dpop;
mod auth_http_e2e;
mod cli_e2e;
mod cli_login;
mod cli_shell;
mod client_host_http;
mod client_interop;
mod client_stateless;
mod client_stdio;
mod docs;
mod error_codes;
mod http_client_e2e;
mod http_client_interop;
mod http_client_params;
mod http_client_streamable;
mod http_server_interop;
mod server_http;
mod server_interop;
mod server_limits;
mod server_stdio;
mod skills;
mod stateless_dual_era;
mod stateless_features;
mod stateless_request_state;
mod tasks_bounds;
mod tasks_eras;
mod tasks_lifecycle;
mod transcripts;

/// Every `tests/*.rs` file is a module of this harness (or a test target of its own in
/// Cargo.toml): a file that is not would silently never run.
#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = include_str!("main.rs");
    let own_targets: &[&str] = &["otel_spans", "otel_cli"];
    for entry in std::fs::read_dir(&dir).expect("the tests directory") {
        let path = entry.expect("a directory entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "rs") && stem != "main" {
            assert!(
                main.contains(&format!("mod {stem};")) || own_targets.contains(&stem),
                "tests/{stem}.rs is not declared in tests/main.rs: add `mod {stem};`"
            );
        }
    }
}
