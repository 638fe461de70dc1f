//! The host with one stdio server (this project's `everything` server) and one HTTP server (a
//! scripted hyper server): both connected from one `mcpServers` configuration, the configured
//! headers on every HTTP request, calls routed to both, a roots change announced to the HTTP
//! server, and the HTTP session ended with DELETE on shutdown.

use crate::http_client_support;

use http::{HeaderValue, Method};
use http_client_support::*;
use mcp_client::config::HostConfig;
use mcp_client::{Client, Host, Roots, ServerStatus};
use mcp_tests::content::text_of;
use mcp_types::{Implementation, Root};
use serde_json::{Value, json};

const SERVER: &str = env!("CARGO_BIN_EXE_everything-stdio");
const SID: &str = "host-session";

fn root(uri: &str) -> Root {
    serde_json::from_value(json!({"uri": uri})).unwrap()
}

/// A 2025-11-25 server with one tool; it refuses requests without its session like the
/// TypeScript SDK does, which is also how the client learns it predates `server/discover`.
async fn remote() -> TestServer {
    TestServer::start(|rec| async move {
        let id = rec.rpc_id().unwrap_or(Value::Null);
        if rec.header("authorization") != Some("Bearer secret") {
            return status(401);
        }
        let session = rec.header("mcp-session-id") == Some(SID);
        match (rec.method.clone(), rec.rpc_method()) {
            (Method::POST, Some("initialize")) => {
                let mut r = json(result(
                    &id,
                    json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "remote", "version": "1"}}),
                ));
                r.headers_mut()
                    .insert("mcp-session-id", HeaderValue::from_static(SID));
                r
            }
            (Method::POST, _) if !session => {
                let mut r = json(json!({"jsonrpc": "2.0", "id": null, "error": {
                    "code": -32000, "message": "Bad Request: Server not initialized"}}));
                *r.status_mut() = http::StatusCode::BAD_REQUEST;
                r
            }
            (Method::POST, Some("tools/list")) => json(result(
                &id,
                json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
            )),
            (Method::POST, Some("tools/call")) => json(result(
                &id,
                json!({"content": [{"type": "text", "text": "from afar"}]}),
            )),
            (Method::POST, _) if rec.rpc_id().is_none() => accepted(),
            (Method::GET, _) => status(405),
            (Method::DELETE, _) => status(200),
            _ => status(500),
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_stdio_and_one_http_server_in_one_host() {
    let remote = remote().await;
    let config = HostConfig::from_json(
        &json!({"mcpServers": {
            "local": {"command": SERVER},
            "remote": {"url": remote.url("/mcp"), "headers": {"Authorization": "Bearer secret"}}
        }})
        .to_string(),
    )
    .unwrap();
    let roots = Roots::new(vec![root("file:///first")]);
    let client = Client::builder(Implementation::new("host-http-test", "1.0.0"))
        .roots(roots.clone())
        .build();
    let host = Host::new(client, config);
    for (name, outcome) in host.connect_all().await {
        assert!(outcome.is_ok(), "{name}: {:?}", outcome.err());
    }
    assert_eq!(host.status("remote").await, Some(ServerStatus::Connected));
    assert!(host.process_id("local").await.is_some());
    assert_eq!(host.process_id("remote").await, None);

    let tools = host.list_tools().await;
    assert!(tools.failures.is_empty(), "{:?}", tools.failures);
    let names: Vec<&str> = tools.items.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"local__echo") && names.contains(&"remote__echo"),
        "{names:?}"
    );
    let far = host.call_tool("remote__echo", json!({})).await.unwrap();
    assert_eq!(text_of(&far.content), "from afar");
    let near = host
        .call_tool("local__echo", json!({"text": "close by"}))
        .await
        .unwrap();
    assert_eq!(text_of(&near.content), "close by");

    // A roots change reaches the HTTP server as notifications/roots/list_changed, and the
    // stdio server sees the new list when it asks.
    roots.set(vec![root("file:///second")]);
    let changed = remote
        .wait_for(|r| r.rpc_method() == Some("notifications/roots/list_changed"))
        .await;
    assert_eq!(changed.len(), 1, "one notification for one change");
    assert_eq!(changed[0].header("mcp-session-id"), Some(SID));
    let listed = host
        .call_tool("local__list_roots", json!({}))
        .await
        .unwrap();
    let listed = text_of(&listed.content);
    assert!(
        listed.contains("file:///second") && !listed.contains("file:///first"),
        "{listed}"
    );

    // Every HTTP request carried the configured header (the server refuses others with 401).
    assert!(
        remote
            .log()
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer secret"))
    );

    host.shutdown().await;
    let deletes = remote.wait_for(|r| r.method == Method::DELETE).await;
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].header("mcp-session-id"), Some(SID));
    assert_eq!(
        host.status("remote").await,
        Some(ServerStatus::Disconnected)
    );
}
