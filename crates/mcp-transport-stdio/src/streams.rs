//! This process's stdin and stdout as async byte streams.
//!
//! On Unix, when a stream is a pipe or a stream socket (the usual case: a client launched this
//! server with pipes) and feature `reactor` is on (the default), it is duplicated, switched to
//! non-blocking mode and registered with Tokio's reactor, so reads and writes are plain `read(2)`/`write(2)` calls woken by epoll/kqueue.
//! Otherwise (a terminal, a regular file, `/dev/null`, other platforms) it goes through
//! [`tokio::io::stdin`]/[`tokio::io::stdout`], which run every read and write on Tokio's blocking
//! thread pool: correct for anything, but a thread hop per operation.
//!
//! # `O_NONBLOCK` is shared
//!
//! The non-blocking flag belongs to the *open file description*, not to the descriptor, so it is
//! seen by every descriptor and every process sharing that description:
//!
//! * child processes that inherit this process's stdin or stdout (a `Command` with inherited stdio)
//!   see a non-blocking pipe and may fail with `EAGAIN` (`WouldBlock`) where they expect to block;
//! * code in this process that reads `std::io::stdin()` or writes `std::io::stdout()` directly
//!   (`println!`) may get `WouldBlock` errors; a server must not write to stdout anyway;
//! * when the description is shared with another process (a socket handed over by a supervisor
//!   such as inetd, a pipe the parent also uses), that process sees the flag too while we run.
//!
//! A pipe created for this process by its client (the normal way to launch a stdio server) is
//! shared with nobody, so none of this matters there. Terminals are never switched, because the
//! terminal's description is shared with the shell. The flag is restored when the last stream
//! using a description is dropped; a process that exits without dropping them (for example through
//! [`std::process::exit`]) leaves it set. [`IoMode::BlockingPool`] avoids the switch entirely.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How [`stdio()`](crate::stdio) and [`stdio_streams()`] perform I/O on stdin and stdout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoMode {
    /// Pipes and stream sockets are made non-blocking and driven by Tokio's reactor (Unix, with
    /// feature `reactor`); anything else uses the blocking thread pool. The default.
    #[default]
    Auto,
    /// Always use Tokio's blocking thread pool ([`tokio::io::stdin`], [`tokio::io::stdout`]),
    /// leaving the file status flags untouched.
    BlockingPool,
}

/// Which path a stream took; see [`StdinStream::is_reactor_driven`].
#[derive(Debug)]
enum Kind<R, B> {
    #[cfg_attr(not(all(unix, feature = "reactor")), allow(dead_code))]
    Reactor(R),
    Blocking(B),
}

/// This process's stdin as an [`AsyncRead`]; see [`stdio_streams()`].
#[derive(Debug)]
pub struct StdinStream {
    inner: Kind<imp::Reader, tokio::io::Stdin>,
}

/// This process's stdout as an [`AsyncWrite`]; see [`stdio_streams()`].
///
/// Writes are unbuffered on the reactor path; wrap it in a [`tokio::io::BufWriter`] when writing
/// many small pieces (the framed connection of [`stdio()`](crate::stdio) already writes whole
/// frames).
#[derive(Debug)]
pub struct StdoutStream {
    inner: Kind<imp::Writer, tokio::io::Stdout>,
}

impl StdinStream {
    /// True when reads are `read(2)` calls woken by the reactor (stdin is a pipe or a stream
    /// socket), false when they run on the blocking thread pool.
    pub fn is_reactor_driven(&self) -> bool {
        matches!(self.inner, Kind::Reactor(_))
    }
}

impl StdoutStream {
    /// True when writes are `write(2)` calls woken by the reactor (stdout is a pipe or a stream
    /// socket), false when they run on the blocking thread pool.
    pub fn is_reactor_driven(&self) -> bool {
        matches!(self.inner, Kind::Reactor(_))
    }
}

/// This process's stdin and stdout as async streams, with the default [`IoMode::Auto`].
///
/// Must be called inside a Tokio runtime with I/O enabled. The [module documentation](self)
/// explains the non-blocking mode used for pipes and sockets, and when it matters. Use this with
/// APIs that take a reader and a writer; [`stdio()`](crate::stdio) builds a connection on it.
pub fn stdio_streams() -> (StdinStream, StdoutStream) {
    stdio_streams_with(IoMode::Auto)
}

/// [`stdio_streams()`] with an explicit [`IoMode`].
pub fn stdio_streams_with(mode: IoMode) -> (StdinStream, StdoutStream) {
    let stdin = match mode {
        IoMode::Auto => imp::reader(),
        IoMode::BlockingPool => None,
    };
    let stdout = match mode {
        IoMode::Auto => imp::writer(),
        IoMode::BlockingPool => None,
    };
    let stdin = StdinStream {
        inner: stdin.map_or_else(|| Kind::Blocking(tokio::io::stdin()), Kind::Reactor),
    };
    let stdout = StdoutStream {
        inner: stdout.map_or_else(|| Kind::Blocking(tokio::io::stdout()), Kind::Reactor),
    };
    tracing::debug!(
        stdin_reactor = stdin.is_reactor_driven(),
        stdout_reactor = stdout.is_reactor_driven(),
        "stdio streams"
    );
    (stdin, stdout)
}

