//! Stateless requests served directly, in the task of their HTTP exchange, through the inlet
//! of the engine serving the shared connection.
#![cfg(feature = "server")]

use crate::common;
use crate::common::json_body;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming as Body;
use mcp_jsonrpc::{
    CallError, Connection, Engine, ErrorObject, Handler, RawJson, Request as RpcRequest,
    RequestContext, RequestOptions,
};
use mcp_transport_http::server::HttpServerConfig;
use serde_json::{Value, json};
use tokio::sync::oneshot;

#[derive(Default)]
struct Seen {
    /// Requests whose handler saw its cancellation.
    cancelled: Vec<String>,
}

type Shared = Arc<Mutex<Seen>>;

/// The handler: `echo` (params back, with the id it saw: the client's when the request was
/// served in its exchange, a rewritten one through the shared connection), `progress` (two
/// related notifications, then the result), `slow` (a notification, then waits for
/// cancellation), `panic`, `sample` (a request to the client, which cannot be sent) and -32601.
struct Methods(Shared);

impl Handler for Methods {
    async fn handle_request(
        &self,
        request: RpcRequest,
        cx: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let seen = self.0.clone();
        {
            let params: Value = request.params_as().unwrap_or(Value::Null);
            let notify = |i: u32| common::progress(cx.peer().clone(), i);
            match request.method.as_str() {
                "echo" => Ok(mcp_jsonrpc::RawJson::serialize(
                    &json!({"who": params["who"], "id": cx.id()}),
                )
                .unwrap()),
                "progress" => {
                    notify(1).await;
                    notify(2).await;
                    Ok(mcp_jsonrpc::RawJson::serialize(&json!({"done": true})).unwrap())
                }
                "slow" => {
                    // The future is dropped when the request is abandoned; its token fires.
                    let token = cx.cancellation().clone();
                    let method = request.method.clone();
                    tokio::spawn(async move {
                        token.cancelled().await;
                        seen.lock().unwrap().cancelled.push(method);
                    });
                    notify(1).await;
                    std::future::pending().await
                }
                "panic" => panic!("the handler fails"),
                "sample" => {
                    let err = cx
                        .peer()
                        .request("sampling/createMessage", None, RequestOptions::new())
                        .await
                        .unwrap_err();
                    assert!(matches!(err, CallError::Closed(_)));
                    Ok(
                        mcp_jsonrpc::RawJson::serialize(&json!({"refused": err.to_string()}))
                            .unwrap(),
                    )
                }
                other => Err(ErrorObject::method_not_found(other)),
            }
        }
    }
}

/// Serves the connection with an engine, whose inlet the transport uses.
async fn serve(conn: Connection, seen: Shared) {
    let _ = Engine::builder().start(conn, Methods(seen)).1.await;
}

struct TestServer {
    addr: SocketAddr,
    seen: Shared,
    client: common::HttpClient,
    _stop: oneshot::Sender<()>,
}

impl TestServer {
    async fn start(config: HttpServerConfig) -> TestServer {
        let (seen, common::Listening { addr, stop, .. }) =
            common::listen_shared(config, serve).await;
        let server = TestServer {
            addr,
            seen,
            client: common::http_client(),
            _stop: stop,
        };
        server.warm_up().await;
        server
    }

    /// Sends echo requests until one is served directly: the first starts the shared
    /// connection, whose engine hands its inlet over as it starts.
    async fn warm_up(&self) {
        for _ in 0..100 {
            let v = json_body(self.send("echo", &rpc(0, "echo", json!({}))).await).await;
            if v["result"]["id"] == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the direct handler was never used");
    }

    fn request(&self, method: &str, accept: &str) -> http::request::Builder {
        Request::post(format!("http://{}/mcp", self.addr))
            .header("content-type", "application/json")
            .header("accept", accept)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
    }

    async fn send_with(&self, req: http::request::Builder, body: &Value) -> Response<Body> {
        let req = req.body(Full::new(Bytes::from(body.to_string()))).unwrap();
        self.client.request(req).await.unwrap()
    }

    async fn send(&self, method: &str, body: &Value) -> Response<Body> {
        self.send_with(
            self.request(method, "application/json, text/event-stream"),
            body,
        )
        .await
    }
}

fn rpc(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The messages of an SSE body, until it ends; `stop_after` ends reading early. Stateless
/// events have no ids.
async fn sse_messages(resp: Response<Body>, stop_after: Option<usize>) -> (Vec<Value>, Body) {
    let sse = common::sse_messages(resp, stop_after).await;
    assert_eq!(sse.ids, 0, "stateless events have no ids");
    (sse.messages, sse.body)
}

#[tokio::test]
async fn requests_are_answered_by_the_direct_handler_with_their_own_ids() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    // Two clients use the same id at once: nothing is rewritten, nothing collides.
    let a = rpc(1, "echo", json!({"who": "a"}));
    let b = rpc(1, "echo", json!({"who": "b"}));
    let (ra, rb) = tokio::join!(server.send("echo", &a), server.send("echo", &b));
    assert_eq!((ra.status(), rb.status()), (StatusCode::OK, StatusCode::OK));
    let (va, vb) = (json_body(ra).await, json_body(rb).await);
    assert_eq!(va["id"], 1);
    assert_eq!(va["result"], json!({"who": "a", "id": 1}));
    assert_eq!(vb["result"], json!({"who": "b", "id": 1}));

    // A -32601 becomes 404, id echoed.
    let resp = server
        .send("unknown/method", &rpc(7, "unknown/method", json!({})))
        .await;
    common::assert_method_not_found(resp, 7).await;

    // A panicking handler is an internal error; the server keeps serving.
    let v = json_body(server.send("panic", &rpc(8, "panic", json!({}))).await).await;
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (json!(8), json!(-32603))
    );
    // Requests to the client fail at once: there is no channel for their answers.
    let v = json_body(server.send("sample", &rpc(9, "sample", json!({}))).await).await;
    assert!(
        v["result"]["refused"]
            .as_str()
            .unwrap()
            .contains("without a connection")
    );
    let v = json_body(
        server
            .send("echo", &rpc(10, "echo", json!({"who": "c"})))
            .await,
    )
    .await;
    assert_eq!(v["result"]["who"], "c");
}

