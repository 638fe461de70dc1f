//! Raw HTTP tests of the server transport, against a small echo server written directly on the
//! `Connection` it hands out.
#![cfg(feature = "server")]

use crate::common;
use crate::common::json_body;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming as Body;
use mcp_jsonrpc::{
    Connection, Id, Inbound, Message, Notification, Outbound, Request as RpcRequest,
    Response as RpcResponse,
};
use mcp_transport_http::server::{
    HttpServerConfig, LegacySsePaths, SseStreamControl, StreamableHttpService,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// What the echo server saw, for assertions.
#[derive(Default)]
struct Seen {
    cancelled: Vec<Value>,
    connections: usize,
}

type Shared = Arc<Mutex<Seen>>;

/// Serves one connection: `initialize`, `echo`, `progress` (a related notification first),
/// `ask` (a related server-to-client request), `broadcast` (an unrelated notification), `slow`,
/// `poll` (closes its stream for polling) and -32601 for the rest.
async fn echo_server(conn: Connection, seen: Shared) {
    seen.lock().unwrap().connections += 1;
    let (mut inbound, sink) = conn.into_parts();
    let (tx, mut rx) = mpsc::channel::<Outbound>(64);
    tokio::spawn(async move {
        let mut sink = sink;
        while let Some(o) = rx.recv().await {
            if sink.send(o).await.is_err() {
                break;
            }
        }
    });
    let waiting: Arc<Mutex<HashMap<Id, oneshot::Sender<RpcResponse>>>> = Arc::default();
    let mut next = 0i64;
    while let Some(Ok(incoming)) = inbound.next().await {
        let Ok(Inbound::Single(message)) = incoming.frame else {
            continue;
        };
        match message {
            Message::Response(r) => {
                if let Some(w) =
                    r.id.clone()
                        .and_then(|id| waiting.lock().unwrap().remove(&id))
                {
                    let _ = w.send(r);
                }
            }
            Message::Notification(n) => {
                if n.method == "notifications/cancelled" {
                    let params: Value = n.params_as().unwrap();
                    seen.lock().unwrap().cancelled.push(params);
                }
            }
            Message::Request(r) => {
                next += 1;
                let tx = tx.clone();
                let waiting = waiting.clone();
                let control = incoming.extensions.get::<SseStreamControl>().cloned();
                let server_id = Id::String(format!("s{next}"));
                tokio::spawn(async move {
                    let id = r.id.clone();
                    let params: Value = r.params_as().unwrap_or(Value::Null);
                    let related = |m: Message| Outbound::related(m, Some(id.clone()));
                    let result = match r.method.as_str() {
                        "initialize" => Ok(json!({
                            "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-03-26"),
                            "capabilities": {},
                            "serverInfo": {"name": "echo", "version": "1"},
                        })),
                        "echo" => Ok(params),
                        "progress" => {
                            for i in 0..3 {
                                let n = Notification::with_params(
                                    "notifications/progress",
                                    &json!({"progressToken": "t", "progress": i}),
                                )
                                .unwrap();
                                tx.send(related(n.into())).await.unwrap();
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                            Ok(json!({"done": true}))
                        }
                        "ask" => {
                            let (wtx, wrx) = oneshot::channel();
                            waiting.lock().unwrap().insert(server_id.clone(), wtx);
                            let q = RpcRequest::with_params(
                                server_id,
                                "sampling/createMessage",
                                &json!({"q": 1}),
                            )
                            .unwrap();
                            tx.send(related(q.into())).await.unwrap();
                            let answer = wrx.await.unwrap();
                            Ok(json!({"answer": answer.result_as::<Value>().unwrap().unwrap()}))
                        }
                        "broadcast" => {
                            let n = Notification::with_params(
                                "notifications/message",
                                &json!({"level": "info", "data": "hi"}),
                            )
                            .unwrap();
                            tx.send(Outbound::new(Message::from(n))).await.unwrap();
                            Ok(json!({}))
                        }
                        "slow" => {
                            let n = Notification::with_params(
                                "notifications/progress",
                                &json!({"progressToken": "s", "progress": 0}),
                            )
                            .unwrap();
                            tx.send(related(n.into())).await.unwrap();
                            tokio::time::sleep(Duration::from_millis(
                                params["ms"].as_u64().unwrap_or(300),
                            ))
                            .await;
                            Ok(json!({"slept": true}))
                        }
                        "poll" => {
                            let closed = match &control {
                                Some(c) => c.close_for_polling().await,
                                None => false,
                            };
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            let n = Notification::with_params(
                                "notifications/progress",
                                &json!({"progressToken": "p", "progress": 1}),
                            )
                            .unwrap();
                            tx.send(related(n.into())).await.unwrap();
                            Ok(json!({"closed": closed}))
                        }
                        other => Err(mcp_jsonrpc::ErrorObject::method_not_found(other)),
                    };
                    let response = match result {
                        Ok(v) => RpcResponse::success_from(id.clone(), &v).unwrap(),
                        Err(e) => RpcResponse::error(Some(id.clone()), e),
                    };
                    let _ = tx.send(related(response.into())).await;
                });
            }
        }
    }
}

struct TestServer {
    addr: SocketAddr,
    seen: Shared,
    client: common::HttpClient,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    async fn start(config: HttpServerConfig) -> TestServer {
        let (seen, common::Listening { addr, stop, done }) =
            common::listen_shared(config, echo_server).await;
        TestServer {
            addr,
            seen,
            client: common::http_client(),
            stop: Some(stop),
            done: Some(done),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn post(&self, body: Value) -> http::request::Builder {
        let _ = body;
        Request::post(self.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
    }

    async fn send(&self, req: http::request::Builder, body: &Value) -> Response<Body> {
        let req = req.body(Full::new(Bytes::from(body.to_string()))).unwrap();
        self.client.request(req).await.unwrap()
    }

    async fn initialize(&self, version: &str) -> String {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let resp = self.send(self.post(body.clone()), &body).await;
        assert_eq!(resp.status(), StatusCode::OK);
        let sid = resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)) && sid.len() >= 16);
        let v = json_body(resp).await;
        assert_eq!(v["result"]["protocolVersion"], version);
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let resp = self.send(self.session_post(&sid, version), &note).await;
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        sid
    }

    /// The answer to a `method` request to `path` without a body, with `headers`.
    async fn bodiless(&self, method: &str, path: &str, headers: &[(&str, &str)]) -> Response<Body> {
        let mut req = Request::builder().method(method).uri(self.url(path));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req.body(Full::default()).unwrap();
        self.client.request(req).await.unwrap()
    }

    /// Asserts that a `method` request to `/mcp` without a body, with `headers`, is answered
    /// with `status`.
    async fn assert_bodiless(&self, method: &str, headers: &[(&str, &str)], status: StatusCode) {
        let answer = self.bodiless(method, "/mcp", headers).await.status();
        assert_eq!(answer, status, "{method} with {headers:?}");
    }

    /// POSTs `body` in the session `sid` of revision `version`.
    async fn session_send(&self, sid: &str, version: &str, body: &Value) -> Response<Body> {
        self.send(self.session_post(sid, version), body).await
    }

    fn session_post(&self, sid: &str, version: &str) -> http::request::Builder {
        self.post(Value::Null)
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", version)
    }

    async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(done) = self.done.take() {
            tokio::time::timeout(Duration::from_secs(15), done)
                .await
                .unwrap()
                .unwrap()
                .unwrap();
        }
    }
}

