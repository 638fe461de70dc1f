#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mcp_jsonrpc::codec::SseCodec;
use mcp_jsonrpc_fuzz::{config, feed};
use tokio_util::codec::{Decoder, Encoder};

fuzz_target!(|data: &[u8]| {
    let mut codec = SseCodec::with_config(config());
    for event in feed(&mut codec, data, 256).into_iter().flatten() {
        // Every decoded event encodes and decodes back to the same data and type.
        let mut buf = BytesMut::new();
        let mut writer = SseCodec::new();
        writer.encode(&event, &mut buf).expect("encoding");
        let again = SseCodec::new()
            .decode(&mut buf)
            .expect("no I/O")
            .expect("one event")
            .expect("within limits");
        assert_eq!(again.data, event.data.replace("\r\n", "\n").replace('\r', "\n"));
        assert_eq!(again.event, event.event);
        let _ = event.to_inbound(8);
    }
});
