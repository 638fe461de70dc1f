//! The raw JSON-RPC load driver: it speaks the wire directly (no SDK), so what it measures is the
//! server. [`stdio`] drives a child process over its stdin and stdout; [`http`] drives a
//! Streamable HTTP endpoint over keep-alive connections.

pub mod http;
pub mod stdio;

use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
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
    /// The whole run (handshake included) must end within this, or the server is killed and
    /// the run fails.
    pub timeout: Duration,
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
            timeout: Duration::from_secs(120),
        }
    }
}

/// Most requests a driver keeps in flight.
pub const MAX_INFLIGHT: usize = 1024;

/// A server process started by the driver; killed (if still running) when dropped.
#[derive(Debug)]
pub struct ServerProcess {
    child: Arc<Mutex<Child>>,
    pid: u32,
}

/// Kills the server if the run is not over in time (so a server that stops answering ends the
/// run with an error instead of hanging the driver). Disarmed when dropped.
#[derive(Debug)]
pub struct Watchdog {
    disarm: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<bool>>,
}

impl Watchdog {
    /// Disarms it; returns whether it had fired.
    pub fn disarm(mut self) -> bool {
        self.stop()
    }

    fn stop(&mut self) -> bool {
        self.disarm.take();
        self.thread
            .take()
            .is_some_and(|t| t.join().unwrap_or(false))
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop();
    }
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
        let pid = child.id();
        Ok(Self {
            child: Arc::new(Mutex::new(child)),
            pid,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Child> {
        // A poisoned lock only means another thread panicked while holding it; the child
        // handle itself is still usable.
        self.child
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Takes the pipes of a server spawned with `pipes`.
    pub fn take_pipes(&self) -> Result<(ChildStdin, ChildStdout)> {
        let mut child = self.lock();
        match (child.stdin.take(), child.stdout.take()) {
            (Some(stdin), Some(stdout)) => Ok((stdin, stdout)),
            _ => Err(crate::fail!("server pipes unavailable")),
        }
    }

    /// Current and peak resident memory, if the process is still there.
    pub fn memory(&self) -> Option<Memory> {
        procfs::memory(self.pid).ok()
    }

    /// Fails if the process has exited.
    pub fn check_running(&self) -> Result<()> {
        match self.lock().try_wait()? {
            Some(status) => Err(crate::fail!("server exited early: {status}")),
            None => Ok(()),
        }
    }

    /// Kills the server after `timeout` unless the returned guard is dropped first.
    pub fn watchdog(&self, timeout: Duration) -> Watchdog {
        let (tx, rx) = mpsc::channel::<()>();
        let child = Arc::clone(&self.child);
        let thread = std::thread::spawn(move || match rx.recv_timeout(timeout) {
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let mut child = child
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                let _ = child.kill();
                true
            }
            _ => false,
        });
        Watchdog {
            disarm: Some(tx),
            thread: Some(thread),
        }
    }

    /// Waits up to `grace` for the process to exit on its own; it is killed when dropped.
    pub fn finish(self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            match self.lock().try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let mut child = self.lock();
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
        }
        let _ = child.wait();
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
