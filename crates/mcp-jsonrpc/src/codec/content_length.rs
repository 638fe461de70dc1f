//! `Content-Length` framing (LSP style).

use std::fmt::Write as _;
use std::io;

use bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::{CodecConfig, Encodable, encode_checked, is_blank, scan};
use crate::decode::decode_frame;
use crate::error::FrameError;
use crate::message::Inbound;

const CONTENT_LENGTH: &[u8] = b"content-length";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Expecting a header section.
    Head,
    /// Expecting a body of this many bytes.
    Body(usize),
    /// Dropping this many bytes of an oversized body.
    Skip(usize),
    /// After a header error: dropping bytes up to the next `Content-Length` header.
    Resync,
}

/// `Content-Length: N\r\n\r\n` framing, as the Language Server Protocol uses.
///
/// Header names are case-insensitive, other headers (such as `Content-Type`) are ignored, and
/// blank lines between frames are skipped. A body larger than the maximum frame size yields
/// [`FrameError::TooLarge`] and is skipped as it arrives without being buffered. A malformed
/// header section yields [`FrameError::Header`] and the decoder resynchronises at the next
/// `Content-Length` header.
///
/// ```
/// use bytes::BytesMut;
/// use mcp_jsonrpc::codec::ContentLengthCodec;
/// use mcp_jsonrpc::{Inbound, Message, Notification};
/// use tokio_util::codec::{Decoder, Encoder};
///
/// let mut codec = ContentLengthCodec::new();
/// let mut buf = BytesMut::new();
/// let msg = Message::from(Notification::new("n", None));
/// codec.encode(&msg, &mut buf).unwrap();
/// assert_eq!(&buf[..], b"Content-Length: 30\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}");
/// assert_eq!(codec.decode(&mut buf).unwrap().unwrap().unwrap(), Inbound::Single(msg));
/// ```
#[derive(Debug, Clone)]
pub struct ContentLengthCodec {
    config: CodecConfig,
    state: State,
    scratch: BytesMut,
}

impl Default for ContentLengthCodec {
    fn default() -> Self {
        Self::with_config(CodecConfig::default())
    }
}

impl ContentLengthCodec {
    /// A codec with the default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// A codec with the given limits.
    pub fn with_config(config: CodecConfig) -> Self {
        ContentLengthCodec {
            config,
            state: State::Head,
            scratch: BytesMut::new(),
        }
    }

    fn header_error(&mut self, detail: impl Into<String>) -> Option<Result<Inbound, FrameError>> {
        self.state = State::Resync;
        Some(Err(FrameError::Header(detail.into())))
    }

