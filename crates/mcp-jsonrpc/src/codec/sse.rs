//! Server-Sent Events framing, for the HTTP transport.

use std::fmt::Write as _;
use std::io;

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::{CodecConfig, Encodable, encode_checked};
use crate::error::FrameError;
use crate::message::Inbound;

/// One Server-Sent Event.
///
/// ```
/// use mcp_jsonrpc::codec::SseEvent;
/// use mcp_jsonrpc::{Message, Notification};
///
/// let msg = Message::from(Notification::new("n", None));
/// let event = SseEvent::json(&msg).unwrap().with_id("42");
/// assert_eq!(event.data, r#"{"jsonrpc":"2.0","method":"n"}"#);
/// assert!(event.to_inbound(8).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The event type (`event:`); `None` for the default type, `message`.
    pub event: Option<String>,
    /// The data (`data:` lines joined with `\n`).
    pub data: String,
    /// The event id (`id:`), if the event set one.
    pub id: Option<String>,
    /// The reconnection time in milliseconds (`retry:`), if the event set one.
    pub retry: Option<u64>,
}

impl SseEvent {
    /// An event carrying `data`.
    pub fn new(data: impl Into<String>) -> Self {
        SseEvent {
            data: data.into(),
            ..Self::default()
        }
    }

    /// An event whose data is the compact JSON encoding of a message or frame.
    pub fn json<T: Encodable>(item: &T) -> Result<Self, serde_json::Error> {
        let mut buf = BytesMut::new();
        item.encode_json(&mut buf)?;
        let data = String::from_utf8(buf.to_vec())
            .map_err(<serde_json::Error as serde::ser::Error>::custom)?;
        Ok(Self::new(data))
    }

    /// Sets the event id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Sets the event type.
    pub fn with_event(mut self, event: impl Into<String>) -> Self {
        self.event = Some(event.into());
        self
    }

    /// Sets the reconnection time in milliseconds.
    pub fn with_retry(mut self, retry_ms: u64) -> Self {
        self.retry = Some(retry_ms);
        self
    }

    /// Decodes the data as a JSON-RPC message or batch (of at most `max_batch` elements).
    pub fn to_inbound(&self, max_batch: usize) -> Result<Inbound, FrameError> {
        Inbound::from_slice(self.data.as_bytes(), max_batch)
    }
}

/// A Server-Sent Events codec: the decoder parses an event stream as the HTML standard defines
/// it (`\n`, `\r\n` or `\r` line endings, comments, multi-line data, a leading BOM); the encoder
/// writes one event per call.
///
/// Events and lines are bounded by the configured maximum frame size: an oversized event yields
/// [`FrameError::TooLarge`] and is skipped up to its end without being buffered. As the standard
/// says, an event without data is not dispatched (its `id` still updates
/// [`last_event_id`](Self::last_event_id)), and an unfinished event at the end of the stream is
/// dropped.
///
/// ```
/// use bytes::BytesMut;
/// use mcp_jsonrpc::codec::{SseCodec, SseEvent};
/// use tokio_util::codec::{Decoder, Encoder};
///
/// let mut codec = SseCodec::new();
/// let mut buf = BytesMut::new();
/// codec.encode(&SseEvent::new("line 1\nline 2").with_id("7"), &mut buf).unwrap();
/// assert_eq!(&buf[..], b"id: 7\ndata: line 1\ndata: line 2\n\n");
/// let event = codec.decode(&mut buf).unwrap().unwrap().unwrap();
/// assert_eq!(event.data, "line 1\nline 2");
/// assert_eq!(codec.last_event_id(), Some("7"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct SseCodec {
    config: CodecConfig,
    next_index: usize,
    /// The previous line ended with `\r`: a `\n` right after it belongs to that line ending.
    pending_cr: bool,
    bom_checked: bool,
    /// Inside an oversized line: drop bytes up to its end.
    discarding_line: bool,
    /// Inside an oversized event: drop lines up to the blank line ending it.
    skipping_event: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
    retry: Option<u64>,
    size: usize,
    last_event_id: Option<String>,
    last_retry: Option<u64>,
}

const BOM: &[u8] = b"\xef\xbb\xbf";

impl SseCodec {
    /// A codec with the default limits (events up to 16 MiB).
    pub fn new() -> Self {
        Self::default()
    }

    /// A codec with the given limits; the maximum frame size bounds each event.
    pub fn with_config(config: CodecConfig) -> Self {
        SseCodec {
            config,
            ..Self::default()
        }
    }

