//! Framing codecs: `tokio_util::codec` decoder/encoder pairs over `bytes`.
//!
//! Every decoder yields `Result<Inbound, FrameError>` items (the SSE codec yields events, whose
//! data the caller decodes). A [`FrameError`] is recoverable: the decoder has already skipped to
//! the next frame boundary and the error carries the answer to send back, so one bad message
//! never ends the stream. Only I/O errors end it.
//!
//! | codec | framing |
//! |---|---|
//! | [`LineCodec`] | newline-delimited JSON (MCP stdio), `\r\n` tolerated |
//! | [`ContentLengthCodec`] | `Content-Length: N\r\n\r\n` headers (LSP style) |
//! | [`AutoCodec`] | picks one of the two from the first bytes of the stream |
//! | [`SseCodec`] | Server-Sent Events, for the HTTP transports (see [`SseFields`] to encode borrowed fields) |
//!
//! [`FrameError`]: crate::FrameError

mod auto;
mod content_length;
mod line;
mod scan;
mod sse;

pub use auto::AutoCodec;
pub use content_length::ContentLengthCodec;
pub use line::LineCodec;
pub use sse::{SseCodec, SseEvent, SseFields, encode_sse_comment};

use bytes::BytesMut;

use crate::connection::Outbound;
use crate::message::{Frame, Message, Notification, Request, Response};

/// The default maximum frame size: 16 MiB.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 16 * 1024 * 1024;
/// The default maximum number of elements in a batch.
pub const DEFAULT_MAX_BATCH_LEN: usize = 1024;
/// The default maximum size of a `Content-Length` header section.
pub const DEFAULT_MAX_HEADER_SIZE: usize = 8 * 1024;

/// Limits shared by the decoders.
///
/// ```
/// use mcp_jsonrpc::codec::{CodecConfig, LineCodec};
///
/// let codec = LineCodec::with_config(CodecConfig::default().max_frame_size(1 << 20));
/// # let _ = codec;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodecConfig {
    max_frame_size: usize,
    max_batch_len: usize,
    max_header_size: usize,
}

impl Default for CodecConfig {
    fn default() -> Self {
        CodecConfig {
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            max_batch_len: DEFAULT_MAX_BATCH_LEN,
            max_header_size: DEFAULT_MAX_HEADER_SIZE,
        }
    }
}

impl CodecConfig {
    /// Sets the maximum size of one frame's payload in bytes (default 16 MiB). Larger frames
    /// are answered with an error and skipped without being buffered.
    pub fn max_frame_size(mut self, bytes: usize) -> Self {
        self.max_frame_size = bytes.max(1);
        self
    }

    /// Sets the maximum number of elements in a batch (default 1024).
    pub fn max_batch_len(mut self, elements: usize) -> Self {
        self.max_batch_len = elements;
        self
    }

    /// Sets the maximum size of a header section (`Content-Length` framing, default 8 KiB).
    pub fn max_header_size(mut self, bytes: usize) -> Self {
        self.max_header_size = bytes.max(32);
        self
    }

    /// The maximum frame size in bytes.
    pub fn frame_size_limit(&self) -> usize {
        self.max_frame_size
    }

    /// The maximum number of elements in a batch.
    pub fn batch_len_limit(&self) -> usize {
        self.max_batch_len
    }

    /// The maximum header section size in bytes.
    pub fn header_size_limit(&self) -> usize {
        self.max_header_size
    }
}

/// Which framing a byte stream uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    /// Newline-delimited JSON.
    #[default]
    Line,
    /// `Content-Length` headers.
    ContentLength,
    /// Detect from the first bytes received (newline-delimited until then).
    Auto,
}

/// Anything the encoders can write as one frame.
pub trait Encodable {
    /// Appends the compact JSON encoding (no framing) to `dst`.
    fn encode_json(&self, dst: &mut BytesMut) -> Result<(), serde_json::Error>;
}

impl Encodable for Message {
    fn encode_json(&self, dst: &mut BytesMut) -> Result<(), serde_json::Error> {
        self.encode_into(dst)
    }
}

impl Encodable for Frame {
    fn encode_json(&self, dst: &mut BytesMut) -> Result<(), serde_json::Error> {
        self.encode_into(dst)
    }
}

impl Encodable for Outbound {
    fn encode_json(&self, dst: &mut BytesMut) -> Result<(), serde_json::Error> {
        self.frame.encode_into(dst)
    }
}

impl Encodable for Request {
    fn encode_json(&self, dst: &mut BytesMut) -> Result<(), serde_json::Error> {
        serde_json::to_writer(bytes::BufMut::writer(dst), self)
    }
}

impl Encodable for Notification {
    fn encode_json(&self, dst: &mut BytesMut) -> Result<(), serde_json::Error> {
        serde_json::to_writer(bytes::BufMut::writer(dst), self)
    }
}

impl Encodable for Response {
    fn encode_json(&self, dst: &mut BytesMut) -> Result<(), serde_json::Error> {
        serde_json::to_writer(bytes::BufMut::writer(dst), self)
    }
}

impl<T: Encodable + ?Sized> Encodable for &T {
    fn encode_json(&self, dst: &mut BytesMut) -> Result<(), serde_json::Error> {
        (**self).encode_json(dst)
    }
}

/// Encodes `item` at the end of `dst`, leaving `dst` unchanged on failure.
fn encode_checked<T: Encodable>(item: &T, dst: &mut BytesMut) -> std::io::Result<()> {
    let start = dst.len();
    item.encode_json(dst).map_err(|e| {
        dst.truncate(start);
        std::io::Error::new(std::io::ErrorKind::InvalidData, e)
    })
}

fn is_blank(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}
