//! A bounded decoder for `text/event-stream` bodies (the WHATWG Server-Sent Events format).
//!
//! The decoder yields one [`SseEvent`] per blank-line-terminated block that set at least one
//! field, including blocks without `data` (the priming events of the 2025-11-25 polling
//! pattern carry only an `id` and a `retry`). Lines may end in CRLF, LF or a lone CR, also when
//! the CR and LF arrive in different chunks.

use bytes::{Buf, BytesMut};

/// One event block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event` field; `None` means the default type, `message`.
    pub event: Option<String>,
    /// The joined `data` lines (without the final newline). Empty when no data line came.
    pub data: String,
    /// Whether at least one `data` line came.
    pub has_data: bool,
    /// The `id` field as last set in this block. `Some("")` resets the last event id.
    pub id: Option<String>,
    /// The `retry` field in milliseconds, when valid.
    pub retry: Option<u64>,
}

impl SseEvent {
    /// Whether this is a `message` event (the type MCP uses for JSON-RPC messages).
    pub fn is_message(&self) -> bool {
        matches!(self.event.as_deref(), None | Some("message"))
    }
}

/// Why a stream could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SseError {
    /// One event (or one line) is larger than allowed.
    #[error("server-sent event exceeds the maximum size of {0} bytes")]
    TooLarge(usize),
    /// A field is not valid UTF-8.
    #[error("server-sent event is not valid UTF-8")]
    Utf8,
}

/// Incremental decoder; feed it bytes with [`SseDecoder::decode`].
#[derive(Debug)]
pub(crate) struct SseDecoder {
    max_event_size: usize,
    current: SseEvent,
    /// Bytes of fields accumulated in the current block.
    current_size: usize,
    /// Whether the current block set any field.
    dirty: bool,
    /// The previous line ended with a CR: a directly following LF belongs to it.
    skip_lf: bool,
    /// Whether the stream start (and a possible byte order mark) is behind us.
    started: bool,
}

impl SseDecoder {
    /// A decoder accepting events of at most `max_event_size` bytes.
    pub fn new(max_event_size: usize) -> Self {
        SseDecoder {
            max_event_size: max_event_size.max(64),
            current: SseEvent::default(),
            current_size: 0,
            dirty: false,
            skip_lf: false,
            started: false,
        }
    }

    /// Decodes the next complete event from `buf`, consuming what it used. `Ok(None)` means
    /// more bytes are needed.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<SseEvent>, SseError> {
        loop {
            if self.skip_lf && !buf.is_empty() {
                if buf[0] == b'\n' {
                    buf.advance(1);
                }
                self.skip_lf = false;
            }
            if !self.started {
                if buf.len() < 3 && b"\xEF\xBB\xBF".starts_with(buf) {
                    return Ok(None);
                }
                if buf.starts_with(b"\xEF\xBB\xBF") {
                    buf.advance(3);
                }
                self.started = true;
            }
            let Some(end) = memchr::memchr2(b'\n', b'\r', buf) else {
                if self.current_size + buf.len() > self.max_event_size {
                    return Err(SseError::TooLarge(self.max_event_size));
                }
                return Ok(None);
            };
            let line = buf.split_to(end + 1);
            if line[end] == b'\r' {
                self.skip_lf = true;
            }
            let line = &line[..end];
            if line.is_empty() {
                if self.dirty {
                    let event = std::mem::take(&mut self.current);
                    self.current_size = 0;
                    self.dirty = false;
                    return Ok(Some(event));
                }
                continue;
            }
            self.current_size += line.len() + 1;
            if self.current_size > self.max_event_size {
                return Err(SseError::TooLarge(self.max_event_size));
            }
            self.field(line)?;
        }
    }

    fn field(&mut self, line: &[u8]) -> Result<(), SseError> {
        if line.first() == Some(&b':') {
            return Ok(());
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        let value = std::str::from_utf8(value).map_err(|_| SseError::Utf8)?;
        match name {
            b"data" => {
                if self.current.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.current.has_data = true;
            }
            b"event" => self.current.event = Some(value.to_owned()),
            // An id containing NUL is ignored, as the standard says.
            b"id" if !value.contains('\0') => self.current.id = Some(value.to_owned()),
            b"retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.current.retry = value.parse().ok();
            }
            _ => return Ok(()),
        }
        self.dirty = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], split: usize) -> Result<Vec<SseEvent>, SseError> {
        let mut dec = SseDecoder::new(1024);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in input.chunks(split.max(1)) {
            buf.extend_from_slice(chunk);
            while let Some(ev) = dec.decode(&mut buf)? {
                out.push(ev);
            }
        }
        Ok(out)
    }

    #[test]
    fn parses_fields_and_line_endings_at_any_split() {
        let input = b"\xEF\xBB\xBF: comment\r\nid: 1\r\nretry: 500\r\ndata\r\n\r\n\
                      event: message\rdata: {\"a\":1}\rdata:  two\r\r\
                      event: endpoint\ndata: /messages?sessionId=x\nid\n\n";
        for split in 1..input.len() {
            let evs = all(input, split).unwrap();
            assert_eq!(evs.len(), 3, "split {split}");
            assert_eq!(evs[0].id.as_deref(), Some("1"));
            assert_eq!(evs[0].retry, Some(500));
            assert!(evs[0].has_data);
            assert_eq!(evs[0].data, "");
            assert!(evs[1].is_message());
            assert_eq!(evs[1].data, "{\"a\":1}\n two");
            assert_eq!(evs[2].event.as_deref(), Some("endpoint"));
            assert!(!evs[2].is_message());
            assert_eq!(evs[2].data, "/messages?sessionId=x");
            assert_eq!(evs[2].id.as_deref(), Some(""));
        }
    }

    #[test]
    fn priming_event_without_data_is_reported() {
        let evs = all(b"id: event-1\nretry: 500\n\n", 4).unwrap();
        assert_eq!(evs.len(), 1);
        assert!(!evs[0].has_data);
        assert_eq!(evs[0].id.as_deref(), Some("event-1"));
    }

    #[test]
    fn ignores_blank_blocks_unknown_fields_and_bad_retry() {
        let evs = all(b"\n\nfoo: bar\nretry: 1x\n\n", 3).unwrap();
        assert!(evs.is_empty());
    }

    #[test]
    fn enforces_the_size_limit_with_and_without_newlines() {
        let big = vec![b'a'; 2000];
        assert_eq!(all(&big, 100), Err(SseError::TooLarge(1024)));
        let mut lines = Vec::new();
        for _ in 0..100 {
            lines.extend_from_slice(b"data: 0123456789\n");
        }
        assert_eq!(all(&lines, 7), Err(SseError::TooLarge(1024)));
    }

    #[test]
    fn rejects_invalid_utf8() {
        assert_eq!(all(b"data: \xff\n\n", 64), Err(SseError::Utf8));
    }
}
