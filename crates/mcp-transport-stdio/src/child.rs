//! Launching a server as a child process and talking to it over its stdin/stdout.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use mcp_jsonrpc::codec::{AutoCodec, ContentLengthCodec, Framing, LineCodec};
use mcp_jsonrpc::{Connection, FrameError, Inbound, Outbound, TransportError};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::{mpsc, watch};
use tokio_util::codec::{Decoder, Encoder, FramedRead, FramedWrite};

use crate::StdioOptions;

/// The longest stderr line kept; longer lines are cut (the rest of the line is still consumed).
const MAX_STDERR_LINE: usize = 64 * 1024;
/// How long the reader waits for the exit status after the server closed its stdout.
const EXIT_STATUS_WAIT: Duration = Duration::from_secs(2);

/// What happens to the server's stderr.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum StderrMode {
    /// Each line becomes a `tracing` event at INFO level (target `mcp_transport_stdio::stderr`),
    /// tagged with the program name. The default.
    #[default]
    Log,
    /// Each line is handed to this callback (without its line ending).
    Callback(Arc<dyn Fn(&str) + Send + Sync>),
    /// The server writes to this process's stderr.
    Inherit,
    /// Discarded.
    Null,
}

impl fmt::Debug for StderrMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StderrMode::Log => f.write_str("Log"),
            StderrMode::Callback(_) => f.write_str("Callback(..)"),
            StderrMode::Inherit => f.write_str("Inherit"),
            StderrMode::Null => f.write_str("Null"),
        }
    }
}

/// How long [`ChildProcess::shutdown`] waits at each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownTimeouts {
    /// After closing the server's stdin, how long to wait for it to exit before `SIGTERM`
    /// (default 2 s).
    pub after_close: Duration,
    /// After `SIGTERM`, how long to wait before `SIGKILL` (default 2 s).
    pub after_terminate: Duration,
}

impl Default for ShutdownTimeouts {
    fn default() -> Self {
        ShutdownTimeouts {
            after_close: Duration::from_secs(2),
            after_terminate: Duration::from_secs(2),
        }
    }
}

/// A server program to launch, in the style of [`std::process::Command`].
///
/// The child's stdin and stdout carry MCP messages; its stderr is handled per [`StderrMode`].
/// Writing uses newline-delimited JSON unless [`framing`](Self::framing) says otherwise; reading
/// accepts either framing.
#[derive(Debug, Clone)]
pub struct ServerCommand {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    env_remove: Vec<OsString>,
    env_clear: bool,
    cwd: Option<PathBuf>,
    stderr: StderrMode,
    options: StdioOptions,
    timeouts: ShutdownTimeouts,
}

impl ServerCommand {
    /// A command running `program` (looked up in `PATH` as the OS does).
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        ServerCommand {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            env_remove: Vec::new(),
            env_clear: false,
            cwd: None,
            stderr: StderrMode::default(),
            options: StdioOptions::default(),
            timeouts: ShutdownTimeouts::default(),
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets one environment variable for the server.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Sets environment variables for the server.
    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (k, v) in vars {
            self = self.env(k, v);
        }
        self
    }

