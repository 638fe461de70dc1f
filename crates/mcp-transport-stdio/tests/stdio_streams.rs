//! `stdio()` on this process's real stdin and stdout: pipes, a socket, a regular file, `/dev/null`.
//!
//! A test's stdin and stdout belong to the test harness, so each case re-runs this test binary
//! as a child (`MCP_STDIO_TEST_CHILD=echo`) with the stdin and stdout under test. The child echoes
//! every message it receives over `stdio()`'s streams and reports on stderr which path each
//! stream took and whether the non-blocking flag was set while it ran and restored afterwards.
//! The harness is our own (`harness = false`): libtest would print its progress on the child's
//! stdout, which carries the protocol.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use mcp_jsonrpc::{Inbound, Outbound};
use rustix::fs::OFlags;

const CHILD_ENV: &str = "MCP_STDIO_TEST_CHILD";

fn main() -> ExitCode {
    if std::env::var_os(CHILD_ENV).is_some() {
        return child_echo();
    }
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let tests: &[(&str, fn())] = &[
        (
            "pipes_are_reactor_driven_and_restored",
            pipes_are_reactor_driven_and_restored,
        ),
        ("many_in_flight_over_pipes", many_in_flight_over_pipes),
        (
            "one_socket_as_stdin_and_stdout",
            one_socket_as_stdin_and_stdout,
        ),
        (
            "regular_file_stdin_uses_the_blocking_pool",
            regular_file_stdin_uses_the_blocking_pool,
        ),
        ("dev_null_stdin_ends_at_once", dev_null_stdin_ends_at_once),
        (
            "blocking_pool_mode_leaves_pipes_alone",
            blocking_pool_mode_leaves_pipes_alone,
        ),
    ];
    let mut failed = 0;
    let mut ran = 0;
    for (name, test) in tests {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        ran += 1;
        match std::panic::catch_unwind(test) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    println!("\n{ran} run, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn is_nonblocking(fd: impl AsFd) -> bool {
    rustix::fs::fcntl_getfl(fd).is_ok_and(|f| f.contains(OFlags::NONBLOCK))
}

/// The child: echoes every message back, then reports.
fn child_echo() -> ExitCode {
    let blocking_pool = std::env::var(CHILD_ENV).as_deref() == Ok("echo-blocking");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let report = runtime.block_on(async {
        let mode = if blocking_pool {
            mcp_transport_stdio::IoMode::BlockingPool
        } else {
            mcp_transport_stdio::IoMode::Auto
        };
        let (stdin, stdout) = mcp_transport_stdio::stdio_streams_with(mode);
        let mut report = format!(
            "stdin={} stdout={} ",
            path(stdin.is_reactor_driven()),
            path(stdout.is_reactor_driven())
        );
        let during = (
            is_nonblocking(std::io::stdin()),
            is_nonblocking(std::io::stdout()),
        );
        let (mut inbound, mut outbound) = mcp_transport_stdio::io(stdin, stdout).into_parts();
        while let Some(item) = inbound.next().await {
            let Ok(incoming) = item else { break };
            if let Ok(Inbound::Single(message)) = incoming.frame {
                if outbound.send(Outbound::from(message)).await.is_err() {
                    break;
                }
            }
        }
        // The reader goes first: a description it shares with the writer must stay non-blocking.
        drop(inbound);
        let writer_alone = is_nonblocking(std::io::stdout());
        drop(outbound);
        report.push_str(&format!(
            "nonblocking_during={},{} writer_alone={writer_alone} nonblocking_after={},{}",
            during.0,
            during.1,
            is_nonblocking(std::io::stdin()),
            is_nonblocking(std::io::stdout())
        ));
        report
    });
    eprintln!("{report}");
    ExitCode::SUCCESS
}

fn path(reactor: bool) -> &'static str {
    if reactor { "reactor" } else { "blocking" }
}

fn spawn(mode: &str, stdin: Stdio, stdout: Stdio) -> Child {
    let exe = std::env::current_exe().expect("test binary path");
    Command::new(exe)
        .env(CHILD_ENV, mode)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the test binary as a child")
}

fn message(i: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"echo","params":{{"n":{i}}}}}"#)
}

/// Waits for the child (at most 10 s) and returns its stderr report.
fn finish(mut child: Child) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "child failed: {status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("child did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut report = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut report)
        .expect("read stderr");
    report
}

