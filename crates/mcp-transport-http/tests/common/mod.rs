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
