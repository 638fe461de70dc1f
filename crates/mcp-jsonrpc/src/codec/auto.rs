//! Framing detection.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::{CodecConfig, ContentLengthCodec, Encodable, Framing, LineCodec};
use crate::error::FrameError;
use crate::message::Inbound;

#[derive(Debug, Clone)]
enum Inner {
    Undetected,
    Line(LineCodec),
    ContentLength(ContentLengthCodec),
}

/// A decoder that picks the framing from the first bytes of the stream: a JSON value (`{` or
/// `[`) means newline-delimited JSON, a header name (a letter) means `Content-Length` framing.
/// Anything else is treated as newline-delimited (and answered with a parse error).
///
/// The encoder writes with the detected framing, so a server answers in kind; before anything
/// was received it writes newline-delimited JSON. Clones share what was detected, so give a
/// clone to the write half of a split stream.
///
/// ```
/// use bytes::BytesMut;
/// use mcp_jsonrpc::codec::{AutoCodec, Framing};
/// use tokio_util::codec::Decoder;
///
/// let mut codec = AutoCodec::new();
/// let mut buf = BytesMut::from(&b"Content-Length: 30\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}"[..]);
/// assert!(codec.decode(&mut buf).unwrap().unwrap().is_ok());
/// assert_eq!(codec.detected(), Some(Framing::ContentLength));
/// ```
#[derive(Debug, Clone)]
pub struct AutoCodec {
    config: CodecConfig,
    inner: Inner,
    shared: Arc<AtomicU8>,
    line_encoder: LineCodec,
    length_encoder: ContentLengthCodec,
}

const UNDETECTED: u8 = 0;
const LINE: u8 = 1;
const CONTENT_LENGTH: u8 = 2;

impl Default for AutoCodec {
    fn default() -> Self {
        Self::with_config(CodecConfig::default())
    }
}

impl AutoCodec {
    /// A codec with the default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// A codec with the given limits.
    pub fn with_config(config: CodecConfig) -> Self {
        AutoCodec {
            config,
            inner: Inner::Undetected,
            shared: Arc::new(AtomicU8::new(UNDETECTED)),
            line_encoder: LineCodec::with_config(config),
            length_encoder: ContentLengthCodec::with_config(config),
        }
    }

    /// The framing detected so far, if any.
    pub fn detected(&self) -> Option<Framing> {
        match self.shared.load(Ordering::Acquire) {
            LINE => Some(Framing::Line),
            CONTENT_LENGTH => Some(Framing::ContentLength),
            _ => None,
        }
    }

    /// Detects the framing; `false` while only whitespace has arrived.
    fn detect(&mut self, buf: &mut BytesMut) -> bool {
        if !matches!(self.inner, Inner::Undetected) {
            return true;
        }
        let skip = buf
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .count();
        buf.advance(skip);
        let Some(&first) = buf.first() else {
            return false;
        };
        let (inner, tag) = if first.is_ascii_alphabetic() {
            (
                Inner::ContentLength(ContentLengthCodec::with_config(self.config)),
                CONTENT_LENGTH,
            )
        } else {
            (Inner::Line(LineCodec::with_config(self.config)), LINE)
        };
        self.inner = inner;
        self.shared.store(tag, Ordering::Release);
        true
    }
}

impl Decoder for AutoCodec {
    type Item = Result<Inbound, FrameError>;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Self::Item>> {
        if !self.detect(buf) {
            return Ok(None);
        }
        match &mut self.inner {
            Inner::Line(c) => c.decode(buf),
            Inner::ContentLength(c) => c.decode(buf),
            Inner::Undetected => Ok(None),
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<Self::Item>> {
        if !self.detect(buf) {
            buf.clear();
            return Ok(None);
        }
        match &mut self.inner {
            Inner::Line(c) => c.decode_eof(buf),
            Inner::ContentLength(c) => c.decode_eof(buf),
            Inner::Undetected => Ok(None),
        }
    }
}

impl<T: Encodable> Encoder<T> for AutoCodec {
    type Error = io::Error;

    fn encode(&mut self, item: T, dst: &mut BytesMut) -> io::Result<()> {
        match self.shared.load(Ordering::Acquire) {
            CONTENT_LENGTH => self.length_encoder.encode(item, dst),
            _ => self.line_encoder.encode(item, dst),
        }
    }
}
