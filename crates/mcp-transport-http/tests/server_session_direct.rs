//! Requests of a stateful session served in the task of their POST, through the inlet of the
//! session's engine: `initialize` goes through the connection, the rest is served in place,
//! the handler's requests to the client get
//! their answers through the session, the client's `notifications/cancelled` cancels it, an
//! abandoned POST does not, a request id in flight cannot be reused, and a request closed for
//! polling (`SseStreamControl`) is resumed with `Last-Event-ID`.
#![cfg(feature = "server")]

use crate::common;
use crate::common::json_body;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming as Body;
use mcp_jsonrpc::{Connection, Engine, ErrorObject, Handler, RequestContext, RequestOptions};
use mcp_transport_http::server::{HttpServerConfig, SseStreamControl};
use serde_json::{Value, json};
use tokio::sync::oneshot;

#[derive(Default)]
struct Seen {
    /// Methods whose handler saw its cancellation.
    cancelled: Vec<String>,
    /// Methods whose handler started.
    started: Vec<String>,
    /// Methods whose handler ran to its end.
    finished: Vec<String>,
}

type Shared = Arc<Mutex<Seen>>;

fn raw(v: Value) -> mcp_jsonrpc::RawJson {
    mcp_jsonrpc::RawJson::serialize(&v).unwrap()
}

/// The handler: `initialize`, `echo`, `ask` (a `roots/list` request to the client, then its
/// answer as the result), `progress` (a notification, then the result), `slow` (a
/// notification, then waits for its cancellation) and `hold` (answers after 200 ms).
struct Methods(Shared);

impl Handler for Methods {
    async fn handle_request(
        &self,
        request: mcp_jsonrpc::Request,
        cx: RequestContext,
    ) -> Result<mcp_jsonrpc::RawJson, ErrorObject> {
        let seen = self.0.clone();
        {
            let method = request.method.clone();
            seen.lock().unwrap().started.push(method.clone());
            let progress = |i: u32| common::progress(cx.peer().clone(), i);
            let out = match method.as_str() {
                "initialize" => raw(json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "serverInfo": {"name": "session-direct", "version": "1"},
                })),
                "echo" => raw(json!({"echo": true})),
                "ask" => {
                    let answer = cx
                        .peer()
                        .request("roots/list", None, RequestOptions::new())
                        .await
                        .map_err(|e| ErrorObject::internal_error(e.to_string()))?;
                    raw(
                        json!({"client said": serde_json::from_str::<Value>(answer.get()).unwrap()}),
                    )
                }
                "progress" => {
                    progress(1).await;
                    raw(json!({"done": true}))
                }
                "slow" => {
                    let token = cx.cancellation().clone();
                    let s = seen.clone();
                    let m = method.clone();
                    tokio::spawn(async move {
                        token.cancelled().await;
                        s.lock().unwrap().cancelled.push(m);
                    });
                    progress(1).await;
                    std::future::pending::<()>().await;
                    unreachable!()
                }
                "poll" => {
                    // Closes its SSE stream for polling, then answers on the stream the client
                    // resumes.
                    let control = cx.extensions().get::<SseStreamControl>().cloned();
                    let closed = match control {
                        Some(c) => c.close_for_polling().await,
                        None => false,
                    };
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    progress(1).await;
                    raw(json!({"closed": closed}))
                }
                "hold" => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    raw(json!({"held": true}))
                }
                other => return Err(ErrorObject::method_not_found(other)),
            };
            seen.lock().unwrap().finished.push(method);
            Ok(out)
        }
    }
}

/// Serves a session the way `mcp-server` does: with an engine running at most `places`
/// requests at once, whose inlet the transport uses.
async fn serve(conn: Connection, seen: Shared, places: usize) {
    let (_peer, driver) = Engine::builder()
        .max_in_flight(places)
        .start(conn, Methods(seen));
    let _ = driver.await;
}

struct TestServer {
    addr: SocketAddr,
    seen: Shared,
    client: common::HttpClient,
    session: String,
    _stop: oneshot::Sender<()>,
}