impl AsyncRead for StdinStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match &mut self.inner {
            Kind::Reactor(r) => Pin::new(r).poll_read(cx, buf),
            Kind::Blocking(b) => Pin::new(b).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for StdoutStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.inner {
            Kind::Reactor(w) => Pin::new(w).poll_write(cx, buf),
            Kind::Blocking(b) => Pin::new(b).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.inner {
            Kind::Reactor(w) => Pin::new(w).poll_write_vectored(cx, bufs),
            Kind::Blocking(b) => Pin::new(b).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.inner {
            Kind::Reactor(w) => w.is_write_vectored(),
            Kind::Blocking(b) => b.is_write_vectored(),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.inner {
            Kind::Reactor(w) => Pin::new(w).poll_flush(cx),
            Kind::Blocking(b) => Pin::new(b).poll_flush(cx),
        }
    }

    /// Flushes. Stdout stays open: it is shared with the rest of the process.
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.inner {
            Kind::Reactor(w) => Pin::new(w).poll_flush(cx),
            Kind::Blocking(b) => Pin::new(b).poll_shutdown(cx),
        }
    }
}

#[cfg(unix)]
pub(crate) mod nonblock {
    //! Duplicates of stdio descriptors switched to non-blocking mode, and the switch's undoing.

    use std::io;
    use std::os::fd::{BorrowedFd, OwnedFd};
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    use std::sync::{Mutex, PoisonError};

    // socket2's wrappers of `fcntl(2)` and `getsockopt(2)` are safe and take any descriptor (the
    // file status flags of a pipe are read and set with the same calls as a socket's).
    use socket2::SockRef;

    /// What a descriptor is, when it can be made non-blocking.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Endpoint {
        Pipe,
        Socket,
    }

    /// Classifies `fd`; for a pipe or a stream socket, duplicates it and switches the
    /// description to non-blocking mode.
    pub(crate) fn prepare(fd: BorrowedFd<'_>) -> Option<(OwnedFd, FlagGuard, Endpoint)> {
        let dup = match fd.try_clone_to_owned() {
            Ok(dup) => std::fs::File::from(dup),
            Err(error) => {
                tracing::debug!(%error, "duplicating a stdio descriptor failed");
                return None;
            }
        };
        let stat = dup.metadata().ok()?;
        let endpoint = if stat.file_type().is_fifo() {
            Endpoint::Pipe
        } else if stat.file_type().is_socket() {
            if SockRef::from(&dup).r#type().ok()? != socket2::Type::STREAM {
                return None;
            }
            Endpoint::Socket
        } else {
            return None;
        };
        let dup = OwnedFd::from(dup);
        let key = Key {
            dev: stat.dev(),
            ino: stat.ino(),
        };
        let guard = match FlagGuard::acquire(&dup, key) {
            Ok(guard) => guard,
            Err(error) => {
                tracing::debug!(%error, "setting O_NONBLOCK on a stdio descriptor failed");
                return None;
            }
        };
        Some((dup, guard, endpoint))
    }

    /// Identifies an open file description as well as user space can: a socket has exactly one.
    /// The two ends of one pipe share a key; only a process that reads its own output has both
    /// as its stdin and stdout, and for it the flag is restored on one end only.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Key {
        dev: u64,
        ino: u64,
    }

    #[derive(Debug)]
    struct Entry {
        key: Key,
        users: usize,
        /// The description was blocking before we switched it.
        restore: bool,
    }

    /// Descriptions this process switched to non-blocking mode, with their users.
    static SWITCHED: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

    /// Holds a description in non-blocking mode; the last guard of a description restores it.
    #[derive(Debug)]
    pub(crate) struct FlagGuard {
        key: Key,
        /// A duplicate kept for restoring the flag after the stream's descriptor is closed.
        fd: OwnedFd,
    }

    impl FlagGuard {
        fn acquire(fd: &OwnedFd, key: Key) -> io::Result<FlagGuard> {
            let mut switched = SWITCHED.lock().unwrap_or_else(PoisonError::into_inner);
            let was_blocking = !SockRef::from(fd).nonblocking()?;
            if was_blocking {
                SockRef::from(fd).set_nonblocking(true)?;
            }
            let own = fd.try_clone()?;
            match switched.iter_mut().find(|e| e.key == key) {
                Some(entry) => {
                    entry.users += 1;
                    entry.restore |= was_blocking;
                }
                None => switched.push(Entry {
                    key,
                    users: 1,
                    restore: was_blocking,
                }),
            }
            Ok(FlagGuard { key, fd: own })
        }
    }

    impl Drop for FlagGuard {
        fn drop(&mut self) {
            let mut switched = SWITCHED.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(at) = switched.iter().position(|e| e.key == self.key) else {
                return;
            };
            switched[at].users -= 1;
            if switched[at].users > 0 {
                return;
            }
            let entry = switched.swap_remove(at);
            if entry.restore {
                if let Err(error) = SockRef::from(&self.fd).set_nonblocking(false) {
                    tracing::debug!(%error, "restoring blocking mode on a stdio descriptor failed");
                }
            }
        }
    }
}

