//! The service with an `Authenticator`: what is refused before a body is read or a session is
//! touched, what is served publicly, the principal in every message's extensions (observed at
//! the `Connection` the server gets), and sessions bound to the principal that created them.
#![cfg(feature = "server")]

use crate::common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::request::Parts;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming as Body;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_jsonrpc::{Connection, Inbound, Message, Outbound, Response as RpcResponse};
use mcp_transport_http::server::{
    AuthFuture, Authenticator, HttpServerConfig, LegacySsePaths, StreamableHttpService,
};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// The principal of this test's authenticator.
#[derive(Clone, Debug, PartialEq)]
struct Caller {
    name: String,
    admin: bool,
}

/// `Authorization: Bearer <name>-key` for a few fixed names; `admin/*` methods need `root`.
#[derive(Default)]
struct Keys {
    calls: Arc<AtomicUsize>,
}

fn refusal(status: StatusCode, text: &'static str) -> Response<Bytes> {
    let mut r = Response::new(Bytes::from_static(text.as_bytes()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert("www-authenticate", http::HeaderValue::from_static("Bearer"));
    r
}

impl Authenticator for Keys {
    type Principal = Caller;

    fn public_response(&self, parts: &Parts) -> Option<Response<Bytes>> {
        (parts.uri.path() == "/.well-known/test")
            .then(|| Response::new(Bytes::from_static(b"public")))
    }

    fn authenticate<'a>(
        &'a self,
        parts: &'a Parts,
    ) -> AuthFuture<'a, Result<Caller, Response<Bytes>>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let header = parts
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let result = match header.strip_prefix("Bearer ") {
            Some(t @ ("alice-key" | "bob-key" | "root-key")) => Ok(Caller {
                name: t.trim_end_matches("-key").to_owned(),
                admin: t == "root-key",
            }),
            _ => Err(refusal(StatusCode::UNAUTHORIZED, "who are you?")),
        };
        Box::pin(async move { result })
    }

    fn authorize(&self, caller: &Caller, message: &Message) -> Result<(), Response<Bytes>> {
        match message.method() {
            Some(m) if m.starts_with("admin/") && !caller.admin => {
                Err(refusal(StatusCode::FORBIDDEN, "admins only"))
            }
            _ => Ok(()),
        }
    }

    fn identity(&self, caller: &Caller) -> String {
        caller.name.clone()
    }
}

/// What the server saw of each inbound message: its method, the caller in its extensions,
/// and whether the request parts it got still had an `Authorization` header.
#[derive(Debug, Clone)]
struct SeenMessage {
    method: String,
    caller: Option<Caller>,
    authorization_visible: bool,
}

type Seen = Arc<Mutex<Vec<SeenMessage>>>;

/// Answers `initialize`, `whoami` (the caller's name from the extensions) and anything else
/// with an empty result.
async fn server(conn: Connection, seen: Seen) {
    let (mut inbound, mut sink) = conn.into_parts();
    while let Some(Ok(incoming)) = inbound.next().await {
        let Ok(Inbound::Single(message)) = incoming.frame else {
            continue;
        };
        let caller = incoming.extensions.get::<Caller>().cloned();
        let authorization_visible = incoming
            .extensions
            .get::<Parts>()
            .is_some_and(|p| p.headers.contains_key("authorization"));
        seen.lock().unwrap().push(SeenMessage {
            method: message.method().unwrap_or("").to_owned(),
            caller: caller.clone(),
            authorization_visible,
        });
        let Message::Request(r) = message else {
            continue;
        };
        let params: Value = r.params_as().unwrap_or(Value::Null);
        let result = match r.method.as_str() {
            "initialize" => json!({
                "protocolVersion": params["protocolVersion"],
                "capabilities": {},
                "serverInfo": {"name": "auth-test", "version": "1"},
            }),
            "whoami" => json!({"name": caller.map(|c| c.name)}),
            _ => json!({}),
        };
        let response = RpcResponse::success_from(r.id.clone(), &result).unwrap();
        let out = Outbound::related(Message::Response(response), Some(r.id));
        if sink.send(out).await.is_err() {
            break;
        }
    }
}

