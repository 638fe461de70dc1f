//! The integration tests of this package, one module per file of `tests/`, in one test binary
//! (one link of the dependencies instead of one per file). A new file `tests/NAME.rs` runs
//! once it is declared here as `mod NAME;` (the check at the end covers every package).

// Shared by several test modules.
mod auth_support;
mod client_support;
mod http_client_support;
#[path = "../../crates/mcp-client/tests/support/mod.rs"]
mod mcp_client_support;
mod stateless_support;
#[path = "../../crates/mcp-auth/tests/support/mod.rs"]
mod support;
mod tasks_support;

// One module per test file.
mod auth_dpop;
mod auth_http_e2e;
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

/// In every package of the workspace whose integration tests are one harness
/// (`tests/main.rs`), every `tests/*.rs` file is a module of it or a test target of its own in
/// the package's Cargo.toml: a file that is neither would silently never run.
#[test]
fn every_test_file_is_a_module() {
    use std::path::Path;
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace");
    let mut packages = vec![workspace.join("tests")];
    for dir in ["crates", "bench"] {
        for entry in std::fs::read_dir(workspace.join(dir)).expect("a directory of packages") {
            packages.push(entry.expect("a directory entry").path());
        }
    }
    let mut harnesses = 0;
    for package in packages {
        let tests = package.join("tests");
        let Ok(main) = std::fs::read_to_string(tests.join("main.rs")) else {
            continue;
        };
        harnesses += 1;
        let manifest = std::fs::read_to_string(package.join("Cargo.toml")).expect("Cargo.toml");
        for entry in std::fs::read_dir(&tests).expect("the tests directory") {
            let path = entry.expect("a directory entry").path();
            let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if path.extension().is_some_and(|e| e == "rs") && stem != "main" {
                assert!(
                    main.contains(&format!("mod {stem};"))
                        || manifest.contains(&format!("name = \"{stem}\"")),
                    "{}: tests/{stem}.rs is neither declared in tests/main.rs (add `mod {stem};`) \
                     nor a [[test]] of its own",
                    package.display()
                );
            }
        }
    }
    assert!(harnesses >= 10, "only {harnesses} test harnesses found");
}
