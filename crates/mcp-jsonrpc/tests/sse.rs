//! The Server-Sent Events codec: property tests over arbitrary streams and split points.

use crate::support;

use bytes::BytesMut;
use mcp_jsonrpc::codec::{CodecConfig, SseCodec, SseEvent, SseFields};
use mcp_jsonrpc::{Message, Notification};
use proptest::prelude::*;
use support::split;
use tokio_util::codec::{Decoder, Encoder};

/// An item with the error as text (`FrameError` has no `PartialEq`).
type Item = Result<SseEvent, String>;

/// What a stream decodes to: the items, then the last event id and reconnection time.
type Outcome = (Vec<Item>, Option<String>, Option<u64>);

/// Feeds `chunks` one at a time, then signals the end of the stream; checks that the buffer
/// never holds more than `bound` bytes after a call.
fn decode_chunks(codec: &mut SseCodec, chunks: &[&[u8]], bound: usize) -> Outcome {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        while let Some(item) = codec.decode(&mut buf).unwrap() {
            out.push(item.map_err(|e| e.to_string()));
        }
        assert!(buf.len() <= bound, "buffered {} bytes", buf.len());
    }
    while let Some(item) = codec.decode_eof(&mut buf).unwrap() {
        out.push(item.map_err(|e| e.to_string()));
    }
    (
        out,
        codec.last_event_id().map(str::to_owned),
        codec.retry_ms(),
    )
}

/// Streams built from the pieces the parser cares about, so every rule is reached.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(&b"data"[..]),
        Just(&b"event"[..]),
        Just(&b"id"[..]),
        Just(&b"retry"[..]),
        Just(&b"foo"[..]),
        Just(&b":"[..]),
        Just(&b": "[..]),
        Just(&b" "[..]),
        Just(&b"\n"[..]),
        Just(&b"\r"[..]),
        Just(&b"\r\n"[..]),
        Just(&b"\n\n"[..]),
        Just(&b"\xef\xbb\xbf"[..]),
        Just(&b"\xef"[..]),
        Just(&b"\0"[..]),
        Just(&b"\xff"[..]),
        Just(&b"12"[..]),
        Just(&b"x"[..]),
        Just(&b"0123456789abcdef"[..]),
    ];
    prop::collection::vec(piece, 0..48).prop_map(|pieces| pieces.concat())
}

/// Text without line breaks (event types and ids).
fn single_line() -> impl Strategy<Value = String> {
    "[ a-z0-9:é\u{feff}-]{0,8}"
}

fn event() -> impl Strategy<Value = SseEvent> {
    (
        prop::option::of(single_line()),
        prop::option::of("[ a-z:{}\"\r\n\u{feff}é]{0,24}"),
        prop::option::of(single_line()),
        prop::option::of(any::<u64>()),
    )
        .prop_map(|(event, data, id, retry)| SseEvent {
            event,
            data,
            id,
            retry,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// However the stream is cut into chunks, the events, errors and state are the same, and
    /// the buffer stays bounded by the event size limit.
    #[test]
    fn any_split_gives_the_same_events(input in stream(), points in prop::collection::vec(any::<usize>(), 0..8), limit in 8usize..64) {
        let config = CodecConfig::default().max_frame_size(limit);
        let whole = decode_chunks(&mut SseCodec::with_config(config), &[&input], usize::MAX);
        let chunked = decode_chunks(&mut SseCodec::with_config(config), &split(&input, points), limit);
        prop_assert_eq!(chunked, whole);
    }

    /// Every event encodes and decodes back: data line breaks (`\r\n`, `\r`, `\n`) come back
    /// as `\n`; an event setting no field is written as a blank line and not returned.
    #[test]
    fn encoded_events_decode_back(events in prop::collection::vec(event(), 0..6), points in prop::collection::vec(any::<usize>(), 0..8)) {
        let mut codec = SseCodec::new();
        let mut buf = BytesMut::new();
        for e in &events {
            codec.encode(e, &mut buf).unwrap();
        }
        let (items, last_id, retry) = decode_chunks(&mut SseCodec::new(), &split(&buf, points), usize::MAX);
        let decoded: Vec<SseEvent> = items.into_iter().map(Result::unwrap).collect();
        let expected: Vec<SseEvent> = events
            .iter()
            .filter(|e| *e != &SseEvent::default())
            .map(|e| SseEvent {
                data: e.data.as_ref().map(|d| d.replace("\r\n", "\n").replace('\r', "\n")),
                ..e.clone()
            })
            .collect();
        prop_assert_eq!(&decoded, &expected);
        let expected_id = events.iter().rev().find_map(|e| e.id.clone()).filter(|id| !id.is_empty());
        prop_assert_eq!(last_id, expected_id);
        prop_assert_eq!(retry, events.iter().rev().find_map(|e| e.retry));
    }

    /// Borrowed fields encode exactly as the owned event does.
    #[test]
    fn fields_encode_as_events_do(e in event()) {
        let data = e.data.clone().unwrap_or_default();
        let mut owned = BytesMut::new();
        SseCodec::new().encode(&SseEvent { data: Some(data.clone()), ..e.clone() }, &mut owned).unwrap();
        let mut borrowed = BytesMut::new();
        SseFields::from(&e).encode(&data, &mut borrowed);
        prop_assert_eq!(&owned[..], &borrowed[..]);
        // A message's JSON, written straight into the buffer, is the data of one event.
        let msg = Message::from(Notification::new(data, None));
        let mut json = BytesMut::new();
        let range = SseFields::from(&e).encode_json(&msg, &mut json).unwrap().unwrap();
        let text = msg.to_string();
        prop_assert_eq!(&json[range], text.as_bytes());
        let mut expected = BytesMut::new();
        SseFields::from(&e).encode(&text, &mut expected);
        prop_assert_eq!(&json[..], &expected[..]);
    }
}
