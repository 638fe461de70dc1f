//! `io()` over in-process byte streams: framing detection and answers in the detected framing.

use futures_util::{SinkExt, StreamExt};
use mcp_jsonrpc::{Inbound, Message, Notification, Outbound};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn content_length_peer_is_detected_and_answered_in_kind() {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    let (mut inbound, mut outbound) = mcp_transport_stdio::io(read, write).into_parts();
    let (mut their_read, mut their_write) = tokio::io::split(theirs);

    let body = br#"{"jsonrpc":"2.0","method":"hello"}"#;
    let frame = format!("Content-Length: {}\r\n\r\n", body.len());
    their_write.write_all(frame.as_bytes()).await.unwrap();
    their_write.write_all(body).await.unwrap();

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
    let text = std::str::from_utf8(&buf[..n]).unwrap();
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
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    let (mut inbound, mut outbound) = mcp_transport_stdio::io(read, write).into_parts();
    let (mut their_read, mut their_write) = tokio::io::split(theirs);

    their_write
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"hello\"}\r\n")
        .await
        .unwrap();
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
    assert_eq!(&buf[..n], b"{\"jsonrpc\":\"2.0\",\"method\":\"back\"}\n");
}

#[tokio::test]
async fn end_of_input_ends_the_stream() {
    let (ours, theirs) = tokio::io::duplex(1024);
    let (read, write) = tokio::io::split(ours);
    let (mut inbound, _outbound) = mcp_transport_stdio::io(read, write).into_parts();
    drop(theirs);
    assert!(inbound.next().await.is_none());
}
