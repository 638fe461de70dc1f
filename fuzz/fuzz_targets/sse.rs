#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mcp_jsonrpc::codec::SseCodec;
use mcp_jsonrpc_fuzz::{config, feed};
use tokio_util::codec::{Decoder, Encoder};

// The decoder the HTTP client reads every SSE stream with (Streamable HTTP and HTTP+SSE).
fuzz_target!(|data: &[u8]| {
    let mut codec = SseCodec::with_config(config());
    let items = feed(&mut codec, data, 256);

    // The same bytes in one chunk decode to the same events, errors and state.
    let mut whole = SseCodec::with_config(config());
    let mut buf = BytesMut::from(data.get(1..).unwrap_or_default());
    let mut again = Vec::new();
    while let Some(item) = whole.decode_eof(&mut buf).expect("no I/O") {
        again.push(item);
    }
    let text = |items: &[Result<_, mcp_jsonrpc::FrameError>]| format!("{items:?}");
    assert_eq!(text(&items), text(&again));
    assert_eq!(codec.last_event_id(), whole.last_event_id());
    assert_eq!(codec.retry_ms(), whole.retry_ms());

    for event in items.into_iter().flatten() {
        // Every decoded event encodes and decodes back to itself.
        let mut buf = BytesMut::new();
        SseCodec::new().encode(&event, &mut buf).expect("encoding");
        let again = SseCodec::new()
            .decode(&mut buf)
            .expect("no I/O")
            .expect("one event")
            .expect("within limits");
        assert_eq!(again, event);
        if event.is_message() {
            let _ = event.to_inbound(8);
        }
    }
});