impl TestServer {
    async fn start() -> TestServer {
        TestServer::start_with(64).await
    }

    async fn start_with(places: usize) -> TestServer {
        let serve_with = move |conn, seen| serve(conn, seen, places);
        let (seen, common::Listening { addr, stop, .. }) =
            common::listen_shared(HttpServerConfig::default(), serve_with).await;
        let mut server = TestServer {
            addr,
            seen,
            client: common::http_client(),
            session: String::new(),
            _stop: stop,
        };
        let resp = server
            .post(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}),
            )
            .await;
        assert_eq!(resp.status(), StatusCode::OK);
        server.session = resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            json_body(resp).await["result"]["protocolVersion"],
            "2025-11-25"
        );
        let resp = server
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        server
    }

    fn post_request(&self, body: &Value) -> Request<Full<Bytes>> {
        let mut req = Request::post(format!("http://{}/mcp", self.addr))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if !self.session.is_empty() {
            req = req.header("mcp-session-id", &self.session);
        }
        req.body(Full::new(Bytes::from(body.to_string()))).unwrap()
    }

    async fn post(&self, body: &Value) -> Response<Body> {
        self.client.request(self.post_request(body)).await.unwrap()
    }

    /// Waits until `check` holds for what the server saw.
    async fn until(&self, what: &str, check: impl Fn(&Seen) -> bool) {
        for _ in 0..500 {
            if check(&self.seen.lock().unwrap()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("never happened: {what}");
    }
}

fn rpc(id: i64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method})
}

