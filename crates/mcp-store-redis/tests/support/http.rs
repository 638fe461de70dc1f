//! Replicas over HTTP for the tests: a server served on a free loopback port with the Redis
//! stores, and plain HTTP/1.1 exchanges with it (one request read to the end, or an open stream
//! read until some text shows up).

#![allow(dead_code)] // each test file uses some of these

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_store_redis::RedisStore;
use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Serves `server` at `/mcp` with `config` on sessions, events and answers in `store`; its
/// address.
pub async fn serve(
    server: &mcp_server::Server,
    store: Arc<RedisStore>,
    config: HttpServerConfig,
) -> SocketAddr {
    let service = StreamableHttpService::builder(server.connection_handler())
        .config(config.path("/mcp"))
        .session_store(store.clone())
        .event_store(store.clone())
        .message_bus(store)
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(service.serve_with_listener(listener, std::future::pending()));
    addr
}

pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The `id:` lines of an SSE body, in order.
    pub fn event_ids(&self) -> Vec<String> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("id: ").or_else(|| l.strip_prefix("id:")))
            .map(|s| s.trim().to_owned())
            .collect()
    }
}

/// One HTTP/1.1 exchange with `Connection: close`, read to the end (at most 10 s).
pub async fn send(
    addr: SocketAddr,
    method: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Answer {
    let mut request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nAccept: application/json, text/event-stream\r\n",
        addr.port()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body.unwrap_or_default());
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
        .await
        .expect("the answer within 10 s")
        .unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Answer {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// Reads an open stream until `needle` shows up (at most 10 s); returns everything read.
pub async fn read_until(stream: &mut TcpStream, seen: &mut String, needle: &str) {
    let found = read_within(stream, seen, needle, Duration::from_secs(10)).await;
    assert!(found, "no {needle:?} within 10 s in {seen}");
}

/// Reads an open stream until `needle` shows up; `false` when it did not within `within`.
pub async fn read_within(
    stream: &mut TcpStream,
    seen: &mut String,
    needle: &str,
    within: Duration,
) -> bool {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 4096];
    while !seen.contains(needle) {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(read) = tokio::time::timeout(left, stream.read(&mut buf)).await else {
            return false;
        };
        let n = read.unwrap();
        assert!(n > 0, "the stream ended before {needle:?}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    true
}
