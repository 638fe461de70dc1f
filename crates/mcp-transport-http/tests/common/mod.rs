//! What the transport's integration tests share.
// Each test binary compiles its own copy and uses only part of it.
#![allow(dead_code)]

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A service listening on a free loopback port.
pub struct Listening {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Send (or drop) to shut the service down gracefully.
    pub stop: oneshot::Sender<()>,
    /// The serving task; ends once the shutdown is complete.
    pub done: JoinHandle<std::io::Result<()>>,
}

/// Serves `service` on a free loopback port until `stop` fires or is dropped.
pub async fn listen(service: StreamableHttpService) -> Listening {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(async move {
        service
            .serve_with_listener(listener, async {
                let _ = stopped.await;
            })
            .await
    });
    Listening { addr, stop, done }
}

/// Serves, with `config`, each connection with `serve` and a record it shares with the test
/// (`S::default()` to begin with), on a free loopback port: the record and where it listens.
pub async fn listen_shared<S, F, Fut>(config: HttpServerConfig, serve: F) -> (S, Listening)
where
    S: Default + Clone + Send + Sync + 'static,
    F: Fn(mcp_jsonrpc::Connection, S) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let shared = S::default();
    let s = shared.clone();
    let service = StreamableHttpService::builder(move |conn| serve(conn, s.clone()))
        .config(config)
        .build();
    (shared, listen(service).await)
}

/// An HTTP/1.1 client for the test servers.
pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A new [`HttpClient`].
pub fn http_client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// The JSON body of an `application/json` answer.
pub async fn json_body(resp: http::Response<hyper::body::Incoming>) -> serde_json::Value {
    use http_body_util::BodyExt;
    assert_eq!(resp.headers()["content-type"], "application/json");
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

/// Asserts the stateless answer to a request of an unknown method: `404`, the request's `id`
/// and the error `-32601`.
pub async fn assert_method_not_found(resp: http::Response<hyper::body::Incoming>, id: i64) {
    assert_eq!(resp.status(), http::StatusCode::NOT_FOUND);
    let v = json_body(resp).await;
    assert_eq!(
        (v["id"].clone(), v["error"]["code"].clone()),
        (serde_json::json!(id), serde_json::json!(-32601))
    );
}

/// Sends `notifications/progress` (token `t`, progress `i`) through `peer`, related to the
/// request the peer belongs to.
pub async fn progress(peer: mcp_jsonrpc::Peer, i: u32) {
    peer.notify_with(
        "notifications/progress",
        &serde_json::json!({"progressToken": "t", "progress": i}),
    )
    .await
    .unwrap();
}

/// What [`sse_messages`] read of an SSE answer.
pub struct Sse {
    /// The `data` of each event, as JSON (events without data, such as priming, skipped).
    pub messages: Vec<serde_json::Value>,
    /// How many events carried an `id`.
    pub ids: usize,
    /// The rest of the body.
    pub body: hyper::body::Incoming,
}

/// Reads an SSE answer until `stop_after` messages have arrived, or to its end.
pub async fn sse_messages(
    resp: http::Response<hyper::body::Incoming>,
    stop_after: Option<usize>,
) -> Sse {
    use http_body_util::BodyExt;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut sse = Sse {
        messages: Vec::new(),
        ids: 0,
        body: resp.into_body(),
    };
    let mut buf = String::new();
    loop {
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            for line in block.lines() {
                if line.starts_with("id:") {
                    sse.ids += 1;
                }
                if let Some(data) = line.strip_prefix("data: ") {
                    if !data.is_empty() {
                        sse.messages.push(serde_json::from_str(data).unwrap());
                    }
                }
            }
            if stop_after.is_some_and(|n| sse.messages.len() >= n) {
                return sse;
            }
        }
        let frame = tokio::time::timeout(std::time::Duration::from_secs(10), sse.body.frame())
            .await
            .expect("an SSE event in time");
        match frame {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    buf.push_str(std::str::from_utf8(&data).unwrap());
                }
            }
            _ => return sse,
        }
    }
}