/// One parsed SSE event.
#[derive(Debug, Default, Clone)]
struct Event {
    id: Option<String>,
    event: Option<String>,
    data: String,
    retry: Option<u64>,
}

/// Reads SSE events from a body until `stop` says so or the body ends.
struct SseReader {
    body: Body,
    buf: String,
}

impl SseReader {
    fn new(resp: Response<Body>) -> SseReader {
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        SseReader {
            body: resp.into_body(),
            buf: String::new(),
        }
    }

    /// The next event, or `None` at the end of the body.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let mut e = Event::default();
                let mut any = false;
                for line in block.lines() {
                    if line.starts_with(':') || line.is_empty() {
                        continue;
                    }
                    any = true;
                    let (k, v) = line.split_once(": ").unwrap_or((line, ""));
                    match k {
                        "id" => e.id = Some(v.to_owned()),
                        "event" => e.event = Some(v.to_owned()),
                        "retry" => e.retry = v.parse().ok(),
                        "data" => {
                            if !e.data.is_empty() {
                                e.data.push('\n');
                            }
                            e.data.push_str(v);
                        }
                        _ => {}
                    }
                }
                if any {
                    return Some(e);
                }
                continue;
            }
            let frame = tokio::time::timeout(Duration::from_secs(10), self.body.frame())
                .await
                .expect("SSE event in time")?;
            let frame = frame.ok()?;
            if let Ok(data) = frame.into_data() {
                self.buf.push_str(std::str::from_utf8(&data).unwrap());
            }
        }
    }

    /// The next event carrying a message.
    async fn message(&mut self) -> Option<(Option<String>, Value)> {
        loop {
            let e = self.next().await?;
            if !e.data.is_empty() {
                return Some((e.id, serde_json::from_str(&e.data).unwrap()));
            }
        }
    }
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[tokio::test]
async fn session_lifecycle_json_and_delete() {
    let server = TestServer::start(HttpServerConfig::default().path("/mcp")).await;
    let sid = server.initialize("2025-06-18").await;

    let body = rpc(1, "echo", json!({"x": 1}));
    let v = json_body(server.session_send(&sid, "2025-06-18", &body).await).await;
    assert_eq!(v, json!({"jsonrpc": "2.0", "id": 1, "result": {"x": 1}}));

    // Unknown method: a JSON-RPC error with HTTP 200 on the session wire.
    let body = rpc(2, "nope", json!({}));
    let resp = server.session_send(&sid, "2025-06-18", &body).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(json_body(resp).await["error"]["code"], -32601);

    // No session id on a non-initialize request: 400. Unknown id: 404.
    let resp = server.send(server.post(Value::Null), &body).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let resp = server.session_send("nope", "2025-06-18", &body).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    // Unsupported protocol version header: 400.
    let resp = server.session_send(&sid, "1999-01-01", &body).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    // Another path: 404.
    let req = Request::post(server.url("/other")).header("content-type", "application/json");
    assert_eq!(
        server.send(req, &body).await.status(),
        StatusCode::NOT_FOUND
    );

    server
        .assert_bodiless("DELETE", &[("mcp-session-id", &sid)], StatusCode::OK)
        .await;
    let resp = server.session_send(&sid, "2025-06-18", &body).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    server.shutdown().await;
}

