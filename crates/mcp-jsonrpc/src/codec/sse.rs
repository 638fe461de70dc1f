//! Server-Sent Events framing, for the HTTP transports (server and client, Streamable HTTP and
//! the 2024-11-05 HTTP+SSE transport).
//!
//! Decoding follows the WHATWG `EventSource` parsing rules: one leading byte order mark is
//! skipped; lines end in `\r\n`, `\n` or a lone `\r` (also when the `\r` and `\n` arrive in
//! different chunks); lines starting with `:` are comments; a line without `:` is a field with
//! an empty value; one space after the `:` is dropped; `data` lines are joined with `\n`; an `id`
//! containing NUL and a `retry` that is not all ASCII digits are ignored; unknown fields are
//! ignored; bytes that are not UTF-8 become U+FFFD; an unfinished event at the end of the
//! stream is dropped.
//!
//! Encoding writes one event per call: `event`, `id` and `retry` lines (in that order), then the
//! data as `data:` lines, then a blank line.

use std::io;
use std::ops::Range;

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::{CodecConfig, Encodable, encode_checked, scan};
use crate::error::FrameError;
use crate::message::Inbound;

/// One Server-Sent Event: the fields one blank-line-terminated block set.
///
/// ```
/// use mcp_jsonrpc::codec::SseEvent;
/// use mcp_jsonrpc::{Message, Notification};
///
/// let msg = Message::from(Notification::new("n", None));
/// let event = SseEvent::json(&msg).unwrap().with_id("42");
/// assert_eq!(event.data.as_deref(), Some(r#"{"jsonrpc":"2.0","method":"n"}"#));
/// assert!(event.is_message());
/// assert!(event.to_inbound(8).is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The event type (`event:`); `None` for the default type, `message`.
    pub event: Option<String>,
    /// The data (`data:` lines joined with `\n`); `None` when the block had no `data` line.
    ///
    /// `EventSource` dispatches only events with data; the decoder also returns blocks that set
    /// only an `id`, a `retry` or an `event` (such as the priming event a server sends before
    /// its first message), so that their fields are not lost.
    pub data: Option<String>,
    /// The event id (`id:`), if the block set one; `Some("")` resets the last event id.
    pub id: Option<String>,
    /// The reconnection time in milliseconds (`retry:`), if the block set a valid one.
    pub retry: Option<u64>,
}

impl SseEvent {
    /// An event carrying `data`.
    pub fn new(data: impl Into<String>) -> Self {
        SseEvent {
            data: Some(data.into()),
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

    /// Whether the event has the default type, `message` (no `event` field, an empty one, or
    /// `message`): the type MCP uses for JSON-RPC messages.
    pub fn is_message(&self) -> bool {
        matches!(self.event.as_deref(), None | Some("" | "message"))
    }

    /// Decodes the data as a JSON-RPC message or batch (of at most `max_batch` elements).
    pub fn to_inbound(&self, max_batch: usize) -> Result<Inbound, FrameError> {
        Inbound::from_slice(self.data.as_deref().unwrap_or("").as_bytes(), max_batch)
    }

    fn is_empty(&self) -> bool {
        self.event.is_none() && self.data.is_none() && self.id.is_none() && self.retry.is_none()
    }
}

/// The fields of an event other than its data, borrowed: what the encoding functions write
/// before the `data:` lines. For encoding without building an [`SseEvent`] first.
///
/// ```
/// use bytes::BytesMut;
/// use mcp_jsonrpc::codec::SseFields;
/// use mcp_jsonrpc::{Message, Notification};
///
/// let mut buf = BytesMut::new();
/// let fields = SseFields { id: Some("1-0"), retry: Some(500), ..SseFields::default() };
/// fields.encode("", &mut buf);
/// assert_eq!(&buf[..], b"id: 1-0\nretry: 500\ndata: \n\n");
///
/// buf.clear();
/// let msg = Message::from(Notification::new("n", None));
/// let json = SseFields::default().encode_json(&msg, &mut buf).unwrap().unwrap();
/// assert_eq!(&buf[json], br#"{"jsonrpc":"2.0","method":"n"}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SseFields<'a> {
    /// The event type; `None` for the default, `message`. Only its first line is written.
    pub event: Option<&'a str>,
    /// The event id. Only its first line is written.
    pub id: Option<&'a str>,
    /// The reconnection time in milliseconds.
    pub retry: Option<u64>,
}

impl SseFields<'_> {
    /// An upper bound of the bytes the `event`, `id` and `retry` lines take.
    pub fn head_len(&self) -> usize {
        self.event.map_or(0, |e| e.len() + 8)
            + self.id.map_or(0, |i| i.len() + 5)
            + self.retry.map_or(0, |_| 28)
    }

