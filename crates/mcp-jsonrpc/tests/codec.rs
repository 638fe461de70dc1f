//! Framing codecs: unit tests for every rule and property tests over arbitrary split points.

use crate::support;

use std::io;
use support::split;

use bytes::BytesMut;
use mcp_jsonrpc::codec::{AutoCodec, CodecConfig, ContentLengthCodec, Framing, LineCodec};
use mcp_jsonrpc::{
    ErrorObject, Frame, FrameError, Id, Inbound, Message, Notification, Request, Response, codes,
};
use proptest::prelude::*;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::codec::{Decoder, Encoder};

type Item = Result<Inbound, FrameError>;

/// Feeds `chunks` one at a time, collecting every item, then signals end of input. Also checks
/// that the buffer never holds much more than `bound` bytes.
fn decode_chunks<D>(codec: &mut D, chunks: &[&[u8]], bound: usize) -> Vec<Item>
where
    D: Decoder<Item = Item, Error = io::Error>,
{
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        while let Some(item) = codec.decode(&mut buf).unwrap() {
            out.push(item);
        }
        assert!(buf.len() <= bound, "buffered {} bytes", buf.len());
    }
    while let Some(item) = codec.decode_eof(&mut buf).unwrap() {
        out.push(item);
    }
    out
}

fn decode_bytes<D>(codec: &mut D, bytes: &[u8]) -> Vec<Item>
where
    D: Decoder<Item = Item, Error = io::Error>,
{
    decode_chunks(codec, &[bytes], usize::MAX)
}

fn notification(method: &str) -> Message {
    Message::Notification(Notification::new(method, None))
}

