//! The fixture over real HTTP: the transport's client against `everything-server`'s service.

use std::time::Duration;

use mcp_conformance::fixture;
use mcp_jsonrpc::{Engine, Peer, RequestOptions};
use mcp_transport_http::client::StreamableHttpClient;
use mcp_transport_http::server::{HostPolicy, HttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};

async fn start() -> String {
    let server = fixture::build();
    let service = StreamableHttpService::builder(server.connection_handler())
        .config(
            HttpServerConfig::default()
                .path("/mcp")
                .host_policy(HostPolicy::Loopback),
        )
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(service.serve_with_listener(listener, std::future::pending()));
    format!("http://{addr}/mcp")
}

async fn call(peer: &Peer, method: &str, params: Value) -> Value {
    tokio::time::timeout(
        Duration::from_secs(10),
        peer.call::<Value, Value>(method, &params, RequestOptions::new()),
    )
    .await
    .expect("answered in time")
    .unwrap_or_else(|e| panic!("{method}: {e}"))
}

async fn session(url: &str) -> Peer {
    let client = StreamableHttpClient::builder(url).build().unwrap();
    let (connection, _handle) = client.connect().await.unwrap();
    let (peer, _driver) = Engine::builder().spawn(connection, ());
    let init = call(
        &peer,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "test", "version": "1"}}),
    )
    .await;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    peer.notify_with("notifications/initialized", &json!({}))
        .await
        .unwrap();
    peer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixture_answers_over_streamable_http() {
    let url = start().await;
    let peer = session(&url).await;

    let tools = call(&peer, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for expected in [
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_tool_with_progress",
        "test_sampling",
        "json_schema_2020_12_tool",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let schema = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .map(|t| t["inputSchema"].clone())
        .unwrap();
    assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");

    let text = call(&peer, "tools/call", json!({"name": "test_simple_text"})).await;
    assert_eq!(
        text["content"][0]["text"],
        "This is a simple text response for testing."
    );
    let audio = call(&peer, "tools/call", json!({"name": "test_audio_content"})).await;
    assert_eq!(audio["content"][0]["mimeType"], "audio/wav");
    let error = call(&peer, "tools/call", json!({"name": "test_error_handling"})).await;
    assert_eq!(error["isError"], true);

    let read = call(
        &peer,
        "resources/read",
        json!({"uri": "test://template/123/data"}),
    )
    .await;
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("123")
    );

    let prompt = call(
        &peer,
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "x1", "arg2": "y2"}}),
    )
    .await;
    let body = prompt["messages"].to_string();
    assert!(body.contains("x1") && body.contains("y2"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_arrives_with_its_token() {
    let url = start().await;
    let peer = session(&url).await;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&seen);
    let options = RequestOptions::new().on_progress(move |p| {
        sink.lock().unwrap().push(format!("{p:?}"));
    });
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        peer.call::<Value, Value>(
            "tools/call",
            &json!({"name": "test_tool_with_progress", "arguments": {}}),
            options,
        ),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(result["content"][0]["text"].is_string());
    assert_eq!(seen.lock().unwrap().len(), 3, "{:?}", seen.lock().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_host_is_refused() {
    let url = start().await;
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: evil.example.com\r\nOrigin: http://evil.example.com\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let status: u16 = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!((400..500).contains(&status), "{answer}");
}
