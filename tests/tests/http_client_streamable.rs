//! The Streamable HTTP client against hand-written hyper servers: JSON and SSE answers,
//! server-to-client requests, resumption, session expiry, fallback to HTTP+SSE, 2026 headers.

use crate::http_client_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::{HeaderName, HeaderValue, Method};
use http_client_support::*;
use mcp_transport_http::client::{
    ClientMode, HttpError, Reconnect, StreamableHttpClient, Transport,
};
use serde_json::{Value, json};

const SID: &str = "sess-1234";

/// Answers `initialize` with a session id and `notifications/initialized` with 202; refuses the
/// standalone GET stream; accepts DELETE.
async fn session_basics(rec: &Recorded) -> Option<http::Response<Body>> {
    match (rec.method.clone(), rec.rpc_method()) {
        (Method::POST, Some("initialize")) => {
            let mut resp = json(init_result(&rec.rpc_id().unwrap(), "2025-06-18"));
            resp.headers_mut()
                .insert("mcp-session-id", HeaderValue::from_static(SID));
            Some(resp)
        }
        (Method::POST, Some("notifications/initialized")) => Some(accepted()),
        (Method::GET, _) => Some(status(405)),
        (Method::DELETE, _) => Some(status(200)),
        _ => None,
    }
}

/// A session server (see [`session_basics`]) whose standalone GETs `get` answers, given their
/// number (from 0); with the count of GETs so far.
async fn with_standalone_gets<F, Fut>(get: F) -> (TestServer, Arc<AtomicUsize>)
where
    F: Fn(Recorded, usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = http::Response<Body>> + Send + 'static,
{
    let gets = Arc::new(AtomicUsize::new(0));
    let counter = gets.clone();
    let get = Arc::new(get);
    let server = TestServer::start(move |rec| {
        let gets = counter.clone();
        let get = get.clone();
        async move {
            if rec.method == Method::GET {
                let n = gets.fetch_add(1, Ordering::SeqCst);
                return get(rec, n).await;
            }
            session_basics(&rec).await.unwrap_or_else(|| status(500))
        }
    })
    .await;
    (server, gets)
}

async fn init(d: &mut Driver) {
    d.send(initialize(1)).await;
    let r = d.recv().await;
    assert_eq!(r["id"], 1);
    assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
    d.send(notification("notifications/initialized")).await;
}

#[tokio::test]
async fn json_and_sse_answers_headers_and_delete() {
    let server = TestServer::start(|rec| async move {
        if let Some(r) = session_basics(&rec).await {
            return r;
        }
        let id = rec.rpc_id().unwrap_or(Value::Null);
        match rec.rpc_method() {
            Some("tools/list") => sse(&[
                event(
                    &json!({"jsonrpc":"2.0","method":"notifications/progress",
                            "params":{"progressToken":"p","progress":1}}),
                    Some("1"),
                ),
                ": keep-alive comment\n\n".to_owned(),
                event(&result(&id, json!({"tools": []})), Some("2")),
            ]),
            Some("tools/call") => json(result(&id, json!({"content": []}))),
            _ => status(500),
        }
    })
    .await;
    let client = StreamableHttpClient::builder(server.url("/mcp"))
        .header(
            HeaderName::from_static("x-api-key"),
            HeaderValue::from_static("k1"),
        )
        .build()
        .unwrap();
    let (mut d, handle) = connect(&client).await;
    init(&mut d).await;
    assert_eq!(handle.session_id().as_deref(), Some(SID));
    assert_eq!(handle.protocol_version().as_deref(), Some("2025-06-18"));
    assert_eq!(handle.transport(), Transport::StreamableHttp);

    d.send(request(2, "tools/list", json!({}))).await;
    let progress = d.recv().await;
    assert_eq!(progress["method"], "notifications/progress");
    let list = d.recv().await;
    assert_eq!(list["id"], 2);
    assert_eq!(list["result"]["tools"], json!([]));

    d.send(request(3, "tools/call", json!({"name": "x"}))).await;
    let call = d.recv().await;
    assert_eq!(call["id"], 3);

    handle.close().await;
    d.expect_end().await;
    assert!(handle.is_closed());

    let log = server.log();
    let init_post = &log[0];
    assert_eq!(init_post.rpc_method(), Some("initialize"));
    assert_eq!(init_post.header("mcp-session-id"), None);
    assert_eq!(init_post.header("mcp-protocol-version"), None);
    for rec in &log {
        assert_eq!(rec.header("x-api-key"), Some("k1"), "{rec:?}");
        if rec.method == Method::POST {
            assert_eq!(
                rec.header("accept"),
                Some("application/json, text/event-stream")
            );
            assert_eq!(rec.header("content-type"), Some("application/json"));
        }
    }
    for rec in &log[1..] {
        assert_eq!(rec.header("mcp-session-id"), Some(SID), "{rec:?}");
        assert_eq!(rec.header("mcp-protocol-version"), Some("2025-06-18"));
    }
    // The standalone stream was tried after initialization, with the right Accept.
    let gets: Vec<_> = log.iter().filter(|r| r.method == Method::GET).collect();
    assert_eq!(gets.len(), 1);
    assert_eq!(gets[0].header("accept"), Some("text/event-stream"));
    let deletes: Vec<_> = log.iter().filter(|r| r.method == Method::DELETE).collect();
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].header("mcp-session-id"), Some(SID));
}

