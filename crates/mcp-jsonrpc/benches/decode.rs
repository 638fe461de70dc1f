//! Decode throughput of the framing codecs next to plain `serde_json::from_slice` of the same
//! bytes, in the same run. `cargo bench -p mcp-jsonrpc`.
//!
//! Baselines, each parsing exactly one message per line (already split, so no delimiter search):
//! - `from_slice::<Value>`: a plain parse into a JSON tree;
//! - `from_slice::<Raw>`: a plain parse into a struct with raw params/result (what a typed
//!   decoder with `RawValue` does);
//! - `from_slice::<IgnoredAny>`: syntax validation only, the floor of any JSON decoder.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use mcp_jsonrpc::codec::{ContentLengthCodec, LineCodec};
use mcp_jsonrpc::{Message, Request, Response, to_raw};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio_util::codec::{Decoder, Encoder};

#[allow(dead_code)]
#[derive(Deserialize)]
struct Raw {
    jsonrpc: String,
    id: Option<Value>,
    method: Option<String>,
    params: Option<Box<RawValue>>,
    result: Option<Box<RawValue>>,
}

struct Input {
    name: &'static str,
    messages: Vec<Message>,
}

fn small() -> Input {
    let messages = (0..20_000)
        .map(|i| {
            let params = json!({
                "name": "get_weather",
                "arguments": {"city": "Paris", "units": "metric", "days": 3},
                "_meta": {"progressToken": i}
            });
            Message::Request(Request::new(
                i,
                "tools/call",
                Some(to_raw(&params).unwrap()),
            ))
        })
        .collect();
    Input {
        name: "small tools/call request",
        messages,
    }
}

fn large_text() -> Input {
    // About 1 MiB of text, with the escapes a source file would have.
    let line = "fn main() {\n\tprintln!(\"hello, \\\"world\\\"\");\n}\n// ünïcödé ✓\n";
    let text = line.repeat((1 << 20) / line.len());
    let result = json!({"content": [{"type": "text", "text": text}], "isError": false});
    let raw = to_raw(&result).unwrap();
    let messages = (0..20)
        .map(|i| Message::Response(Response::success(i.into(), raw.clone())))
        .collect();
    Input {
        name: "1 MiB text result",
        messages,
    }
}

fn large_structured() -> Input {
    let items: Vec<Value> = (0..9000)
        .map(|i| json!({"uri": format!("file:///src/module_{i}.rs"), "name": format!("module_{i}"), "size": i * 37, "tags": ["rust", "src"]}))
        .collect();
    let result = json!({"resources": items, "nextCursor": "abc"});
    let raw = to_raw(&result).unwrap();
    let messages = (0..20)
        .map(|i| Message::Response(Response::success(i.into(), raw.clone())))
        .collect();
    Input {
        name: "1 MiB structured result",
        messages,
    }
}

fn report(label: &str, bytes: usize, messages: usize, t: Duration) {
    let secs = t.as_secs_f64();
    let mbps = bytes as f64 / secs / 1e6;
    let mps = messages as f64 / secs;
    println!("  {label:<38} {mbps:>9.1} MB/s {mps:>12.0} msg/s");
}

fn run<C>(input: &Input, codec_name: &str, make: impl Fn() -> C, rounds: usize)
where
    C: Decoder<
            Item = Result<mcp_jsonrpc::Inbound, mcp_jsonrpc::FrameError>,
            Error = std::io::Error,
        > + for<'a> Encoder<&'a Message, Error = std::io::Error>,
{
    let mut encoded = BytesMut::new();
    let mut codec = make();
    for m in &input.messages {
        codec.encode(m, &mut encoded).unwrap();
    }
    let bytes = encoded.len();
    let n = input.messages.len();
    // The exact JSON bytes of each message, for the baselines.
    let jsons: Vec<Vec<u8>> = input
        .messages
        .iter()
        .map(|m| m.to_string().into_bytes())
        .collect();

    let time_codec = || {
        let mut buf = encoded.clone();
        let mut codec = make();
        let start = Instant::now();
        let mut count = 0;
        while let Some(item) = codec.decode(&mut buf).unwrap() {
            black_box(item.unwrap());
            count += 1;
        }
        let t = start.elapsed();
        assert_eq!(count, n);
        t
    };
    fn time_plain<T: serde::de::DeserializeOwned>(jsons: &[Vec<u8>]) -> Duration {
        let start = Instant::now();
        for j in jsons {
            black_box(serde_json::from_slice::<T>(j).unwrap());
        }
        start.elapsed()
    }
    // Interleaved rounds, best of each: the machine's load drifts less between neighbours.
    let mut times = [Duration::MAX; 4];
    for _ in 0..rounds {
        let round = [
            time_codec(),
            time_plain::<Value>(&jsons),
            time_plain::<Raw>(&jsons),
            time_plain::<IgnoredAny>(&jsons),
        ];
        for (best, t) in times.iter_mut().zip(round) {
            *best = (*best).min(t);
        }
    }
    let [codec_time, value_time, raw_time, ignored_time] = times;
    println!(
        "{} x{} ({} bytes, {} framing):",
        input.name, n, bytes, codec_name
    );
    report("codec decode (framing + message)", bytes, n, codec_time);
    report("serde_json::from_slice::<Value>", bytes, n, value_time);
    report("serde_json::from_slice::<Raw>", bytes, n, raw_time);
    report(
        "serde_json::from_slice::<IgnoredAny>",
        bytes,
        n,
        ignored_time,
    );
    let pct = |base: Duration| 100.0 * base.as_secs_f64() / codec_time.as_secs_f64();
    println!(
        "  codec throughput vs Value: {:.0}%, vs Raw: {:.0}%, vs IgnoredAny: {:.0}%\n",
        pct(value_time),
        pct(raw_time),
        pct(ignored_time)
    );
}

fn main() {
    // `cargo test --benches` passes `--bench`-less args; keep that run short.
    let quick = std::env::args().any(|a| a == "--test");
    let rounds = if quick { 1 } else { 40 };
    for input in [small(), large_text(), large_structured()] {
        run(&input, "newline", LineCodec::new, rounds);
        if !quick {
            run(&input, "Content-Length", ContentLengthCodec::new, rounds);
        }
    }
}