#[tokio::test]
async fn sse_response_carries_related_messages_first() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    let sid = server.initialize("2025-11-25").await;
    let body = rpc(5, "progress", json!({}));
    let resp = server.session_send(&sid, "2025-11-25", &body).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut sse = SseReader::new(resp);
    // 2025-11-25 with an event store: a priming event (id, retry, empty data) comes first.
    let priming = sse.next().await.unwrap();
    assert!(priming.id.is_some() && priming.data.is_empty());
    assert_eq!(priming.retry, Some(1000));
    let mut progress = 0;
    loop {
        let (id, m) = sse.message().await.unwrap();
        assert!(id.is_some());
        if m.get("method").is_some() {
            assert_eq!(m["method"], "notifications/progress");
            progress += 1;
        } else {
            assert_eq!(m["id"], 5);
            assert_eq!(m["result"]["done"], true);
            break;
        }
    }
    assert_eq!(progress, 3);
    assert!(
        sse.next().await.is_none(),
        "the stream ends after the response"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn server_to_client_request_over_sse() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    let sid = server.initialize("2025-06-18").await;
    let body = rpc(9, "ask", json!({}));
    let resp = server.session_send(&sid, "2025-06-18", &body).await;
    let mut sse = SseReader::new(resp);
    let (_, question) = sse.message().await.unwrap();
    assert_eq!(question["method"], "sampling/createMessage");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"model": "m"}});
    let resp = server.session_send(&sid, "2025-06-18", &answer).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let (_, done) = sse.message().await.unwrap();
    assert_eq!(done["id"], 9);
    assert_eq!(done["result"]["answer"]["model"], "m");
    server.shutdown().await;
}