#[tokio::test]
async fn server_to_client_request_travels_on_the_post_stream() {
    let pending: Arc<std::sync::Mutex<Option<tokio::sync::mpsc::Sender<String>>>> = Arc::default();
    let p2 = pending.clone();
    let server = TestServer::start(move |rec| {
        let pending = p2.clone();
        async move {
            if let Some(r) = session_basics(&rec).await {
                return r;
            }
            if rec.rpc_method() == Some("tools/call") {
                let (tx, resp) = sse_channel();
                let ask = json!({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage",
                                 "params":{"messages":[],"maxTokens":5}});
                tx.send(event(&ask, Some("a1"))).await.unwrap();
                *pending.lock().unwrap() = Some(tx);
                return resp;
            }
            if rec.is_response() {
                // The client's answer: finish the tool call on the still-open stream.
                let answer = rec.body.clone().unwrap();
                let tx = pending.lock().unwrap().take();
                if let Some(tx) = tx {
                    let done = result(
                        &json!(7),
                        json!({"content":[{"type":"text","text": answer["result"]["model"]}]}),
                    );
                    tx.send(event(&done, Some("a2"))).await.unwrap();
                }
                return accepted();
            }
            status(500)
        }
    })
    .await;
    let (mut d, handle) = connect_to(server.url("/mcp")).await;
    init(&mut d).await;
    d.send(request(7, "tools/call", json!({"name": "ask"})))
        .await;
    let ask = d.recv().await;
    assert_eq!(ask["method"], "sampling/createMessage");
    assert_eq!(ask["id"], "s1");
    d.send(
        json!({"jsonrpc":"2.0","id":"s1","result":{"model":"m-1","role":"assistant",
                  "content":{"type":"text","text":"hi"}}}),
    )
    .await;
    let done = d.recv().await;
    assert_eq!(done["id"], 7);
    assert_eq!(done["result"]["content"][0]["text"], "m-1");
    let answers = server.wait_for(|r| r.is_response()).await;
    assert_eq!(answers[0].header("mcp-session-id"), Some(SID));
    handle.close().await;
}

