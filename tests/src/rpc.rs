//! Calls through a JSON-RPC [`Peer`]: an SDK client transport driven by the engine alone.

use mcp_jsonrpc::{CallError, Peer, RequestOptions};
use serde_json::{Value, json};

/// Calls the tool `name` without arguments.
pub async fn call_tool(peer: &Peer, name: &str) -> Result<Value, CallError> {
    peer.call(
        "tools/call",
        &json!({"name": name, "arguments": {}}),
        RequestOptions::new(),
    )
    .await
}

/// The message of a call that the transport failed locally.
///
/// # Panics
/// When the call did not fail with a JSON-RPC error.
pub fn failure(result: Result<Value, CallError>) -> String {
    match result {
        Err(CallError::Rpc(e)) => e.message,
        other => panic!("expected a failed call, got {other:?}"),
    }
}
