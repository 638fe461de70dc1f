//! `mcp-client` over the Streamable HTTP client against hand-written hyper servers on the
//! 2026-07-28 wire: `Mcp-Param-*` headers for `x-mcp-header` parameters (SEP-2243) with their
//! value encoding, tools with invalid annotations dropped, the re-list after a header mismatch,
//! and the fallback from `server/discover` to `initialize` against a 2025-only server.

use crate::http_client_support;

use crate::client_support;

use client_support::tool_names;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http::{HeaderValue, Method};
use http_client_support::*;
use mcp_client::{Client, ClientSession};
use mcp_transport_http::client::{HttpClientHandle, StreamableHttpClient};
use mcp_types::{Era, Implementation, ProtocolVersion};
use serde_json::{Value, json};

fn discover(id: &Value) -> http::Response<Body> {
    json(result(
        id,
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "params", "version": "1"}}
        }),
    ))
}

fn tools_list(id: &Value, tools: Value) -> http::Response<Body> {
    json(result(
        id,
        json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": tools}),
    ))
}

fn annotated(name: &str, ty: &str, header: &str) -> (String, Value) {
    (name.to_owned(), json!({"type": ty, "x-mcp-header": header}))
}

/// The tools of the conformance suite's `http-custom-headers` and `http-invalid-tool-headers`
/// scenarios, plus a nested parameter.
fn header_tools() -> Value {
    let mut props = serde_json::Map::new();
    for (name, ty, header) in [
        ("region", "string", "Region"),
        ("priority", "integer", "Priority"),
        ("verbose", "boolean", "Verbose"),
        ("debug", "boolean", "Debug"),
        ("empty_val", "string", "EmptyVal"),
        ("method_val", "string", "Method"),
        ("non_ascii_val", "string", "NonAscii"),
        ("whitespace_val", "string", "Whitespace"),
        ("leading_space_val", "string", "LeadingSpace"),
        ("trailing_space_val", "string", "TrailingSpace"),
        ("internal_space_val", "string", "InternalSpace"),
        ("control_char_val", "string", "ControlChar"),
        ("crlf_val", "string", "CrLf"),
        ("tab_val", "string", "Tab"),
        ("sentinel_val", "string", "Sentinel"),
    ] {
        let (k, v) = annotated(name, ty, header);
        props.insert(k, v);
    }
    props.insert("float_val".into(), json!({"type": "number"}));
    props.insert("query".into(), json!({"type": "string"}));
    props.insert(
        "opts".into(),
        json!({"type": "object", "properties": {"on": {"type": "boolean", "x-mcp-header": "On"}}}),
    );
    let invalid = |name: &str, prop: Value| json!({"name": name, "inputSchema": {"type": "object", "properties": {"v": prop}}});
    json!([
        {"name": "test_custom_headers", "inputSchema": {"type": "object", "properties": props}},
        {"name": "test_custom_headers_null", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "query": {"type": "string"}
        }}},
        invalid("invalid_empty_header", json!({"type": "string", "x-mcp-header": ""})),
        invalid("invalid_object_header", json!({"type": "object", "x-mcp-header": "Data"})),
        invalid("invalid_array_header", json!({"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"})),
        invalid("invalid_null_header", json!({"type": "null", "x-mcp-header": "Nil"})),
        invalid("invalid_number_header", json!({"type": "number", "x-mcp-header": "Score"})),
        invalid("invalid_space_in_name", json!({"type": "string", "x-mcp-header": "My Region"})),
        invalid("invalid_colon_in_name", json!({"type": "string", "x-mcp-header": "Region:Primary"})),
        invalid("invalid_non_ascii_name", json!({"type": "string", "x-mcp-header": "Région"})),
        invalid("invalid_control_char_name", json!({"type": "string", "x-mcp-header": "Region\t1"})),
        {"name": "invalid_duplicate_diff_case", "inputSchema": {"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "MyField"},
            "b": {"type": "string", "x-mcp-header": "myfield"}
        }}},
        {"name": "valid_tool", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}
        }}}
    ])
}

async fn connect(url: String) -> (ClientSession, HttpClientHandle) {
    let transport = StreamableHttpClient::builder(url).build().unwrap();
    let (connection, handle) = transport.connect().await.unwrap();
    let session = Client::builder(Implementation::new("params-test", "1.0.0"))
        .build()
        .connect(connection)
        .await
        .unwrap();
    (session, handle)
}

fn tool_ok(id: &Value) -> http::Response<Body> {
    json(result(
        id,
        json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}),
    ))
}