fn single(item: &Item) -> &Message {
    match item {
        Ok(Inbound::Single(m)) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

fn error_code(item: &Item) -> i64 {
    match item {
        Err(e) => e.to_response().unwrap().result.unwrap_err().code,
        other => panic!("expected an error, got {other:?}"),
    }
}

const PING: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

#[test]
fn line_decodes_messages_crlf_and_blank_lines() {
    let input = b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\r\n\n  \r\n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"c\"}";
    let items = decode_bytes(&mut LineCodec::new(), input);
    let methods: Vec<_> = items
        .iter()
        .map(|i| single(i).method().unwrap().to_owned())
        .collect();
    assert_eq!(methods, ["a", "b", "c"]);
}

#[test]
fn line_garbage_between_frames_is_answered_and_skipped() {
    let mut input = Vec::new();
    input.extend_from_slice(PING);
    input.extend_from_slice(b"\nnot json at all\n\xff\xfe\xfd\n[]\n42\n");
    input.extend_from_slice(PING);
    input.push(b'\n');
    let items = decode_bytes(&mut LineCodec::new(), &input);
    assert_eq!(items.len(), 6);
    assert!(matches!(single(&items[0]), Message::Request(_)));
    assert_eq!(error_code(&items[1]), codes::PARSE_ERROR);
    assert_eq!(error_code(&items[2]), codes::PARSE_ERROR);
    assert_eq!(error_code(&items[3]), codes::INVALID_REQUEST);
    assert_eq!(error_code(&items[4]), codes::INVALID_REQUEST);
    assert!(matches!(single(&items[5]), Message::Request(_)));
    for item in &items[1..5] {
        let response = item.as_ref().unwrap_err().to_response().unwrap();
        assert_eq!(response.id, None);
        let text = Message::Response(response).to_string();
        assert!(text.contains(r#""id":null"#), "{text}");
    }
}

#[test]
fn line_oversized_frame_is_skipped_without_buffering() {
    let config = CodecConfig::default().max_frame_size(64);
    let mut codec = LineCodec::with_config(config);
    let big = vec![b'x'; 1000];
    let mut chunks: Vec<&[u8]> = big.chunks(16).collect();
    chunks.insert(0, PING);
    chunks.insert(1, b"\n");
    chunks.push(b"\n");
    chunks.push(PING);
    chunks.push(b"\n");
    // Never more than the limit plus one chunk is held.
    let items = decode_chunks(&mut codec, &chunks, 64 + 1 + 16);
    assert_eq!(items.len(), 3);
    assert!(matches!(&items[1], Err(FrameError::TooLarge { limit: 64 })));
    assert_eq!(error_code(&items[1]), codes::INVALID_REQUEST);
    assert!(matches!(single(&items[2]), Message::Request(_)));

    // An oversized line that arrives whole is rejected too.
    let mut input = big.clone();
    input.push(b'\n');
    input.extend_from_slice(PING);
    let items = decode_bytes(&mut LineCodec::with_config(config), &input);
    assert_eq!(items.len(), 2);
    assert!(matches!(&items[0], Err(FrameError::TooLarge { .. })));
    assert!(items[1].is_ok());
}

#[test]
fn line_frame_of_exactly_the_limit_is_accepted() {
    let config = CodecConfig::default().max_frame_size(PING.len());
    for ending in [&b"\n"[..], b"\r\n"] {
        let mut input = PING.to_vec();
        input.extend_from_slice(ending);
        let items = decode_bytes(&mut LineCodec::with_config(config), &input);
        assert_eq!(items.len(), 1);
        assert!(items[0].is_ok());
    }
}

#[test]
fn line_encoder_never_writes_embedded_newlines() {
    let pretty =
        serde_json::to_string_pretty(&serde_json::json!({"a": [1, 2], "s": "x\ny"})).unwrap();
    assert!(pretty.contains('\n'));
    let params = RawValue::from_string(pretty.replace('\n', "\r\n")).unwrap();
    let msg = Message::Request(Request::new(1, "m", Some(params)));
    let mut buf = BytesMut::new();
    LineCodec::new().encode(&msg, &mut buf).unwrap();
    assert_eq!(buf.iter().filter(|b| **b == b'\n').count(), 1);
    assert_eq!(buf.last(), Some(&b'\n'));
    assert!(!buf.contains(&b'\r'));
    let items = decode_bytes(&mut LineCodec::new(), &buf);
    let Message::Request(r) = single(&items[0]) else {
        panic!()
    };
    let v: Value = serde_json::from_str(r.params.as_ref().unwrap().get()).unwrap();
    assert_eq!(v, serde_json::json!({"a": [1, 2], "s": "x\ny"}));
}

fn content_length_frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

#[test]
fn content_length_decodes_with_headers_in_any_case() {
    let mut input = content_length_frame(PING);
    input.extend_from_slice(b"\r\n");
    input.extend_from_slice(
        b"content-type: application/vscode-jsonrpc; charset=utf-8\r\nCONTENT-LENGTH:  40 \r\n\r\n",
    );
    input.extend_from_slice(PING);
    input.extend_from_slice(b"Content-Length: 40\n\n");
    input.extend_from_slice(PING);
    let items = decode_bytes(&mut ContentLengthCodec::new(), &input);
    assert_eq!(items.len(), 3, "{items:?}");
    for item in &items {
        assert!(matches!(single(item), Message::Request(_)));
    }
}

#[test]
fn content_length_header_errors_resynchronise() {
    let mut input = Vec::new();
    input.extend_from_slice(b"Content-Length: abc\r\n\r\n");
    input.extend_from_slice(PING);
    input.extend_from_slice(&content_length_frame(PING));
    input.extend_from_slice(b"X-Other: 1\r\n\r\n");
    input.extend_from_slice(&content_length_frame(PING));
    input.extend_from_slice(PING); // a bare JSON message: not a header
    input.extend_from_slice(b"\n");
    input.extend_from_slice(&content_length_frame(PING));
    input.extend_from_slice(b"garbage");
    input.extend_from_slice(&content_length_frame(PING));
    input.extend_from_slice(&content_length_frame(b"{oops"));
    let items = decode_bytes(&mut ContentLengthCodec::new(), &input);
    let oks = items.iter().filter(|i| i.is_ok()).count();
    assert_eq!(oks, 4, "{items:?}");
    let headers = items
        .iter()
        .filter(|i| matches!(i, Err(FrameError::Header(_))))
        .count();
    assert_eq!(headers, 4, "{items:?}");
    assert_eq!(error_code(items.last().unwrap()), codes::PARSE_ERROR);
    for item in items.iter().filter(|i| i.is_err()) {
        assert_eq!(item.as_ref().unwrap_err().to_response().unwrap().id, None);
    }
}

#[test]
fn content_length_oversized_body_is_skipped_as_it_arrives() {
    let config = CodecConfig::default().max_frame_size(64);
    let body = vec![b' '; 5000];
    let frame = content_length_frame(&body);
    let mut chunks: Vec<&[u8]> = frame.chunks(100).collect();
    let tail = content_length_frame(PING);
    chunks.push(&tail);
    let items = decode_chunks(&mut ContentLengthCodec::with_config(config), &chunks, 200);
    assert_eq!(items.len(), 2);
    assert!(matches!(&items[0], Err(FrameError::TooLarge { limit: 64 })));
    assert!(items[1].is_ok());
}

#[test]
fn content_length_header_section_is_bounded() {
    let config = CodecConfig::default().max_header_size(64);
    let mut input = b"X-Long: ".to_vec();
    input.extend(std::iter::repeat_n(b'a', 1000));
    input.extend_from_slice(b"\r\n\r\n");
    input.extend_from_slice(&content_length_frame(PING));
    let chunks: Vec<&[u8]> = input.chunks(32).collect();
    let items = decode_chunks(
        &mut ContentLengthCodec::with_config(config),
        &chunks,
        64 + 32,
    );
    assert!(matches!(&items[0], Err(FrameError::Header(_))));
    assert!(items.last().unwrap().is_ok());
    assert_eq!(items.iter().filter(|i| i.is_ok()).count(), 1);
}

#[test]
fn content_length_truncated_at_eof() {
    let frame = content_length_frame(PING);
    let items = decode_bytes(&mut ContentLengthCodec::new(), &frame[..frame.len() - 3]);
    assert_eq!(items.len(), 1);
    assert!(matches!(&items[0], Err(FrameError::Truncated(_))));
    assert!(items[0].as_ref().unwrap_err().to_response().is_none());
}

#[test]
fn auto_detects_either_framing() {
    let mut codec = AutoCodec::new();
    let mut input = b"\r\n  ".to_vec();
    input.extend_from_slice(&content_length_frame(PING));
    assert_eq!(decode_bytes(&mut codec, &input).len(), 1);
    assert_eq!(codec.detected(), Some(Framing::ContentLength));

    let mut codec = AutoCodec::new();
    let writer = codec.clone();
    let mut input = b"\n".to_vec();
    input.extend_from_slice(PING);
    input.push(b'\n');
    assert_eq!(decode_bytes(&mut codec, &input).len(), 1);
    assert_eq!(codec.detected(), Some(Framing::Line));
    assert_eq!(writer.detected(), Some(Framing::Line));

    // The write half answers in the detected framing.
    let mut codec = AutoCodec::new();
    let mut writer = codec.clone();
    decode_bytes(&mut codec, &content_length_frame(PING));
    let mut out = BytesMut::new();
    writer.encode(notification("n"), &mut out).unwrap();
    assert!(out.starts_with(b"Content-Length: "));

    // Garbage first: newline framing, answered with a parse error.
    let mut codec = AutoCodec::new();
    let items = decode_bytes(&mut codec, b"\x01\x02\n");
    assert_eq!(error_code(&items[0]), codes::PARSE_ERROR);
    assert_eq!(codec.detected(), Some(Framing::Line));
}

#[test]
fn batches_decode_per_element() {
    let input = br#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"foo":"boo"},{"jsonrpc":"2.0","id":"x","result":{}}]"#;
    let items = decode_bytes(&mut LineCodec::new(), input);
    let Ok(Inbound::Batch(elements)) = &items[0] else {
        panic!("{items:?}")
    };
    assert_eq!(elements.len(), 4);
    assert!(elements[0].is_ok() && elements[1].is_ok() && elements[3].is_ok());
    assert_eq!(
        elements[2].as_ref().unwrap_err().error.code,
        codes::INVALID_REQUEST
    );
    let items = decode_bytes(&mut LineCodec::new(), b"[]\n");
    assert!(matches!(&items[0], Err(FrameError::EmptyBatch)));
    assert_eq!(error_code(&items[0]), codes::INVALID_REQUEST);
}

// ---- property tests ----

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Box<RawValue>> {
    prop::collection::btree_map(any::<String>(), json_value(), 0..4).prop_map(|m| {
        let v = Value::Object(m.into_iter().collect());
        mcp_jsonrpc::to_raw(&v).unwrap()
    })
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        any::<i64>().prop_map(Id::Number),
        any::<String>().prop_map(Id::String)
    ]
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (id(), any::<String>(), prop::option::of(json_object()))
            .prop_map(|(id, m, p)| Message::Request(Request::new(id, m, p))),
        (any::<String>(), prop::option::of(json_object()))
            .prop_map(|(m, p)| Message::Notification(Notification::new(m, p))),
        (id(), json_value()).prop_map(|(id, v)| Message::Response(Response::success(
            id,
            mcp_jsonrpc::to_raw(&v).unwrap()
        ))),
        (id(), json_value()).prop_map(|(id, v)| Message::Response(Response::success(
            id,
            mcp_jsonrpc::RawJson::serialize(&v).unwrap()
        ))),
        (
            prop::option::of(id()),
            any::<i64>(),
            any::<String>(),
            prop::option::of(json_value())
        )
            .prop_map(|(id, code, message, data)| {
                let mut e = ErrorObject::new(code, message);
                if let Some(d) = data {
                    e = e.with_data(&d).unwrap();
                }
                Message::Response(Response::error(id, e))
            }),
    ]
}

fn frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        4 => message().prop_map(Frame::Single),
        1 => prop::collection::vec(message(), 1..4).prop_map(Frame::Batch),
    ]
}