fn assert_echoes(reader: impl Read, count: usize) {
    let mut lines = BufReader::new(reader).lines();
    for i in 0..count {
        let line = lines.next().expect("an echo").expect("readable");
        let got: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        let want: serde_json::Value = serde_json::from_str(&message(i)).expect("JSON");
        assert_eq!(got, want, "echo {i}");
    }
    assert!(lines.next().is_none(), "nothing after the echoes");
}

fn pipes_are_reactor_driven_and_restored() {
    let mut child = spawn("echo", Stdio::piped(), Stdio::piped());
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    for i in 0..3 {
        writeln!(stdin, "{}", message(i)).expect("write");
    }
    drop(stdin);
    assert_echoes(stdout, 3);
    let report = finish(child);
    assert!(
        report.contains("stdin=reactor stdout=reactor"),
        "report: {report}"
    );
    assert!(
        report.contains("nonblocking_during=true,true writer_alone=true"),
        "report: {report}"
    );
    assert!(
        report.contains("nonblocking_after=false,false"),
        "the flags are restored once the streams are dropped: {report}"
    );
}

/// Writes 2000 requests from one thread while another reads the echoes, so both pipes fill up
/// and the child has to wait for readiness in both directions.
fn many_in_flight_over_pipes() {
    const COUNT: usize = 2000;
    let mut child = spawn("echo", Stdio::piped(), Stdio::piped());
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let writer = std::thread::spawn(move || {
        for i in 0..COUNT {
            writeln!(stdin, "{}", message(i)).expect("write");
        }
    });
    assert_echoes(stdout, COUNT);
    writer.join().expect("writer thread");
    let report = finish(child);
    assert!(report.contains("stdin=reactor stdout=reactor"), "{report}");
}

/// One socket as both stdin and stdout (how inetd-style supervisors hand over a connection): the
/// two streams share one description, which must stay non-blocking until both are gone.
fn one_socket_as_stdin_and_stdout() {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socket pair");
    let theirs = OwnedFd::from(theirs);
    let theirs_too = theirs.try_clone().expect("dup");
    let child = spawn("echo", Stdio::from(theirs), Stdio::from(theirs_too));
    let mut writer = ours.try_clone().expect("dup");
    for i in 0..3 {
        writeln!(writer, "{}", message(i)).expect("write");
    }
    writer
        .shutdown(std::net::Shutdown::Write)
        .expect("shutdown");
    assert_echoes(ours, 3);
    let report = finish(child);
    assert!(
        report.contains(
            "stdin=reactor stdout=reactor nonblocking_during=true,true writer_alone=true"
        ),
        "the shared socket stays non-blocking while the writer uses it: {report}"
    );
    assert!(report.contains("nonblocking_after=false,false"), "{report}");
}

fn regular_file_stdin_uses_the_blocking_pool() {
    let path = std::env::temp_dir().join(format!("mcp-stdio-test-{}.jsonl", std::process::id()));
    {
        let mut file = std::fs::File::create(&path).expect("create");
        for i in 0..3 {
            writeln!(file, "{}", message(i)).expect("write");
        }
    }
    let file = std::fs::File::open(&path).expect("open");
    let mut child = spawn("echo", Stdio::from(file), Stdio::piped());
    let stdout = child.stdout.take().expect("stdout");
    assert_echoes(stdout, 3);
    let report = finish(child);
    let _ = std::fs::remove_file(&path);
    assert!(
        report.contains("stdin=blocking stdout=reactor nonblocking_during=false,true"),
        "a regular file keeps the blocking path and its flags: {report}"
    );
}

fn dev_null_stdin_ends_at_once() {
    let mut child = spawn("echo", Stdio::null(), Stdio::piped());
    let stdout = child.stdout.take().expect("stdout");
    assert_echoes(stdout, 0);
    let report = finish(child);
    assert!(report.contains("stdin=blocking"), "{report}");
}

fn blocking_pool_mode_leaves_pipes_alone() {
    let mut child = spawn("echo-blocking", Stdio::piped(), Stdio::piped());
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    writeln!(stdin, "{}", message(0)).expect("write");
    drop(stdin);
    assert_echoes(stdout, 1);
    let report = finish(child);
    assert!(
        report.contains("stdin=blocking stdout=blocking nonblocking_during=false,false"),
        "{report}"
    );
}
