//! The stdio transport of the Model Context Protocol: newline-delimited JSON (and `Content-Length`
//! framing) over stdin/stdout, over a spawned child process, or over any `AsyncRead + AsyncWrite`.
#![deny(missing_docs)]