#[tokio::test]
async fn standalone_get_stream_and_conflict() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    let sid = server.initialize("2025-06-18").await;
    // Sent before any GET: kept in the backlog.
    let body = rpc(1, "broadcast", json!({}));
    let v = json_body(server.session_send(&sid, "2025-06-18", &body).await).await;
    assert_eq!(v["id"], 1);
    let get = [
        ("accept", "text/event-stream"),
        ("mcp-session-id", sid.as_str()),
    ];
    let resp = server.bodiless("GET", "/mcp", &get).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut sse = SseReader::new(resp);
    let (_, m) = sse.message().await.unwrap();
    assert_eq!(m["method"], "notifications/message");
    // Another one while the stream is open arrives live.
    let body = rpc(2, "broadcast", json!({}));
    json_body(server.session_send(&sid, "2025-06-18", &body).await).await;
    let (_, m) = sse.message().await.unwrap();
    assert_eq!(m["method"], "notifications/message");
    // A second GET stream is refused.
    assert_eq!(
        server.bodiless("GET", "/mcp", &get).await.status(),
        StatusCode::CONFLICT
    );
    drop(sse);
    server.shutdown().await;
}

#[tokio::test]
async fn resumes_a_dropped_stream_with_last_event_id() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    let sid = server.initialize("2025-11-25").await;
    let body = rpc(3, "slow", json!({"ms": 300}));
    let resp = server.session_send(&sid, "2025-11-25", &body).await;
    let mut sse = SseReader::new(resp);
    let _priming = sse.next().await.unwrap();
    let (last, m) = sse.message().await.unwrap();
    assert_eq!(m["method"], "notifications/progress");
    drop(sse); // the connection breaks before the result
    let last = last.unwrap();
    let headers = [
        ("accept", "text/event-stream"),
        ("mcp-session-id", sid.as_str()),
        ("last-event-id", last.as_str()),
    ];
    let resp = server.bodiless("GET", "/mcp", &headers).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut sse = SseReader::new(resp);
    let (_, m) = sse.message().await.unwrap();
    assert_eq!(m["id"], 3);
    assert_eq!(m["result"]["slept"], true);
    assert!(sse.next().await.is_none());
    // The request was not cancelled by the disconnect.
    assert!(server.seen.lock().unwrap().cancelled.is_empty());
    server.shutdown().await;
}

#[tokio::test]
async fn polling_pattern_closes_and_resumes() {
    let server =
        TestServer::start(HttpServerConfig::default().sse_retry(Duration::from_millis(250))).await;
    let sid = server.initialize("2025-11-25").await;
    let body = rpc(4, "poll", json!({}));
    let resp = server.session_send(&sid, "2025-11-25", &body).await;
    let mut sse = SseReader::new(resp);
    let mut last = None;
    let mut retry = None;
    while let Some(e) = sse.next().await {
        last = e.id.or(last);
        retry = e.retry.or(retry);
        assert!(e.data.is_empty(), "only the priming event before the close");
    }
    assert_eq!(retry, Some(250));
    let last = last.unwrap();
    let headers = [
        ("mcp-session-id", sid.as_str()),
        ("last-event-id", last.as_str()),
    ];
    let resp = server.bodiless("GET", "/mcp", &headers).await;
    let mut sse = SseReader::new(resp);
    let (_, n) = sse.message().await.unwrap();
    assert_eq!(n["method"], "notifications/progress");
    let (_, r) = sse.message().await.unwrap();
    assert_eq!(r["result"]["closed"], true);
    server.shutdown().await;
}

