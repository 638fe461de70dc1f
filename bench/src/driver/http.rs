//! Driving a Streamable HTTP server: hyper's HTTP/1.1 client on a single-threaded runtime, one
//! keep-alive connection per request in flight.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{LoadOptions, MAX_INFLIGHT};
use crate::fail;
use crate::load::{
    EchoCall, Protocol, Recorder, Reply, Result, Schedule, SessionsReport, ThroughputReport,
    stateless_meta,
};
use crate::procfs;

/// `Mcp-Session-Id`.
pub const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`.
pub const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`.
pub const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// Where the driver sends its POSTs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The resolved socket address.
    pub addr: SocketAddr,
    /// `host:port`, for the `Host` header.
    pub authority: String,
    /// The request path (with query, if any).
    pub path: String,
}

impl Target {
    /// Parses an `http://host:port/path` URL and resolves its host.
    ///
    /// ```
    /// let target = mcp_bench::driver::http::Target::parse("http://127.0.0.1:8080/mcp").unwrap();
    /// assert_eq!(target.addr.port(), 8080);
    /// assert_eq!(target.path, "/mcp");
    /// ```
    pub fn parse(url: &str) -> Result<Self> {
        let uri: hyper::Uri = url.parse().map_err(|e| fail!("bad URL {url:?}: {e}"))?;
        if uri.scheme_str() != Some("http") {
            return Err(fail!("only http:// URLs are supported: {url:?}"));
        }
        let authority = uri
            .authority()
            .ok_or_else(|| fail!("URL without host: {url:?}"))?;
        let port = authority.port_u16().unwrap_or(80);
        let addr = (authority.host(), port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| fail!("{} does not resolve", authority.host()))?;
        let path = uri
            .path_and_query()
            .map_or("/".to_owned(), |p| p.as_str().to_owned());
        Ok(Self {
            addr,
            authority: authority.to_string(),
            path,
        })
    }
}

/// An answer to one POST.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The HTTP status.
    pub status: StatusCode,
    /// The `Mcp-Session-Id` header, if any.
    pub session_id: Option<HeaderValue>,
    /// Whether the body is an SSE stream.
    pub sse: bool,
    /// The whole body.
    pub body: Bytes,
}

impl Answer {
    /// The JSON-RPC messages of the body: the body itself, or the data of each SSE event.
    pub fn messages(&self) -> Vec<Bytes> {
        if self.sse {
            sse_data(&self.body)
        } else if self.body.is_empty() {
            Vec::new()
        } else {
            vec![self.body.clone()]
        }
    }
}

/// The `data` of each event of an SSE stream (multi-line data joined with `\n`; events without
/// data skipped).
///
/// ```
/// let body = b"id: 1\ndata: {\"a\":1}\n\n: comment\ndata: x\r\ndata: y\n\n";
/// let events = mcp_bench::driver::http::sse_data(body);
/// assert_eq!(events, [&b"{\"a\":1}"[..], &b"x\ny"[..]]);
/// ```
pub fn sse_data(body: &[u8]) -> Vec<Bytes> {
    let mut events = Vec::new();
    let mut data: Option<Vec<u8>> = None;
    for line in body.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if let Some(event) = data.take() {
                events.push(Bytes::from(event));
            }
            continue;
        }
        if let Some(value) = line.strip_prefix(b"data:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            match &mut data {
                Some(event) => {
                    event.push(b'\n');
                    event.extend_from_slice(value);
                }
                None => data = Some(value.to_vec()),
            }
        }
    }
    if let Some(event) = data {
        events.push(Bytes::from(event));
    }
    events
}

/// One keep-alive HTTP/1.1 connection.
pub struct Connection {
    sender: SendRequest<Full<Bytes>>,
    target: Arc<Target>,
    host: HeaderValue,
    max_body: usize,
}

impl Connection {
    /// Connects (with `TCP_NODELAY`) and runs the connection task on the current runtime.
    pub async fn open(target: Arc<Target>, max_body: usize) -> Result<Self> {
        let tcp = tokio::net::TcpStream::connect(target.addr).await?;
        tcp.set_nodelay(true)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        // A broken connection surfaces as a failed `send_request`; nothing to do here.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let host = HeaderValue::from_str(&target.authority)?;
        Ok(Self {
            sender,
            target,
            host,
            max_body,
        })
    }