#[tokio::test]
async fn dropped_stream_resumes_with_last_event_id_after_retry() {
    let server = TestServer::start(|rec| async move {
        if rec.method == Method::GET && rec.header("last-event-id").is_some() {
            assert_eq!(rec.header("last-event-id"), Some("event-1"));
            return sse(&[event(
                &result(&json!(5), json!({"content": []})),
                Some("event-2"),
            )]);
        }
        if let Some(r) = session_basics(&rec).await {
            return r;
        }
        if rec.rpc_method() == Some("tools/call") {
            // The polling pattern: a priming event with an id and retry, then close.
            return sse(&["id: event-1\nretry: 300\ndata:\n\n".to_owned()]);
        }
        status(500)
    })
    .await;
    let (mut d, handle) = connect_to(server.url("/mcp")).await;
    init(&mut d).await;
    d.send(request(5, "tools/call", json!({"name": "slow"})))
        .await;
    let done = d.recv().await;
    assert_eq!(done["id"], 5);
    assert!(done["result"].is_object());

    let log = server.log();
    let post = log
        .iter()
        .find(|r| r.rpc_method() == Some("tools/call"))
        .unwrap();
    let resume = log
        .iter()
        .find(|r| r.header("last-event-id").is_some())
        .unwrap();
    assert_eq!(resume.method, Method::GET);
    assert_eq!(resume.header("mcp-session-id"), Some(SID));
    assert_eq!(resume.header("accept"), Some("text/event-stream"));
    let gap = resume.at - post.at;
    assert!(
        gap >= Duration::from_millis(290) && gap < Duration::from_millis(1000),
        "{gap:?}"
    );
    handle.close().await;
}

#[tokio::test]
async fn stream_without_event_ids_fails_the_request_instead_of_hanging() {
    let server = TestServer::start(|rec| async move {
        if let Some(r) = session_basics(&rec).await {
            return r;
        }
        sse(&[event(
            &json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}),
            None,
        )])
    })
    .await;
    let (mut d, handle) = connect_to(server.url("/mcp")).await;
    init(&mut d).await;
    d.send(request(9, "tools/call", json!({"name": "x"}))).await;
    assert_eq!(d.recv().await["method"], "notifications/message");
    let err = d.recv().await;
    assert_eq!(err["id"], 9);
    assert_eq!(err["error"]["code"], -32603);
    handle.close().await;
}

#[tokio::test]
async fn session_404_surfaces_as_expiry_and_reconnecting_starts_a_new_session() {
    let server = TestServer::start(|rec| async move {
        if rec.rpc_method() == Some("tools/list") {
            return status(404);
        }
        session_basics(&rec).await.unwrap_or_else(|| status(500))
    })
    .await;
    let client = StreamableHttpClient::builder(server.url("/mcp"))
        .build()
        .unwrap();
    let (mut d, handle) = connect(&client).await;
    init(&mut d).await;
    d.send(request(2, "tools/list", json!({}))).await;
    let err = d.recv_err().await;
    match HttpError::from_transport(&err) {
        Some(e) => assert!(e.is_session_expired(), "{e}"),
        None => panic!("not an HttpError: {err}"),
    }
    d.expect_end().await;
    handle.closed().await;
    // No DELETE for a session the server already forgot.
    assert!(server.log().iter().all(|r| r.method != Method::DELETE));

    let (mut d, handle) = connect(&client).await;
    init(&mut d).await;
    let inits: Vec<_> = server
        .log()
        .into_iter()
        .filter(|r| r.rpc_method() == Some("initialize"))
        .collect();
    assert_eq!(inits.len(), 2);
    assert_eq!(inits[1].header("mcp-session-id"), None);
    handle.close().await;
}