#[tokio::test]
async fn origin_and_host_checks() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    let body = rpc(0, "initialize", json!({"protocolVersion": "2025-11-25"}));
    let evil = server
        .post(Value::Null)
        .header("host", "evil.example.com")
        .header("origin", "http://evil.example.com");
    assert_eq!(
        server.send(evil, &body).await.status(),
        StatusCode::FORBIDDEN
    );
    let evil_origin = server
        .post(Value::Null)
        .header("origin", "http://evil.example.com");
    assert_eq!(
        server.send(evil_origin, &body).await.status(),
        StatusCode::FORBIDDEN
    );
    let own = format!("http://{}", server.addr);
    let ok = server
        .post(Value::Null)
        .header("origin", own)
        .header("mcp-protocol-version", "2025-11-25");
    assert_eq!(server.send(ok, &body).await.status(), StatusCode::OK);
    // GET and DELETE are checked too.
    server
        .assert_bodiless(
            "GET",
            &[("host", "evil.example.com")],
            StatusCode::FORBIDDEN,
        )
        .await;
    server.shutdown().await;
}

#[tokio::test]
async fn limits() {
    let server = TestServer::start(
        HttpServerConfig::default()
            .max_body_size(256)
            .max_sessions(1)
            .max_header_size(2048),
    )
    .await;
    let big = rpc(1, "echo", json!({"pad": "x".repeat(1000)}));
    let resp = server.send(server.post(Value::Null), &big).await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let huge = server.post(Value::Null).header("x-pad", "y".repeat(4000));
    let resp = server.send(huge, &rpc(1, "echo", json!({}))).await;
    assert_eq!(resp.status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    let _sid = server.initialize("2025-06-18").await;
    let body = rpc(0, "initialize", json!({"protocolVersion": "2025-06-18"}));
    let resp = server.send(server.post(Value::Null), &body).await;
    assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    // Not JSON: 400 with a parse error.
    let req = server
        .post(Value::Null)
        .body(Full::new(Bytes::from_static(b"{not json")))
        .unwrap();
    let resp = server.client.request(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_body(resp).await["error"]["code"], -32700);
    server.shutdown().await;
}

#[tokio::test]
async fn idle_sessions_expire() {
    let server = TestServer::start(
        HttpServerConfig::default().session_idle_timeout(Some(Duration::from_millis(200))),
    )
    .await;
    let sid = server.initialize("2025-06-18").await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let body = rpc(1, "echo", json!({}));
    let resp = server.session_send(&sid, "2025-06-18", &body).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    // A new initialize works.
    server.initialize("2025-06-18").await;
    server.shutdown().await;
}

fn stateless_request(
    server: &TestServer,
    method: &str,
    name: Option<&str>,
) -> http::request::Builder {
    let mut b = server
        .post(Value::Null)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        b = b.header("mcp-name", name);
    }
    b
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

#[tokio::test]
async fn stateless_requests_share_one_connection() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    // Two clients use the same id at once: each gets its own answer.
    let a = rpc(1, "echo", json!({"who": "a", "_meta": meta()}));
    let b = rpc(1, "echo", json!({"who": "b", "_meta": meta()}));
    let (ra, rb) = tokio::join!(
        server.send(stateless_request(&server, "echo", None), &a),
        server.send(stateless_request(&server, "echo", None), &b),
    );
    let (va, vb) = (json_body(ra).await, json_body(rb).await);
    assert_eq!(
        (va["id"].clone(), va["result"]["who"].clone()),
        (json!(1), json!("a"))
    );
    assert_eq!(
        (vb["id"].clone(), vb["result"]["who"].clone()),
        (json!(1), json!("b"))
    );

    // A -32601 from the server becomes 404, id echoed.
    let body = rpc(7, "unknown/method", json!({"_meta": meta()}));
    let resp = server
        .send(stateless_request(&server, "unknown/method", None), &body)
        .await;
    common::assert_method_not_found(resp, 7).await;

    // Missing header: 400 with -32020, before reaching the server.
    let body = rpc(8, "echo", json!({"_meta": meta()}));
    let resp = server.send(server.post(Value::Null), &body).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_body(resp).await["error"]["code"], -32020);
    // Mcp-Name mismatch on tools/call.
    let body = rpc(9, "tools/call", json!({"name": "x", "_meta": meta()}));
    let resp = server
        .send(stateless_request(&server, "tools/call", Some("y")), &body)
        .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);

    // Progress before the result: an SSE answer without event ids, id restored.
    let body = rpc(11, "progress", json!({"_meta": meta()}));
    let resp = server
        .send(stateless_request(&server, "progress", None), &body)
        .await;
    let mut sse = SseReader::new(resp);
    let mut last = Value::Null;
    while let Some((id, m)) = sse.message().await {
        assert!(id.is_none());
        last = m;
    }
    assert_eq!(last["id"], 11);
    assert_eq!(server.seen.lock().unwrap().connections, 1);
    // GET has no meaning without a session.
    server
        .assert_bodiless(
            "GET",
            &[("accept", "text/event-stream")],
            StatusCode::BAD_REQUEST,
        )
        .await;
    server.shutdown().await;
}