struct TestServer {
    addr: SocketAddr,
    seen: Seen,
    calls: Arc<AtomicUsize>,
    client: Client<HttpConnector, Full<Bytes>>,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

const V: &str = "2025-11-25";

impl TestServer {
    async fn start(config: HttpServerConfig) -> TestServer {
        let seen: Seen = Arc::default();
        let keys = Keys::default();
        let calls = keys.calls.clone();
        let s = seen.clone();
        let service = StreamableHttpService::builder(move |conn| server(conn, s.clone()))
            .config(config)
            .auth(keys)
            .build();
        let common::Listening { addr, stop, .. } = common::listen(service).await;
        TestServer {
            addr,
            seen,
            calls,
            client: Client::builder(TokioExecutor::new()).build_http(),
            stop: Some(stop),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    async fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        session: Option<&str>,
        body: Option<Value>,
    ) -> Response<Body> {
        let mut b = Request::builder()
            .method(method)
            .uri(self.url(path))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", V);
        if let Some(t) = token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        if let Some(s) = session {
            b = b.header("mcp-session-id", s);
        }
        let body = match body {
            Some(v) => {
                b = b.header("content-type", "application/json");
                Bytes::from(v.to_string())
            }
            None => Bytes::new(),
        };
        self.client
            .request(b.body(Full::new(body)).unwrap())
            .await
            .unwrap()
    }

    /// POSTs the request `call(id, method)` to `/mcp` in the session `sid` with `token`.
    async fn post_call(&self, token: &str, sid: &str, id: i64, method: &str) -> Response<Body> {
        self.request(
            "POST",
            "/mcp",
            Some(token),
            Some(sid),
            Some(call(id, method)),
        )
        .await
    }

    async fn initialize(&self, token: &str) -> String {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let resp = self
            .request("POST", "/mcp", Some(token), None, Some(body))
            .await;
        assert_eq!(resp.status(), StatusCode::OK);
        resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned()
    }

    fn seen(&self) -> Vec<SeenMessage> {
        self.seen.lock().unwrap().clone()
    }
}

async fn text(resp: Response<Body>) -> String {
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn call(id: i64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}})
}

