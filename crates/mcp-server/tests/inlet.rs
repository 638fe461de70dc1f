//! A server's requests entered through the engine's inlet, as HTTP serves them in the task of
//! each exchange: a stateless call is answered as on a connection, and a session's request
//! before `initialize` is refused as a session would refuse it.

use mcp_jsonrpc::{
    ErrorObject, Extensions, Inlet, InletLink, RawJson, Request, Served, Step, memory_pair,
};
use mcp_server::model::Implementation;
use mcp_server::{Server, Tool, ToolContext};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

async fn echo(_cx: ToolContext, args: EchoArgs) -> String {
    args.text
}

/// Serves `server` on an in-memory connection with an inlet link; resolves to the engine's
/// inlet (bound when serving starts), the serving task and the connection's other end (kept
/// open while it is held).
async fn serve_linked(
    server: &Server,
) -> (
    Inlet,
    tokio::task::JoinHandle<Result<(), mcp_server::ServeError>>,
    mcp_jsonrpc::Connection,
) {
    let link = InletLink::new(4);
    let (client_side, server_side) = memory_pair(8);
    let connection = server_side.with_extension(link.clone());
    let serving = tokio::spawn({
        let server = server.clone();
        async move { server.serve(connection).await }
    });
    let inlet = loop {
        if let Some(inlet) = link.get() {
            break inlet.clone();
        }
        tokio::task::yield_now().await;
    };
    (inlet, serving, client_side)
}

/// The answer to `request` served through `inlet`, standing alone or as the connection's.
async fn answer(inlet: &Inlet, request: Request, alone: bool) -> Result<RawJson, ErrorObject> {
    let served = if alone {
        inlet.serve_alone(request, Extensions::default())
    } else {
        inlet.serve(request, Extensions::default())
    };
    match served {
        Served::Answered(response) | Served::Refused(response) => response.result,
        Served::Running(mut running) => loop {
            match running.next().await {
                Some(Step::Answered(response)) => break response.result,
                Some(Step::Sent(_)) => {}
                None => panic!("cancelled"),
            }
        },
        other => panic!("not served: {other:?}"),
    }
}

#[tokio::test]
async fn a_stateless_call_is_answered_through_the_inlet() {
    let server = Server::builder(Implementation::new("direct", "1.0.0"))
        .tool(Tool::new("echo"), echo)
        .build()
        .unwrap();
    let (inlet, serving, _client_side) = serve_linked(&server).await;

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
    let result: serde_json::Value =
        serde_json::from_str(answer(&inlet, stateless, true).await.unwrap().get()).unwrap();
    assert_eq!(result["content"][0]["text"], "hi");
    assert_eq!(result["resultType"], "complete");
    // The session was never initialized: its request is answered as a session would answer.
    assert!(answer(&inlet, general, false).await.is_err());
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
    let (inlet, serving, _client_side) = serve_linked(&server).await;
    let call = |id: i64, meta: serde_json::Value| {
        let request = Request::with_params(
            id,
            "tools/call",
            &json!({"name": "who", "arguments": {}, "_meta": meta}),
        )
        .unwrap();
        let inlet = inlet.clone();
        async move { answer(&inlet, request, true).await }
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
