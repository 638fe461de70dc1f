//! The npm side of the interop tests: `tests/interop`, where `npm ci --prefix tests/interop`
//! (run by `scripts/test`) installs the TypeScript SDK and the reference servers. The helpers
//! fail the test, never skip it, when Node.js or a package is missing, and say what to do.

use std::path::PathBuf;
use std::process::Command;

/// `tests/interop`: the scripts, and the working directory for `node`.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("interop")
}

/// The installed `@modelcontextprotocol/<package>`; panics, saying what to do, when `node`
/// does not run or the package is not installed.
pub fn package(package: &str) -> PathBuf {
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.as_ref().is_ok_and(|o| o.status.success()),
        "`node` is required for the interop tests (install Node.js 18 or later): {node:?}"
    );
    let path = dir()
        .join("node_modules/@modelcontextprotocol")
        .join(package);
    assert!(
        path.is_dir(),
        "{} is missing: run `npm ci --prefix tests/interop` (scripts/test does)",
        path.display()
    );
    path
}

/// The entry point (`dist/index.js`) of a reference server package, checked as [`package`].
pub fn reference_server(name: &str) -> PathBuf {
    let script = package(name).join("dist/index.js");
    assert!(
        script.is_file(),
        "{} is missing: run `npm ci --prefix tests/interop` (scripts/test does)",
        script.display()
    );
    script
}