    /// The id of the last event that set one (what `Last-Event-ID` should carry on reconnect).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The last reconnection time the stream asked for, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.last_retry
    }

    fn reset_event(&mut self) {
        self.event = None;
        self.data.clear();
        self.has_data = false;
        self.id = None;
        self.retry = None;
        self.size = 0;
    }

    fn too_large(&mut self) -> FrameError {
        self.reset_event();
        self.skipping_event = true;
        FrameError::TooLarge {
            limit: self.config.max_frame_size,
        }
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        if !self.has_data {
            self.reset_event();
            return None;
        }
        let event = SseEvent {
            event: self.event.take(),
            data: std::mem::take(&mut self.data),
            id: self.id.take(),
            retry: self.retry.take(),
        };
        self.reset_event();
        Some(event)
    }

    /// Processes one non-empty line; `Err` when the event grew too large.
    fn line(&mut self, line: &[u8]) -> Result<(), FrameError> {
        if line.first() == Some(&b':') {
            return Ok(());
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match name {
            b"data" => {
                self.size += value.len() + 1;
                if self.size > self.config.max_frame_size {
                    return Err(self.too_large());
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => {
                self.size += value.len();
                if self.size > self.config.max_frame_size {
                    return Err(self.too_large());
                }
                self.event = Some(value.into_owned());
            }
            b"id" if !value.contains('\0') => {
                self.last_event_id = Some(value.clone().into_owned());
                self.id = Some(value.into_owned());
            }
            b"retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse() {
                    self.retry = Some(ms);
                    self.last_retry = Some(ms);
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl Decoder for SseCodec {
    type Item = Result<SseEvent, FrameError>;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Self::Item>> {
        if !self.bom_checked {
            if buf.len() < BOM.len() && BOM.starts_with(buf) {
                return Ok(None);
            }
            if buf.starts_with(BOM) {
                buf.advance(BOM.len());
            }
            self.bom_checked = true;
        }
        loop {
            if self.pending_cr {
                match buf.first() {
                    None => return Ok(None),
                    Some(b'\n') => buf.advance(1),
                    Some(_) => {}
                }
                self.pending_cr = false;
            }
            let from = self.next_index.min(buf.len());
            let Some(offset) = memchr::memchr2(b'\n', b'\r', &buf[from..]) else {
                if self.discarding_line {
                    buf.clear();
                    self.next_index = 0;
                    return Ok(None);
                }
                if buf.len() > self.config.max_frame_size {
                    buf.clear();
                    self.next_index = 0;
                    self.discarding_line = true;
                    return Ok(Some(Err(self.too_large())));
                }
                self.next_index = buf.len();
                return Ok(None);
            };
            let end = from + offset;
            self.next_index = 0;
            self.pending_cr = buf[end] == b'\r';
            let line = buf.split_to(end + 1);
            let line = &line[..end];
            if self.discarding_line {
                self.discarding_line = false;
                continue;
            }
            if line.is_empty() {
                if self.skipping_event {
                    self.skipping_event = false;
                    self.reset_event();
                    continue;
                }
                if let Some(event) = self.dispatch() {
                    return Ok(Some(Ok(event)));
                }
                continue;
            }
            if self.skipping_event {
                continue;
            }
            if let Err(e) = self.line(line) {
                return Ok(Some(Err(e)));
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<Self::Item>> {
        if let Some(item) = self.decode(buf)? {
            return Ok(Some(item));
        }
        // An unfinished event at the end of the stream is dropped.
        buf.clear();
        self.reset_event();
        self.next_index = 0;
        self.discarding_line = false;
        self.skipping_event = false;
        Ok(None)
    }
}

fn put_field(dst: &mut BytesMut, name: &str, value: &str) {
    // Line breaks would end the field early: write each line as its own field.
    for line in value.split(['\n', '\r']) {
        dst.put_slice(name.as_bytes());
        dst.put_slice(b": ");
        dst.put_slice(line.as_bytes());
        dst.put_u8(b'\n');
    }
}

impl Encoder<&SseEvent> for SseCodec {
    type Error = io::Error;

    fn encode(&mut self, event: &SseEvent, dst: &mut BytesMut) -> io::Result<()> {
        if let Some(kind) = &event.event {
            put_field(dst, "event", first_line(kind));
        }
        if let Some(id) = &event.id {
            put_field(dst, "id", first_line(id));
        }
        if let Some(retry) = event.retry {
            writeln!(dst, "retry: {retry}").map_err(|e| io::Error::other(e.to_string()))?;
        }
        put_field(dst, "data", &event.data.replace("\r\n", "\n"));
        dst.put_u8(b'\n');
        Ok(())
    }
}

impl Encoder<SseEvent> for SseCodec {
    type Error = io::Error;

    fn encode(&mut self, event: SseEvent, dst: &mut BytesMut) -> io::Result<()> {
        self.encode(&event, dst)
    }
}

impl SseCodec {
    /// Writes a JSON-RPC message or frame as one event (data only), without building an
    /// [`SseEvent`] first.
    pub fn encode_json<T: Encodable>(&mut self, item: &T, dst: &mut BytesMut) -> io::Result<()> {
        let mut json = BytesMut::new();
        encode_checked(item, &mut json)?;
        for line in json[..].split(|b| *b == b'\n' || *b == b'\r') {
            dst.put_slice(b"data: ");
            dst.put_slice(line);
            dst.put_u8(b'\n');
        }
        dst.put_u8(b'\n');
        Ok(())
    }
}

/// Event types and ids are single-line by nature; anything after a line break is dropped.
fn first_line(s: &str) -> &str {
    s.split(['\n', '\r']).next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(codec: &mut SseCodec, chunks: &[&[u8]]) -> Vec<Result<SseEvent, FrameError>> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for c in chunks {
            buf.extend_from_slice(c);
            while let Some(e) = codec.decode(&mut buf).unwrap() {
                out.push(e);
            }
        }
        while let Some(e) = codec.decode_eof(&mut buf).unwrap() {
            out.push(e);
        }
        out
    }

    #[test]
    fn parses_the_standard_examples() {
        let input = b"\xef\xbb\xbf: comment\r\ndata: first\r\ndata:second\r\n\r\nevent: add\rdata\rid: 3\r\rretry: 1500\nid: 4\n\ndata: x\n";
        // Split at every byte boundary: the result must not change.
        for split in 0..input.len() {
            let mut codec = SseCodec::new();
            let events = decode_all(&mut codec, &[&input[..split], &input[split..]]);
            let events: Vec<SseEvent> = events.into_iter().map(Result::unwrap).collect();
            assert_eq!(
                events,
                [
                    SseEvent::new("first\nsecond"),
                    SseEvent::new("").with_event("add").with_id("3"),
                ],
                "split at {split}"
            );
            // The id-only event was not dispatched but still counts; the unfinished one is dropped.
            assert_eq!(codec.last_event_id(), Some("4"));
            assert_eq!(codec.retry_ms(), Some(1500));
        }
    }

    #[test]
    fn oversized_events_are_skipped() {
        let config = CodecConfig::default().max_frame_size(32);
        let mut input = Vec::new();
        input.extend_from_slice(b"data: ");
        input.extend(std::iter::repeat_n(b'a', 100));
        input.extend_from_slice(b"\ndata: more\n\ndata: ");
        input.extend(std::iter::repeat_n(b'b', 20));
        input.extend_from_slice(b"\ndata: ");
        input.extend(std::iter::repeat_n(b'c', 20));
        input.extend_from_slice(b"\n\ndata: ok\n\n");
        let chunks: Vec<&[u8]> = input.chunks(7).collect();
        let events = decode_all(&mut SseCodec::with_config(config), &chunks);
        assert_eq!(events.len(), 3, "{events:?}");
        assert!(matches!(events[0], Err(FrameError::TooLarge { limit: 32 })));
        assert!(matches!(events[1], Err(FrameError::TooLarge { limit: 32 })));
        assert_eq!(events[2].as_ref().unwrap().data, "ok");
    }

    #[test]
    fn encodes_one_event_per_call_and_round_trips() {
        let mut codec = SseCodec::new();
        let mut buf = BytesMut::new();
        let events = [
            SseEvent::new("a\r\nb\rc")
                .with_event("message")
                .with_retry(10),
            SseEvent::new(""),
            SseEvent::new("{}").with_id("x\ny"),
        ];
        for e in &events {
            codec.encode(e, &mut buf).unwrap();
        }
        let decoded: Vec<SseEvent> = decode_all(&mut SseCodec::new(), &[&buf])
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(decoded[0].data, "a\nb\nc");
        assert_eq!(decoded[0].event.as_deref(), Some("message"));
        assert_eq!(decoded[0].retry, Some(10));
        assert_eq!(decoded[1].data, "");
        assert_eq!(decoded[2].id.as_deref(), Some("x"));
    }

    #[test]
    fn json_messages_travel_as_data() {
        let msg = crate::Message::Request(crate::Request::new(1, "ping", None));
        let mut codec = SseCodec::new();
        let mut buf = BytesMut::new();
        codec.encode_json(&msg, &mut buf).unwrap();
        let events = decode_all(&mut SseCodec::new(), &[&buf]);
        let inbound = events[0].as_ref().unwrap().to_inbound(4).unwrap();
        assert_eq!(inbound, Inbound::Single(msg));
    }
}