    /// Removes one inherited environment variable.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env_remove.push(key.as_ref().to_owned());
        self
    }

    /// Starts the server with an empty environment (plus what [`env`](Self::env) adds).
    pub fn env_clear(mut self) -> Self {
        self.env_clear = true;
        self
    }

    /// Sets the server's working directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Sets what happens to the server's stderr (default: [`StderrMode::Log`]).
    pub fn stderr(mut self, mode: StderrMode) -> Self {
        self.stderr = mode;
        self
    }

    /// Sets the framing written to the server (default: newline-delimited JSON, the standard).
    pub fn framing(mut self, framing: Framing) -> Self {
        self.options.framing = framing;
        self
    }

    /// Sets framing and limits at once.
    pub fn options(mut self, options: StdioOptions) -> Self {
        self.options = options;
        self
    }

    /// Sets the shutdown timeouts.
    pub fn shutdown_timeouts(mut self, timeouts: ShutdownTimeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// The program name, as given.
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// Launches the server. Must be called inside a Tokio runtime.
    ///
    /// Returns the connection to run a client session over and the handle that owns the process.
    /// Dropping the handle kills the process.
    pub fn spawn(&self) -> io::Result<(Connection, ChildProcess)> {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group: signals reach the whole tree the server starts (a wrapper
        // script's real server, `npx`'s node), not just the process launched.
        #[cfg(unix)]
        cmd.process_group(0);
        if self.env_clear {
            cmd.env_clear();
        }
        for key in &self.env_remove {
            cmd.env_remove(key);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        cmd.stderr(match self.stderr {
            StderrMode::Inherit => Stdio::inherit(),
            StderrMode::Null => Stdio::null(),
            StderrMode::Log | StderrMode::Callback(_) => Stdio::piped(),
        });

        let mut child = cmd.spawn()?;
        let name = self.program.to_string_lossy().into_owned();
        let pid = child.id();
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("child stdin was not captured"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("child stdout was not captured"))?;
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(pump_stderr(stderr, self.stderr.clone(), name.clone()));
        }

        let (status_tx, status_rx) = watch::channel(None);
        let (control_tx, control_rx) = mpsc::channel(4);
        tokio::spawn(reap(child, control_rx, status_tx, pid));

        let stdin = Arc::new(Mutex::new(Some(stdin)));
        let writer = SharedStdin {
            inner: Arc::clone(&stdin),
        };
        let exit = ExitReason {
            status: status_rx.clone(),
            name: name.clone(),
        };
        let options = &self.options;
        let connection = match options.framing {
            Framing::Line => build(stdout, writer, exit, LineCodec::with_config(options.codec)),
            Framing::ContentLength => build(
                stdout,
                writer,
                exit,
                ContentLengthCodec::with_config(options.codec),
            ),
            Framing::Auto => build(stdout, writer, exit, AutoCodec::with_config(options.codec)),
        };
        let handle = ChildProcess {
            name,
            pid,
            stdin,
            status: status_rx,
            control: control_tx,
            timeouts: self.timeouts,
        };
        Ok((connection, handle))
    }
}

fn build<C>(stdout: ChildStdout, stdin: SharedStdin, exit: ExitReason, codec: C) -> Connection
where
    C: Decoder<Item = Result<Inbound, FrameError>, Error = io::Error>
        + Encoder<Outbound, Error = io::Error>
        + Clone
        + Send
        + Unpin
        + 'static,
{
    let reader = ChildReader {
        frames: FramedRead::new(stdout, codec.clone()),
        exit: Some(Box::pin(exit.wait())),
        stdout_done: false,
        done: false,
    };
    Connection::new(reader, FramedWrite::new(stdin, codec))
}

/// The handle to a launched server process.
///
/// Dropping it kills the process (`SIGKILL`; on Unix its whole process group, see below); call
/// [`shutdown`](Self::shutdown) for the graceful sequence the specification describes.
///
/// On Unix the server is started in a process group of its own, so that shutting it down also
/// ends what it started. A consequence: the terminal's Ctrl-C (`SIGINT` to the foreground
/// process group) no longer reaches the server directly. The client process handles Ctrl-C and
/// shuts the server down (or, if it simply exits, the server sees end of input on its stdin,
/// which ends a well-behaved server).
#[derive(Debug)]
pub struct ChildProcess {
    name: String,
    pid: Option<u32>,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    status: watch::Receiver<Option<ExitStatus>>,
    control: mpsc::Sender<Control>,
    timeouts: ShutdownTimeouts,
}

#[derive(Debug, Clone, Copy)]
enum Control {
    Terminate,
    Kill,
}

impl ChildProcess {
    /// The OS process id, if the process had one when it was spawned.
    pub fn id(&self) -> Option<u32> {
        self.pid
    }

    /// The program name the process was started with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The exit status, if the process has exited.
    pub fn try_status(&self) -> Option<ExitStatus> {
        *self.status.borrow()
    }

    /// Waits for the process to exit on its own.
    pub async fn wait(&self) -> io::Result<ExitStatus> {
        let mut status = self.status.clone();
        wait_status(&mut status).await
    }

    /// Closes the server's stdin (the server sees end of input).
    pub fn close_stdin(&self) {
        // A poisoned lock only means a writer panicked; taking the handle out is still correct.
        let taken = self
            .stdin
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(taken);
    }

    /// Shuts the server down: closes its stdin, waits
    /// [`after_close`](ShutdownTimeouts::after_close), sends `SIGTERM`, waits
    /// [`after_terminate`](ShutdownTimeouts::after_terminate), then sends `SIGKILL`.
    ///
    /// On Unix the server runs in a process group of its own and the signals go to the whole
    /// group: processes it started (a wrapper script's real server, `npx`'s node) are ended
    /// with it, also when the server itself exits first. Elsewhere only the server process is
    /// signalled (`TerminateProcess` in place of both signals).
    ///
    /// Returns the server's exit status. Pending requests on the connection fail with it.
    pub async fn shutdown(&self) -> io::Result<ExitStatus> {
        self.close_stdin();
        let mut status = self.status.clone();
        if let Ok(done) =
            tokio::time::timeout(self.timeouts.after_close, wait_status(&mut status)).await
        {
            if !self.group_alive() {
                return done;
            }
        }
        tracing::debug!(server = %self.name, "server did not exit after stdin closed; sending SIGTERM");
        let _ = self.control.send(Control::Terminate).await;
        let ended = async {
            let done = wait_status(&mut status).await;
            // The processes the server started may outlive it: wait for them as well.
            while self.group_alive() {
                tokio::time::sleep(GROUP_POLL).await;
            }
            done
        };
        if let Ok(done) = tokio::time::timeout(self.timeouts.after_terminate, ended).await {
            return done;
        }
        tracing::debug!(server = %self.name, "server did not exit after SIGTERM; sending SIGKILL");
        self.kill().await
    }

    /// Kills the process at once (`SIGKILL`, on Unix to its whole process group) and returns
    /// its exit status.
    pub async fn kill(&self) -> io::Result<ExitStatus> {
        self.close_stdin();
        let _ = self.control.send(Control::Kill).await;
        let mut status = self.status.clone();
        wait_status(&mut status).await
    }

    /// Whether a process of the server's process group is still running (Unix; elsewhere
    /// always `false`).
    fn group_alive(&self) -> bool {
        #[cfg(unix)]
        {
            group(self.pid).is_some_and(|g| rustix::process::test_kill_process_group(g).is_ok())
        }
        #[cfg(not(unix))]
        {
            false
        }
    }
}

async fn wait_status(status: &mut watch::Receiver<Option<ExitStatus>>) -> io::Result<ExitStatus> {
    match status.wait_for(Option::is_some).await {
        Ok(s) => (*s).ok_or_else(|| io::Error::other("exit status missing")),
        Err(_) => Err(io::Error::other(
            "the process monitor stopped without an exit status",
        )),
    }
}

/// Owns the `Child`: publishes its exit status and delivers signals. When every handle is gone
/// (the control channel closes) the process is killed, with its process group on Unix (also
/// when the server itself already exited).
async fn reap(
    mut child: Child,
    mut control: mpsc::Receiver<Control>,
    status_tx: watch::Sender<Option<ExitStatus>>,
    pid: Option<u32>,
) {
    let mut exited = false;
    let mut control_open = true;
    loop {
        tokio::select! {
            status = child.wait(), if !exited => {
                match status {
                    Ok(s) => { let _ = status_tx.send(Some(s)); }
                    Err(e) => {
                        tracing::warn!(error = %e, "waiting for the server process failed");
                        return;
                    }
                }
                exited = true;
            }
            cmd = control.recv(), if control_open => match cmd {
                Some(Control::Terminate) => terminate(&mut child, pid, exited),
                Some(Control::Kill) => kill(&mut child, pid, exited),
                None => {
                    control_open = false;
                    kill(&mut child, pid, exited);
                }
            },
        }
        if exited && !control_open {
            return;
        }
    }
}

/// How often [`ChildProcess::shutdown`] checks whether the server's process group is empty.
const GROUP_POLL: Duration = Duration::from_millis(20);

/// The process group the server leads (its pid: it was spawned with `process_group(0)`).
#[cfg(unix)]
fn group(pid: Option<u32>) -> Option<rustix::process::Pid> {
    pid.and_then(|p| i32::try_from(p).ok())
        .and_then(rustix::process::Pid::from_raw)
}

/// Sends `signal` to the server's process group; `false` when there was nothing to signal.
#[cfg(unix)]
fn signal_group(pid: Option<u32>, signal: rustix::process::Signal) -> bool {
    // The group outlives its leader while any member runs, and its id is not handed out again
    // until it is empty; an empty group fails with `ESRCH`.
    match group(pid) {
        Some(g) => match rustix::process::kill_process_group(g, signal) {
            Ok(()) => true,
            Err(e) => {
                if e != rustix::io::Errno::SRCH {
                    tracing::debug!(error = %e, ?signal, "signalling the server's process group failed");
                }
                false
            }
        },
        None => false,
    }
}

#[cfg(unix)]
fn terminate(child: &mut Child, pid: Option<u32>, exited: bool) {
    if !signal_group(pid, rustix::process::Signal::TERM) && !exited {
        tracing::debug!("SIGTERM to the process group failed; killing");
        let _ = child.start_kill();
    }
}

#[cfg(unix)]
fn kill(child: &mut Child, pid: Option<u32>, exited: bool) {
    signal_group(pid, rustix::process::Signal::KILL);
    if !exited {
        let _ = child.start_kill();
    }
}

#[cfg(not(unix))]
fn terminate(child: &mut Child, _pid: Option<u32>, exited: bool) {
    if !exited {
        let _ = child.start_kill();
    }
}

#[cfg(not(unix))]
fn kill(child: &mut Child, _pid: Option<u32>, exited: bool) {
    if !exited {
        let _ = child.start_kill();
    }
}

async fn pump_stderr(stderr: ChildStderr, mode: StderrMode, name: String) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_bounded_line(&mut reader, &mut line).await {
            Ok(0) => return,
            Ok(_) => {
                while matches!(line.last(), Some(b'\n' | b'\r')) {
                    line.pop();
                }
                let text = String::from_utf8_lossy(&line);
                match &mode {
                    StderrMode::Callback(f) => f(&text),
                    _ => {
                        tracing::info!(target: "mcp_transport_stdio::stderr", server = %name, "{text}")
                    }
                }
            }
            Err(e) => {
                tracing::debug!(server = %name, error = %e, "reading server stderr failed");
                return;
            }
        }
    }
}

