//! The integration tests of this package, one module per file of `tests/`, in one test binary
//! (one link of the dependencies instead of one per file). A new file `tests/NAME.rs` runs
//! once it is declared here as `mod NAME;` (see the check at the end).

// Shared by several test modules.
mod support;

// One module per test file.
mod inlet;
#[cfg(feature = "http")]
mod param_headers;
mod schemas;
mod session;
mod typed_args;

/// Every `tests/*.rs` file is a module of this harness (or a test target of its own in
/// Cargo.toml): a file that is not would silently never run.
#[test]
fn every_test_file_is_a_module() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let main = include_str!("main.rs");
    let own_targets: &[&str] = &[];
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
