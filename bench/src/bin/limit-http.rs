//! The Streamable HTTP "limit" echo server: bare hyper 1 (HTTP/1.1, keep-alive, `TCP_NODELAY`),
//! the same `serde_json` handling as `limit-stdio`, `application/json` answers. By default it is
//! stateful: `initialize` opens a session whose `Mcp-Session-Id` later requests must carry. With
//! `--stateless` it hands out no session ids. 2026-07-28 requests (`_meta` envelope) are served
//! statelessly either way.
//!
//! Usage: `limit-http [--listen ADDR] [--stateless] [--threads N] [--max-body BYTES]
//! [--max-sessions N] [--max-connections N] [--extra-work-ns N]` (`--threads 0`: a
//! single-threaded runtime; default: one worker per available core). `--extra-work-ns` spends
//! that much CPU time more on each POST (a busy loop): it shows how much a row's throughput
//! depends on the server's cost per request (see `docs/performance.md`).

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use mcp_bench::args::{ArgError, Args};
use mcp_bench::driver::http::{MCP_METHOD, MCP_NAME, PROTOCOL_VERSION, SESSION_ID};
use mcp_bench::echo::{EchoServer, HttpHeaders, Outcome, Transport};

struct Config {
    listen: SocketAddr,
    stateful: bool,
    threads: usize,
    max_body: usize,
    max_sessions: usize,
    max_connections: usize,
    extra_work: std::time::Duration,
}

fn config() -> Result<Config, ArgError> {
    let mut args = Args::from_env();
    let default_threads = std::thread::available_parallelism().map_or(1, usize::from);
    let config = Config {
        listen: args.parsed("--listen", SocketAddr::from(([127, 0, 0, 1], 8080)))?,
        stateful: !args.flag("--stateless"),
        threads: args.parsed("--threads", default_threads)?,
        max_body: args.parsed("--max-body", 4usize << 20)?,
        max_sessions: args.parsed("--max-sessions", 100_000usize)?,
        max_connections: args.parsed("--max-connections", 1024usize)?,
        extra_work: std::time::Duration::from_nanos(args.parsed("--extra-work-ns", 0u64)?),
    };
    args.finish()?;
    Ok(config)
}

fn main() -> ExitCode {
    let config = match config() {
        Ok(config) => config,
        Err(e) => return e.exit("limit-http"),
    };
    let runtime = mcp_bench::runtime::build(Some(config.threads));
    let result = runtime.and_then(|runtime| runtime.block_on(serve(config)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("limit-http: {e}");
            ExitCode::FAILURE
        }
    }
}

struct State {
    echo: EchoServer,
    stateful: bool,
    max_body: usize,
    max_sessions: usize,
    /// Session id to negotiated revision.
    sessions: Mutex<HashMap<Box<str>, &'static str>>,
    extra_work: std::time::Duration,
}

async fn serve(config: Config) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let permits = Arc::new(tokio::sync::Semaphore::new(config.max_connections));
    let state = Arc::new(State {
        echo: EchoServer::new(),
        stateful: config.stateful,
        max_body: config.max_body,
        max_sessions: config.max_sessions,
        sessions: Mutex::new(HashMap::new()),
        extra_work: config.extra_work,
    });
    loop {
        let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
            return Ok(()); // the semaphore is never closed
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                eprintln!("limit-http: accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(Arc::clone(&state), request));
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(permit);
        });
    }
}

fn plain(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn json(status: StatusCode, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn error(status: StatusCode, code: i64, message: &str) -> Response<Full<Bytes>> {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message }
    });
    json(status, body.to_string().into_bytes())
}

fn new_session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let session = request
        .headers()
        .get(&SESSION_ID)
        .map(|v| v.to_str().unwrap_or("").to_owned());
    match *request.method() {
        Method::POST => {
            if !state.extra_work.is_zero() {
                let started = std::time::Instant::now();
                while started.elapsed() < state.extra_work {
                    std::hint::spin_loop();
                }
            }
            Ok(post(&state, session, request).await)
        }
        Method::DELETE if state.stateful => {
            let removed = session.is_some_and(|id| {
                state
                    .sessions
                    .lock()
                    .is_ok_and(|mut sessions| sessions.remove(id.as_str()).is_some())
            });
            Ok(plain(if removed {
                StatusCode::OK
            } else {
                StatusCode::NOT_FOUND
            }))
        }
        _ => {
            let mut response = plain(StatusCode::METHOD_NOT_ALLOWED);
            let allow = if state.stateful {
                "POST, DELETE"
            } else {
                "POST"
            };
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static(allow));
            Ok(response)
        }
    }
}

async fn post(
    state: &State,
    session: Option<String>,
    request: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let session = if state.stateful { session } else { None };
    if let Some(id) = &session {
        let known = state
            .sessions
            .lock()
            .is_ok_and(|sessions| sessions.contains_key(id.as_str()));
        if !known {
            return error(StatusCode::NOT_FOUND, -32001, "unknown session");
        }
    }
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, state.max_body).collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return error(StatusCode::PAYLOAD_TOO_LARGE, -32600, "body too large");
        }
        Err(_) => return plain(StatusCode::BAD_REQUEST),
    };
    let header = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let headers = HttpHeaders {
        protocol_version: header(&PROTOCOL_VERSION),
        method: header(&MCP_METHOD),
        name: header(&MCP_NAME),
        session: session.is_some(),
    };
    let mut out = Vec::with_capacity(256 + body.len());
    match state.echo.handle(&body, Transport::Http(headers), &mut out) {
        Outcome::NoReply => plain(StatusCode::ACCEPTED),
        Outcome::Reply {
            status,
            initialized,
            stateless,
        } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            if !state.stateful || stateless || session.is_some() {
                return json(status, out);
            }
            let Some(version) = initialized else {
                return error(StatusCode::BAD_REQUEST, -32600, "Mcp-Session-Id required");
            };
            let Some(id) = new_session_id() else {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    -32603,
                    "no randomness for a session id",
                );
            };
            let Ok(value) = HeaderValue::from_str(&id) else {
                return error(StatusCode::INTERNAL_SERVER_ERROR, -32603, "bad session id");
            };
            let Ok(mut sessions) = state.sessions.lock() else {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    -32603,
                    "session table poisoned",
                );
            };
            if sessions.len() >= state.max_sessions {
                return error(StatusCode::SERVICE_UNAVAILABLE, -32603, "too many sessions");
            }
            sessions.insert(id.into_boxed_str(), version);
            drop(sessions);
            let mut response = json(status, out);
            response.headers_mut().insert(SESSION_ID, value);
            response
        }
    }
}
