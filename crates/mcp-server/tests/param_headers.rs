//! `x-mcp-header` on the server side (feature `http`): a stateless Streamable HTTP call must
//! mirror each designated argument into its `Mcp-Param-*` header; the transport decodes the
//! headers and the server compares them with the arguments. Tools with invalid annotations are
//! refused when the server is built.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use mcp_server::model::Implementation;
use mcp_server::{BuildError, Server, Tool, ToolContext};
use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "query": {"type": "string"}
        },
        "required": ["region"]
    })
}

/// Arguments whose derived schema designates `region` for the `Mcp-Param-Region` header.
#[derive(serde::Deserialize)]
struct Lookup {
    region: String,
}

impl schemars::JsonSchema for Lookup {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Lookup".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
            "required": ["region"]
        })
    }
}

async fn start() -> std::net::SocketAddr {
    let server = Server::builder(Implementation::new("headers", "1.0.0"))
        // The typed tool's schema is made on its first call, as in a release build.
        .check_schemas_at_build(false)
        .tool_raw(
            Tool::new("search").input_schema(schema()),
            |_cx: ToolContext, args: Value| async move { format!("searched {}", args["region"]) },
        )
        .tool(
            Tool::new("lookup"),
            |_cx: ToolContext, args: Lookup| async move { format!("looked up {}", args.region) },
        )
        .build()
        .unwrap();
    let service = StreamableHttpService::builder(server.connection_handler())
        .config(HttpServerConfig::default().path("/mcp"))
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(service.serve_with_listener(listener, std::future::pending()));
    addr
}

/// A stateless `tools/call` of `search` with these arguments and `Mcp-Param-*` headers:
/// the HTTP status and the JSON-RPC answer.
async fn call(
    addr: std::net::SocketAddr,
    arguments: Value,
    params: &[(&str, &str)],
) -> (StatusCode, Value) {
    call_tool(addr, "search", arguments, params).await
}

/// A stateless `tools/call` of `tool` (see [`call`]).
async fn call_tool(
    addr: std::net::SocketAddr,
    tool: &str,
    arguments: Value,
    params: &[(&str, &str)],
) -> (StatusCode, Value) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(format!("http://{addr}/mcp"))
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool);
    for (name, value) in params {
        request = request.header(format!("mcp-param-{name}"), *value);
    }
    let response = sender
        .send_request(
            request
                .body(Full::new(Bytes::from(body.to_string())))
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn headers_must_mirror_the_designated_arguments() {
    let addr = start().await;
    let args = json!({"region": "us-west1", "priority": 42, "query": "SELECT 1"});
    // Plain and base64 forms of the same values are accepted.
    let (status, answer) = call(
        addr,
        args.clone(),
        &[("Region", "us-west1"), ("Priority", "42")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "searched \"us-west1\""
    );
    let (status, _) = call(
        addr,
        args.clone(),
        &[("region", "=?base64?dXMtd2VzdDE=?="), ("PRIORITY", "42")],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // A missing header, a different value, a header for an absent argument: -32020, HTTP 400.
    for (arguments, headers) in [
        (args.clone(), vec![("Priority", "42")]),
        (
            args.clone(),
            vec![("Region", "eu-west1"), ("Priority", "42")],
        ),
        (
            args.clone(),
            vec![("Region", "us-west1"), ("Priority", "43")],
        ),
        (
            json!({"region": "us-west1"}),
            vec![("Region", "us-west1"), ("Priority", "1")],
        ),
    ] {
        let (status, answer) = call(addr, arguments, &headers).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{headers:?}: {answer}");
        assert_eq!(answer["error"]["code"], -32020, "{headers:?}");
        assert_eq!(answer["id"], 1);
    }
    // A null argument means no header.
    let (status, answer) = call(
        addr,
        json!({"region": "us-west1", "priority": null}),
        &[("Region", "us-west1")],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

/// A hand-written schema is checked when its tool is registered, also when the derived ones
/// are left to their first use.
/// A schema derived from the tool's type, made on the first call, designates its headers as a
/// hand-written one does.
#[tokio::test]
async fn a_derived_schema_made_on_first_use_designates_headers_too() {
    let addr = start().await;
    let (status, answer) = call_tool(addr, "lookup", json!({"region": "eu"}), &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(answer["error"]["code"], -32020);
    let (status, answer) =
        call_tool(addr, "lookup", json!({"region": "eu"}), &[("Region", "eu")]).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "looked up eu");
}

#[test]
fn invalid_annotations_are_refused_at_build() {
    let bad =
        json!({"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}});
    let err = Server::builder(Implementation::new("bad", "1"))
        .check_schemas_at_build(false)
        .tool_raw(
            Tool::new("t").input_schema(bad),
            |_cx: ToolContext, _a: Value| async { "x" },
        )
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            BuildError::InvalidSchema {
                which: "inputSchema",
                ..
            }
        ),
        "{err}"
    );
}