#[tokio::test]
async fn dropped_stateless_response_cancels_the_request() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    let body = rpc(1, "slow", json!({"ms": 2000, "_meta": meta()}));
    let resp = server
        .send(stateless_request(&server, "slow", None), &body)
        .await;
    let mut sse = SseReader::new(resp);
    let (_, m) = sse.message().await.unwrap();
    assert_eq!(m["method"], "notifications/progress");
    drop(sse);
    let mut cancelled = Vec::new();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancelled = server.seen.lock().unwrap().cancelled.clone();
        if !cancelled.is_empty() {
            break;
        }
    }
    assert_eq!(cancelled.len(), 1);
    // The server saw the internal id, never the client's.
    assert!(cancelled[0]["requestId"].is_number());
    server.shutdown().await;
}

#[tokio::test]
async fn legacy_stateless_mode() {
    let server = TestServer::start(HttpServerConfig::default().stateful(false)).await;
    let body = rpc(0, "initialize", json!({"protocolVersion": "2025-06-18"}));
    let resp = server.send(server.post(Value::Null), &body).await;
    assert!(resp.headers().get("mcp-session-id").is_none());
    assert_eq!(
        json_body(resp).await["result"]["protocolVersion"],
        "2025-06-18"
    );
    let body = rpc(1, "echo", json!({"k": 2}));
    let v = json_body(server.send(server.post(Value::Null), &body).await).await;
    assert_eq!(v["result"]["k"], 2);
    server
        .assert_bodiless("GET", &[], StatusCode::METHOD_NOT_ALLOWED)
        .await;
    server.shutdown().await;
}

#[tokio::test]
async fn http_sse_2024_11_05() {
    let server =
        TestServer::start(HttpServerConfig::default().legacy_sse(LegacySsePaths::default())).await;
    let resp = server
        .bodiless("GET", "/sse", &[("accept", "text/event-stream")])
        .await;
    let mut sse = SseReader::new(resp);
    let endpoint = sse.next().await.unwrap();
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    assert!(endpoint.data.starts_with("/messages?sessionId="));
    let post = |body: Value| {
        Request::post(server.url(&endpoint.data))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap()
    };
    let init = rpc(0, "initialize", json!({"protocolVersion": "2024-11-05"}));
    let resp = server.client.request(post(init)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let e = sse.next().await.unwrap();
    assert_eq!(e.event.as_deref(), Some("message"));
    let v: Value = serde_json::from_str(&e.data).unwrap();
    assert_eq!(v["result"]["protocolVersion"], "2024-11-05");
    let resp = server
        .client
        .request(post(rpc(1, "progress", json!({}))))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let mut methods = Vec::new();
    loop {
        let v: Value = serde_json::from_str(&sse.next().await.unwrap().data).unwrap();
        if v.get("result").is_some() {
            break;
        }
        methods.push(v["method"].clone());
    }
    assert_eq!(methods.len(), 3);
    // Closing the SSE stream ends the session.
    drop(sse);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let resp = server
        .client
        .request(post(rpc(2, "echo", json!({}))))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    server.shutdown().await;
}

#[tokio::test]
async fn batch_on_2025_03_26() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    let sid = server.initialize("2025-03-26").await;
    let body = json!([rpc(1, "echo", json!({"n": 1})), rpc(2, "echo", json!({"n": 2})), {"jsonrpc": "2.0", "method": "notifications/x"}]);
    let v = json_body(server.session_send(&sid, "2025-03-26", &body).await).await;
    let mut ids: Vec<i64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, [1, 2]);
    server.shutdown().await;
}

