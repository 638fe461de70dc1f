//! The serving helpers' per-connection limits, over raw TCP: stalled and idle connections are
//! closed after the configured time while fresh clients are served, and connections over the
//! cap are refused until one closes.
#![cfg(feature = "server")]

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Hang guard for anything the server should do within a fraction of a second.
const GUARD: Duration = Duration::from_secs(5);

fn service(config: HttpServerConfig) -> StreamableHttpService {
    StreamableHttpService::builder(|connection: mcp_jsonrpc::Connection| async move {
        drop(connection);
    })
    .config(config.path("/mcp"))
    .build()
}

/// Reads until the server closes the connection (end of file or reset); returns what came.
/// Panics when the connection is still open after [`GUARD`].
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(GUARD, read)
        .await
        .expect("the server closes the connection");
    String::from_utf8_lossy(&got).into_owned()
}

/// Reads one complete response with an empty or `Content-Length` body.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            let text = String::from_utf8_lossy(&got).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if body.len() >= length {
                    return text;
                }
            }
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return String::from_utf8_lossy(&got).into_owned(),
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(GUARD, read)
        .await
        .expect("a response arrives")
}

/// A complete request the service answers at once (404: not the MCP path).
fn simple_request(addr: SocketAddr) -> String {
    format!("GET /elsewhere HTTP/1.1\r\nHost: {addr}\r\n\r\n")
}

/// A request on a fresh connection, and what came back (empty when the connection was closed
/// before an answer could be read).
async fn served(addr: SocketAddr) -> String {
    let mut fresh = TcpStream::connect(addr).await.unwrap();
    // A refused connection may be closed before the request is written.
    let _ = fresh.write_all(simple_request(addr).as_bytes()).await;
    read_response(&mut fresh).await
}

#[tokio::test]
async fn stalled_and_idle_connections_are_closed_while_others_are_served() {
    let limit = Duration::from_millis(200);
    let config = HttpServerConfig::default()
        .header_read_timeout(Some(limit))
        .idle_timeout(Some(limit))
        .request_body_timeout(Some(limit));
    let server = common::listen(service(config)).await;
    let addr = server.addr;

    // Half a request header.
    let mut half_header = TcpStream::connect(addr).await.unwrap();
    half_header
        .write_all(format!("GET /elsewhere HTTP/1.1\r\nHost: {addr}\r\n").as_bytes())
        .await
        .unwrap();

    // Complete headers, half the body.
    let mut half_body = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n"
    );
    half_body.write_all(head.as_bytes()).await.unwrap();
    half_body.write_all(br#"{"jsonrpc":"#).await.unwrap();

    // Served once, then silent.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(simple_request(addr).as_bytes())
        .await
        .unwrap();
    let first = read_response(&mut idle).await;
    assert!(first.starts_with("HTTP/1.1 404"), "{first}");

    // Connected but nothing sent.
    let mut silent = TcpStream::connect(addr).await.unwrap();

    // Meanwhile a fresh client is served.
    let answer = served(addr).await;
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");

    let rest = read_to_close(&mut half_header).await;
    assert!(
        rest.is_empty() || rest.starts_with("HTTP/1.1 408"),
        "{rest}"
    );
    let rest = read_to_close(&mut half_body).await;
    assert!(rest.starts_with("HTTP/1.1 408"), "{rest}");
    let rest = read_to_close(&mut idle).await;
    assert!(rest.is_empty(), "{rest}");
    let rest = read_to_close(&mut silent).await;
    assert!(rest.is_empty(), "{rest}");

    // And the server still serves.
    let answer = served(addr).await;
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
}

#[tokio::test]
async fn connections_over_the_cap_are_refused_until_one_closes() {
    let config = HttpServerConfig::default()
        .max_connections(2)
        .idle_timeout(None);
    let server = common::listen(service(config)).await;
    let addr = server.addr;

    // Two connections, each served once (so both are accepted) and kept open.
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(simple_request(addr).as_bytes())
            .await
            .unwrap();
        let answer = read_response(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
        open.push(stream);
    }

    // A third is refused clearly, and closed.
    let mut third = TcpStream::connect(addr).await.unwrap();
    let refusal = read_to_close(&mut third).await;
    assert!(
        refusal.starts_with("HTTP/1.1 503 Service Unavailable"),
        "{refusal:?}"
    );
    assert!(refusal.to_ascii_lowercase().contains("connection: close"));

    // Closing one makes room again (once the server has noticed).
    drop(open.pop());
    let retry = async {
        loop {
            let answer = served(addr).await;
            if answer.starts_with("HTTP/1.1 404") {
                return;
            }
            assert!(
                answer.is_empty() || answer.starts_with("HTTP/1.1 503"),
                "{answer:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(GUARD, retry)
        .await
        .expect("a freed connection makes room");
}
