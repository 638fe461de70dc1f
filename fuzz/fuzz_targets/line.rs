#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_jsonrpc::codec::LineCodec;
use mcp_jsonrpc_fuzz::{check_round_trip, config, feed};

fuzz_target!(|data: &[u8]| {
    let mut codec = LineCodec::with_config(config());
    let items = feed(&mut codec, data, 256 + 2);
    check_round_trip(items, || LineCodec::with_config(config()));
});
