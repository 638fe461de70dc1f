//! What the server's integration tests share: a client peer on an in-memory connection.

use mcp_jsonrpc::{CallError, Engine, Handler, Peer, RequestOptions, memory_pair};
use mcp_server::Server;
use serde_json::{Value, json};

/// Serves `server` on an in-memory connection and initializes it (2025-11-25) from a peer
/// that declares `capabilities` and answers the server's requests with `client`.
pub async fn start<H: Handler>(server: Server, client: H, capabilities: Value) -> Peer {
    let (client_side, server_side) = memory_pair(16);
    tokio::spawn(async move { server.serve(server_side).await });
    let (peer, _driver) = Engine::builder().spawn(client_side, client);
    let init = call(
        &peer,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
               "clientInfo": {"name": "t", "version": "1"}}),
    )
    .await
    .unwrap();
    assert_eq!(init["protocolVersion"], "2025-11-25");
    peer.notify_with("notifications/initialized", &json!({}))
        .await
        .unwrap();
    peer
}

/// Calls `method` with `params`.
pub async fn call(peer: &Peer, method: &str, params: Value) -> Result<Value, CallError> {
    peer.call(method, &params, RequestOptions::new()).await
}
