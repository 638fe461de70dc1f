//! Newline-delimited JSON.

use std::io;

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::{CodecConfig, Encodable, encode_checked, is_blank, scan};
use crate::decode::decode_frame;
use crate::error::FrameError;
use crate::message::Inbound;

/// Newline-delimited JSON framing: one message (or batch) per line, as the stdio transport of
/// every MCP revision uses.
///
/// Decoding tolerates `\r\n` line endings and skips blank lines. A line longer than the maximum
/// frame size yields [`FrameError::TooLarge`] as soon as the limit is passed; the rest of that
/// line is discarded as it arrives, never buffered. Encoding writes compact JSON followed by
/// `\n`; line breaks inside raw params or results (insignificant whitespace) are written as
/// spaces, so a frame never contains an embedded newline.
///
/// ```
/// use bytes::BytesMut;
/// use mcp_jsonrpc::codec::LineCodec;
/// use mcp_jsonrpc::{Inbound, Message, Notification};
/// use tokio_util::codec::{Decoder, Encoder};
///
/// let mut codec = LineCodec::new();
/// let mut buf = BytesMut::new();
/// let msg = Message::from(Notification::new("notifications/initialized", None));
/// codec.encode(&msg, &mut buf).unwrap();
/// assert_eq!(&buf[..], b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
/// let decoded = codec.decode(&mut buf).unwrap().unwrap().unwrap();
/// assert_eq!(decoded, Inbound::Single(msg));
/// ```
#[derive(Debug, Clone, Default)]
pub struct LineCodec {
    config: CodecConfig,
    /// Where the search for the next newline resumes (bytes before it have no newline).
    next_index: usize,
    /// Inside an oversized line: drop bytes up to the next newline.
    discarding: bool,
}

impl LineCodec {
    /// A codec with the default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// A codec with the given limits.
    pub fn with_config(config: CodecConfig) -> Self {
        LineCodec {
            config,
            next_index: 0,
            discarding: false,
        }
    }

    fn frame(&self, line: &[u8]) -> Option<Result<Inbound, FrameError>> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > self.config.max_frame_size {
            return Some(Err(FrameError::TooLarge {
                limit: self.config.max_frame_size,
            }));
        }
        if is_blank(line) {
            return None;
        }
        Some(decode_frame(line, Some(self.config.max_batch_len)))
    }
}

impl Decoder for LineCodec {
    type Item = Result<Inbound, FrameError>;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Self::Item>> {
        loop {
            let from = self.next_index.min(buf.len());
            match scan::find(b'\n', &buf[from..]) {
                Some(offset) => {
                    let end = from + offset;
                    self.next_index = 0;
                    if self.discarding {
                        self.discarding = false;
                        buf.advance(end + 1);
                        continue;
                    }
                    let item = self.frame(&buf[..end]);
                    buf.advance(end + 1);
                    match item {
                        Some(item) => return Ok(Some(item)),
                        None => continue,
                    }
                }
                None if self.discarding => {
                    buf.clear();
                    self.next_index = 0;
                    return Ok(None);
                }
                None => {
                    // One extra byte for a possible `\r` before the newline.
                    if buf.len() > self.config.max_frame_size + 1 {
                        buf.clear();
                        self.next_index = 0;
                        self.discarding = true;
                        return Ok(Some(Err(FrameError::TooLarge {
                            limit: self.config.max_frame_size,
                        })));
                    }
                    self.next_index = buf.len();
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<Self::Item>> {
        if let Some(item) = self.decode(buf)? {
            return Ok(Some(item));
        }
        // A last line without a trailing newline is still a message.
        self.next_index = 0;
        if self.discarding {
            self.discarding = false;
            buf.clear();
            return Ok(None);
        }
        let item = self.frame(buf);
        buf.clear();
        Ok(item)
    }
}

impl<T: Encodable> Encoder<T> for LineCodec {
    type Error = io::Error;

    fn encode(&mut self, item: T, dst: &mut BytesMut) -> io::Result<()> {
        let start = dst.len();
        encode_checked(&item, dst)?;
        // Compact serde_json output never contains a raw line break, but raw params may carry
        // one as whitespace between tokens (inside strings JSON requires it escaped).
        let written = &mut dst[start..];
        if scan::find2(b'\n', b'\r', written).is_some() {
            for b in written.iter_mut() {
                if *b == b'\n' || *b == b'\r' {
                    *b = b' ';
                }
            }
        }
        dst.put_u8(b'\n');
        Ok(())
    }
}