#[tokio::test]
async fn http_errors_become_error_responses_and_2026_errors_pass_through() {
    let server = TestServer::start(|rec| async move {
        let id = rec.rpc_id().unwrap_or(Value::Null);
        match rec.rpc_method() {
            Some("tools/call") => {
                let mut r = json(json!({"jsonrpc":"2.0","id":id,
                    "error":{"code":-32022,"message":"Unsupported protocol version",
                             "data":{"supported":["2026-07-28"],"requested":"2099-01-01"}}}));
                *r.status_mut() = http::StatusCode::BAD_REQUEST;
                r
            }
            _ => status(503),
        }
    })
    .await;
    let (mut d, handle) = connect_to(server.url("/mcp")).await;
    d.send(request(1, "tools/list", json!({}))).await;
    let err = d.recv().await;
    assert_eq!(err["id"], 1);
    assert_eq!(err["error"]["code"], -32603);
    assert_eq!(err["error"]["data"]["httpStatus"], 503);

    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    d.send(request(
        2,
        "tools/call",
        json!({"name": "Hello, 世界", "arguments": {}, "_meta": meta}),
    ))
    .await;
    let err = d.recv().await;
    assert_eq!(err["id"], 2);
    assert_eq!(err["error"]["code"], -32022);
    assert_eq!(err["error"]["data"]["supported"][0], "2026-07-28");

    let call = server
        .wait_for(|r| r.rpc_method() == Some("tools/call"))
        .await;
    assert_eq!(call[0].header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(call[0].header("mcp-method"), Some("tools/call"));
    assert_eq!(
        call[0].header("mcp-name"),
        Some("=?base64?SGVsbG8sIOS4lueVjA==?=")
    );
    assert_eq!(call[0].header("mcp-session-id"), None);
    handle.close().await;
}

#[tokio::test]
async fn standalone_stream_delivers_and_resumes() {
    let (server, gets) = with_standalone_gets(|rec, n| async move {
        let note = |i: i64| {
            json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed",
                   "params":{"_meta":{"n": i}}})
        };
        match n {
            0 => sse(&["retry: 50\n\n".to_owned(), event(&note(0), Some("g1"))]),
            1 => {
                assert_eq!(rec.header("last-event-id"), Some("g1"));
                open_sse(&[event(&note(1), Some("g2"))]).await
            }
            _ => status(500),
        }
    })
    .await;
    let (mut d, handle) = connect_to(server.url("/mcp")).await;
    init(&mut d).await;
    let first = d.recv().await;
    assert_eq!(first["params"]["_meta"]["n"], 0);
    let second = d.recv().await;
    assert_eq!(second["params"]["_meta"]["n"], 1);
    assert_eq!(gets.load(Ordering::SeqCst), 2);
    handle.close().await;
}

#[tokio::test]
async fn falls_back_to_http_sse_on_4xx_to_initialize() {
    let stream: Arc<std::sync::Mutex<Option<tokio::sync::mpsc::Sender<String>>>> = Arc::default();
    let s2 = stream.clone();
    let server = TestServer::start(move |rec| {
        let stream = s2.clone();
        async move {
            match (rec.method.clone(), rec.path.as_str()) {
                (Method::POST, "/") => status(405),
                (Method::GET, "/") => {
                    let (tx, resp) = sse_channel();
                    tx.send("event: endpoint\ndata: /messages?sessionId=abc\n\n".into())
                        .await
                        .unwrap();
                    *stream.lock().unwrap() = Some(tx);
                    resp
                }
                (Method::POST, "/messages?sessionId=abc") => {
                    let id = rec.rpc_id();
                    let reply = match rec.rpc_method() {
                        Some("initialize") => id.map(|id| init_result(&id, "2024-11-05")),
                        Some("tools/list") => id.map(|id| result(&id, json!({"tools": []}))),
                        _ => None,
                    };
                    if let Some(reply) = reply {
                        let tx = stream.lock().unwrap().clone();
                        if let Some(tx) = tx {
                            tx.send(format!("event: message\ndata: {reply}\n\n"))
                                .await
                                .unwrap();
                        }
                    }
                    accepted()
                }
                _ => status(404),
            }
        }
    })
    .await;
    let (mut d, handle) = connect_to(server.url("/")).await;
    d.send(initialize(1)).await;
    let init = d.recv().await;
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(handle.transport(), Transport::HttpSse);
    d.send(notification("notifications/initialized")).await;
    d.send(request(2, "tools/list", json!({}))).await;
    assert_eq!(d.recv().await["id"], 2);

    // The server ending the SSE stream ends the connection.
    stream.lock().unwrap().take();
    let err = d.recv_err().await;
    assert!(err.to_string().contains("closed"), "{err}");
    d.expect_end().await;
    handle.closed().await;

    let posts: Vec<_> = server
        .log()
        .into_iter()
        .filter(|r| r.path.starts_with("/messages"))
        .collect();
    assert_eq!(posts.len(), 3);
}