/// From 2025-06-18 on the body of a POST must be a single message: a batch on a session of
/// such a revision is refused whole (400, `-32600`, null id) and none of it is served.
#[tokio::test]
async fn batches_refused_where_the_revision_has_none() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    let body = json!([
        rpc(1, "echo", json!({"n": 1})),
        rpc(2, "echo", json!({"n": 2}))
    ]);
    for version in ["2025-06-18", "2025-11-25"] {
        let sid = server.initialize(version).await;
        let resp = server.session_send(&sid, version, &body).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{version}");
        let v = json_body(resp).await;
        assert_eq!(v["error"]["code"], -32600, "{version}: {v}");
        assert_eq!(v["id"], Value::Null, "{version}: {v}");
        // The session still serves single messages.
        let one = rpc(3, "echo", json!({"n": 3}));
        let resp = server.session_send(&sid, version, &one).await;
        assert_eq!(resp.status(), StatusCode::OK, "{version}");
    }
    // 2025-03-26 has batches: answered.
    let sid = server.initialize("2025-03-26").await;
    let resp = server.session_send(&sid, "2025-03-26", &body).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let v = json_body(resp).await;
    assert_eq!(v.as_array().map(Vec::len), Some(2), "{v}");
    server.shutdown().await;
}

/// Without sessions the header names the revision; without the header it is 2025-03-26.
#[tokio::test]
async fn batches_without_sessions_follow_the_header() {
    let server = TestServer::start(HttpServerConfig::default().stateful(false)).await;
    let body = json!([
        rpc(1, "echo", json!({"n": 1})),
        rpc(2, "echo", json!({"n": 2}))
    ]);
    let resp = server
        .send(
            server
                .post(Value::Null)
                .header("mcp-protocol-version", "2025-11-25"),
            &body,
        )
        .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(json_body(resp).await["error"]["code"], -32600);
    for post in [
        server
            .post(Value::Null)
            .header("mcp-protocol-version", "2025-03-26"),
        server.post(Value::Null),
    ] {
        let resp = server.send(post, &body).await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(json_body(resp).await.as_array().map(Vec::len), Some(2));
    }
    server.shutdown().await;
}

#[tokio::test]
async fn graceful_shutdown_finishes_requests_in_flight() {
    let server = TestServer::start(HttpServerConfig::default()).await;
    let sid = server.initialize("2025-06-18").await;
    let body = rpc(1, "slow", json!({"ms": 300}));
    let req = server
        .session_post(&sid, "2025-06-18")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let client = server.client.clone();
    let in_flight = tokio::spawn(async move {
        let resp = client.request(req).await.unwrap();
        let mut sse = SseReader::new(resp);
        let mut last = Value::Null;
        while let Some((_, m)) = sse.message().await {
            last = m;
        }
        last
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let addr = server.addr;
    server.shutdown().await;
    let last = in_flight.await.unwrap();
    assert_eq!(last["result"]["slept"], true);
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn requests_after_the_shutdown_began_get_503() {
    let seen: Shared = Arc::default();
    let service = StreamableHttpService::builder(move |conn| echo_server(conn, seen.clone()))
        .config(HttpServerConfig::default())
        .build();
    let post = || {
        Request::post("/mcp")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from(
                rpc(0, "initialize", json!({"protocolVersion": "2025-06-18"})).to_string(),
            )))
            .unwrap()
    };
    assert_eq!(service.handle(post()).await.status(), StatusCode::OK);
    service.begin_shutdown();
    assert_eq!(
        service.handle(post()).await.status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    service.close_all();
}
