//! The stdio transport of the Model Context Protocol: newline-delimited JSON (and `Content-Length`
//! framing) over stdin/stdout, over a spawned child process, or over any
//! `AsyncRead + AsyncWrite` pair (TCP and Unix sockets use the same framing).
//!
//! Every function here returns an [`mcp_jsonrpc::Connection`], which the server and client crates
//! run their sessions over.
//!
//! * A **server** serves on its own stdin/stdout with [`stdio()`]. Only MCP messages are written to
//!   stdout; log through `tracing` to stderr. When stdin reaches end of file the connection ends
//!   and the server shuts down.
//! * A **client** launches a server with `ServerCommand::spawn` (feature `child`, on by default;
//!   a server that only serves its own stdin/stdout can leave it out), which returns the connection and
//!   a `ChildProcess` handle that captures the server's stderr, reports its exit status (pending
//!   requests fail with it) and shuts it down the way the specification describes: close stdin,
//!   wait, `SIGTERM`, wait, `SIGKILL` (on Unix to the server's own process group, so that what
//!   it started ends with it).
//! * Anything else that is a byte stream goes through [`io()`].
//!
//! On Unix, when stdin and stdout are pipes or sockets (as they are when a client launches the
//! server), [`stdio()`] drives them with Tokio's reactor in non-blocking mode instead of hopping
//! through the blocking thread pool on every read and write (feature `reactor`, on by default:
//! it turns on Tokio's `net`); terminals and regular files keep the blocking path. The
//! [`inline`] connection, what `mcp-server`'s `Server::run_stdio` uses, needs no reactor. The
//! [`streams`] module explains what switching a pipe to non-blocking mode means for other users
//! of the same pipe, and [`IoMode`] turns it off.
//!
//! ```no_run
//! use mcp_transport_stdio::ServerCommand;
//!
//! # async fn run() -> std::io::Result<()> {
//! let (connection, child) = ServerCommand::new("npx")
//!     .args(["-y", "@modelcontextprotocol/server-everything"])
//!     .env("LOG_LEVEL", "debug")
//!     .spawn()?;
//! // ... run a client session over `connection` ...
//! # drop(connection);
//! let status = child.shutdown().await?;
//! println!("server exited: {status}");
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

#[cfg(feature = "child")]
mod child;
#[cfg(unix)]
pub mod inline;
pub mod streams;

#[cfg(feature = "child")]
pub use child::{ChildProcess, ServerCommand, ShutdownTimeouts, StderrMode};
pub use mcp_jsonrpc::Connection;
pub use mcp_jsonrpc::codec::{CodecConfig, Framing};
pub use streams::{IoMode, StdinStream, StdoutStream, stdio_streams, stdio_streams_with};

use tokio::io::{AsyncRead, AsyncWrite};

/// Framing and limits of a stdio-style connection.
///
/// The default reads with [`Framing::Auto`] (newline-delimited JSON, or `Content-Length` headers
/// when the peer's first bytes are a header) and answers in the framing it detected; frames are
/// limited by [`CodecConfig`] (16 MiB by default). Pipes and sockets are driven by the reactor
/// ([`IoMode::Auto`], with feature `reactor`).
#[derive(Debug, Clone, Default)]
pub struct StdioOptions {
    /// How messages are delimited.
    pub framing: Framing,
    /// Frame size and batch limits.
    pub codec: CodecConfig,
    /// How [`stdio_with()`] reads stdin and writes stdout (ignored by [`io_with()`] and
    /// `ServerCommand`, whose streams are always reactor-driven).
    pub io_mode: IoMode,
}

impl StdioOptions {
    /// Options with auto-detected framing and default limits (what [`stdio()`] uses).
    pub fn auto() -> Self {
        StdioOptions {
            framing: Framing::Auto,
            codec: CodecConfig::default(),
            io_mode: IoMode::Auto,
        }
    }

    /// Sets the framing.
    pub fn framing(mut self, framing: Framing) -> Self {
        self.framing = framing;
        self
    }

    /// Sets the frame limits.
    pub fn codec(mut self, codec: CodecConfig) -> Self {
        self.codec = codec;
        self
    }

    /// Sets how stdin and stdout are driven (see [`IoMode`]).
    pub fn io_mode(mut self, io_mode: IoMode) -> Self {
        self.io_mode = io_mode;
        self
    }
}

/// A connection over this process's stdin and stdout, for a server launched by its client.
///
/// Framing is detected from the client's first bytes (newline-delimited JSON, the standard, or
/// `Content-Length` headers). Must be called inside a Tokio runtime with I/O enabled. Pipes and
/// stream sockets are switched to non-blocking mode and driven by the reactor (Unix, feature
/// `reactor`); see [`streams`] for what that means for other processes sharing them.
pub fn stdio() -> Connection {
    stdio_with(StdioOptions::auto())
}

/// [`stdio()`] with explicit framing and limits.
pub fn stdio_with(options: StdioOptions) -> Connection {
    let (stdin, stdout) = stdio_streams_with(options.io_mode);
    io_with(stdin, stdout, options)
}

/// A connection over any byte stream pair (a TCP or Unix socket split in two, a pipe pair),
/// with auto-detected framing.
///
/// ```
/// # async fn run() {
/// let (ours, _theirs) = tokio::io::duplex(64 * 1024);
/// let (read, write) = tokio::io::split(ours);
/// let connection = mcp_transport_stdio::io(read, write);
/// # drop(connection);
/// # }
/// ```
pub fn io<R, W>(reader: R, writer: W) -> Connection
where
    R: AsyncRead + Send + 'static,
    W: AsyncWrite + Send + 'static,
{
    io_with(reader, writer, StdioOptions::auto())
}

/// [`io()`] with explicit framing and limits.
pub fn io_with<R, W>(reader: R, writer: W, options: StdioOptions) -> Connection
where
    R: AsyncRead + Send + 'static,
    W: AsyncWrite + Send + 'static,
{
    Connection::framed(reader, writer, options.framing, options.codec)
}
