//! The child-process transport against real processes (`sh`, `cat`).
#![cfg(unix)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use mcp_jsonrpc::{Inbound, Message, Notification, Outbound, TransportError};
use mcp_transport_stdio::{ServerCommand, ShutdownTimeouts, StderrMode};

fn note(method: &str) -> Message {
    Message::from(Notification::new(method, None))
}

fn quick() -> ShutdownTimeouts {
    ShutdownTimeouts {
        after_close: Duration::from_millis(300),
        after_terminate: Duration::from_millis(300),
    }
}

#[tokio::test]
async fn messages_round_trip_through_a_child() {
    let (conn, child) = ServerCommand::new("cat").spawn().unwrap();
    let (mut inbound, mut outbound) = conn.into_parts();
    for m in ["a", "b", "c"] {
        outbound.send(Outbound::from(note(m))).await.unwrap();
    }
    for m in ["a", "b", "c"] {
        let got = inbound.next().await.unwrap().unwrap();
        assert_eq!(got.frame.unwrap(), Inbound::Single(note(m)));
    }
    let status = child.shutdown().await.unwrap();
    assert!(
        status.success(),
        "cat exits cleanly when its stdin closes: {status}"
    );
}

#[tokio::test]
async fn exit_status_becomes_the_close_reason() {
    let (conn, child) = ServerCommand::new("sh")
        .args(["-c", "exit 3"])
        .spawn()
        .unwrap();
    let (mut inbound, _outbound) = conn.into_parts();
    let item = tokio::time::timeout(Duration::from_secs(5), inbound.next())
        .await
        .expect("the reader ends promptly")
        .expect("a final item");
    match item {
        Err(TransportError::Closed(reason)) => {
            assert!(reason.contains("exit status: 3"), "reason: {reason}");
            assert!(reason.contains("sh"), "reason names the program: {reason}");
        }
        other => panic!("expected a close reason, got {other:?}"),
    }
    assert!(inbound.next().await.is_none());
    assert_eq!(child.wait().await.unwrap().code(), Some(3));
}

#[tokio::test]
async fn shutdown_escalates_to_sigterm() {
    // `sleep` never reads stdin, so closing it does nothing; SIGTERM ends it.
    let (_conn, child) = ServerCommand::new("sleep")
        .arg("30")
        .shutdown_timeouts(quick())
        .spawn()
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(5), child.shutdown())
        .await
        .unwrap()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(15), "terminated by SIGTERM: {status}");
}

#[tokio::test]
async fn shutdown_escalates_to_sigkill() {
    let (_conn, child) = ServerCommand::new("sh")
        .args(["-c", "trap '' TERM; while :; do sleep 0.05; done"])
        .shutdown_timeouts(quick())
        .spawn()
        .unwrap();
    // Give the shell time to install its trap.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = tokio::time::timeout(Duration::from_secs(5), child.shutdown())
        .await
        .unwrap()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9), "killed by SIGKILL: {status}");
}

#[tokio::test]
async fn dropping_the_handle_kills_the_process() {
    let (_conn, child) = ServerCommand::new("sleep").arg("30").spawn().unwrap();
    let pid = child.id().unwrap();
    drop(child);
    let gone = async {
        loop {
            // `kill -0` fails once the process is gone (reaped by the monitor task).
            let alive = std::process::Command::new("kill")
                .args(["-0", &pid.to_string()])
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap()
                .success();
            if !alive {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), gone)
        .await
        .unwrap();
}

#[tokio::test]
async fn stderr_lines_reach_the_callback() {
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&lines);
    let (_conn, child) = ServerCommand::new("sh")
        .args(["-c", "echo one >&2; printf 'two\\r\\n' >&2"])
        .stderr(StderrMode::Callback(Arc::new(move |l: &str| {
            sink.lock().unwrap().push(l.to_owned())
        })))
        .spawn()
        .unwrap();
    child.wait().await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while lines.lock().unwrap().len() < 2 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        *lines.lock().unwrap(),
        vec!["one".to_owned(), "two".to_owned()]
    );
}