/// What a request of a test server may send before its answer: messages related to it (on
/// its own stream) or to none (the standalone stream).
pub struct Related {
    id: mcp_jsonrpc::Id,
    tx: tokio::sync::mpsc::Sender<mcp_jsonrpc::Outbound>,
}

impl Related {
    /// Sends `message` related to the request.
    pub async fn send(&self, message: impl Into<mcp_jsonrpc::Message>) {
        let out = mcp_jsonrpc::Outbound::related(message.into(), Some(self.id.clone()));
        self.tx.send(out).await.unwrap();
    }

    /// Sends `message` related to no request.
    pub async fn broadcast(&self, message: impl Into<mcp_jsonrpc::Message>) {
        let out = mcp_jsonrpc::Outbound::new(message.into());
        self.tx.send(out).await.unwrap();
    }
}

/// Serves `conn` as the test server `name`: `initialize` is answered with the revision asked
/// for and no capabilities; every other request on a task of its own with the result `answer`
/// makes of its method and params, which may first send messages through the [`Related`] it
/// gets; one writer takes everything to the connection.
pub async fn answer_requests<F, Fut>(conn: mcp_jsonrpc::Connection, name: &str, answer: F)
where
    F: Fn(String, serde_json::Value, Related) -> Fut,
    Fut: std::future::Future<Output = serde_json::Value> + Send + 'static,
{
    use futures_util::{SinkExt, StreamExt};
    use mcp_jsonrpc::{Inbound, Message, Outbound};
    let (mut inbound, mut sink) = conn.into_parts();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Outbound>(64);
    tokio::spawn(async move {
        while let Some(o) = rx.recv().await {
            if sink.send(o).await.is_err() {
                break;
            }
        }
    });
    while let Some(Ok(incoming)) = inbound.next().await {
        let Ok(Inbound::Single(Message::Request(r))) = incoming.frame else {
            continue;
        };
        let id = r.id.clone();
        let params: serde_json::Value = r.params_as().unwrap_or(serde_json::Value::Null);
        let result: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send>> =
            if r.method == "initialize" {
                let result = serde_json::json!({
                    "protocolVersion": params["protocolVersion"],
                    "capabilities": {},
                    "serverInfo": {"name": name, "version": "1"},
                });
                Box::pin(std::future::ready(result))
            } else {
                let related = Related {
                    id: id.clone(),
                    tx: tx.clone(),
                };
                Box::pin(answer(r.method, params, related))
            };
        let tx = tx.clone();
        tokio::spawn(async move {
            let result = result.await;
            let response = mcp_jsonrpc::Response::success_from(id.clone(), &result).unwrap();
            let _ = tx
                .send(Outbound::related(Message::Response(response), Some(id)))
                .await;
        });
    }
}

/// A client engine over `transport`, initialized at `version`: its peer (`driver` runs it) and
/// the transport's handle.
#[cfg(feature = "client")]
pub struct Initialized {
    /// Calls the server.
    pub peer: mcp_jsonrpc::Peer,
    /// The transport's handle (the session).
    pub handle: mcp_transport_http::client::HttpClientHandle,
    /// The engine's task.
    pub driver: tokio::task::JoinHandle<Result<(), mcp_jsonrpc::TransportError>>,
}

/// Connects `transport` and sends `initialize` for `version`, checking the revision the
/// server answers with.
#[cfg(feature = "client")]
pub async fn initialize(
    transport: mcp_transport_http::client::StreamableHttpClient,
    version: &str,
) -> Initialized {
    use mcp_jsonrpc::{Engine, RequestOptions};
    let (connection, handle) = transport.connect().await.unwrap();
    let (peer, driver) = Engine::builder().spawn(connection, ());
    let init: serde_json::Value = peer
        .call(
            "initialize",
            &serde_json::json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
            RequestOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(init["protocolVersion"], version);
    Initialized {
        peer,
        handle,
        driver,
    }
}