#[tokio::test]
async fn x_mcp_header_params_become_mcp_param_headers_and_invalid_tools_are_dropped() {
    let server = TestServer::start(|rec| async move {
        let id = rec.rpc_id().unwrap_or(Value::Null);
        match rec.rpc_method() {
            Some("server/discover") => discover(&id),
            Some("tools/list") => tools_list(&id, header_tools()),
            Some("tools/call") => tool_ok(&id),
            _ => status(405),
        }
    })
    .await;
    let (session, handle) = connect(server.url("/mcp")).await;
    assert_eq!(session.era(), Era::Stateless);
    let names = tool_names(&session).await;
    assert_eq!(
        names,
        [
            "test_custom_headers",
            "test_custom_headers_null",
            "valid_tool"
        ]
    );
    session
        .call_tool(
            "test_custom_headers",
            json!({
                "region": "us-west1", "priority": 42, "verbose": false, "debug": true,
                "empty_val": "", "method_val": "test-method", "float_val": 2.5,
                "non_ascii_val": "Hello, 世界", "whitespace_val": " padded ",
                "leading_space_val": " us-west1", "trailing_space_val": "us-west1 ",
                "internal_space_val": "us west 1", "control_char_val": "line1\nline2",
                "crlf_val": "line1\r\nline2", "tab_val": "\tindented",
                "sentinel_val": "=?base64?literal?=", "query": "SELECT * FROM users",
                "opts": {"on": true}
            }),
        )
        .await
        .unwrap();
    session
        .call_tool(
            "test_custom_headers_null",
            json!({"region": "us-east1", "verbose": null, "query": "SELECT 1"}),
        )
        .await
        .unwrap();

    let calls = server
        .wait_for(|r| r.rpc_method() == Some("tools/call"))
        .await;
    let call = &calls[0];
    let expect = [
        ("mcp-param-region", "us-west1"),
        ("mcp-param-priority", "42"),
        ("mcp-param-verbose", "false"),
        ("mcp-param-debug", "true"),
        ("mcp-param-emptyval", ""),
        ("mcp-param-method", "test-method"),
        ("mcp-param-nonascii", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        ("mcp-param-whitespace", "=?base64?IHBhZGRlZCA=?="),
        ("mcp-param-leadingspace", "=?base64?IHVzLXdlc3Qx?="),
        ("mcp-param-trailingspace", "=?base64?dXMtd2VzdDEg?="),
        ("mcp-param-internalspace", "us west 1"),
        ("mcp-param-controlchar", "=?base64?bGluZTEKbGluZTI=?="),
        ("mcp-param-crlf", "=?base64?bGluZTENCmxpbmUy?="),
        ("mcp-param-tab", "=?base64?CWluZGVudGVk?="),
        ("mcp-param-sentinel", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("mcp-param-on", "true"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "test_custom_headers"),
        ("mcp-protocol-version", "2026-07-28"),
    ];
    for (name, value) in expect {
        assert_eq!(call.header(name), Some(value), "{name}");
    }
    assert_eq!(call.header("mcp-param-query"), None, "unannotated");
    assert_eq!(
        call.header("mcp-param-floatval"),
        None,
        "unannotated number"
    );
    let params: Vec<&str> = call
        .headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| k.starts_with("mcp-param-"))
        .collect();
    assert_eq!(params.len(), 16, "{params:?}");

    let null_call = &calls[1];
    assert_eq!(null_call.header("mcp-param-region"), Some("us-east1"));
    assert_eq!(
        null_call.header("mcp-param-verbose"),
        None,
        "null omits the header"
    );

    // Stateless: no session, no standalone stream.
    assert!(server.log().iter().all(|r| r.method == Method::POST));
    assert!(
        server
            .log()
            .iter()
            .all(|r| r.header("mcp-session-id").is_none())
    );
    handle.close().await;
}

#[tokio::test]
async fn a_header_mismatch_lists_the_tools_again_and_retries_once() {
    let lists = Arc::new(AtomicUsize::new(0));
    let counter = lists.clone();
    let server = TestServer::start(move |rec| {
        let counter = counter.clone();
        async move {
            let id = rec.rpc_id().unwrap_or(Value::Null);
            match rec.rpc_method() {
                Some("server/discover") => discover(&id),
                // The first listing predates the annotation.
                Some("tools/list") if counter.fetch_add(1, Ordering::SeqCst) == 0 => tools_list(
                    &id,
                    json!([{"name": "sql", "inputSchema": {"type": "object", "properties": {
                        "region": {"type": "string"}}}}]),
                ),
                Some("tools/list") => tools_list(
                    &id,
                    json!([{"name": "sql", "inputSchema": {"type": "object", "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"}}}}]),
                ),
                Some("tools/call") if rec.header("mcp-param-region").is_none() => {
                    let mut r = json(json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": -32020, "message": "missing Mcp-Param-Region"}}));
                    *r.status_mut() = http::StatusCode::BAD_REQUEST;
                    r
                }
                Some("tools/call") => tool_ok(&id),
                _ => status(405),
            }
        }
    })
    .await;
    let (session, handle) = connect(server.url("/mcp")).await;
    session.list_all_tools().await.unwrap();
    let result = session
        .call_tool("sql", json!({"region": "eu"}))
        .await
        .unwrap();
    assert_eq!(result.is_error, None);
    assert_eq!(lists.load(Ordering::SeqCst), 2);
    let calls = server
        .wait_for(|r| r.rpc_method() == Some("tools/call"))
        .await;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].header("mcp-param-region"), Some("eu"));
    handle.close().await;
}

