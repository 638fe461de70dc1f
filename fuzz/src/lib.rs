//! Shared driving code for the decoder fuzz targets.

use bytes::BytesMut;
use mcp_jsonrpc::codec::CodecConfig;
use mcp_jsonrpc::{Frame, FrameError, Inbound, Message};
use tokio_util::codec::{Decoder, Encoder};

/// Small limits, so the oversize and resynchronisation paths are reached with short inputs.
pub fn config() -> CodecConfig {
    CodecConfig::default()
        .max_frame_size(256)
        .max_header_size(64)
        .max_batch_len(8)
}

/// Feeds `data` to `codec` in chunks whose sizes come from the first byte, checks the buffer
/// stays bounded, and returns every item.
pub fn feed<D, T>(codec: &mut D, data: &[u8], bound: usize) -> Vec<T>
where
    D: Decoder<Item = T, Error = std::io::Error>,
{
    let (step, data) = match data.split_first() {
        Some((s, rest)) => (usize::from(*s % 64) + 1, rest),
        None => (1, data),
    };
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in data.chunks(step) {
        buf.extend_from_slice(chunk);
        while let Some(item) = codec.decode(&mut buf).expect("decoders only fail on I/O") {
            out.push(item);
        }
        assert!(buf.len() <= bound + step, "buffer grew to {}", buf.len());
    }
    while let Some(item) = codec.decode_eof(&mut buf).expect("decoders only fail on I/O") {
        out.push(item);
    }
    out
}

/// Every decoded frame must encode and decode back to itself; every error must have a
/// well-formed answer.
pub fn check_round_trip<C>(items: Vec<Result<Inbound, FrameError>>, mut fresh: impl FnMut() -> C)
where
    C: Decoder<Item = Result<Inbound, FrameError>, Error = std::io::Error>
        + for<'a> Encoder<&'a Frame, Error = std::io::Error>,
{
    for item in items {
        let inbound = match item {
            Ok(inbound) => inbound,
            Err(e) => {
                if let Some(response) = e.to_response() {
                    let text = Message::Response(response).to_string();
                    assert!(Message::from_slice(text.as_bytes()).is_ok(), "{text}");
                }
                continue;
            }
        };
        let frame = match &inbound {
            Inbound::Single(m) => Frame::Single(m.clone()),
            Inbound::Batch(v) => {
                let good: Vec<Message> = v.iter().filter_map(|r| r.as_ref().ok().cloned()).collect();
                if good.is_empty() {
                    continue;
                }
                Frame::Batch(good)
            }
        };
        let mut codec = fresh();
        let mut buf = BytesMut::new();
        codec.encode(&frame, &mut buf).expect("encoding a decoded frame");
        let again = codec
            .decode_eof(&mut buf)
            .expect("no I/O")
            .expect("one frame")
            .expect("re-decodes");
        let expected = match frame {
            Frame::Single(m) => Inbound::Single(m),
            Frame::Batch(v) => Inbound::Batch(v.into_iter().map(Ok).collect()),
        };
        // Raw values are kept verbatim except that the line codec turns line breaks into
        // spaces, so compare as JSON values.
        assert_eq!(to_value(&again), to_value(&expected));
    }
}

fn to_value(inbound: &Inbound) -> Vec<serde_json::Value> {
    let msgs: Vec<&Message> = match inbound {
        Inbound::Single(m) => vec![m],
        Inbound::Batch(v) => v.iter().filter_map(|r| r.as_ref().ok()).collect(),
    };
    msgs.into_iter()
        .map(|m| serde_json::from_str(&m.to_string()).expect("encoded messages are valid JSON"))
        .collect()
}