#[tokio::test]
async fn environment_and_working_directory_are_passed() {
    let dir = std::env::temp_dir();
    let (conn, child) = ServerCommand::new("sh")
        .args([
            "-c",
            r#"printf '{"jsonrpc":"2.0","method":"%s","params":{"cwd":"%s"}}\n' "$MCP_TEST_METHOD" "$(pwd)""#,
        ])
        .env("MCP_TEST_METHOD", "env/works")
        .current_dir(&dir)
        .spawn()
        .unwrap();
    let (mut inbound, _out) = conn.into_parts();
    let got = inbound.next().await.unwrap().unwrap().frame.unwrap();
    let Inbound::Single(Message::Notification(n)) = got else {
        panic!("expected a notification, got {got:?}");
    };
    assert_eq!(n.method, "env/works");
    let params: serde_json::Value = serde_json::from_str(n.params.unwrap().get()).unwrap();
    let cwd = std::fs::canonicalize(params["cwd"].as_str().unwrap()).unwrap();
    assert_eq!(cwd, std::fs::canonicalize(&dir).unwrap());
    child.wait().await.unwrap();
}

#[tokio::test]
async fn a_bad_line_from_the_server_does_not_end_the_stream() {
    let (conn, child) = ServerCommand::new("sh")
        .args([
            "-c",
            r#"echo 'not json'; echo '{"jsonrpc":"2.0","method":"ok"}'"#,
        ])
        .spawn()
        .unwrap();
    let (mut inbound, _out) = conn.into_parts();
    let first = inbound.next().await.unwrap().unwrap();
    assert!(first.frame.is_err(), "garbage is a recoverable frame error");
    let second = inbound.next().await.unwrap().unwrap();
    assert_eq!(second.frame.unwrap(), Inbound::Single(note("ok")));
    child.wait().await.unwrap();
}

#[tokio::test]
async fn spawning_a_missing_program_fails_cleanly() {
    let err = ServerCommand::new("/nonexistent/mcp-server-binary")
        .spawn()
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}

/// Whether `pid` names a live process (a zombie waiting for its parent counts as gone).
fn alive(pid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else {
        return false;
    };
    if rustix::process::test_kill_process(pid).is_err() {
        return false;
    }
    // The field after the parenthesised command name is the state; `Z` is a zombie.
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero())) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_none_or(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

/// A shell that ignores SIGTERM, with a background `sleep` (which inherits that) whose pid it
/// writes to a file: a wrapper script's server that outlives the signal.
fn stubborn_wrapper(pid_file: &std::path::Path) -> ServerCommand {
    let script = format!(
        "trap '' TERM; sleep 1000 & echo $! > '{}'; wait",
        pid_file.display()
    );
    ServerCommand::new("sh")
        .args(["-c", &script])
        .shutdown_timeouts(quick())
}

/// Waits (hang guard: 10 s) for the pid the wrapper writes.
async fn read_pid(pid_file: &std::path::Path) -> i32 {
    let read = async {
        loop {
            if let Ok(text) = std::fs::read_to_string(pid_file) {
                if let Ok(pid) = text.trim().parse::<i32>() {
                    return pid;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("the wrapper writes its grandchild's pid")
}

/// Waits (hang guard: 10 s) until `pid` is gone.
async fn assert_gone(pid: i32) {
    let gone = async {
        while alive(pid) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let outcome = tokio::time::timeout(Duration::from_secs(10), gone).await;
    if outcome.is_err() {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        panic!("the grandchild {pid} survived the server's shutdown");
    }
}

fn pid_file(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "mcp-stdio-grandchild-{tag}-{}.pid",
        std::process::id()
    ))
}

#[tokio::test]
async fn shutdown_ends_a_grandchild_that_ignores_sigterm() {
    let file = pid_file("shutdown");
    let _ = std::fs::remove_file(&file);
    let (_conn, child) = stubborn_wrapper(&file).spawn().unwrap();
    let grandchild = read_pid(&file).await;
    assert!(alive(grandchild));
    tokio::time::timeout(Duration::from_secs(10), child.shutdown())
        .await
        .expect("shutdown finishes")
        .unwrap();
    assert_gone(grandchild).await;
    let _ = std::fs::remove_file(&file);
}

#[tokio::test]
async fn dropping_the_handle_ends_the_grandchildren_too() {
    let file = pid_file("drop");
    let _ = std::fs::remove_file(&file);
    let (_conn, child) = stubborn_wrapper(&file).spawn().unwrap();
    let grandchild = read_pid(&file).await;
    drop(child);
    assert_gone(grandchild).await;
    let _ = std::fs::remove_file(&file);
}