    /// Appends one event carrying `data` to `dst`, reserving its size first. `\r\n`, `\r` and
    /// `\n` in `data` each end a `data:` line; decoders join the lines again with `\n`.
    pub fn encode(&self, data: &str, dst: &mut BytesMut) {
        let breaks = scan::positions2(b'\n', b'\r', data.as_bytes()).count();
        dst.reserve(self.head_len() + data.len() + 8 * (breaks + 1) + 1);
        self.put_head(dst);
        put_data(dst, data.as_bytes());
        dst.put_u8(b'\n');
    }

    /// Appends one event whose data is the compact JSON encoding of `item`, serialised straight
    /// into `dst`. Returns where the JSON lies in `dst`, or `None` when raw values in it hold
    /// line breaks and it had to be split over several `data:` lines. On error `dst` is left
    /// unchanged.
    pub fn encode_json<T: Encodable>(
        &self,
        item: &T,
        dst: &mut BytesMut,
    ) -> io::Result<Option<Range<usize>>> {
        let begin = dst.len();
        self.put_head(dst);
        dst.put_slice(b"data: ");
        let start = dst.len();
        if let Err(e) = encode_checked(item, dst) {
            dst.truncate(begin);
            return Err(e);
        }
        let end = dst.len();
        if scan::find2(b'\n', b'\r', &dst[start..end]).is_some() {
            // Line breaks inside raw values (pretty-printed params): split them over lines.
            let json = dst.split_off(start);
            dst.truncate(start - b"data: ".len());
            put_data(dst, &json);
            dst.put_u8(b'\n');
            return Ok(None);
        }
        dst.put_slice(b"\n\n");
        Ok(Some(start..end))
    }

    fn put_head(&self, dst: &mut BytesMut) {
        if let Some(kind) = self.event {
            put_line(dst, b"event: ", first_line(kind).as_bytes());
        }
        if let Some(id) = self.id {
            put_line(dst, b"id: ", first_line(id).as_bytes());
        }
        if let Some(retry) = self.retry {
            put_line(dst, b"retry: ", retry.to_string().as_bytes());
        }
    }
}

impl<'a> From<&'a SseEvent> for SseFields<'a> {
    fn from(e: &'a SseEvent) -> Self {
        SseFields {
            event: e.event.as_deref(),
            id: e.id.as_deref(),
            retry: e.retry,
        }
    }
}

/// Appends a comment (`: comment`, one line per line of `comment`) and a blank line to `dst`:
/// decoders ignore it, so it serves as a keep-alive.
///
/// ```
/// let mut buf = bytes::BytesMut::new();
/// mcp_jsonrpc::codec::encode_sse_comment("keep-alive", &mut buf);
/// assert_eq!(&buf[..], b": keep-alive\n\n");
/// ```
pub fn encode_sse_comment(comment: &str, dst: &mut BytesMut) {
    for line in comment.split(['\n', '\r']) {
        put_line(dst, b": ", line.as_bytes());
    }
    dst.put_u8(b'\n');
}