#[tokio::test]
async fn streamable_only_mode_does_not_fall_back() {
    let server = TestServer::start(|_rec| async move { status(405) }).await;
    let client = StreamableHttpClient::builder(server.url("/"))
        .mode(ClientMode::StreamableHttp)
        .build()
        .unwrap();
    let (mut d, handle) = connect(&client).await;
    d.send(initialize(1)).await;
    let err = d.recv().await;
    assert_eq!(err["error"]["data"]["httpStatus"], 405);
    assert!(server.log().iter().all(|r| r.method == Method::POST));
    handle.close().await;
}

#[tokio::test]
async fn forced_http_sse_mode_and_bad_endpoints() {
    let server = TestServer::start(|rec| async move {
        match rec.path.as_str() {
            "/sse" => sse(&["event: endpoint\ndata: http://evil.example/messages\n\n".to_owned()]),
            _ => status(404),
        }
    })
    .await;
    let client = StreamableHttpClient::builder(server.url("/sse"))
        .mode(ClientMode::HttpSse)
        .build()
        .unwrap();
    let err = client.connect().await.unwrap_err();
    assert!(err.to_string().contains("another origin"), "{err}");
}

#[tokio::test]
async fn cancelled_notification_stops_reading_the_request_stream() {
    let server = TestServer::start(|rec| async move {
        if rec.rpc_method() == Some("tools/call") {
            // A stream that never answers.
            return open_sse(&["id: c1\n\n".into()]).await;
        }
        if rec.rpc_method() == Some("notifications/cancelled") {
            return accepted();
        }
        session_basics(&rec).await.unwrap_or_else(|| status(500))
    })
    .await;
    let client = StreamableHttpClient::builder(server.url("/mcp"))
        .max_in_flight(1)
        .reconnect(Reconnect::default().max_attempts(1))
        .build()
        .unwrap();
    let (mut d, handle) = connect(&client).await;
    d.send(request(4, "tools/call", json!({"name": "forever"})))
        .await;
    server
        .wait_for(|r| r.rpc_method() == Some("tools/call"))
        .await;
    // With one permit, the cancellation is only sent once the stream's permit is released
    // or ... it waits: send it and then a request that needs the permit.
    d.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                  "params":{"requestId":4}}))
        .await;
    d.send(request(5, "ping", json!({}))).await;
    let pong = d.recv().await;
    assert_eq!(pong["id"], 5);
    handle.close().await;
}

#[tokio::test]
async fn rejects_bad_urls() {
    assert!(matches!(
        StreamableHttpClient::builder("ftp://x/").build(),
        Err(HttpError::InvalidUrl(_))
    ));
    assert!(matches!(
        StreamableHttpClient::builder("not a url").build(),
        Err(HttpError::InvalidUrl(_))
    ));
}

#[tokio::test]
async fn speaks_http2_with_prior_knowledge() {
    let server = TestServer::start(|rec| async move {
        if let Some(r) = session_basics(&rec).await {
            return r;
        }
        let id = rec.rpc_id().unwrap_or(Value::Null);
        sse(&[event(&result(&id, json!({"tools": []})), Some("1"))])
    })
    .await;
    let client = StreamableHttpClient::builder(server.url("/mcp"))
        .http2_prior_knowledge(true)
        .build()
        .unwrap();
    let (mut d, handle) = connect(&client).await;
    init(&mut d).await;
    d.send(request(2, "tools/list", json!({}))).await;
    assert_eq!(d.recv().await["id"], 2);
    handle.close().await;
    let log = server.log();
    assert!(
        log.iter().all(|r| r.version == http::Version::HTTP_2),
        "{log:?}"
    );
}

