//! Log lines on a piped stderr carry no terminal colour codes.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `mcp` with `args` and the given `RUST_LOG`, stderr piped; returns stderr.
fn stderr_of(args: &[&str], rust_log: &str, no_color: Option<&str>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp"));
    cmd.args(args)
        .env("RUST_LOG", rust_log)
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(value) = no_color {
        cmd.env("NO_COLOR", value);
    }
    let mut child = cmd.spawn().expect("the mcp binary starts");
    // Hang guard: the bundled example answers a ping at once.
    let started = Instant::now();
    while child.try_wait().expect("waiting for mcp").is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("mcp did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("the output of mcp");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn piped_log_lines_carry_no_colour_codes() {
    let stderr = stderr_of(&["ping"], "trace", None);
    assert!(
        stderr.contains("DEBUG") || stderr.contains("TRACE"),
        "the run logs something: {stderr:?}"
    );
    assert!(
        !stderr.contains("\x1b["),
        "no ANSI escape on a piped stderr: {stderr:?}"
    );
}

#[test]
fn no_color_keeps_piped_logs_plain() {
    let stderr = stderr_of(&["ping"], "trace", Some("1"));
    assert!(!stderr.is_empty());
    assert!(!stderr.contains("\x1b["), "{stderr:?}");
}