fn put_line(dst: &mut BytesMut, name: &[u8], value: &[u8]) {
    dst.put_slice(name);
    dst.put_slice(value);
    dst.put_u8(b'\n');
}

/// Writes `data` as `data:` lines: `\r\n`, `\r` and `\n` each end a line.
fn put_data(dst: &mut BytesMut, data: &[u8]) {
    let mut rest = data;
    loop {
        dst.put_slice(b"data: ");
        match scan::find2(b'\n', b'\r', rest) {
            Some(i) => {
                dst.put_slice(&rest[..i]);
                dst.put_u8(b'\n');
                let skip = if rest[i] == b'\r' && rest.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                };
                rest = &rest[i + skip..];
            }
            None => {
                dst.put_slice(rest);
                dst.put_u8(b'\n');
                return;
            }
        }
    }
}

/// Event types and ids are single-line by nature; anything after a line break is dropped.
fn first_line(s: &str) -> &str {
    s.split(['\n', '\r']).next().unwrap_or("")
}

/// The Server-Sent Events codec: an incremental decoder following the WHATWG rules (see the
/// [module documentation](self)) and an encoder writing one [`SseEvent`] per call.
///
/// The decoder returns one event per blank-line-terminated block that set at least one field
/// (`data`, `event`, `id` or a valid `retry`); blocks holding only comments, unknown or
/// ignored fields are skipped. It also keeps the stream's state: the
/// [last event id](Self::last_event_id) and the [reconnection time](Self::retry_ms).
///
/// The maximum frame size of the [`CodecConfig`] bounds the bytes of an event: its lines up to
/// the blank line ending it, comments included, each line's ending counted as one byte. An
/// oversized event yields [`FrameError::TooLarge`] once and is skipped up to its end without
/// being buffered; decoding goes on with the next event. The result does not depend on how the
/// stream is split into chunks.
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
/// assert_eq!(event.data.as_deref(), Some("line 1\nline 2"));
/// assert_eq!(codec.last_event_id(), Some("7"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct SseCodec {
    config: CodecConfig,
    /// Where to resume looking for a line ending in the buffer.
    next_index: usize,
    /// The previous line ended with `\r`: a `\n` right after it belongs to that line ending.
    pending_cr: bool,
    bom_checked: bool,
    /// Inside an oversized line: drop bytes up to its end.
    discarding_line: bool,
    /// Inside an oversized event: drop lines up to the blank line ending it.
    skipping_event: bool,
    /// The fields of the event being read.
    current: SseEvent,
    /// The bytes of the event being read.
    size: usize,
    /// The id the last `id` field set, committed at the end of each event.
    id_buffer: Option<String>,
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

    /// The last event id of the stream (what `Last-Event-ID` should carry on reconnect): set by
    /// the `id` field of the last finished event that had one. `None` before any, or after an
    /// empty `id` reset it.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref().filter(|id| !id.is_empty())
    }

    /// The last reconnection time the stream asked for, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.last_retry
    }

    fn limit(&self) -> usize {
        self.config.frame_size_limit()
    }

    fn too_large(&mut self) -> FrameError {
        self.current = SseEvent::default();
        self.size = 0;
        self.skipping_event = true;
        FrameError::TooLarge {
            limit: self.limit(),
        }
    }

    /// Ends the event at a blank line: returns it unless it set no field.
    fn dispatch(&mut self) -> Option<SseEvent> {
        self.size = 0;
        if self.id_buffer.is_some() {
            self.last_event_id.clone_from(&self.id_buffer);
        }
        let skipped = std::mem::take(&mut self.skipping_event);
        let event = std::mem::take(&mut self.current);
        (!skipped && !event.is_empty()).then_some(event)
    }

    /// Processes one non-empty line of an event; `Err` when the event grew too large.
    fn line(&mut self, line: &[u8]) -> Result<(), FrameError> {
        self.size += line.len() + 1;
        if self.size > self.limit() {
            return Err(self.too_large());
        }
        if line.first() == Some(&b':') {
            return Ok(());
        }
        let (name, value) = match scan::find(b':', line) {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                let value = String::from_utf8_lossy(value);
                match &mut self.current.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(&value);
                    }
                    None => self.current.data = Some(value.into_owned()),
                }
            }
            b"event" => self.current.event = Some(String::from_utf8_lossy(value).into_owned()),
            // An id containing NUL is ignored, as the standard says.
            b"id" if !value.contains(&0) => {
                let id = String::from_utf8_lossy(value).into_owned();
                self.id_buffer = Some(id.clone());
                self.current.id = Some(id);
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // All ASCII digits, so UTF-8; a value too large for a u64 is ignored.
                if let Ok(ms) = std::str::from_utf8(value).unwrap_or("").parse() {
                    self.current.retry = Some(ms);
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
            let Some(offset) = scan::find2(b'\n', b'\r', &buf[from..]) else {
                // An unfinished line: drop it if it is being dropped anyway, fail as soon as
                // it is too large (the finished line would be too), else wait for more.
                if buf.is_empty() {
                    return Ok(None);
                }
                if self.discarding_line || self.skipping_event {
                    buf.clear();
                    self.next_index = 0;
                    self.discarding_line = true;
                    return Ok(None);
                }
                if self.size + buf.len() > self.limit() {
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
            if std::mem::take(&mut self.discarding_line) {
                continue;
            }
            if line.is_empty() {
                match self.dispatch() {
                    Some(event) => return Ok(Some(Ok(event))),
                    None => continue,
                }
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
        self.current = SseEvent::default();
        self.size = 0;
        self.next_index = 0;
        self.discarding_line = false;
        self.skipping_event = false;
        Ok(None)
    }
}

impl Encoder<&SseEvent> for SseCodec {
    type Error = io::Error;

    fn encode(&mut self, event: &SseEvent, dst: &mut BytesMut) -> io::Result<()> {
        let fields = SseFields::from(event);
        match &event.data {
            Some(data) => fields.encode(data, dst),
            None => {
                fields.put_head(dst);
                dst.put_u8(b'\n');
            }
        }
        Ok(())
    }
}

impl Encoder<SseEvent> for SseCodec {
    type Error = io::Error;

    fn encode(&mut self, event: SseEvent, dst: &mut BytesMut) -> io::Result<()> {
        self.encode(&event, dst)
    }
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

    fn events(input: &[u8], chunk: usize, limit: usize) -> Vec<Result<SseEvent, FrameError>> {
        let config = CodecConfig::default().max_frame_size(limit);
        let chunks: Vec<&[u8]> = input.chunks(chunk.max(1)).collect();
        decode_all(&mut SseCodec::with_config(config), &chunks)
    }

    fn ok(items: Vec<Result<SseEvent, FrameError>>) -> Vec<SseEvent> {
        items.into_iter().map(Result::unwrap).collect()
    }

    #[test]
    fn parses_the_standard_examples() {
        let input = b"\xef\xbb\xbf: comment\r\ndata: first\r\ndata:second\r\n\r\nevent: add\rdata\rid: 3\r\rretry: 1500\nid: 4\n\ndata: x\n";
        // Split at every byte boundary: the result must not change.
        for split in 0..input.len() {
            let mut codec = SseCodec::new();
            let events = ok(decode_all(&mut codec, &[&input[..split], &input[split..]]));
            assert_eq!(
                events,
                [
                    SseEvent::new("first\nsecond"),
                    SseEvent::new("").with_event("add").with_id("3"),
                    SseEvent {
                        id: Some("4".into()),
                        retry: Some(1500),
                        ..SseEvent::default()
                    },
                ],
                "split at {split}"
            );
            // The unfinished event is dropped.
            assert_eq!(codec.last_event_id(), Some("4"));
            assert_eq!(codec.retry_ms(), Some(1500));
        }
    }

    #[test]
    fn parses_fields_and_line_endings_at_any_chunk_size() {
        let input = b"\xEF\xBB\xBF: comment\r\nid: 1\r\nretry: 500\r\ndata\r\n\r\n\
                      event: message\rdata: {\"a\":1}\rdata:  two\r\r\
                      event: endpoint\ndata: /messages?sessionId=x\nid\n\n";
        for chunk in 1..input.len() {
            let mut codec = SseCodec::new();
            let chunks: Vec<&[u8]> = input.chunks(chunk).collect();
            let evs = ok(decode_all(&mut codec, &chunks));
            assert_eq!(evs.len(), 3, "chunk {chunk}");
            assert_eq!(evs[0].id.as_deref(), Some("1"));
            assert_eq!(evs[0].retry, Some(500));
            assert_eq!(evs[0].data.as_deref(), Some(""));
            assert!(evs[1].is_message());
            assert_eq!(evs[1].data.as_deref(), Some("{\"a\":1}\n two"));
            assert_eq!(evs[2].event.as_deref(), Some("endpoint"));
            assert!(!evs[2].is_message());
            assert_eq!(evs[2].data.as_deref(), Some("/messages?sessionId=x"));
            // An empty id resets the last event id.
            assert_eq!(evs[2].id.as_deref(), Some(""));
            assert_eq!(codec.last_event_id(), None);
        }
    }

    #[test]
    fn priming_events_without_data_are_returned() {
        let evs = ok(events(b"id: event-1\nretry: 500\n\n", 4, 1024));
        assert_eq!(
            evs,
            [SseEvent {
                id: Some("event-1".into()),
                retry: Some(500),
                ..SseEvent::default()
            }]
        );
    }

    #[test]
    fn ignores_blank_blocks_comments_unknown_fields_and_bad_values() {
        let input =
            b"\n\n: hi\n\nfoo: bar\nretry: 1x\nretry: \nretry: 99999999999999999999\nid: a\0b\n\n";
        let mut codec = SseCodec::new();
        assert!(decode_all(&mut codec, &[input]).is_empty());
        assert_eq!(codec.last_event_id(), None);
        assert_eq!(codec.retry_ms(), None);
    }

    #[test]
    fn the_default_type_is_message() {
        for (event, message) in [(None, true), (Some(""), true), (Some("message"), true)] {
            let e = SseEvent {
                event: event.map(str::to_owned),
                ..SseEvent::new("x")
            };
            assert_eq!(e.is_message(), message);
        }
        assert!(!SseEvent::new("x").with_event("endpoint").is_message());
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let evs = ok(events(b"data: caf\xc3\xa9 \xff\nevent: \xfe\n\n", 3, 64));
        assert_eq!(evs[0].data.as_deref(), Some("caf\u{e9} \u{fffd}"));
        assert_eq!(evs[0].event.as_deref(), Some("\u{fffd}"));
    }

    #[test]
    fn unfinished_events_are_dropped_at_the_end() {
        assert!(events(b"id: 1\ndata: x", 2, 64).is_empty());
        let mut codec = SseCodec::new();
        assert!(decode_all(&mut codec, &[b"id: 1\ndata: x\n"]).is_empty());
        assert_eq!(codec.last_event_id(), None);
    }

    #[test]
    fn oversized_events_are_skipped() {
        let mut input = Vec::new();
        input.extend_from_slice(b"data: ");
        input.extend(std::iter::repeat_n(b'a', 100));
        input.extend_from_slice(b"\ndata: more\n\ndata: ");
        input.extend(std::iter::repeat_n(b'b', 20));
        input.extend_from_slice(b"\ndata: ");
        input.extend(std::iter::repeat_n(b'c', 20));
        input.extend_from_slice(b"\n\ndata: ok\n\n");
        for chunk in [1, 7, 50, input.len()] {
            let events = events(&input, chunk, 32);
            assert_eq!(events.len(), 3, "{events:?}");
            assert!(matches!(events[0], Err(FrameError::TooLarge { limit: 32 })));
            assert!(matches!(events[1], Err(FrameError::TooLarge { limit: 32 })));
            assert_eq!(events[2].as_ref().unwrap().data.as_deref(), Some("ok"));
        }
    }

    #[test]
    fn the_limit_counts_every_line_with_and_without_endings() {
        let big = vec![b'a'; 2000];
        let items = events(&big, 100, 1024);
        assert!(matches!(
            items[..],
            [Err(FrameError::TooLarge { limit: 1024 })]
        ));
        let mut lines = Vec::new();
        for _ in 0..100 {
            lines.extend_from_slice(b": 0123456789\n");
        }
        let items = events(&lines, 7, 1024);
        assert!(matches!(
            items[..],
            [Err(FrameError::TooLarge { limit: 1024 })]
        ));
        // Exactly at the limit: `data: x\n` is 8 bytes.
        let items = events(b"data: x\n\n", 1, 8);
        assert_eq!(ok(items), [SseEvent::new("x")]);
        let items = events(b"data: xy\n\n", 1, 8);
        assert!(matches!(
            items[..],
            [Err(FrameError::TooLarge { limit: 8 })]
        ));
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
            SseEvent::default().with_id("p"),
        ];
        for e in &events {
            codec.encode(e, &mut buf).unwrap();
        }
        assert_eq!(
            &buf[..],
            b"event: message\nretry: 10\ndata: a\ndata: b\ndata: c\n\n\
              data: \n\n\
              id: x\ndata: {}\n\n\
              id: p\n\n"
        );
        let decoded = ok(decode_all(&mut SseCodec::new(), &[&buf]));
        assert_eq!(decoded[0].data.as_deref(), Some("a\nb\nc"));
        assert_eq!(decoded[0].event.as_deref(), Some("message"));
        assert_eq!(decoded[0].retry, Some(10));
        assert_eq!(decoded[1], SseEvent::new(""));
        assert_eq!(decoded[2].id.as_deref(), Some("x"));
        assert_eq!(decoded[3], events[3]);
    }

    #[test]
    fn json_messages_travel_as_data() {
        let msg = crate::Message::Request(crate::Request::new(1, "ping", None));
        let mut buf = BytesMut::new();
        let fields = SseFields {
            id: Some("9"),
            ..SseFields::default()
        };
        let range = fields.encode_json(&msg, &mut buf).unwrap().unwrap();
        assert_eq!(&buf[range], msg.to_string().as_bytes());
        let events = decode_all(&mut SseCodec::new(), &[&buf]);
        let inbound = events[0].as_ref().unwrap().to_inbound(4).unwrap();
        assert_eq!(inbound, Inbound::Single(msg));
    }

    #[test]
    fn json_with_line_breaks_is_split_over_data_lines() {
        let params =
            serde_json::value::RawValue::from_string("{\"a\": [1,\r\n 2]}".into()).unwrap();
        let msg = crate::Message::Request(crate::Request {
            id: crate::Id::Number(1),
            method: "m".into(),
            params: Some(params),
        });
        let mut buf = BytesMut::from(&b"before"[..]);
        let range = SseFields::default().encode_json(&msg, &mut buf).unwrap();
        assert_eq!(range, None);
        assert_eq!(
            &buf[..],
            &b"beforedata: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\": [1,\ndata:  2]}}\n\n"[..]
        );
    }

    #[test]
    fn comments_are_ignored_by_the_decoder() {
        let mut buf = BytesMut::new();
        encode_sse_comment("keep-alive", &mut buf);
        assert_eq!(&buf[..], b": keep-alive\n\n");
        encode_sse_comment("two\nlines", &mut buf);
        assert!(decode_all(&mut SseCodec::new(), &[&buf]).is_empty());
    }
}
