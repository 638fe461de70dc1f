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

/// Serves `conn` as a test server: each request is answered on a task of its own with the
/// result `answer` makes of it, which may first send related messages through the sender it
/// gets; one writer takes everything to the connection.
pub async fn answer_requests<F, Fut>(conn: mcp_jsonrpc::Connection, answer: F)
where
    F: Fn(mcp_jsonrpc::Request, tokio::sync::mpsc::Sender<mcp_jsonrpc::Outbound>) -> Fut,
    Fut: std::future::Future<Output = serde_json::Value> + Send + 'static,
{
    use futures_util::{SinkExt, StreamExt};
    use mcp_jsonrpc::{Inbound, Message, Outbound};
    let (mut inbound, mut sink) = conn.into_parts();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Outbound>(64);
    tokio::spawn(async move {
        while let Some(o) = rx.recv().await {
            if sink.send(o).await.is_err() {
                break;
            }
        }
    });
    while let Some(Ok(incoming)) = inbound.next().await {
        let Ok(Inbound::Single(Message::Request(r))) = incoming.frame else {
            continue;
        };
        let id = r.id.clone();
        let result = answer(r, tx.clone());
        let tx = tx.clone();
        tokio::spawn(async move {
            let result = result.await;
            let response = mcp_jsonrpc::Response::success_from(id.clone(), &result).unwrap();
            let _ = tx
                .send(Outbound::related(Message::Response(response), Some(id)))
                .await;
        });
    }
}

/// A client engine over `transport`, initialized at `version`: its peer (`driver` runs it) and
/// the transport's handle.
#[cfg(feature = "client")]
pub struct Initialized {
    /// Calls the server.
    pub peer: mcp_jsonrpc::Peer,
    /// The transport's handle (the session).
    pub handle: mcp_transport_http::client::HttpClientHandle,
    /// The engine's task.
    pub driver: tokio::task::JoinHandle<Result<(), mcp_jsonrpc::TransportError>>,
}

/// Connects `transport` and sends `initialize` for `version`, checking the revision the
/// server answers with.
#[cfg(feature = "client")]
pub async fn initialize(
    transport: mcp_transport_http::client::StreamableHttpClient,
    version: &str,
) -> Initialized {
    use mcp_jsonrpc::{Engine, RequestOptions};
    let (connection, handle) = transport.connect().await.unwrap();
    let (peer, driver) = Engine::builder().spawn(connection, ());
    let init: serde_json::Value = peer
        .call(
            "initialize",
            &serde_json::json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(init["protocolVersion"], version);
    Initialized {
        peer,
        handle,
        driver,
    }
}
