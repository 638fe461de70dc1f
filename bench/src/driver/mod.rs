//! The raw JSON-RPC load driver: it speaks the wire directly (no SDK), so what it measures is the
//! server. [`stdio`] drives a child process over its stdin and stdout; [`http`] drives a
//! Streamable HTTP endpoint over keep-alive connections.

pub mod http;
pub mod stdio;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::load::{DEFAULT_MAX_SAMPLES, Protocol, Result, Stop};
use crate::procfs::{self, Memory};

/// How a throughput run loads the server.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The wire revision.
    pub protocol: Protocol,
    /// Requests kept in flight (1 = sequential).
    pub inflight: usize,
    /// Warm-up before the measured window opens.
    pub warmup: Duration,
    /// When the measured window closes.
    pub stop: Stop,
    /// Length of the echoed text.
    pub text_len: usize,
    /// Longest message accepted from the server, bytes.
    pub max_message: usize,
    /// Latency samples kept.
    pub max_samples: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            protocol: Protocol::Session,
            inflight: 1,
            warmup: Duration::from_millis(500),
            stop: Stop::After(Duration::from_secs(3)),
            text_len: 100,
            max_message: 4 << 20,
            max_samples: DEFAULT_MAX_SAMPLES,
        }
    }
}

/// Most requests a driver keeps in flight.
pub const MAX_INFLIGHT: usize = 1024;

/// A server process started by the driver; killed (if still running) when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
}

impl ServerProcess {
    /// Starts `command` (program and arguments). With `pipes`, its stdin and stdout are pipes
    /// for a stdio session; otherwise stdin is empty and stdout is discarded (the driver's own
    /// stdout carries its report). Its stderr is the driver's.
    pub fn spawn(command: &[String], pipes: bool) -> Result<Self> {
        let Some((program, args)) = command.split_first() else {
            return Err(crate::fail!("no server command given (put it after `--`)"));
        };
        let mut cmd = Command::new(program);
        cmd.args(args).stderr(Stdio::inherit());
        if pipes {
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        } else {
            cmd.stdin(Stdio::null()).stdout(Stdio::null());
        }
        let child = cmd
            .spawn()
            .map_err(|e| crate::fail!("cannot start {program:?}: {e}"))?;
        Ok(Self { child })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child, for taking its pipes.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Current and peak resident memory, if the process is still there.
    pub fn memory(&self) -> Option<Memory> {
        procfs::memory(self.pid()).ok()
    }

    /// Fails if the process has exited.
    pub fn check_running(&mut self) -> Result<()> {
        match self.child.try_wait()? {
            Some(status) => Err(crate::fail!("server exited early: {status}")),
            None => Ok(()),
        }
    }

    /// Waits up to `grace` for the process to exit on its own, then kills it.
    pub fn finish(mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Replaces `{addr}` and `{port}` in the command's words.
///
/// ```
/// let command = ["server".to_string(), "--http".into(), "{addr}".into()];
/// let out = mcp_bench::driver::substitute(&command, "127.0.0.1:4000".parse().unwrap());
/// assert_eq!(out, ["server", "--http", "127.0.0.1:4000"]);
/// ```
pub fn substitute(command: &[String], addr: std::net::SocketAddr) -> Vec<String> {
    command
        .iter()
        .map(|w| {
            w.replace("{addr}", &addr.to_string())
                .replace("{port}", &addr.port().to_string())
        })
        .collect()
}

/// A loopback address with a port that was free a moment ago.
pub fn free_local_addr() -> Result<std::net::SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?)
}
