//! stdio served on two threads, with requests run where they are read.
//!
//! [`stdio()`](crate::stdio) reads stdin through Tokio's reactor: each message costs the
//! runtime a wait in `epoll_wait(2)` before its `read(2)`, and the message then goes through the
//! engine's queues to be answered. When a client sends one request at a time, those costs are
//! most of what a server spends beyond its handlers.
//!
//! Here a thread of its own (the *reader*, [`InlineReader::run`]) reads stdin with plain
//! blocking `read(2)` calls, and serves each request it reads on the spot through the
//! engine's [`Inlet`]: the request's handler is polled once on the reader thread and
//! when it answers at once (most do), the answer is written to stdout from there, with one
//! `write(2)`. Everything else goes to the engine, which runs on the runtime as with any
//! connection:
//!
//! - a request whose handler waits, or sends something before its answer (progress, log
//!   messages), continues on a task spawned on the runtime, and what it sends and its answer go
//!   out through the engine's queue in order;
//! - notifications, responses to the server's own requests, batches, requests read before the
//!   engine started, and any request read while an earlier forwarded message is still waiting
//!   for the engine, are forwarded to the engine in wire order;
//! - the engine's own messages (notifications, requests to the client) are written by the
//!   runtime.
//!
//! Both threads write whole frames to stdout under one lock, so frames never interleave.
//!
//! The reader thread cannot be woken while it waits for input: it only reads and serves, and
//! nothing else ever waits for it. It ends at the end of input, when reading fails, or when the
//! engine closes and a message arrives; a process whose engine closed first while the client
//! keeps stdin open leaves it blocked in `read(2)` (a process normally exits at that point).
//!
//! stdin is read in whatever mode it is in (it is never switched to non-blocking mode; a
//! non-blocking one is waited for with epoll); stdout must be a pipe or a stream socket, which
//! is switched to non-blocking mode (as with [`stdio()`](crate::stdio)) and written with
//! `write(2)` from both threads. When it is full, the runtime's side waits for room on Tokio's
//! blocking pool, so no reactor is needed (Tokio's `net` feature stays off).
//!
//! `mcp-server`'s `Server::run_stdio` does all of the following; by hand, with an engine of
//! `mcp-jsonrpc` (the engine hands its [`Inlet`] to the reader when it starts):
//!
//! ```no_run
//! # fn main() -> std::io::Result<()> {
//! use mcp_jsonrpc::Engine;
//! use mcp_transport_stdio::StdioOptions;
//! use mcp_transport_stdio::inline::stdio_inline;
//!
//! let runtime = tokio::runtime::Builder::new_current_thread()
//!     .enable_all()
//!     .build()?;
//! let (driver, mut reader) = {
//!     let _entered = runtime.enter();
//!     let (connection, reader) = stdio_inline(StdioOptions::auto())
//!         .ok_or_else(|| std::io::Error::other("stdout is not a pipe or a socket"))?;
//!     let (_peer, driver) = Engine::builder().start(connection, ());
//!     (driver, reader)
//! };
//! let handle = runtime.handle().clone();
//! // The first read is served here, before the reader's thread starts.
//! reader.serve_first(&handle);
//! std::thread::spawn(move || reader.run(&handle));
//! runtime.block_on(driver).map_err(std::io::Error::other)
//! # }
//! ```

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use futures_core::Stream;
use mcp_jsonrpc::codec::{AutoCodec, ContentLengthCodec, Framing, LineCodec};
use mcp_jsonrpc::{
    Connection, Extensions, FrameError, Inbound, Incoming, Inlet, InletLink, Message, Outbound,
    Response, Served, TransportError,
};
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio_util::codec::{Decoder, Encoder};

use crate::StdioOptions;
use crate::streams::nonblock::{FlagGuard, prepare};

/// Bytes read from stdin per `read(2)`, at most.
const READ_CHUNK: usize = 64 * 1024;
/// Encoded frames the engine may leave in the output buffer before it writes them out.
const BACKPRESSURE: usize = 64 * 1024;
/// Messages a waiting handler sends that may wait to be written before its sends wait.
const RELATED_CAPACITY: usize = 16;

/// The framing of both directions; clones share what `Auto` detected.
#[derive(Clone)]
enum Codec {
    Line(LineCodec),
    ContentLength(ContentLengthCodec),
    Auto(AutoCodec),
}

