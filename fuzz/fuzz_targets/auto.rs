#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_jsonrpc::codec::AutoCodec;
use mcp_jsonrpc_fuzz::{config, feed};
use mcp_jsonrpc::Message;

fuzz_target!(|data: &[u8]| {
    let mut codec = AutoCodec::with_config(config());
    for item in feed(&mut codec, data, 256 + 64) {
        if let Err(e) = item {
            if let Some(response) = e.to_response() {
                let text = Message::Response(response).to_string();
                assert!(Message::from_slice(text.as_bytes()).is_ok());
            }
        }
    }
});