/// Reads SSE messages until `n` have arrived; returns them with the rest of the body.
async fn sse_messages(resp: Response<Body>, n: usize) -> (Vec<Value>, Body) {
    let sse = common::sse_messages(resp, Some(n)).await;
    assert!(sse.messages.len() >= n, "the stream ended early");
    (sse.messages, sse.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_requests_are_served_in_their_post() {
    let server = TestServer::start().await;
    assert_eq!(server.seen.lock().unwrap().started, ["initialize"]);
    let v = json_body(server.post(&rpc(1, "echo")).await).await;
    assert_eq!(v["id"], 1);
    assert_eq!(v["result"]["echo"], true);
    // What the handler sends comes first, on the POST's stream, then the result.
    let (messages, _) = sse_messages(server.post(&rpc(2, "progress")).await, 2).await;
    assert_eq!(messages[0]["method"], "notifications/progress");
    assert_eq!(messages[1]["id"], 2);
    assert_eq!(messages[1]["result"]["done"], true);
    let v = json_body(server.post(&rpc(3, "nope")).await).await;
    assert_eq!(v["error"]["code"], -32601);
    assert_eq!(
        server.seen.lock().unwrap().started,
        ["initialize", "echo", "progress", "nope"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_to_the_client_is_answered_through_the_session() {
    let server = TestServer::start().await;
    let resp = server.post(&rpc(4, "ask")).await;
    let (messages, body) = sse_messages(resp, 1).await;
    let ask = &messages[0];
    assert_eq!(ask["method"], "roots/list");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": []}});
    assert_eq!(server.post(&answer).await.status(), StatusCode::ACCEPTED);
    let rest = Response::builder()
        .header("content-type", "text/event-stream")
        .body(body)
        .unwrap();
    let (messages, _) = sse_messages(rest, 1).await;
    assert_eq!(messages[0]["id"], 4);
    assert_eq!(messages[0]["result"]["client said"], json!({"roots": []}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_cancellation_reaches_the_direct_handler() {
    let server = TestServer::start().await;
    let resp = server.post(&rpc(5, "slow")).await;
    let (messages, _body) = sse_messages(resp, 1).await;
    assert_eq!(messages[0]["method"], "notifications/progress");
    // While it runs, its id is taken.
    let v = server.post(&rpc(5, "echo")).await;
    assert_eq!(v.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_body(v).await["error"]["code"], -32600);
    assert!(server.seen.lock().unwrap().cancelled.is_empty());
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 5, "reason": "enough"}});
    assert_eq!(server.post(&cancel).await.status(), StatusCode::ACCEPTED);
    server
        .until("the handler saw its cancellation", |s| {
            s.cancelled == ["slow"]
        })
        .await;
}

/// A request id may not be reused while a request with it is in flight on the session: the
/// second POST is refused (`-32600`, HTTP 400), the first is answered as if alone, and the id
/// is free again once it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_in_flight_on_the_session_is_refused() {
    let server = TestServer::start().await;
    let first = tokio::spawn(server.client.request(server.post_request(&rpc(8, "hold"))));
    server
        .until("the first request is in flight", |s| {
            s.started.contains(&"hold".to_owned())
        })
        .await;
    let second = server.post(&rpc(8, "echo")).await;
    assert_eq!(second.status(), StatusCode::BAD_REQUEST);
    let refused = json_body(second).await;
    assert_eq!(refused["id"], 8);
    assert_eq!(refused["error"]["code"], -32600);
    let answered = json_body(first.await.unwrap().unwrap()).await;
    assert_eq!(answered["result"]["held"], true);
    let again = json_body(server.post(&rpc(8, "echo")).await).await;
    assert_eq!(again["result"]["echo"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_post_does_not_cancel_a_session_request() {
    let server = TestServer::start().await;
    let call = server.client.request(server.post_request(&rpc(6, "hold")));
    // The client gives up before the answer.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), call)
            .await
            .is_err()
    );
    server
        .until("the handler ran to its end", |s| {
            s.finished.contains(&"hold".to_owned())
        })
        .await;
    assert!(server.seen.lock().unwrap().cancelled.is_empty());
    // Its id is free again, and the session serves on.
    let v = json_body(server.post(&rpc(6, "echo")).await).await;
    assert_eq!(v["result"]["echo"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_request_closed_for_polling_is_resumed_with_last_event_id() {
    let server = TestServer::start().await;
    let resp = server.post(&rpc(7, "poll")).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    // The stream carries the priming event (an id, empty data) and ends.
    let text = tokio::time::timeout(Duration::from_secs(10), resp.into_body().collect())
        .await
        .expect("the stream is closed for polling")
        .unwrap()
        .to_bytes();
    let text = String::from_utf8(text.to_vec()).unwrap();
    assert!(text.contains("retry:"), "{text}");
    let last = text
        .lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(str::trim)
        .next_back()
        .expect("an event id to resume from")
        .to_owned();
    let get = Request::get(format!("http://{}/mcp", server.addr))
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", &server.session)
        .header("last-event-id", last)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resumed = server.client.request(get).await.unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    let (messages, _) = sse_messages(resumed, 2).await;
    assert_eq!(messages[0]["method"], "notifications/progress");
    assert_eq!(messages[1]["id"], 7);
    assert_eq!(messages[1]["result"]["closed"], true);
}

/// A session's request served in its POST takes one of the engine's permits like any other:
/// with one permit, a request posted while another runs waits for it (it used to run at once,
/// beside the engine's limit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_requests_in_their_post_share_the_engines_permits() {
    let server = TestServer::start_with(1).await;
    let hold = tokio::spawn(server.client.request(server.post_request(&rpc(10, "hold"))));
    server
        .until("hold started", |s| s.started.contains(&"hold".to_owned()))
        .await;
    let v = json_body(server.post(&rpc(11, "echo")).await).await;
    assert_eq!(v["result"]["echo"], true);
    {
        let seen = server.seen.lock().unwrap();
        let at = |m: &str| seen.finished.iter().position(|x| x == m);
        assert!(
            matches!((at("hold"), at("echo")), (Some(h), Some(e)) if h < e),
            "echo waited for hold's permit: {:?}",
            seen.finished
        );
    }
    let held = json_body(hold.await.unwrap().unwrap()).await;
    assert_eq!(held["result"]["held"], true);
}