impl Codec {
    fn new(options: &StdioOptions) -> Self {
        match options.framing {
            Framing::Line => Codec::Line(LineCodec::with_config(options.codec)),
            Framing::ContentLength => {
                Codec::ContentLength(ContentLengthCodec::with_config(options.codec))
            }
            Framing::Auto => Codec::Auto(AutoCodec::with_config(options.codec)),
        }
    }

    fn encode(&mut self, item: Outbound, dst: &mut BytesMut) -> io::Result<()> {
        match self {
            Codec::Line(c) => c.encode(item, dst),
            Codec::ContentLength(c) => c.encode(item, dst),
            Codec::Auto(c) => c.encode(item, dst),
        }
    }

    fn decode(&mut self, src: &mut BytesMut) -> io::Result<Option<Result<Inbound, FrameError>>> {
        match self {
            Codec::Line(c) => c.decode(src),
            Codec::ContentLength(c) => c.decode(src),
            Codec::Auto(c) => c.decode(src),
        }
    }

    fn decode_eof(
        &mut self,
        src: &mut BytesMut,
    ) -> io::Result<Option<Result<Inbound, FrameError>>> {
        match self {
            Codec::Line(c) => c.decode_eof(src),
            Codec::ContentLength(c) => c.decode_eof(src),
            Codec::Auto(c) => c.decode_eof(src),
        }
    }
}

/// What both threads share.
struct Shared {
    /// Frames encoded for the output but not written yet. Whoever writes holds the lock, so
    /// frames never interleave.
    out: Mutex<BytesMut>,
    /// The output, non-blocking, written with `write(2)` by either side.
    output: File,
    /// Keeps the output's description non-blocking while the connection lives.
    _flag: FlagGuard,
    /// The engine's side is gone: a wait for room in the output gives up.
    closed: AtomicBool,
    /// Forwarded messages the engine has dispatched: it takes the next one only after
    /// dispatching the last (see [`Forwarded`]).
    dispatched: AtomicU64,
}