/// A 2025-11-25 server's answer to `initialize` (request `id`), opening session `sid`.
fn legacy_initialized(id: &Value, sid: &'static str) -> http::Response<Body> {
    let mut r = json(result(
        id,
        json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
               "serverInfo": {"name": "legacy", "version": "1"}}),
    ));
    r.headers_mut()
        .insert("mcp-session-id", HeaderValue::from_static(sid));
    r
}

/// What the TypeScript SDK's 2025 transport answers to a message it refuses: 400 with a
/// JSON-RPC error whose id is null.
fn id_less_400(code: i64, message: &str) -> http::Response<Body> {
    let mut r = json(json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": code, "message": message}}));
    *r.status_mut() = http::StatusCode::BAD_REQUEST;
    r
}

/// An error without an id in answer to a POST of one request answers that request: the caller
/// gets the server's JSON-RPC error (it used to get the HTTP status, and the engine warned
/// about an error without a request id).
#[tokio::test]
async fn an_id_less_error_answers_the_one_request_of_its_post() {
    const SID: &str = "s";
    let server = TestServer::start(|rec| async move {
        let id = rec.rpc_id().unwrap_or(Value::Null);
        match (rec.method.clone(), rec.rpc_method()) {
            (Method::POST, Some("initialize")) => legacy_initialized(&id, SID),
            (Method::POST, Some("notifications/initialized")) => accepted(),
            (Method::POST, _) => id_less_400(-32602, "Bad Request: cannot read this"),
            (Method::GET, _) => status(405),
            (Method::DELETE, _) => status(200),
            _ => status(500),
        }
    })
    .await;
    let (session, _handle) = connect(server.url("/mcp")).await;
    let err = session.call_tool("t", json!({})).await.unwrap_err();
    match err {
        mcp_client::CallError::Rpc(e) => {
            assert_eq!(e.code, -32602);
            assert_eq!(e.message, "Bad Request: cannot read this");
        }
        other => panic!("not the server's error: {other:?}"),
    }
}

#[tokio::test]
async fn discover_falls_back_to_initialize_against_a_2025_only_server() {
    const SID: &str = "legacy-session";
    // What the TypeScript SDK's 2025 transport answers: 400 with an id-less JSON-RPC error to
    // anything but `initialize` without a session.
    let server = TestServer::start(|rec| async move {
        let id = rec.rpc_id().unwrap_or(Value::Null);
        let session = rec.header("mcp-session-id") == Some(SID);
        match (rec.method.clone(), rec.rpc_method()) {
            (Method::POST, Some("initialize")) => legacy_initialized(&id, SID),
            (Method::POST, _) if !session => {
                id_less_400(-32000, "Bad Request: Server not initialized")
            }
            (Method::POST, Some("notifications/initialized")) => accepted(),
            (Method::POST, Some("tools/list")) => json(result(
                &id,
                json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
            )),
            (Method::GET, _) => status(405),
            (Method::DELETE, _) => status(200),
            _ => status(500),
        }
    })
    .await;
    let (session, handle) = connect(server.url("/mcp")).await;
    assert_eq!(session.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(session.era(), Era::Session);
    assert_eq!(session.server_info().name, "legacy");
    assert_eq!(handle.session_id().as_deref(), Some(SID));
    assert_eq!(session.list_all_tools().await.unwrap().len(), 1);

    let log = server.log();
    let posts: Vec<&Recorded> = log.iter().filter(|r| r.method == Method::POST).collect();
    let methods: Vec<Option<&str>> = posts.iter().map(|r| r.rpc_method()).collect();
    assert_eq!(
        methods,
        [
            Some("server/discover"),
            Some("initialize"),
            Some("notifications/initialized"),
            Some("tools/list")
        ]
    );
    assert_eq!(posts[0].header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(posts[0].header("mcp-method"), Some("server/discover"));
    // The handshake carries none of the stateless headers.
    assert_eq!(posts[1].header("mcp-protocol-version"), None);
    assert_eq!(posts[1].header("mcp-method"), None);
    assert!(
        posts[1].body.as_ref().unwrap()["params"]
            .get("_meta")
            .is_none()
    );
    assert_eq!(posts[3].header("mcp-session-id"), Some(SID));
    assert_eq!(posts[3].header("mcp-protocol-version"), Some("2025-11-25"));
    assert_eq!(posts[3].header("mcp-method"), None);
    session.close().await;
    handle.close().await;
}
