//! Streamable HTTP for the tests: a service served on a loopback port for as long as a test
//! holds it ([`Served`]), and a raw HTTP/1.1 client without the SDK ([`post`], [`send`]) whose
//! [`Answer`] reads a JSON or SSE body one JSON-RPC message at a time.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_server::Server;
use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Longest the helpers wait for an answer or the next piece of a body.
pub const WAIT: Duration = Duration::from_secs(10);

/// The path [`Served::server`] serves at and [`post`] posts to.
pub const MCP_PATH: &str = "/mcp";

/// A service listening on `127.0.0.1` (a free port); stopped when dropped.
pub struct Served {
    addr: SocketAddr,
    service: StreamableHttpService,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Served {
    /// Serves `service`.
    pub async fn start(service: StreamableHttpService) -> Served {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        Served::start_on(listener, service)
    }

    /// Serves `service` on `listener` (bound by a test that needs its address first).
    pub fn start_on(listener: TcpListener, service: StreamableHttpService) -> Served {
        let addr = listener.local_addr().expect("the bound address");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(service.clone().serve_with_listener(listener, async {
            let _ = stopped.await;
        }));
        Served {
            addr,
            service,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Serves `server`, each HTTP session on `Server::serve`, at [`MCP_PATH`] with the default
    /// configuration otherwise.
    pub async fn server(server: &Server) -> Served {
        Served::start(
            StreamableHttpService::builder(server.connection_handler())
                .config(HttpServerConfig::default().path(MCP_PATH))
                .build(),
        )
        .await
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The service (its session count, ...).
    pub fn service(&self) -> &StreamableHttpService {
        &self.service
    }

    /// Stops listening and waits until the server has ended, returning how it ended.
    pub async fn stop(mut self) -> std::io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.expect("the server task ran to its end"),
            None => Ok(()),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// POSTs one JSON-RPC message to [`MCP_PATH`] at `addr` with `Content-Type: application/json`,
/// `Accept: application/json, text/event-stream` and `headers`.
pub async fn post(addr: SocketAddr, message: &Value, headers: &[(&str, String)]) -> Answer {
    post_text(addr, &message.to_string(), headers).await
}

/// [`post`] with the body given as text, which need not be valid JSON.
pub async fn post_text(addr: SocketAddr, text: &str, headers: &[(&str, String)]) -> Answer {
    let mut all = vec![
        ("content-type", "application/json".to_owned()),
        ("accept", "application/json, text/event-stream".to_owned()),
    ];
    all.extend(headers.iter().cloned());
    send(
        addr,
        Method::POST,
        MCP_PATH,
        &all,
        Bytes::from(text.to_owned()),
    )
    .await
}

/// Sends one request on a fresh HTTP/1.1 connection to `addr` with `Host` and `headers`, and
/// returns the answer once its head has arrived (within [`WAIT`]).
pub async fn send(
    addr: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, String)],
    body: Bytes,
) -> Answer {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("an HTTP/1.1 handshake");
    tokio::spawn(connection);
    let mut request = http::Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"))
        .header("host", addr.to_string());
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    let request = request.body(Full::new(body)).expect("a valid request");
    let response = tokio::time::timeout(WAIT, sender.send_request(request))
        .await
        .expect("answered in time")
        .expect("an HTTP response");
    let headers = response.headers().clone();
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let sse = text("content-type").is_some_and(|v| v.starts_with("text/event-stream"));
    Answer {
        status: response.status(),
        session: text("mcp-session-id"),
        sse,
        headers,
        body: response.into_body(),
        buffer: Vec::new(),
    }
}

/// An HTTP answer being read: its head, and the JSON-RPC messages of its body (one for a JSON
/// body, each event's data for an SSE body) as they arrive.
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// Its `Mcp-Session-Id`, if any.
    pub session: Option<String>,
    /// Every header.
    pub headers: HeaderMap,
    sse: bool,
    body: Incoming,
    buffer: Vec<u8>,
}

impl Answer {
    /// Whether the body is an event stream.
    pub fn is_sse(&self) -> bool {
        self.sse
    }

    /// A header's value, when it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The next JSON-RPC message of the body, or `None` at its end. Events without data (a
    /// priming event with only an id, a comment) are skipped. Each piece of the body must come
    /// within [`WAIT`].
    pub async fn next_message(&mut self) -> Option<Value> {
        loop {
            if self.sse
                && let Some(end) = find(&self.buffer, b"\n\n")
            {
                let event: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let text = String::from_utf8(event).expect("an SSE event is UTF-8");
                let data = sse_data(&text);
                if data.trim().is_empty() {
                    continue;
                }
                return Some(serde_json::from_str(&data).expect("event data is JSON"));
            }
            let frame = tokio::time::timeout(WAIT, self.body.frame())
                .await
                .expect("the body moved on in time");
            match frame {
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        self.buffer.extend_from_slice(&data);
                    }
                }
                Some(Err(e)) => panic!("body failed: {e}"),
                None => {
                    if self.sse || self.buffer.is_empty() {
                        return None;
                    }
                    let body = std::mem::take(&mut self.buffer);
                    return Some(serde_json::from_slice(&body).expect("the body is JSON"));
                }
            }
        }
    }

    /// The rest of the body, whole (within [`WAIT`]).
    pub async fn bytes(mut self) -> Bytes {
        let rest = tokio::time::timeout(WAIT, self.body.collect())
            .await
            .expect("the body ended in time")
            .expect("the body")
            .to_bytes();
        let mut all = std::mem::take(&mut self.buffer);
        all.extend_from_slice(&rest);
        Bytes::from(all)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The data of one SSE event: its `data:` lines joined by newlines.
fn sse_data(event: &str) -> String {
    event
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_data_joins_data_lines_and_ignores_the_rest() {
        assert_eq!(
            sse_data("id: 1\ndata: {\"a\":\ndata: 1}\n\n"),
            "{\"a\":\n1}"
        );
        assert_eq!(sse_data("id: 7\n\n"), "");
        assert_eq!(sse_data(": comment\ndata:x\n\n"), "x");
    }
}
