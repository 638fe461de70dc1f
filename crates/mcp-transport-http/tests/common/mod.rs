//! What the transport's integration tests share.
// Each test binary compiles its own copy and uses only part of it.
#![allow(dead_code)]

use std::net::SocketAddr;

use mcp_transport_http::server::StreamableHttpService;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A service listening on a free loopback port.
pub struct Listening {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Send (or drop) to shut the service down gracefully.
    pub stop: oneshot::Sender<()>,
    /// The serving task; ends once the shutdown is complete.
    pub done: JoinHandle<std::io::Result<()>>,
}

/// Serves `service` on a free loopback port until `stop` fires or is dropped.
pub async fn listen(service: StreamableHttpService) -> Listening {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(async move {
        service
            .serve_with_listener(listener, async {
                let _ = stopped.await;
            })
            .await
    });
    Listening { addr, stop, done }
}

/// Sends `notifications/progress` (token `t`, progress `i`) through `peer`, related to the
/// request the peer belongs to.
pub async fn progress(peer: mcp_jsonrpc::Peer, i: u32) {
    peer.notify_with(
        "notifications/progress",
        &serde_json::json!({"progressToken": "t", "progress": i}),
    )
    .await
    .unwrap();
}

/// What [`sse_messages`] read of an SSE answer.
pub struct Sse {
    /// The `data` of each event, as JSON (events without data, such as priming, skipped).
    pub messages: Vec<serde_json::Value>,
    /// How many events carried an `id`.
    pub ids: usize,
    /// The rest of the body.
    pub body: hyper::body::Incoming,
}

/// Reads an SSE answer until `stop_after` messages have arrived, or to its end.
pub async fn sse_messages(
    resp: http::Response<hyper::body::Incoming>,
    stop_after: Option<usize>,
) -> Sse {
    use http_body_util::BodyExt;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut sse = Sse {
        messages: Vec::new(),
        ids: 0,
        body: resp.into_body(),
    };
    let mut buf = String::new();
    loop {
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            for line in block.lines() {
                if line.starts_with("id:") {
                    sse.ids += 1;
                }
                if let Some(data) = line.strip_prefix("data: ") {
                    if !data.is_empty() {
                        sse.messages.push(serde_json::from_str(data).unwrap());
                    }
                }
            }
            if stop_after.is_some_and(|n| sse.messages.len() >= n) {
                return sse;
            }
        }
        let frame = tokio::time::timeout(std::time::Duration::from_secs(10), sse.body.frame())
            .await
            .expect("an SSE event in time");
        match frame {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    buf.push_str(std::str::from_utf8(&data).unwrap());
                }
            }
            _ => return sse,
        }
    }
}