#[cfg(all(unix, feature = "reactor"))]
mod imp {
    //! Reactor-driven duplicates of fd 0 and fd 1.

    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use super::nonblock::{Endpoint, FlagGuard, prepare};
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
    use tokio::net::UnixStream;
    use tokio::net::unix::pipe;

    /// A non-blocking duplicate of stdin.
    #[derive(Debug)]
    pub(super) struct Reader {
        io: ReadIo,
        // Declared after `io`, so the descriptor is deregistered before the flag is restored.
        _flag: FlagGuard,
    }

    #[derive(Debug)]
    enum ReadIo {
        Pipe(pipe::Receiver),
        Socket(UnixStream),
    }

    /// A non-blocking duplicate of stdout.
    #[derive(Debug)]
    pub(super) struct Writer {
        io: WriteIo,
        _flag: FlagGuard,
    }

    #[derive(Debug)]
    enum WriteIo {
        Pipe(pipe::Sender),
        Socket(UnixStream),
    }

    pub(super) fn reader() -> Option<Reader> {
        let stdin = std::io::stdin();
        let (fd, flag, endpoint) = prepare(stdin.as_fd())?;
        let io = match endpoint {
            Endpoint::Pipe => pipe::Receiver::from_owned_fd(fd).map(ReadIo::Pipe),
            Endpoint::Socket => socket(fd).map(ReadIo::Socket),
        };
        match io {
            Ok(io) => Some(Reader { io, _flag: flag }),
            Err(error) => {
                tracing::debug!(%error, "stdin cannot be registered with the reactor");
                None
            }
        }
    }

    /// A non-blocking duplicate of stdout (a pipe or a stream socket), registered with the
    /// reactor; `None` for anything else.
    pub(super) fn writer() -> Option<Writer> {
        let (fd, flag, endpoint) = prepare(std::io::stdout().as_fd())?;
        let io = match endpoint {
            Endpoint::Pipe => pipe::Sender::from_owned_fd(fd).map(WriteIo::Pipe),
            Endpoint::Socket => socket(fd).map(WriteIo::Socket),
        };
        match io {
            Ok(io) => Some(Writer { io, _flag: flag }),
            Err(error) => {
                tracing::debug!(%error, "stdout cannot be registered with the reactor");
                None
            }
        }
    }

    fn socket(fd: OwnedFd) -> io::Result<UnixStream> {
        // Reading and writing a stream socket are the same calls whatever its address family;
        // only `read`, `write` and readiness are used.
        UnixStream::from_std(std::os::unix::net::UnixStream::from(fd))
    }

    impl AsyncRead for Reader {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            match &mut self.io {
                ReadIo::Pipe(p) => Pin::new(p).poll_read(cx, buf),
                ReadIo::Socket(s) => Pin::new(s).poll_read(cx, buf),
            }
        }
    }

    impl AsyncWrite for Writer {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            match &mut self.io {
                WriteIo::Pipe(p) => Pin::new(p).poll_write(cx, buf),
                WriteIo::Socket(s) => Pin::new(s).poll_write(cx, buf),
            }
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            // One buffer (the codec's, however many frames it holds) is a plain `write(2)`:
            // `writev` would only add the copy of a one-entry vector into the kernel.
            if let [only] = bufs {
                return self.poll_write(cx, only);
            }
            match &mut self.io {
                WriteIo::Pipe(p) => Pin::new(p).poll_write_vectored(cx, bufs),
                WriteIo::Socket(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            }
        }

        fn is_write_vectored(&self) -> bool {
            match &self.io {
                WriteIo::Pipe(p) => p.is_write_vectored(),
                WriteIo::Socket(s) => s.is_write_vectored(),
            }
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            // Writes go straight to the descriptor.
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            // Never `shutdown(2)` a socket shared with the rest of the process.
            Poll::Ready(Ok(()))
        }
    }
}

#[cfg(not(all(unix, feature = "reactor")))]
mod imp {
    //! No reactor path (not Unix, or feature `reactor` off): every stream uses the blocking
    //! thread pool.

    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

    #[derive(Debug)]
    pub(super) enum Reader {}

    #[derive(Debug)]
    pub(super) enum Writer {}

    pub(super) fn reader() -> Option<Reader> {
        None
    }

    pub(super) fn writer() -> Option<Writer> {
        None
    }

    impl AsyncRead for Reader {
        fn poll_read(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            _buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            match *self {}
        }
    }

    impl AsyncWrite for Writer {
        fn poll_write(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            _buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            match *self {}
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            match *self {}
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            match *self {}
        }
    }
}