#[tokio::test]
async fn requests_without_credentials_are_refused_on_every_endpoint() {
    let config = HttpServerConfig::default()
        .path("/mcp")
        .legacy_sse(LegacySsePaths::default());
    let s = TestServer::start(config).await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": V, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    for (method, path, body) in [
        ("POST", "/mcp", Some(init.clone())),
        ("GET", "/mcp", None),
        ("DELETE", "/mcp", None),
        ("GET", "/sse", None),
        ("POST", "/messages?sessionId=x", Some(call(1, "ping"))),
        ("PUT", "/mcp", None),
    ] {
        for token in [None, Some("mallory-key")] {
            let resp = s
                .request(method, path, token, Some("sid"), body.clone())
                .await;
            assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{method} {path}");
            assert_eq!(resp.headers()["www-authenticate"], "Bearer");
            assert_eq!(text(resp).await, "who are you?");
        }
    }
    // Nothing reached a connection, and no session was created.
    assert!(s.seen().is_empty());
    // Paths that are not MCP endpoints stay 404 without asking for credentials.
    let resp = s.request("GET", "/elsewhere", None, None, None).await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn authentication_happens_before_the_body_is_read() {
    let s = TestServer::start(HttpServerConfig::default().max_body_size(1024)).await;
    let big =
        json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"pad": "a".repeat(4096)}});
    let resp = s
        .request("POST", "/mcp", None, None, Some(big.clone()))
        .await;
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let resp = s
        .request("POST", "/mcp", Some("alice-key"), None, Some(big))
        .await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn public_responses_need_no_credentials() {
    let s = TestServer::start(HttpServerConfig::default().path("/mcp")).await;
    let resp = s
        .request("GET", "/.well-known/test", None, None, None)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(text(resp).await, "public");
    assert_eq!(s.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn every_message_carries_the_principal_and_never_the_token() {
    let s = TestServer::start(HttpServerConfig::default()).await;
    let sid = s.initialize("alice-key").await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = s
        .request("POST", "/mcp", Some("alice-key"), Some(&sid), Some(note))
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let resp = s.post_call("alice-key", &sid, 1, "whoami").await;
    assert_eq!(resp.status(), StatusCode::OK);
    let v: Value = serde_json::from_str(&text(resp).await).unwrap();
    assert_eq!(v["result"]["name"], "alice");

    // A stateless 2026-07-28 request carries its principal too.
    let stateless = json!({"jsonrpc": "2.0", "id": 2, "method": "whoami", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let resp = Request::post(s.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "whoami")
        .header("authorization", "Bearer bob-key")
        .body(Full::new(Bytes::from(stateless.to_string())))
        .unwrap();
    let resp = s.client.request(resp).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let v: Value = serde_json::from_str(&text(resp).await).unwrap();
    assert_eq!(v["result"]["name"], "bob", "{v}");

    let seen = s.seen();
    let methods: Vec<_> = seen.iter().map(|m| m.method.as_str()).collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "whoami",
            "whoami"
        ]
    );
    for (m, who) in seen.iter().zip(["alice", "alice", "alice", "bob"]) {
        assert_eq!(
            m.caller.as_ref().map(|c| c.name.as_str()),
            Some(who),
            "{m:?}"
        );
        assert!(!m.authorization_visible, "{m:?}");
    }
}

#[tokio::test]
async fn a_session_answers_only_the_principal_that_created_it() {
    let s = TestServer::start(HttpServerConfig::default()).await;
    let sid = s.initialize("alice-key").await;
    // Bob holds a valid token but not this session: every use of it is a 404.
    let resp = s.post_call("bob-key", &sid, 1, "whoami").await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let resp = s
        .request("GET", "/mcp", Some("bob-key"), Some(&sid), None)
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let resp = s
        .request("DELETE", "/mcp", Some("bob-key"), Some(&sid), None)
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    // The session is intact for Alice, and Bob's attempts delivered nothing.
    let resp = s.post_call("alice-key", &sid, 2, "whoami").await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(
        s.seen()
            .iter()
            .all(|m| m.caller.as_ref().unwrap().name == "alice")
    );
    let resp = s
        .request("DELETE", "/mcp", Some("alice-key"), Some(&sid), None)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
}

/// One HTTP/1.1 connection to the server: its requests go in order, on that connection.
struct OneConnection {
    addr: SocketAddr,
    send: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
}

impl OneConnection {
    async fn open(addr: SocketAddr) -> OneConnection {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (send, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(conn);
        OneConnection { addr, send }
    }

    async fn post(&mut self, token: &str, session: &str, body: Value) -> StatusCode {
        let request = Request::post("/mcp")
            .header("host", self.addr.to_string())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", V)
            .header("authorization", format!("Bearer {token}"))
            .header("mcp-session-id", session)
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        let response = self.send.send_request(request).await.unwrap();
        let status = response.status();
        // Read to the end, so the connection serves the next request.
        response.into_body().collect().await.unwrap();
        status
    }
}

#[tokio::test]
async fn a_connection_that_used_a_session_gets_no_more_than_a_new_one_would() {
    let s = TestServer::start(HttpServerConfig::default()).await;
    let sid = s.initialize("alice-key").await;
    let mut conn = OneConnection::open(s.addr).await;
    assert_eq!(
        conn.post("alice-key", &sid, call(1, "whoami")).await,
        StatusCode::OK
    );
    // The same connection, another principal: the session is still not Bob's.
    assert_eq!(
        conn.post("bob-key", &sid, call(2, "whoami")).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        conn.post("alice-key", &sid, call(3, "whoami")).await,
        StatusCode::OK
    );
    // Ended elsewhere: gone for this connection too.
    let resp = s
        .request("DELETE", "/mcp", Some("alice-key"), Some(&sid), None)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        conn.post("alice-key", &sid, call(4, "whoami")).await,
        StatusCode::NOT_FOUND
    );
    assert!(
        s.seen()
            .iter()
            .all(|m| m.caller.as_ref().unwrap().name == "alice")
    );
}

/// The data of the first line of the SSE stream `body` (read on into `buf`) that is `wanted`.
async fn data_line(body: &mut Body, buf: &mut String, wanted: impl Fn(&str) -> bool) -> String {
    loop {
        if let Some(line) = buf.lines().find(|l| wanted(l)) {
            return line.trim_start_matches("data: ").to_owned();
        }
        let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if let Ok(data) = frame.into_data() {
            buf.push_str(std::str::from_utf8(&data).unwrap());
        }
    }
}

#[tokio::test]
async fn legacy_sessions_are_bound_too() {
    let s =
        TestServer::start(HttpServerConfig::default().legacy_sse(LegacySsePaths::default())).await;
    let resp = s
        .request("GET", "/sse", Some("alice-key"), None, None)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let mut buf = String::new();
    let endpoint = data_line(&mut body, &mut buf, |l| l.starts_with("data: ")).await;
    for (token, status) in [
        ("bob-key", StatusCode::NOT_FOUND),
        ("alice-key", StatusCode::ACCEPTED),
    ] {
        let resp = s
            .request(
                "POST",
                &endpoint,
                Some(token),
                None,
                Some(call(1, "whoami")),
            )
            .await;
        assert_eq!(resp.status(), status, "{token}");
    }
    // The answer arrives on Alice's stream.
    let answer = data_line(&mut body, &mut buf, |l| l.contains("\"result\"")).await;
    let v: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(v["result"]["name"], "alice");
}

#[tokio::test]
async fn a_refused_message_refuses_the_whole_post_before_delivery() {
    let s = TestServer::start(HttpServerConfig::default()).await;
    let sid = s.initialize("alice-key").await;
    let resp = s.post_call("alice-key", &sid, 1, "admin/reset").await;
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert_eq!(text(resp).await, "admins only");
    // A batch (2025-03-26) with one refused request delivers none of its messages.
    let sid_old = {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        let resp = s
            .request("POST", "/mcp", Some("alice-key"), None, Some(body))
            .await;
        resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned()
    };
    let batch = json!([call(2, "whoami"), call(3, "admin/reset")]);
    let resp = Request::post(s.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-03-26")
        .header("mcp-session-id", &sid_old)
        .header("authorization", "Bearer alice-key")
        .body(Full::new(Bytes::from(batch.to_string())))
        .unwrap();
    let resp = s.client.request(resp).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let methods: Vec<_> = s.seen().iter().map(|m| m.method.clone()).collect();
    assert_eq!(methods, ["initialize", "initialize"]);
    // Root may.
    let sid_root = s.initialize("root-key").await;
    let resp = s.post_call("root-key", &sid_root, 4, "admin/reset").await;
    assert_eq!(resp.status(), StatusCode::OK);
}
