//! A tiny scriptable hyper server for the HTTP client tests: every request is recorded, and a
//! per-test closure answers it with JSON, an SSE stream (whole or fed by a channel), or any
//! status.

#![allow(dead_code)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame as BodyFrame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use mcp_jsonrpc::{Incoming, Message, Outbound, TransportError};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub type Body = BoxBody<Bytes, Infallible>;
type Handler =
    Arc<dyn Fn(Recorded) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> + Send + Sync>;

/// One request the server received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Option<Value>,
    pub at: Instant,
    pub version: http::Version,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The JSON-RPC method of the body, if it is a single request or notification.
    pub fn rpc_method(&self) -> Option<&str> {
        self.body.as_ref()?.get("method")?.as_str()
    }

    pub fn rpc_id(&self) -> Option<Value> {
        self.body.as_ref()?.get("id").cloned()
    }

    pub fn is_response(&self) -> bool {
        self.body
            .as_ref()
            .is_some_and(|b| b.get("method").is_none() && b.get("id").is_some())
    }
}

pub struct TestServer {
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<Recorded>>>,
}

impl TestServer {
    /// Starts a server answering with `handler`.
    pub async fn start<F, Fut>(handler: F) -> TestServer
    where
        F: Fn(Recorded) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |r| Box::pin(handler(r)));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let log2 = log.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let handler = handler.clone();
                let log = log2.clone();
                tokio::spawn(async move {
                    let svc =
                        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let handler = handler.clone();
                            let log = log.clone();
                            async move {
                                let (parts, body) = req.into_parts();
                                let bytes = body
                                    .collect()
                                    .await
                                    .map(|c| c.to_bytes())
                                    .unwrap_or_default();
                                let rec = Recorded {
                                    version: parts.version,
                                    method: parts.method,
                                    path: parts
                                        .uri
                                        .path_and_query()
                                        .map(|p| p.to_string())
                                        .unwrap_or_default(),
                                    headers: parts.headers,
                                    body: serde_json::from_slice(&bytes).ok(),
                                    at: Instant::now(),
                                };
                                log.lock().unwrap().push(rec.clone());
                                Ok::<_, Infallible>(handler(rec).await)
                            }
                        });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        TestServer { addr, log }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn log(&self) -> Vec<Recorded> {
        self.log.lock().unwrap().clone()
    }

    /// The recorded requests matching `pred`, waiting up to two seconds for at least one.
    pub async fn wait_for(&self, pred: impl Fn(&Recorded) -> bool) -> Vec<Recorded> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let found: Vec<_> = self.log().into_iter().filter(|r| pred(r)).collect();
            if !found.is_empty() || Instant::now() > deadline {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).map_err(|e| match e {}).boxed()
}

pub fn json(value: Value) -> Response<Body> {
    Response::builder()
        .header("content-type", "application/json")
        .body(full(value.to_string()))
        .unwrap()
}

pub fn status(code: u16) -> Response<Body> {
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap())
        .body(full(Bytes::new()))
        .unwrap()
}

pub fn accepted() -> Response<Body> {
    status(202)
}

/// A complete SSE body from pre-rendered event blocks.
pub fn sse(events: &[String]) -> Response<Body> {
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(full(events.concat()))
        .unwrap()
}

/// An SSE response fed through the returned sender; dropping the sender ends the body.
pub fn sse_channel() -> (mpsc::Sender<String>, Response<Body>) {
    let (tx, rx) = mpsc::channel::<String>(16);
    let stream =
        tokio_stream_from(rx).map(|s| Ok::<_, Infallible>(BodyFrame::data(Bytes::from(s))));
    let body = BodyExt::boxed(StreamBody::new(stream));
    let resp = Response::builder()
        .header("content-type", "text/event-stream")
        .body(body)
        .unwrap();
    (tx, resp)
}

fn tokio_stream_from(mut rx: mpsc::Receiver<String>) -> impl futures_util::Stream<Item = String> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// An SSE answer of `events` that stays open (30 s: longer than any test) after them.
pub async fn open_sse(events: &[String]) -> Response<Body> {
    let (tx, resp) = sse_channel();
    for e in events {
        tx.send(e.clone()).await.unwrap();
    }
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        drop(tx);
    });
    resp
}

/// One SSE `message` event carrying `value`, with an optional id.
pub fn event(value: &Value, id: Option<&str>) -> String {
    let mut s = String::new();
    if let Some(id) = id {
        s.push_str(&format!("id: {id}\n"));
    }
    s.push_str(&format!("data: {value}\n\n"));
    s
}

pub fn result(id: &Value, result: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn init_result(id: &Value, version: &str) -> Value {
    result(
        id,
        serde_json::json!({
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "test", "version": "1"}
        }),
    )
}

/// The client side of a connection, driven by hand.
pub struct Driver {
    pub tx: std::pin::Pin<Box<dyn futures_util::Sink<Outbound, Error = TransportError> + Send>>,
    pub rx: std::pin::Pin<
        Box<dyn futures_util::Stream<Item = Result<Incoming, TransportError>> + Send>,
    >,
}

impl Driver {
    pub fn new(conn: mcp_jsonrpc::Connection) -> Self {
        let (rx, tx) = conn.into_parts();
        Driver { tx, rx }
    }

    pub async fn send(&mut self, value: Value) {
        let msg = Message::from_slice(value.to_string().as_bytes()).unwrap();
        self.tx.send(Outbound::new(msg)).await.unwrap();
    }

    /// The next inbound message, as JSON.
    pub async fn recv(&mut self) -> Value {
        let item = tokio::time::timeout(Duration::from_secs(5), self.rx.next())
            .await
            .expect("timed out waiting for an inbound message")
            .expect("inbound stream ended")
            .expect("transport error");
        match item.frame.expect("frame error") {
            mcp_jsonrpc::Inbound::Single(m) => serde_json::from_str(&m.to_string()).unwrap(),
            other => panic!("unexpected batch {other:?}"),
        }
    }

    /// The next inbound item, which must be a transport error.
    pub async fn recv_err(&mut self) -> TransportError {
        let item = tokio::time::timeout(Duration::from_secs(5), self.rx.next())
            .await
            .expect("timed out waiting for an inbound error")
            .expect("inbound stream ended");
        match item {
            Err(e) => e,
            Ok(i) => panic!("expected an error, got {i:?}"),
        }
    }

    /// Waits for the end of the inbound stream.
    pub async fn expect_end(&mut self) {
        let item = tokio::time::timeout(Duration::from_secs(5), self.rx.next())
            .await
            .expect("timed out waiting for the end of the inbound stream");
        assert!(item.is_none(), "expected the end, got {item:?}");
    }
}

/// Connects `client`: a driver over its connection, and its handle.
pub async fn connect(
    client: &mcp_transport_http::client::StreamableHttpClient,
) -> (Driver, mcp_transport_http::client::HttpClientHandle) {
    let (conn, handle) = client.connect().await.unwrap();
    (Driver::new(conn), handle)
}

/// A client of `url` with the default settings, connected.
pub async fn connect_to(url: String) -> (Driver, mcp_transport_http::client::HttpClientHandle) {
    let client = mcp_transport_http::client::StreamableHttpClient::builder(url)
        .build()
        .unwrap();
    connect(&client).await
}

pub fn request(id: i64, method: &str, params: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub fn notification(method: &str) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "method": method})
}

pub fn initialize(id: i64) -> Value {
    request(
        id,
        "initialize",
        serde_json::json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}
        }),
    )
}