#[tokio::test]
async fn related_messages_turn_the_answer_into_a_stream_unless_only_json_is_accepted() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    let resp = server
        .send("progress", &rpc(3, "progress", json!({})))
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let (messages, _) = sse_messages(resp, None).await;
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[0]["method"], "notifications/progress");
    assert_eq!(messages[0]["params"]["progress"], 1);
    assert_eq!(messages[1]["params"]["progress"], 2);
    assert_eq!(messages[2]["id"], 3);
    assert_eq!(messages[2]["result"]["done"], true);

    // A client that takes only JSON gets the result alone.
    let resp = server
        .send_with(
            server.request("progress", "application/json"),
            &rpc(4, "progress", json!({})),
        )
        .await;
    let v = json_body(resp).await;
    assert_eq!(
        (v["id"].clone(), v["result"]["done"].clone()),
        (json!(4), json!(true))
    );
}

#[tokio::test]
async fn an_abandoned_stream_cancels_its_handler() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    let resp = server.send("slow", &rpc(5, "slow", json!({}))).await;
    let (messages, body) = sse_messages(resp, Some(1)).await;
    assert_eq!(messages[0]["method"], "notifications/progress");
    assert!(server.seen.lock().unwrap().cancelled.is_empty());
    drop(body);
    for _ in 0..200 {
        if !server.seen.lock().unwrap().cancelled.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the handler never saw its cancellation");
}

#[tokio::test]
async fn requests_beyond_the_in_flight_limit_get_503() {
    let server = TestServer::start(HttpServerConfig::default().max_pending_stateless(1)).await;
    let resp = server.send("slow", &rpc(5, "slow", json!({}))).await;
    let (_, body) = sse_messages(resp, Some(1)).await;
    let resp = server.send("echo", &rpc(6, "echo", json!({}))).await;
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    // Once the stream is gone, its slot is free again.
    drop(body);
    for _ in 0..200 {
        let resp = server.send("echo", &rpc(7, "echo", json!({}))).await;
        if resp.status() == StatusCode::OK {
            assert_eq!(json_body(resp).await["result"]["id"], 7);
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the in-flight slot was never released");
}

#[tokio::test]
async fn closing_the_connection_cancels_requests_in_flight() {
    let server =
        TestServer::start(HttpServerConfig::default().shutdown_timeout(Duration::from_millis(100)))
            .await;
    // One answer waiting as JSON (the client takes only JSON), one as an SSE stream.
    let json_only = {
        let client = server.client.clone();
        let body = rpc(5, "slow", json!({})).to_string();
        let request = server
            .request("slow", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        tokio::spawn(async move { client.request(request).await.unwrap() })
    };
    let streamed = server.send("slow", &rpc(6, "slow", json!({}))).await;
    let (messages, streamed) = sse_messages(streamed, Some(1)).await;
    assert_eq!(messages[0]["method"], "notifications/progress");
    // Both handlers are running.
    for _ in 0..300 {
        if !json_only.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let TestServer { seen, _stop, .. } = server;
    // Shutting the service down closes the shared connection.
    drop(_stop);
    let json_only = json_only.await.unwrap();
    assert_eq!(json_only.status(), StatusCode::SERVICE_UNAVAILABLE);
    drop(streamed);
    for _ in 0..300 {
        if seen.lock().unwrap().cancelled.len() == 2 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "both handlers see their cancellation: {:?}",
        seen.lock().unwrap().cancelled
    );
}
