//! HTTP/2 end to end: the serving helpers speak HTTP/1.1 and h2c (prior knowledge) on one
//! listener through hyper-util's auto builder. JSON answers, SSE streams and the standalone GET
//! stream work over h2c, multiplexed on one connection, and the SDK's client transport talks
//! to the server with prior knowledge.
#![cfg(feature = "server")]

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming as Body;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_jsonrpc::{Connection, Notification};
use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// Answers `initialize`; `progress` sends two related notifications before its result (so the
/// answer is an SSE stream); `broadcast` sends an unrelated notification (standalone stream).
async fn server(conn: Connection) {
    common::answer_requests(conn, "h2", |method, params, related| async move {
        match method.as_str() {
            "progress" => {
                for i in 0..2 {
                    let progress = json!({"progressToken": "t", "progress": i});
                    let n = Notification::with_params("notifications/progress", &progress);
                    related.send(n.unwrap()).await;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                json!({"done": true})
            }
            "broadcast" => {
                let message = json!({"level": "info", "data": "to everyone"});
                let n = Notification::with_params("notifications/message", &message);
                related.broadcast(n.unwrap()).await;
                json!({})
            }
            _ => params,
        }
    })
    .await;
}

struct Served {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn serve() -> Served {
    let service = StreamableHttpService::builder(server)
        .config(HttpServerConfig::default().path("/mcp"))
        .build();
    let common::Listening { addr, stop, .. } = common::listen(service).await;
    Served {
        addr,
        stop: Some(stop),
    }
}

fn client(h2: bool) -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new())
        .http2_only(h2)
        .build_http()
}

const V: &str = "2025-11-25";

fn post(addr: SocketAddr, session: Option<&str>, body: &Value) -> Request<Full<Bytes>> {
    let mut b = Request::post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", V);
    if let Some(s) = session {
        b = b.header("mcp-session-id", s);
    }
    b.body(Full::new(Bytes::from(body.to_string()))).unwrap()
}

async fn initialize(c: &Client<HttpConnector, Full<Bytes>>, addr: SocketAddr) -> (Version, String) {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let resp = c.request(post(addr, None, &body)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let version = resp.version();
    let sid = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let v: Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(v["result"]["protocolVersion"], V);
    (version, sid)
}

/// The JSON messages of an SSE body, until `count` have arrived.
async fn sse_messages(resp: Response<Body>, count: usize) -> Vec<Value> {
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut body = resp.into_body();
    let mut buf = String::new();
    let mut out = Vec::new();
    while out.len() < count {
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await
            .expect("an event in time")
            .expect("the stream stays open")
            .unwrap();
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buf.push_str(std::str::from_utf8(&data).unwrap());
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            for line in block.lines() {
                if let Some(d) = line.strip_prefix("data: ") {
                    if !d.is_empty() {
                        out.push(serde_json::from_str(d).unwrap());
                    }
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn h2c_prior_knowledge_serves_json_sse_and_the_get_stream_on_one_connection() {
    let s = serve().await;
    let h2 = client(true);
    let (version, sid) = initialize(&h2, s.addr).await;
    assert_eq!(version, Version::HTTP_2);

    // The standalone GET stream stays open while POSTs go over the same connection.
    let get = Request::get(format!("http://{}/mcp", s.addr))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", V)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let standalone = h2.request(get).await.unwrap();
    assert_eq!(standalone.status(), StatusCode::OK);
    assert_eq!(standalone.version(), Version::HTTP_2);

    // JSON answers, several in flight at once.
    let calls = (1..=8).map(|i| {
        let h2 = h2.clone();
        let req = post(
            s.addr,
            Some(&sid),
            &json!({"jsonrpc": "2.0", "id": i, "method": "echo", "params": {"i": i}}),
        );
        async move {
            let resp = h2.request(req).await.unwrap();
            assert_eq!(resp.version(), Version::HTTP_2);
            assert_eq!(resp.headers()["content-type"], "application/json");
            let v: Value =
                serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes())
                    .unwrap();
            assert_eq!(v["result"]["i"], i);
        }
    });
    futures_util::future::join_all(calls).await;

    // An SSE answer: the progress notifications, then the result.
    let resp = h2
        .request(post(
            s.addr,
            Some(&sid),
            &json!({"jsonrpc": "2.0", "id": 20, "method": "progress", "params": {}}),
        ))
        .await
        .unwrap();
    let messages = sse_messages(resp, 3).await;
    assert_eq!(messages[0]["method"], "notifications/progress");
    assert_eq!(messages[1]["params"]["progress"], 1);
    assert_eq!(messages[2]["result"]["done"], true);

    // An unrelated notification reaches the standalone stream.
    let resp = h2
        .request(post(
            s.addr,
            Some(&sid),
            &json!({"jsonrpc": "2.0", "id": 21, "method": "broadcast", "params": {}}),
        ))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let messages = sse_messages(standalone, 1).await;
    assert_eq!(messages[0]["params"]["data"], "to everyone");
}

#[tokio::test]
async fn http1_and_h2c_share_the_listener() {
    let s = serve().await;
    let (v1, sid1) = initialize(&client(false), s.addr).await;
    assert_eq!(v1, Version::HTTP_11);
    let (v2, sid2) = initialize(&client(true), s.addr).await;
    assert_eq!(v2, Version::HTTP_2);
    assert_ne!(sid1, sid2);
    // A session opened over HTTP/1.1 is usable over h2c: sessions do not belong to connections.
    let resp = client(true)
        .request(post(
            s.addr,
            Some(&sid1),
            &json!({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"x": 1}}),
        ))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[cfg(feature = "client")]
#[tokio::test]
async fn the_client_transport_with_prior_knowledge() {
    use mcp_jsonrpc::RequestOptions;
    use mcp_transport_http::client::StreamableHttpClient;

    let s = serve().await;
    let transport = StreamableHttpClient::builder(format!("http://{}/mcp", s.addr))
        .http2_prior_knowledge(true)
        .build()
        .unwrap();
    let client = common::initialize(transport, V).await;
    assert!(client.handle.session_id().is_some());
    let peer = &client.peer;
    let done: Value = peer
        .call("progress", &json!({}), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(done["done"], true);
    let echo: Value = peer
        .call("echo", &json!({"over": "h2c"}), RequestOptions::new())
        .await
        .unwrap();
    assert_eq!(echo["over"], "h2c");
}
