//! `io()` over in-process byte streams: framing detection and answers in the detected framing.

use futures_util::{SinkExt, StreamExt};
use mcp_jsonrpc::{Inbound, Message, Notification, Outbound};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Writes `pieces` (one `hello` notification in some framing) to `io()`, checks that `hello`
/// arrives, answers `back` and returns the bytes the peer reads of the answer.
async fn hello_and_back(pieces: &[&[u8]]) -> Vec<u8> {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    let (mut inbound, mut outbound) = mcp_transport_stdio::io(read, write).into_parts();
    let (mut their_read, mut their_write) = tokio::io::split(theirs);

    for piece in pieces {
        their_write.write_all(piece).await.unwrap();
    }
    let got = inbound.next().await.unwrap().unwrap().frame.unwrap();
    assert_eq!(
        got,
        Inbound::Single(Message::from(Notification::new("hello", None)))
    );

    outbound
        .send(Outbound::from(Message::from(Notification::new(
            "back", None,
        ))))
        .await
        .unwrap();
    let mut buf = vec![0u8; 256];
    let n = their_read.read(&mut buf).await.unwrap();
    buf.truncate(n);
    buf
}

#[tokio::test]
async fn content_length_peer_is_detected_and_answered_in_kind() {
    let body = br#"{"jsonrpc":"2.0","method":"hello"}"#;
    let frame = format!("Content-Length: {}\r\n\r\n", body.len());
    let answer = hello_and_back(&[frame.as_bytes(), body]).await;
    let text = std::str::from_utf8(&answer).unwrap();
    assert!(
        text.starts_with("Content-Length: "),
        "answered with headers: {text:?}"
    );
    assert!(
        text.ends_with(r#"{"jsonrpc":"2.0","method":"back"}"#),
        "{text:?}"
    );
}

#[tokio::test]
async fn newline_peer_gets_newline_frames() {
    let answer = hello_and_back(&[b"{\"jsonrpc\":\"2.0\",\"method\":\"hello\"}\r\n"]).await;
    assert_eq!(answer, b"{\"jsonrpc\":\"2.0\",\"method\":\"back\"}\n");
}

#[tokio::test]
async fn end_of_input_ends_the_stream() {
    let (ours, theirs) = tokio::io::duplex(1024);
    let (read, write) = tokio::io::split(ours);
    let (mut inbound, _outbound) = mcp_transport_stdio::io(read, write).into_parts();
    drop(theirs);
    assert!(inbound.next().await.is_none());
}
