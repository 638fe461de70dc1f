//! The JSON-RPC 2.0 codes are written down twice: `mcp-types` lists every code the MCP schemas
//! fix, and `mcp-jsonrpc` (which does not depend on `mcp-types`) the five its engine answers
//! with. `mcp-server` has no copy: it re-exports `mcp_types::error_codes`. The two lists must
//! never drift apart, and what the server actually answers on the wire must use them.

use mcp_jsonrpc::{CallError, Engine, RequestOptions, memory_pair};
use mcp_server::model::Implementation;
use mcp_server::{NoArgs, Server, Tool, ToolContext, ToolError};
use mcp_types::error_codes as schema;
use serde_json::{Value, json};

#[test]
fn jsonrpc_codes_are_the_schema_codes() {
    let jsonrpc = [
        (mcp_jsonrpc::codes::PARSE_ERROR, schema::PARSE_ERROR),
        (mcp_jsonrpc::codes::INVALID_REQUEST, schema::INVALID_REQUEST),
        (
            mcp_jsonrpc::codes::METHOD_NOT_FOUND,
            schema::METHOD_NOT_FOUND,
        ),
        (mcp_jsonrpc::codes::INVALID_PARAMS, schema::INVALID_PARAMS),
        (mcp_jsonrpc::codes::INTERNAL_ERROR, schema::INTERNAL_ERROR),
    ];
    for (ours, expected) in jsonrpc {
        assert_eq!(ours, expected);
    }
    // The server's table is the schema crate's, not a third copy.
    assert_eq!(
        mcp_server::codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        schema::MISSING_REQUIRED_CLIENT_CAPABILITY
    );
    assert_eq!(
        mcp_server::AskError::MissingCapability("sampling")
            .to_error_object()
            .code,
        schema::MISSING_REQUIRED_CLIENT_CAPABILITY
    );
}

async fn code_of(peer: &mcp_jsonrpc::Peer, method: &str, params: Value) -> i64 {
    match peer
        .call::<Value, Value>(method, &params, RequestOptions::new())
        .await
    {
        Err(CallError::Rpc(e)) => e.code,
        other => panic!("{method} should fail with an error response: {other:?}"),
    }
}

#[tokio::test]
async fn the_server_answers_with_the_schema_codes() {
    let server = Server::builder(Implementation::new("codes", "1.0.0"))
        .tool(
            Tool::new("protocol_error"),
            |_cx: ToolContext, _args: NoArgs| async {
                Err::<String, _>(ToolError::Protocol(
                    mcp_server::AskError::MissingCapability("roots").to_error_object(),
                ))
            },
        )
        .build()
        .unwrap();
    let (client_side, server_side) = memory_pair(16);
    let serving = tokio::spawn(async move { server.serve(server_side).await });
    let (peer, _driver) = Engine::builder().spawn(client_side, ());

    // Before `initialize`: the SDKs' "not initialized" code (no schema defines one).
    assert_eq!(
        code_of(&peer, "tools/list", json!({})).await,
        mcp_server::NOT_INITIALIZED
    );
    let _: Value = peer
        .call(
            "initialize",
            &json!({"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        code_of(&peer, "tools/frobnicate", json!({})).await,
        schema::METHOD_NOT_FOUND
    );
    // A protocol method only the server sends.
    assert_eq!(
        code_of(&peer, "sampling/createMessage", json!({})).await,
        schema::METHOD_NOT_FOUND
    );
    assert_eq!(
        code_of(&peer, "tools/call", json!({"arguments": {}})).await,
        schema::INVALID_PARAMS
    );
    assert_eq!(
        code_of(&peer, "initialize", json!({})).await,
        schema::INVALID_PARAMS
    );
    assert_eq!(
        code_of(&peer, "tools/call", json!({"name": "protocol_error"})).await,
        schema::MISSING_REQUIRED_CLIENT_CAPABILITY
    );
    peer.close();
    serving.await.unwrap().unwrap();
}
