//! The direct handler a server offers to its transport (HTTP serves stateless requests through
//! it, in the task of each exchange): a stateless call is answered as on a connection, and its
//! boxed future stays small (one such future is allocated and moved per request; when its
//! layout held a second copy of the stateless path's arguments it was 7,840 bytes in a release
//! build, 4,752 in a test build).

use mcp_jsonrpc::{Detached, DirectSlot, Extensions, Id, Request, memory_pair};
use mcp_server::model::Implementation;
use mcp_server::{Server, Tool, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

async fn echo(_cx: ToolContext, args: EchoArgs) -> String {
    args.text
}

fn context(id: i64) -> mcp_jsonrpc::RequestContext {
    Detached::new()
        .context(
            Id::Number(id),
            Extensions::default(),
            CancellationToken::new(),
            4,
        )
        .0
}

/// Serves `server` on an in-memory connection with a direct slot; resolves to the handler the
/// server offers there (the slot is filled when serving starts), the serving task and the
/// connection's other end (kept open while it is held).
async fn serve_direct(
    server: &Server,
) -> (
    mcp_jsonrpc::DirectHandler,
    tokio::task::JoinHandle<Result<(), mcp_server::ServeError>>,
    mcp_jsonrpc::Connection,
) {
    let slot = DirectSlot::new();
    let (client_side, server_side) = memory_pair(8);
    let connection = server_side.with_direct_slot(slot.clone());
    let serving = tokio::spawn({
        let server = server.clone();
        async move { server.serve(connection).await }
    });
    let handler = loop {
        if let Some(h) = slot.handler() {
            break h.clone();
        }
        tokio::task::yield_now().await;
    };
    (handler, serving, client_side)
}

#[tokio::test]
async fn a_stateless_call_is_answered_through_a_small_future() {
    let server = Server::builder(Implementation::new("direct", "1.0.0"))
        .tool(Tool::new("echo"), echo)
        .build()
        .unwrap();
    let (handler, serving, _client_side) = serve_direct(&server).await;

    let stateless = Request::with_params(
        1,
        "tools/call",
        &json!({
            "name": "echo",
            "arguments": {"text": "hi"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }),
    )
    .unwrap();
    let general = Request::with_params(2, "tools/list", &json!({})).unwrap();
    let stateless = handler(stateless, context(1));
    let general = handler(general, context(2));
    // 1,576 bytes in a release build with rustc 1.95; the bound leaves room for compiler
    // changes, not for the arguments to be held twice again.
    let size = std::mem::size_of_val(&*stateless);
    assert!(size <= 3072, "the stateless future is {size} bytes");

    let result: serde_json::Value = serde_json::from_str(stateless.await.unwrap().get()).unwrap();
    assert_eq!(result["content"][0]["text"], "hi");
    assert_eq!(result["resultType"], "complete");
    // The session was never initialized: the general path answers as a session would.
    assert!(general.await.is_err());
    serving.abort();
}

/// A stateless request names its client in `_meta` or not at all: the tool sees the name it
/// sent, or `unknown`.
#[tokio::test]
async fn a_stateless_client_without_client_info_is_unknown() {
    let server = Server::builder(Implementation::new("direct", "1.0.0"))
        .tool(
            Tool::new("who"),
            |cx: ToolContext, _args: NoArgs| async move {
                let info = cx.client_info();
                format!("{} {}", info.name, info.version)
            },
        )
        .build()
        .unwrap();
    let (handler, serving, _client_side) = serve_direct(&server).await;
    let call = |id: i64, meta: serde_json::Value| {
        let request = Request::with_params(
            id,
            "tools/call",
            &json!({"name": "who", "arguments": {}, "_meta": meta}),
        )
        .unwrap();
        handler(request, context(id))
    };
    let named = call(
        1,
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "ada", "version": "2"}
        }),
    );
    let anonymous = call(
        2,
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }),
    );
    let text = |raw: mcp_jsonrpc::RawJson| {
        let v: serde_json::Value = raw.parse().unwrap();
        v["content"][0]["text"].as_str().unwrap().to_owned()
    };
    assert_eq!(text(named.await.unwrap()), "ada 2");
    assert_eq!(text(anonymous.await.unwrap()), "unknown unknown");
    serving.abort();
}