    fn decode_head(&mut self, buf: &mut BytesMut) -> Option<Result<Inbound, FrameError>> {
        let skip = buf
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .count();
        buf.advance(skip);
        let first = *buf.first()?;
        if !is_token_byte(first) {
            // Not a header (for example a newline-delimited message): drop it.
            return self.header_error("expected a Content-Length header");
        }
        let limit = self.config.max_header_size;
        let window = &buf[..buf.len().min(limit)];
        let Some((head_len, total_len)) = find_header_end(window) else {
            if buf.len() >= limit {
                buf.advance(1);
                return self.header_error(format!("header section exceeds {limit} bytes"));
            }
            return None;
        };
        let parsed = parse_headers(&buf[..head_len]);
        if let Err(detail) = parsed {
            // Step past the start only: a valid header may follow garbage in the same section.
            buf.advance(1);
            return self.header_error(detail);
        }
        buf.advance(total_len);
        match parsed {
            Ok(len) if len > self.config.max_frame_size => {
                self.state = State::Skip(len);
                Some(Err(FrameError::TooLarge {
                    limit: self.config.max_frame_size,
                }))
            }
            Ok(len) => {
                self.state = State::Body(len);
                None
            }
            Err(detail) => self.header_error(detail),
        }
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Finds the blank line ending a header section: returns the length of the headers and the
/// length including the blank line.
fn find_header_end(buf: &[u8]) -> Option<(usize, usize)> {
    for nl in scan::positions(b'\n', buf) {
        match buf.get(nl + 1..) {
            Some([b'\n', ..]) => return Some((nl + 1, nl + 2)),
            Some([b'\r', b'\n', ..]) => return Some((nl + 1, nl + 3)),
            _ => {}
        }
    }
    None
}

/// Parses a header section, returning the content length.
fn parse_headers(head: &[u8]) -> Result<usize, String> {
    let mut length: Option<usize> = None;
    for line in head.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let Some(colon) = scan::find(b':', line) else {
            return Err("header line without `:`".into());
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.is_empty() || !name.iter().all(|b| is_token_byte(*b)) {
            return Err("malformed header name".into());
        }
        if name.eq_ignore_ascii_case(CONTENT_LENGTH) {
            let value = value.trim_ascii();
            if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
                return Err("Content-Length is not a decimal number".into());
            }
            let n = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .ok_or_else(|| "Content-Length is out of range".to_string())?;
            if length.is_some_and(|l| l != n) {
                return Err("conflicting Content-Length headers".into());
            }
            length = Some(n);
        }
    }
    length.ok_or_else(|| "missing Content-Length header".into())
}

/// Finds the next `Content-Length` header name (case-insensitive) in `buf`. Returns the index to
/// keep from: the match, or the start of a possible partial match at the end.
fn find_resync(buf: &[u8]) -> Result<usize, usize> {
    for i in scan::positions2(b'c', b'C', buf) {
        let rest = &buf[i..];
        if rest.len() < CONTENT_LENGTH.len() {
            if rest.eq_ignore_ascii_case(&CONTENT_LENGTH[..rest.len()]) {
                return Err(i);
            }
        } else if rest[..CONTENT_LENGTH.len()].eq_ignore_ascii_case(CONTENT_LENGTH) {
            return Ok(i);
        }
    }
    Err(buf.len())
}

impl Decoder for ContentLengthCodec {
    type Item = Result<Inbound, FrameError>;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Self::Item>> {
        loop {
            match self.state {
                State::Head => {
                    let before = self.state;
                    let item = self.decode_head(buf);
                    if item.is_some() {
                        return Ok(item);
                    }
                    if self.state == before {
                        return Ok(None);
                    }
                }
                State::Body(len) => {
                    if buf.len() < len {
                        buf.reserve(len - buf.len());
                        return Ok(None);
                    }
                    let item = decode_frame(&buf[..len], Some(self.config.max_batch_len));
                    buf.advance(len);
                    self.state = State::Head;
                    return Ok(Some(item));
                }
                State::Skip(left) => {
                    let n = left.min(buf.len());
                    buf.advance(n);
                    if n < left {
                        self.state = State::Skip(left - n);
                        return Ok(None);
                    }
                    self.state = State::Head;
                }
                State::Resync => match find_resync(buf) {
                    Ok(at) => {
                        buf.advance(at);
                        self.state = State::Head;
                    }
                    Err(keep_from) => {
                        buf.advance(keep_from);
                        return Ok(None);
                    }
                },
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<Self::Item>> {
        if let Some(item) = self.decode(buf)? {
            return Ok(Some(item));
        }
        let state = std::mem::replace(&mut self.state, State::Head);
        let left = buf.len();
        let blank = is_blank(buf);
        buf.clear();
        match state {
            State::Head | State::Body(_) if !blank => Ok(Some(Err(FrameError::Truncated(left)))),
            _ => Ok(None),
        }
    }
}

impl<T: Encodable> Encoder<T> for ContentLengthCodec {
    type Error = io::Error;

    fn encode(&mut self, item: T, dst: &mut BytesMut) -> io::Result<()> {
        self.scratch.clear();
        encode_checked(&item, &mut self.scratch)?;
        write!(dst, "Content-Length: {}\r\n\r\n", self.scratch.len())
            .map_err(|e| io::Error::other(e.to_string()))?;
        dst.extend_from_slice(&self.scratch);
        Ok(())
    }
}