#[tokio::test]
async fn the_next_post_waits_until_the_standalone_stream_is_open() {
    // The server is slow to answer the GET. Whatever it sends there in reaction to the next
    // POST (the conformance mocks send `elicitation/create`) would be lost if that POST went
    // out before the stream existed.
    let server = TestServer::start(|rec| async move {
        if rec.method == Method::GET {
            tokio::time::sleep(Duration::from_millis(300)).await;
            return open_sse(&[]).await;
        }
        if rec.rpc_method() == Some("tools/list") {
            return json(result(&rec.rpc_id().unwrap(), json!({"tools": []})));
        }
        session_basics(&rec).await.unwrap_or_else(|| status(500))
    })
    .await;
    let (mut d, handle) = connect_to(server.url("/mcp")).await;
    init(&mut d).await;
    d.send(request(2, "tools/list", json!({}))).await;
    assert_eq!(d.recv().await["id"], 2);
    let log = server.log();
    let get = log.iter().find(|r| r.method == Method::GET).expect("a GET");
    assert_eq!(get.header("mcp-session-id"), Some(SID));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    let list = log
        .iter()
        .find(|r| r.rpc_method() == Some("tools/list"))
        .unwrap();
    assert!(
        list.at >= get.at + Duration::from_millis(300),
        "tools/list was sent {:?} after the GET, before its answer",
        list.at - get.at
    );
    handle.close().await;
}

#[tokio::test]
async fn a_failed_standalone_get_is_retried_with_backoff() {
    let (server, gets) = with_standalone_gets(|_, n| async move {
        match n {
            0 => status(503),
            _ => {
                let note = json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"});
                open_sse(&[event(&note, Some("e1"))]).await
            }
        }
    })
    .await;
    let client = StreamableHttpClient::builder(server.url("/mcp"))
        .reconnect(Reconnect::default().initial_delay(Duration::from_millis(20)))
        .build()
        .unwrap();
    let (mut d, handle) = connect(&client).await;
    init(&mut d).await;
    let note = d.recv().await;
    assert_eq!(note["method"], "notifications/tools/list_changed");
    assert_eq!(gets.load(Ordering::SeqCst), 2);
    handle.close().await;
}

#[tokio::test]
async fn a_stateless_request_is_cancelled_by_closing_its_stream() {
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<()>();
    let closed_tx = Arc::new(std::sync::Mutex::new(Some(closed_tx)));
    let server = TestServer::start(move |rec| {
        let closed_tx = closed_tx.clone();
        async move {
            if rec.rpc_method() == Some("tools/call") {
                let (tx, resp) = sse_channel();
                tokio::spawn(async move {
                    tx.closed().await;
                    if let Some(done) = closed_tx.lock().unwrap().take() {
                        let _ = done.send(());
                    }
                });
                return resp;
            }
            status(500)
        }
    })
    .await;
    let (mut d, handle) = connect_to(server.url("/mcp")).await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    d.send(request(
        1,
        "tools/call",
        json!({"name": "slow", "_meta": meta}),
    ))
    .await;
    server
        .wait_for(|r| r.rpc_method() == Some("tools/call"))
        .await;
    d.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                  "params":{"requestId":1}}))
        .await;
    tokio::time::timeout(Duration::from_secs(5), closed_rx)
        .await
        .expect("the response stream was not closed")
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        server
            .log()
            .iter()
            .all(|r| r.rpc_method() != Some("notifications/cancelled")),
        "no cancellation POST on the stateless wire"
    );
    handle.close().await;
}