/// Reads one line into `out`, keeping at most [`MAX_STDERR_LINE`] bytes of it.
async fn read_bounded_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    out: &mut Vec<u8>,
) -> io::Result<usize> {
    let mut total = 0;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(total);
        }
        let (chunk, found) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let room = MAX_STDERR_LINE.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let n = chunk.len();
        total += n;
        reader.consume(n);
        if found {
            return Ok(total);
        }
    }
}

/// The child's stdin, shared with the [`ChildProcess`] handle so it can be closed from there.
struct SharedStdin {
    inner: Arc<Mutex<Option<ChildStdin>>>,
}

fn closed_stdin() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the server's stdin was closed")
}

impl SharedStdin {
    fn with<T>(
        &self,
        f: impl FnOnce(Pin<&mut ChildStdin>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let mut guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match guard.as_mut() {
            Some(stdin) => f(Pin::new(stdin)),
            None => Poll::Ready(Err(closed_stdin())),
        }
    }
}

impl AsyncWrite for SharedStdin {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.with(|s| s.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.with(|s| s.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match guard.as_mut() {
            Some(stdin) => {
                let r = Pin::new(stdin).poll_shutdown(cx);
                if r.is_ready() {
                    // Dropping the pipe is what the server sees as end of input.
                    *guard = None;
                }
                r
            }
            None => Poll::Ready(Ok(())),
        }
    }
}

/// Produces the close reason once the server's stdout has ended.
struct ExitReason {
    status: watch::Receiver<Option<ExitStatus>>,
    name: String,
}

impl ExitReason {
    async fn wait(mut self) -> TransportError {
        let waited =
            tokio::time::timeout(EXIT_STATUS_WAIT, self.status.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(status)) => match *status {
                Some(s) => {
                    TransportError::Closed(format!("server process `{}` exited ({s})", self.name))
                }
                None => TransportError::Closed(format!("server process `{}` exited", self.name)),
            },
            Ok(Err(_)) => TransportError::Closed(format!("server process `{}` is gone", self.name)),
            Err(_) => TransportError::Closed(format!(
                "server process `{}` closed its stdout but is still running",
                self.name
            )),
        }
    }
}

type ExitFuture = Pin<Box<dyn std::future::Future<Output = TransportError> + Send>>;

/// The child's stdout as a stream of frames; at end of file it yields one final error naming the
/// exit status, which the engine reports to pending requests.
struct ChildReader<C> {
    frames: FramedRead<ChildStdout, C>,
    exit: Option<ExitFuture>,
    stdout_done: bool,
    done: bool,
}

impl<C> Stream for ChildReader<C>
where
    C: Decoder<Item = Result<Inbound, FrameError>, Error = io::Error> + Unpin,
{
    type Item = Result<Result<Inbound, FrameError>, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if !this.stdout_done {
            match Pin::new(&mut this.frames).poll_next(cx) {
                Poll::Ready(Some(Ok(item))) => return Poll::Ready(Some(Ok(item))),
                Poll::Ready(Some(Err(e))) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(TransportError::Io(e))));
                }
                Poll::Ready(None) => this.stdout_done = true,
                Poll::Pending => return Poll::Pending,
            }
        }
        // End of stdout: report why.
        let Some(exit) = this.exit.as_mut() else {
            this.done = true;
            return Poll::Ready(None);
        };
        match exit.as_mut().poll(cx) {
            Poll::Ready(reason) => {
                this.exit = None;
                this.done = true;
                Poll::Ready(Some(Err(reason)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