fn as_inbound(frame: &Frame) -> Inbound {
    match frame {
        Frame::Single(m) => Inbound::Single(m.clone()),
        Frame::Batch(b) => Inbound::Batch(b.iter().cloned().map(Ok).collect()),
    }
}

fn round_trip<C>(mut codec: C, frames: &[Frame], points: Vec<usize>) -> Result<(), TestCaseError>
where
    C: Decoder<Item = Item, Error = io::Error> + for<'a> Encoder<&'a Frame, Error = io::Error>,
{
    let mut buf = BytesMut::new();
    for f in frames {
        codec.encode(f, &mut buf).unwrap();
    }
    let items = decode_chunks(&mut codec, &split(&buf, points), usize::MAX);
    let decoded: Vec<Inbound> = items.into_iter().map(|i| i.unwrap()).collect();
    let expected: Vec<Inbound> = frames.iter().map(as_inbound).collect();
    prop_assert_eq!(decoded, expected);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A batch is written element by element; the bytes are serde_json's for the array.
    #[test]
    fn batches_encode_as_serde_json_writes_them(messages in prop::collection::vec(message(), 1..5)) {
        let mut buf = BytesMut::new();
        Frame::Batch(messages.clone()).encode_into(&mut buf).unwrap();
        prop_assert_eq!(&buf[..], &serde_json::to_vec(&messages).unwrap()[..]);
    }

    #[test]
    fn line_round_trips_at_any_split(frames in prop::collection::vec(frame(), 1..5), points in prop::collection::vec(any::<usize>(), 0..8)) {
        round_trip(LineCodec::new(), &frames, points)?;
    }

    #[test]
    fn content_length_round_trips_at_any_split(frames in prop::collection::vec(frame(), 1..5), points in prop::collection::vec(any::<usize>(), 0..8)) {
        round_trip(ContentLengthCodec::new(), &frames, points)?;
    }

    #[test]
    fn auto_round_trips_at_any_split(frames in prop::collection::vec(frame(), 1..5), points in prop::collection::vec(any::<usize>(), 0..8), cl in any::<bool>()) {
        // Encode with the framing to detect, decode with a fresh auto codec.
        let mut buf = BytesMut::new();
        for f in &frames {
            if cl { ContentLengthCodec::new().encode(f, &mut buf).unwrap() } else { LineCodec::new().encode(f, &mut buf).unwrap() }
        }
        let items = decode_chunks(&mut AutoCodec::new(), &split(&buf, points), usize::MAX);
        let decoded: Vec<Inbound> = items.into_iter().map(|i| i.unwrap()).collect();
        let expected: Vec<Inbound> = frames.iter().map(as_inbound).collect();
        prop_assert_eq!(decoded, expected);
    }

    #[test]
    fn line_survives_garbage_lines(frames in prop::collection::vec(message(), 1..4), garbage in prop::collection::vec(prop::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..40), 1..4), points in prop::collection::vec(any::<usize>(), 0..6)) {
        let mut codec = LineCodec::new();
        let mut buf = BytesMut::new();
        for (m, g) in frames.iter().zip(garbage.iter().cycle()) {
            buf.extend_from_slice(g);
            buf.extend_from_slice(b"\n");
            codec.encode(m, &mut buf).unwrap();
        }
        let items = decode_chunks(&mut LineCodec::new(), &split(&buf, points), usize::MAX);
        let good: Vec<Inbound> = items.into_iter().filter_map(Result::ok).collect();
        let expected: Vec<Inbound> = frames.into_iter().map(Inbound::Single).collect();
        prop_assert_eq!(good, expected);
    }

    #[test]
    fn content_length_survives_garbage(frames in prop::collection::vec(message(), 1..4), garbage in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 1..4), points in prop::collection::vec(any::<usize>(), 0..6)) {
        let mut codec = ContentLengthCodec::new();
        let mut buf = BytesMut::new();
        for (m, g) in frames.iter().zip(garbage.iter().cycle()) {
            buf.extend_from_slice(g);
            codec.encode(m, &mut buf).unwrap();
        }
        let items = decode_chunks(&mut ContentLengthCodec::new(), &split(&buf, points), usize::MAX);
        let good: Vec<Inbound> = items.into_iter().filter_map(Result::ok).collect();
        let expected: Vec<Inbound> = frames.into_iter().map(Inbound::Single).collect();
        prop_assert_eq!(good, expected);
    }

    #[test]
    fn direct_encoding_is_what_serde_writes(m in message()) {
        let mut direct = BytesMut::new();
        m.encode_into(&mut direct).unwrap();
        let via_serde = serde_json::to_vec(&m).unwrap();
        prop_assert_eq!(&direct[..], &via_serde[..]);
    }

    #[test]
    fn encoded_len_is_exact_without_escapes_or_errors(m in message()) {
        let mut buf = BytesMut::new();
        m.encode_into(&mut buf).unwrap();
        let escapes = |s: &str| s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
        let (exact, estimated) = match &m {
            Message::Request(r) => (!escapes(&r.method) && !matches!(&r.id, Id::String(s) if escapes(s)), false),
            Message::Notification(n) => (!escapes(&n.method), false),
            Message::Response(r) if r.result.is_err() => (false, true),
            Message::Response(r) => (!matches!(&r.id, Some(Id::String(s)) if escapes(s)), false),
        };
        if exact {
            prop_assert_eq!(buf.len(), m.encoded_len());
        } else if !estimated {
            // Escapes only lengthen a string.
            prop_assert!(buf.len() > m.encoded_len());
        }
    }

    #[test]
    fn decoders_never_panic_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512), points in prop::collection::vec(any::<usize>(), 0..6)) {
        let config = CodecConfig::default().max_frame_size(128).max_header_size(64);
        let chunks = split(&bytes, points);
        decode_chunks(&mut LineCodec::with_config(config), &chunks, 128 + 2 + 512);
        decode_chunks(&mut ContentLengthCodec::with_config(config), &chunks, usize::MAX);
        decode_chunks(&mut AutoCodec::with_config(config), &chunks, usize::MAX);
    }
}