impl Shared {
    fn out(&self) -> MutexGuard<'_, BytesMut> {
        self.out.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `out` (the locked buffer) to the output: `true` once it is empty, `false` when
    /// the output is full.
    fn write_out(&self, out: &mut BytesMut) -> io::Result<bool> {
        while !out.is_empty() {
            match (&self.output).write(&out[..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => out.advance(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// The reading side of a connection made by [`stdio_inline`] or [`fds_inline`]: run it on a
/// thread of its own with [`run`](Self::run).
pub struct InlineReader {
    /// Read with `read(2)`; a `File` only for its safe `Read` (any descriptor will do). The
    /// buffer is not zeroed: a read touches only the pages it fills, and a server's start no
    /// more than one.
    input: BufReader<File>,
    /// Waits for input or for room in the output when a descriptor left in non-blocking mode
    /// (by this process or the one that started it) has none; made on the first wait.
    waiter: Option<Waiter>,
    shared: Arc<Shared>,
    link: InletLink,
    codec: Codec,
    forward: mpsc::Sender<Result<Incoming, TransportError>>,
    /// Messages forwarded to the engine so far.
    forwarded: u64,
    /// Bytes read and not decoded yet.
    buf: BytesMut,
    /// Whether serving may wait (for room in the channel, for a permit).
    blocking: bool,
    deferred: Option<Deferred>,
    /// Input ended.
    eof: bool,
    /// Nothing more to read or serve.
    done: bool,
    /// Why reading or writing failed.
    error: Option<io::Error>,
}

impl std::fmt::Debug for InlineReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InlineReader")
            .field("forwarded", &self.forwarded)
            .finish_non_exhaustive()
    }
}

/// A connection over this process's stdin and stdout whose reading runs on a thread of its own
/// (see the [module documentation](self)), or `None` when stdout is not a pipe or a stream
/// socket (or stdin cannot be duplicated). Must be called inside a Tokio runtime with I/O
/// enabled; the runtime must keep running (some thread inside `Runtime::block_on`, or a
/// multi-threaded runtime) for as long as the connection is served.
pub fn stdio_inline(options: StdioOptions) -> Option<(Connection, InlineReader)> {
    let input = match std::io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => fd,
        Err(error) => {
            tracing::debug!(%error, "duplicating stdin failed");
            return None;
        }
    };
    made(input, std::io::stdout().as_fd(), options)
}

/// [`stdio_inline`] over any pair of descriptors: `input` is read with blocking reads,
/// `output` (a duplicate of it, switched to non-blocking mode while in use) must be a pipe or
/// a stream socket. `None` when it is not.
pub fn fds_inline(
    input: OwnedFd,
    output: OwnedFd,
    options: StdioOptions,
) -> Option<(Connection, InlineReader)> {
    made(input, output.as_fd(), options)
}

fn made(
    input: OwnedFd,
    output: BorrowedFd<'_>,
    options: StdioOptions,
) -> Option<(Connection, InlineReader)> {
    let (output, flag, _) = prepare(output)?;
    let codec = Codec::new(&options);
    let shared = Arc::new(Shared {
        out: Mutex::new(BytesMut::new()),
        output: File::from(output),
        _flag: flag,
        closed: AtomicBool::new(false),
        dispatched: AtomicU64::new(0),
    });
    let (forward, rx) = mpsc::channel(64);
    let link = InletLink::new(RELATED_CAPACITY);
    let inbound = Forwarded {
        rx,
        shared: Arc::clone(&shared),
        taken: 0,
    };
    let outbound = OutSink {
        shared: Arc::clone(&shared),
        codec: codec.clone(),
        room: None,
    };
    let connection = Connection::new(inbound, outbound).with_extension(link.clone());
    let reader = InlineReader {
        input: BufReader::with_capacity(READ_CHUNK, File::from(input)),
        waiter: None,
        shared,
        link,
        codec,
        forward,
        forwarded: 0,
        buf: BytesMut::with_capacity(READ_CHUNK),
        blocking: true,
        deferred: None,
        eof: false,
        done: false,
        error: None,
    };
    Some((connection, reader))
}

/// How the reader goes on after a message.
enum Next {
    Read,
    /// The end: of input, of the engine, or of the transport.
    Stop,
    /// The first read stopped before something that would wait (kept in `deferred`).
    Pause,
}

/// What the first read left because it would have waited.
enum Deferred {
    /// A message for the engine that found the channel full.
    Forward(Result<Incoming, TransportError>),
}

impl InlineReader {
    /// Reads once and serves what arrived, on the calling thread, without ever waiting for the
    /// runtime, which need not run yet: a server's first answer (to `initialize`) then waits
    /// neither for the reader thread to start nor for a hand-over to the runtime. What would
    /// wait (a full channel to the engine) is left to [`run`](Self::run),
    /// as is everything after the first read.
    pub fn serve_first(&mut self, runtime: &Handle) {
        let _entered = runtime.enter();
        self.blocking = false;
        if let Next::Stop = self.step() {
            self.done = true;
        }
        self.blocking = true;
    }

    /// Reads and serves until the end of input (`Ok`), a read failure, or the engine's close.
    /// Call it on a thread of its own, with a handle of the runtime the connection is served
    /// on: handlers first polled here run inside that runtime's context, and those that wait
    /// continue on it.
    pub fn run(mut self, runtime: &Handle) -> io::Result<()> {
        let _entered = runtime.enter();
        tracing::debug!("reading stdin on a thread of its own");
        self.blocking = true;
        let mut next = match self.deferred.take() {
            Some(Deferred::Forward(item)) => self.send(item),
            None => Next::Read,
        };
        if matches!(next, Next::Read) && !self.done {
            // What the first read left.
            next = self.drain();
        }
        while matches!(next, Next::Read) && !self.done {
            next = self.step();
        }
        // Dropping `self` closes the forwarding channel: the engine sees the end of input.
        self.error.take().map_or(Ok(()), Err)
    }

    /// One read, and what it completed served.
    fn step(&mut self) -> Next {
        match self.read() {
            Ok(0) => {
                self.eof = true;
                self.drain()
            }
            Ok(_) => self.drain(),
            Err(e) => self.fail(e),
        }
    }

    /// One `read(2)` of what is there (up to [`READ_CHUNK`] bytes), appended to `buf`.
    fn read(&mut self) -> io::Result<usize> {
        loop {
            match self.input.fill_buf() {
                Ok(data) => {
                    let n = data.len();
                    self.buf.extend_from_slice(data);
                    self.input.consume(n);
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Waiter::wait(
                    &mut self.waiter,
                    self.input.get_ref(),
                    &self.shared.output,
                    INPUT,
                )?,
                Err(e) => return Err(e),
            }
        }
    }

    /// Serves the complete frames read (at the end of input, the last one too).
    fn drain(&mut self) -> Next {
        loop {
            let decoded = if self.eof {
                self.codec.decode_eof(&mut self.buf)
            } else {
                self.codec.decode(&mut self.buf)
            };
            match decoded {
                Ok(Some(frame)) => match self.serve(frame) {
                    Next::Read => {}
                    other => return other,
                },
                Ok(None) if self.eof => {
                    self.done = true;
                    return Next::Stop;
                }
                Ok(None) => return Next::Read,
                Err(e) => return self.fail(e),
            }
        }
    }

    /// Ends the engine's connection with `error`, which [`run`](Self::run) returns.
    fn fail(&mut self, error: io::Error) -> Next {
        self.done = true;
        let forwarded = io::Error::new(error.kind(), error.to_string());
        self.error = Some(error);
        self.send(Err(forwarded.into()));
        Next::Stop
    }

    /// Hands `item` to the engine; `Pause` when the channel is full and waiting is not allowed
    /// (the item is kept for [`run`](Self::run)).
    fn send(&mut self, item: Result<Incoming, TransportError>) -> Next {
        let sent = if self.blocking {
            self.forward.blocking_send(item).map_err(|_| ())
        } else {
            match self.forward.try_send(item) {
                Ok(()) => Ok(()),
                Err(mpsc::error::TrySendError::Full(item)) => {
                    self.deferred = Some(Deferred::Forward(item));
                    return Next::Pause;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => Err(()),
            }
        };
        match sent {
            Ok(()) => Next::Read,
            // The engine is gone.
            Err(()) => {
                self.done = true;
                Next::Stop
            }
        }
    }

    fn forward(&mut self, frame: Result<Inbound, FrameError>) -> Next {
        self.forwarded += 1;
        self.send(Ok(Incoming::from(frame)))
    }

    fn serve(&mut self, frame: Result<Inbound, FrameError>) -> Next {
        // Served here only once the engine runs, and only when everything forwarded before it
        // was dispatched (wire order).
        let inlet = match (&frame, self.link.get()) {
            (Ok(Inbound::Single(Message::Request(_))), Some(inlet))
                if self.shared.dispatched.load(Ordering::Acquire) == self.forwarded =>
            {
                Inlet::clone(inlet)
            }
            _ => return self.forward(frame),
        };
        let Ok(Inbound::Single(Message::Request(request))) = frame else {
            return self.forward(frame);
        };
        // The engine's permits, ids and cancellation apply as to the requests it reads itself;
        // only the first poll happens here, and a handler that answers at once (most do) is
        // answered from this thread.
        match inlet.serve(request, Extensions::new()) {
            Served::Answered(response) | Served::Refused(response) => self.write(response),
            // It waits (or sent something first): in flight on the engine already, so the
            // peer's cancellation and a reused id are seen; the rest goes out through the
            // engine's queue, in order.
            Served::Running(running) => {
                running.into_engine();
                Next::Read
            }
            // Every permit is taken: the engine keeps it waiting for one while it goes on
            // reading what this thread forwards (the client's answers to the requests of the
            // handlers holding the permits, its cancellations, the end of input).
            Served::Busy(request, _) => {
                self.forward(Ok(Inbound::Single(Message::Request(request))))
            }
            Served::Closed => {
                self.done = true;
                Next::Stop
            }
        }
    }

    /// Writes `response` and everything queued before it, waiting for room when stdout is full.
    fn write(&mut self, response: Response) -> Next {
        match self.write_out(response) {
            Ok(()) => Next::Read,
            Err(e) => {
                tracing::debug!(error = %e, "writing to stdout failed");
                self.fail(e)
            }
        }
    }

    fn write_out(&mut self, response: Response) -> io::Result<()> {
        let mut out = self.shared.out();
        self.codec
            .encode(Outbound::new(Message::Response(response)), &mut out)?;
        while !self.shared.write_out(&mut out)? {
            // Others may write while this thread waits for room.
            drop(out);
            let output = &self.shared.output;
            Waiter::wait(&mut self.waiter, self.input.get_ref(), output, OUTPUT)?;
            out = self.shared.out();
        }
        Ok(())
    }
}

const INPUT: mio::Token = mio::Token(0);
const OUTPUT: mio::Token = mio::Token(1);

/// Blocks the reader thread until its input is readable or its output writable: an `epoll`
/// instance of its own (through mio, which the reactor already builds), each descriptor
/// registered on its first wait. Readiness is edge-triggered, and the thread waits only after a
/// call that would block, so the next edge is what it waits for; an edge it saw while waiting
/// for the other descriptor only makes its next wait return early.
struct Waiter {
    poll: mio::Poll,
    events: mio::Events,
    registered: [bool; 2],
}

impl Waiter {
    fn new() -> io::Result<Waiter> {
        Ok(Waiter {
            poll: mio::Poll::new()?,
            events: mio::Events::with_capacity(2),
            registered: [false; 2],
        })
    }

    /// Blocks until the descriptor of `token` (the input or the output) is ready, the waiter
    /// made on the first wait.
    fn wait(
        waiter: &mut Option<Waiter>,
        input: &File,
        output: &File,
        token: mio::Token,
    ) -> io::Result<()> {
        let waiter = match waiter {
            Some(waiter) => waiter,
            None => waiter.insert(Waiter::new()?),
        };
        let fd = if token == INPUT { input } else { output };
        waiter.register(fd, token)?;
        while !waiter.ready(token, None)? {}
        Ok(())
    }

    /// Registers `fd` as `token`'s descriptor (readable for the input, writable for the
    /// output), once.
    fn register(&mut self, fd: &File, token: mio::Token) -> io::Result<()> {
        if !self.registered[token.0] {
            let interest = if token == INPUT {
                mio::Interest::READABLE
            } else {
                mio::Interest::WRITABLE
            };
            self.poll.registry().register(
                &mut mio::unix::SourceFd(&fd.as_raw_fd()),
                token,
                interest,
            )?;
            self.registered[token.0] = true;
        }
        Ok(())
    }

    /// Waits at most `timeout` (`None`: without limit) for an edge: whether `token`'s
    /// descriptor became ready.
    fn ready(&mut self, token: mio::Token, timeout: Option<Duration>) -> io::Result<bool> {
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => Ok(self.events.iter().any(|event| event.token() == token)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// The engine's inbound stream: what the reader forwards.
struct Forwarded {
    rx: mpsc::Receiver<Result<Incoming, TransportError>>,
    shared: Arc<Shared>,
    taken: u64,
}

impl Stream for Forwarded {
    type Item = Result<Incoming, TransportError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // The engine dispatches each message before it asks for the next: everything taken
        // before this call has been dispatched.
        self.shared.dispatched.store(self.taken, Ordering::Release);
        let polled = self.rx.poll_recv(cx);
        if let Poll::Ready(Some(_)) = &polled {
            self.taken += 1;
        }
        polled
    }
}

/// The engine's outbound sink: frames are encoded into the shared buffer and written under its
/// lock with `write(2)`. When the output is full, the sink waits for room on Tokio's blocking
/// pool (the runtime needs no reactor for it; a client that reads its input leaves room, so
/// this is rare), and the engine waits for the sink meanwhile.
struct OutSink {
    shared: Arc<Shared>,
    codec: Codec,
    /// The wait for room in the output, while the output is full.
    room: Option<tokio::task::JoinHandle<io::Result<()>>>,
}

impl OutSink {
    fn flush(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        loop {
            if let Some(room) = &mut self.room {
                let waited = std::task::ready!(Pin::new(room).poll(cx));
                self.room = None;
                waited.unwrap_or_else(|e| Err(io::Error::other(e)))?;
            }
            if self.shared.write_out(&mut self.shared.out())? {
                return Poll::Ready(Ok(()));
            }
            let shared = Arc::clone(&self.shared);
            self.room = Some(tokio::task::spawn_blocking(move || room_in(&shared)));
        }
    }
}

impl Drop for OutSink {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
    }
}

/// Waits until the output has room for a write (or is closed), or until the engine's side is
/// gone, checked every 100 ms so that a runtime shutting down never waits long for this.
fn room_in(shared: &Shared) -> io::Result<()> {
    let mut waiter = Waiter::new()?;
    // Registration reports a descriptor that is already writable, so room made since the
    // write that would block is not missed.
    waiter.register(&shared.output, OUTPUT)?;
    while !shared.closed.load(Ordering::Acquire) {
        if waiter.ready(OUTPUT, Some(Duration::from_millis(100)))? {
            return Ok(());
        }
    }
    Ok(())
}

impl futures_sink::Sink<Outbound> for OutSink {
    type Error = TransportError;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if self.shared.out().len() < BACKPRESSURE {
            return Poll::Ready(Ok(()));
        }
        self.flush(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, item: Outbound) -> Result<(), Self::Error> {
        let this = &mut *self;
        let mut out = this.shared.out();
        this.codec.encode(item, &mut out)?;
        Ok(())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // stdout stays open: it is shared with the rest of the process.
        self.flush(cx)
    }
}