    /// POSTs `body` with `headers` (plus `Host`, `Content-Type` and `Accept`) and reads the
    /// whole answer.
    pub async fn post(&mut self, body: Bytes, headers: &HeaderMap) -> Result<Answer> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.target.path.parse()?;
        let h = request.headers_mut();
        h.reserve(headers.len() + 3);
        h.insert(HOST, self.host.clone());
        h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        h.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        for (name, value) in headers {
            h.insert(name, value.clone());
        }
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, self.max_body)
            .collect()
            .await
            .map_err(|e| fail!("reading answer body: {e}"))?
            .to_bytes();
        let sse = parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        Ok(Answer {
            status: parts.status,
            session_id: parts.headers.get(&SESSION_ID).cloned(),
            sse,
            body,
        })
    }
}

/// Headers of a stateless request for `method` (and `name`, for `tools/call`).
pub fn stateless_headers(method: &'static str, name: Option<&'static str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        PROTOCOL_VERSION,
        HeaderValue::from_static(Protocol::Stateless.version()),
    );
    headers.insert(MCP_METHOD, HeaderValue::from_static(method));
    if let Some(name) = name {
        headers.insert(MCP_NAME, HeaderValue::from_static(name));
    }
    headers
}

/// Opens a session: `initialize`, then `notifications/initialized`. Returns the headers later
/// requests of the session carry, and whether the server issued a session id.
pub async fn open_session(connection: &mut Connection) -> Result<(HeaderMap, bool)> {
    let mut body = super::stdio::initialize_request(Protocol::Session.version());
    body.pop();
    let answer = connection
        .post(Bytes::from(body), &HeaderMap::new())
        .await?;
    if answer.status != StatusCode::OK {
        return Err(fail!(
            "initialize: HTTP {} {}",
            answer.status,
            String::from_utf8_lossy(&answer.body)
        ));
    }
    let mut answered = false;
    for message in answer.messages() {
        if super::stdio::is_initialize_answer(&message)? {
            answered = true;
        }
    }
    if !answered {
        return Err(fail!(
            "initialize: no answer in {:?}",
            String::from_utf8_lossy(&answer.body)
        ));
    }
    let mut headers = HeaderMap::new();
    headers.insert(
        PROTOCOL_VERSION,
        HeaderValue::from_static(Protocol::Session.version()),
    );
    let issued = answer.session_id.is_some();
    if let Some(id) = answer.session_id {
        headers.insert(SESSION_ID, id);
    }
    let initialized =
        Bytes::from_static(&super::stdio::INITIALIZED[..super::stdio::INITIALIZED.len() - 1]);
    let answer = connection.post(initialized, &headers).await?;
    if !answer.status.is_success() {
        return Err(fail!("notifications/initialized: HTTP {}", answer.status));
    }
    Ok((headers, issued))
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Runs the echo workload against `target` with `options.inflight` connections. `pid` is the
/// server's, for its memory figures.
pub fn throughput(
    target: Target,
    options: &LoadOptions,
    pid: Option<u32>,
) -> Result<ThroughputReport> {
    if options.inflight == 0 || options.inflight > MAX_INFLIGHT {
        return Err(fail!("--inflight must be 1..={MAX_INFLIGHT}"));
    }
    let target = Arc::new(target);
    let call = Arc::new(EchoCall::new(options.protocol, options.text_len));
    let run = async {
        let mut connections = Vec::with_capacity(options.inflight);
        for _ in 0..options.inflight {
            connections.push(Connection::open(Arc::clone(&target), options.max_message).await?);
        }
        let headers = match options.protocol {
            Protocol::Session => match connections.first_mut() {
                Some(first) => open_session(first).await?.0,
                None => HeaderMap::new(),
            },
            Protocol::Stateless => stateless_headers("tools/call", Some(crate::echo::ECHO_TOOL)),
        };
        let headers = Arc::new(headers);
        let schedule = Arc::new(Schedule::new(options.warmup, options.stop));
        let inflight = options.inflight as u64;
        let tasks: Vec<_> = connections
            .into_iter()
            .enumerate()
            .map(|(index, connection)| {
                let lane = Lane {
                    connection,
                    call: Arc::clone(&call),
                    headers: Arc::clone(&headers),
                    schedule: Arc::clone(&schedule),
                    first_id: index as u64 + 1,
                    step: inflight,
                };
                tokio::spawn(lane.run(options.max_samples))
            })
            .collect();
        let mut total = Recorder::new(schedule.measure_start(), options.max_samples);
        for task in tasks {
            total.merge(task.await.map_err(|e| fail!("load task: {e}"))??);
        }
        Ok::<_, crate::load::Error>(total)
    };
    let recorder = runtime()?
        .block_on(async { tokio::time::timeout(options.timeout, run).await })
        .map_err(|_| fail!("run not over within {:?}", options.timeout))??;
    let memory = pid.and_then(|pid| procfs::memory(pid).ok());
    Ok(ThroughputReport::new(
        "http",
        options.protocol,
        options.inflight,
        recorder.summary(),
        memory,
    ))
}

struct Lane {
    connection: Connection,
    call: Arc<EchoCall>,
    headers: Arc<HeaderMap>,
    schedule: Arc<Schedule>,
    first_id: u64,
    step: u64,
}

impl Lane {
    async fn run(mut self, max_samples: usize) -> Result<Recorder> {
        let mut recorder = Recorder::new(self.schedule.measure_start(), max_samples);
        let mut id = self.first_id;
        while let Some(sent) = self.schedule.next() {
            let mut body = Vec::with_capacity(256 + self.call.text().len());
            self.call.encode(id, &mut body);
            let answer = match self.connection.post(Bytes::from(body), &self.headers).await {
                Ok(answer) => answer,
                Err(e) => {
                    recorder.record_failure(sent);
                    return Err(fail!("call {id}: {e}"));
                }
            };
            let done = Instant::now();
            let mut ok = false;
            if answer.status == StatusCode::OK {
                for message in answer.messages() {
                    if let Ok(Reply::Response {
                        id: Some(got),
                        ok: good,
                    }) = self.call.check(&message)
                        && got == id
                    {
                        ok = good;
                    }
                }
            }
            recorder.record(sent, done, ok);
            id += self.step;
        }
        Ok(recorder)
    }
}

/// Opens `count` idle sessions (stateless: sends the `server/discover` and `tools/call` a fresh
/// client would) after a small warm-up, and reports the server's resident memory per session.
/// The whole run must end within `timeout`.
pub fn sessions(
    target: Target,
    protocol: Protocol,
    count: u64,
    pid: u32,
    max_body: usize,
    timeout: Duration,
) -> Result<SessionsReport> {
    const WARMUP_SESSIONS: u64 = 20;
    let target = Arc::new(target);
    let call = EchoCall::new(protocol, 100);
    let run = async {
        let mut connection = Connection::open(Arc::clone(&target), max_body).await?;
        let open = async |connection: &mut Connection, id: u64| -> Result<bool> {
            match protocol {
                Protocol::Session => Ok(open_session(connection).await?.1),
                Protocol::Stateless => {
                    let discover = serde_json::json!({
                        "jsonrpc": "2.0", "id": id, "method": "server/discover",
                        "params": { "_meta": stateless_meta() }
                    });
                    let headers = stateless_headers("server/discover", None);
                    let answer = connection
                        .post(Bytes::from(discover.to_string()), &headers)
                        .await?;
                    if answer.status != StatusCode::OK {
                        return Err(fail!("server/discover: HTTP {}", answer.status));
                    }
                    let mut body = Vec::new();
                    call.encode(id, &mut body);
                    let headers = stateless_headers("tools/call", Some(crate::echo::ECHO_TOOL));
                    let answer = connection.post(Bytes::from(body), &headers).await?;
                    let ok = answer
                        .messages()
                        .iter()
                        .any(|m| matches!(call.check(m), Ok(Reply::Response { ok: true, .. })));
                    if !ok {
                        return Err(fail!(
                            "tools/call: HTTP {} {:?}",
                            answer.status,
                            String::from_utf8_lossy(&answer.body)
                        ));
                    }
                    Ok(answer.session_id.is_some())
                }
            }
        };
        for i in 0..WARMUP_SESSIONS {
            open(&mut connection, i).await?;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = procfs::memory(pid)?;
        let mut session_ids = 0;
        for i in 0..count {
            if open(&mut connection, WARMUP_SESSIONS + i).await? {
                session_ids += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = procfs::memory(pid)?;
        let delta_kb = after.rss_kb as f64 - before.rss_kb as f64;
        Ok(SessionsReport {
            protocol,
            sessions: count,
            session_ids,
            rss_before_kb: before.rss_kb,
            rss_after_kb: after.rss_kb,
            bytes_per_session: if count > 0 {
                delta_kb * 1024.0 / count as f64
            } else {
                0.0
            },
        })
    };
    runtime()?
        .block_on(async { tokio::time::timeout(timeout, run).await })
        .map_err(|_| fail!("sessions run not over within {timeout:?}"))?
}

/// Waits until something accepts connections on `addr` (or the server exits, or `timeout`).
pub fn wait_listening(
    addr: SocketAddr,
    server: &super::ServerProcess,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
            return Ok(());
        }
        server.check_running()?;
        if Instant::now() >= deadline {
            return Err(fail!("server not listening on {addr} after {timeout:?}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
