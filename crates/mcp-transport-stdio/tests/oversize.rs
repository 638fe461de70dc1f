//! A response line over the frame limit fails the call waiting for it at once.

use std::time::Duration;

use mcp_jsonrpc::codec::CodecConfig;
use mcp_jsonrpc::{CallError, Engine, RequestOptions};
use mcp_transport_stdio::{Framing, StdioOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const LIMIT: usize = 1024;

#[tokio::test]
async fn an_oversized_response_line_fails_the_call_at_once() {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    let options = StdioOptions::auto()
        .framing(Framing::Line)
        .codec(CodecConfig::default().max_frame_size(LIMIT));
    let connection = mcp_transport_stdio::io_with(read, write, options);
    let (peer, driver) = Engine::builder().spawn(connection, ());

    // The fake server answers each request with a result line four times the limit.
    let (their_read, mut their_write) = tokio::io::split(theirs);
    let server = tokio::spawn(async move {
        let mut lines = BufReader::new(their_read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let request: Value = serde_json::from_str(&line).unwrap();
            let Some(id) = request.get("id") else {
                continue;
            };
            let answer = json!({
                "jsonrpc": "2.0",
                "id": id,
                "result": {"text": "x".repeat(4 * LIMIT)}
            });
            let mut bytes = serde_json::to_vec(&answer).unwrap();
            bytes.push(b'\n');
            if their_write.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });

    // The call's own timeout is long: it must not be what ends the call. The outer bound is
    // only a hang guard.
    let params = json!({});
    let call = peer.call::<Value, Value>(
        "tools/list",
        &params,
        RequestOptions::new().timeout(Some(Duration::from_secs(60))),
    );
    let outcome = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the call fails at once instead of waiting for its timeout");
    match outcome {
        Err(CallError::InvalidResponse(reason)) => {
            assert!(
                reason.contains("exceeds the maximum size of 1024 bytes"),
                "{reason}"
            );
        }
        other => panic!("expected a too-large error, got {other:?}"),
    }

    // The connection stays usable for the next call (which fails the same way here).
    let again = peer.call::<Value, Value>(
        "tools/list",
        &params,
        RequestOptions::new().timeout(Some(Duration::from_secs(60))),
    );
    let again = tokio::time::timeout(Duration::from_secs(10), again)
        .await
        .expect("the second call ends too");
    assert!(
        matches!(again, Err(CallError::InvalidResponse(_))),
        "{again:?}"
    );

    peer.close();
    drop(peer);
    let _ = tokio::time::timeout(Duration::from_secs(5), driver).await;
    server.abort();
}
