#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_jsonrpc::codec::ContentLengthCodec;
use mcp_jsonrpc_fuzz::{check_round_trip, config, feed};

fuzz_target!(|data: &[u8]| {
    let mut codec = ContentLengthCodec::with_config(config());
    // A body up to the frame limit, or a header section up to its limit, may be buffered.
    let items = feed(&mut codec, data, 256 + 64);
    check_round_trip(items, || ContentLengthCodec::with_config(config()));
});
