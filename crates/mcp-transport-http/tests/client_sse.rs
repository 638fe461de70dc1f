//! The client transport reading the server's SSE streams end to end: a request answered on an
//! SSE stream (Streamable HTTP), and the 2024-11-05 HTTP+SSE transport (`endpoint` event).
#![cfg(all(feature = "client", feature = "server"))]

use crate::common;

use std::time::Duration;

use mcp_jsonrpc::{Connection, Notification, RequestOptions};
use mcp_transport_http::client::{ClientMode, StreamableHttpClient};
use mcp_transport_http::server::{HttpServerConfig, LegacySsePaths, StreamableHttpService};
use serde_json::{Value, json};

/// Answers `initialize`; `progress` sends two related notifications with line breaks in their
/// raw params before its result (so the answer is an SSE stream); anything else is echoed.
async fn server(conn: Connection) {
    common::answer_requests(conn, "sse", |method, params, related| async move {
        if method != "progress" {
            return params;
        }
        for i in 0..2 {
            let raw = format!("{{\"progressToken\": \"t\",\r\n \"progress\": {i}}}");
            let n = Notification {
                method: "notifications/progress".into(),
                params: Some(serde_json::value::RawValue::from_string(raw).unwrap()),
            };
            related.send(n).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        json!({"done": true, "text": "a\nb"})
    })
    .await;
}

async fn exercise(url: String, mode: ClientMode, version: &str) {
    let transport = StreamableHttpClient::builder(url)
        .mode(mode)
        .build()
        .unwrap();
    let client = common::initialize(transport, version).await;
    let peer = &client.peer;
    peer.notify("notifications/initialized", None)
        .await
        .unwrap();
    let done: Value = peer
        .call("progress", &json!({}), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(done, json!({"done": true, "text": "a\nb"}));
    let echo: Value = peer
        .call("echo", &json!({"line\nbreak": "é"}), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(echo, json!({"line\nbreak": "é"}));
}

#[tokio::test]
async fn requests_answered_on_sse_streams() {
    let service = StreamableHttpService::builder(server)
        .config(HttpServerConfig::default().path("/mcp"))
        .build();
    let listening = common::listen(service).await;
    let url = format!("http://{}/mcp", listening.addr);
    exercise(url, ClientMode::StreamableHttp, "2025-11-25").await;
}

#[tokio::test]
async fn the_http_sse_transport_finds_its_endpoint() {
    let service = StreamableHttpService::builder(server)
        .config(
            HttpServerConfig::default()
                .path("/mcp")
                .legacy_sse(LegacySsePaths::default()),
        )
        .build();
    let listening = common::listen(service).await;
    let url = format!("http://{}/sse", listening.addr);
    exercise(url, ClientMode::HttpSse, "2024-11-05").await;
}
