//! Interop: the TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned in
//! `tests/interop/package.json`) connects to the example server over stdio, lists and calls
//! tools, reads a resource and gets a prompt; and gets the typed prompt of the guide's complete
//! server (`weather`) with string arguments. Requires `node` and `npm ci --prefix tests/interop`
//! (done by `scripts/test`); those tests fail, never skip, when they are missing. The Python SDK
//! client (`pip install mcp`) does the same where it is installed, and is skipped, saying so,
//! where it is not.

use std::process::Command;

fn run_checked(mut command: Command, what: &str) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("{what} did not start: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("interop ok"),
        "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
}

#[test]
fn typescript_client_talks_to_the_example_server() {
    mcp_tests::interop::package("sdk");
    let interop = mcp_tests::interop::dir();
    let mut node = Command::new("node");
    node.arg(interop.join("ts_client_server_smoke.mjs"))
        .arg(env!("CARGO_BIN_EXE_everything-stdio"))
        .current_dir(&interop);
    run_checked(node, "the interop check");
}

#[test]
fn typescript_client_gets_a_prompt_with_typed_arguments() {
    mcp_tests::interop::package("sdk");
    let interop = mcp_tests::interop::dir();
    let mut node = Command::new("node");
    node.arg(interop.join("ts_client_typed_prompt.mjs"))
        .arg(env!("CARGO_BIN_EXE_weather"))
        .arg("stdio")
        .current_dir(&interop);
    run_checked(node, "the TypeScript typed prompt check");
}

#[test]
fn python_client_gets_a_prompt_with_typed_arguments() {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let probe = Command::new(&python)
        .args(["-c", "import mcp.client.stdio"])
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            eprintln!(
                "skipped: the Python SDK is not importable by {python} (`pip install mcp`): {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("")
            );
            return;
        }
        Err(e) => {
            eprintln!("skipped: {python} does not run: {e}");
            return;
        }
    }
    let interop = mcp_tests::interop::dir();
    let mut py = Command::new(&python);
    py.arg(interop.join("py_client_typed_prompt.py"))
        .arg(env!("CARGO_BIN_EXE_weather"))
        .arg("stdio")
        .current_dir(&interop);
    run_checked(py, "the Python typed prompt check");
}
