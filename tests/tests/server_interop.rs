//! Interop: the TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned in
//! `tests/interop/package.json`) connects to the example server over stdio, lists and calls
//! tools, reads a resource and gets a prompt. Requires `node` and `npm ci --prefix tests/interop`
//! (done by `scripts/test`); the test fails, never skips, when they are missing.

use std::process::Command;

#[test]
fn typescript_client_talks_to_the_example_server() {
    mcp_tests::interop::package("sdk");
    let interop = mcp_tests::interop::dir();
    let output = Command::new("node")
        .arg(interop.join("ts_client_server_smoke.mjs"))
        .arg(env!("CARGO_BIN_EXE_everything-stdio"))
        .current_dir(&interop)
        .output()
        .expect("`node` must be installed to run the interop test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("interop ok"),
        "interop check failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
}
