//! Two HTTP replicas sharing one real redis-server: a session opened on one serves on the
//! other, a stream is resumed on the other, and Redis going away gives 503 within the store's
//! timeout.

use crate::{http, support};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Answer, read_until, read_within, send, serve};
use mcp_store_redis::{RedisConfig, RedisStore};
use mcp_transport_http::server::HttpServerConfig;
use support::RedisServer;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const VERSION: &str = "2025-11-25";

async fn replica(url: &str, timeout: Duration) -> SocketAddr {
    let store = Arc::new(
        RedisStore::connect(
            url,
            RedisConfig {
                timeout,
                ..RedisConfig::default()
            },
        )
        .await
        .unwrap(),
    );
    let server = mcp_example::builder()
        .change_bus(store.clone())
        .build()
        .unwrap();
    let config = HttpServerConfig::default().store_touch_interval(Duration::ZERO);
    serve(&server, store, config).await
}

async fn initialize(addr: SocketAddr) -> Answer {
    initialize_with(addr, "{}").await
}

/// `initialize` with these client capabilities (JSON).
async fn initialize_with(addr: SocketAddr, capabilities: &str) -> Answer {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{VERSION}","capabilities":{capabilities},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    );
    send(addr, "POST", &[], Some(&body)).await
}

/// A session opened on `a` with these client capabilities and initialized through `b`: its
/// id.
async fn open_session(a: SocketAddr, b: SocketAddr, capabilities: &str) -> String {
    let init = initialize_with(a, capabilities).await;
    assert_eq!(init.status, 200, "{}", init.body);
    let sid = init.header("mcp-session-id").unwrap().to_owned();
    let done = post(
        b,
        &sid,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(done.status, 202, "{}", done.body);
    sid
}

async fn post(addr: SocketAddr, sid: &str, body: &str) -> Answer {
    send(
        addr,
        "POST",
        &[("Mcp-Session-Id", sid), ("MCP-Protocol-Version", VERSION)],
        Some(body),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_and_its_streams_move_between_replicas() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let a = replica(&redis.url(), Duration::from_secs(1)).await;
    let b = replica(&redis.url(), Duration::from_secs(1)).await;

    let sid = open_session(a, b, "{}").await;
    let tools = post(b, &sid, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#).await;
    assert_eq!(tools.status, 200, "{}", tools.body);
    assert!(tools.body.contains("countdown"), "{}", tools.body);

    // A stream written by A, resumed on B after its first event: the rest, once each.
    let call = post(
        a,
        &sid,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"countdown","arguments":{"steps":3,"delay_ms":10},"_meta":{"progressToken":"p"}}}"#,
    )
    .await;
    assert_eq!(call.status, 200, "{}", call.body);
    let ids = call.event_ids();
    assert!(
        ids.len() >= 5,
        "priming, 3 x (progress, log), result: {ids:?}"
    );
    assert!(call.body.contains("liftoff"), "{}", call.body);
    // A stream's events are stored just after they are written to the live stream: the last
    // may reach Redis a moment after the client read it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let resumed = send(
        b,
        "GET",
        &[
            ("Mcp-Session-Id", &sid),
            ("MCP-Protocol-Version", VERSION),
            ("Last-Event-ID", &ids[1]),
        ],
        None,
    )
    .await;
    assert_eq!(resumed.status, 200, "{}", resumed.body);
    assert_eq!(resumed.event_ids(), ids[2..].to_vec(), "{}", resumed.body);
    assert!(resumed.body.contains("liftoff"), "{}", resumed.body);

    // A stream that B opens after rebuilding the session gets ids A never gave out.
    let on_b = post(
        b,
        &sid,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"countdown","arguments":{"steps":1,"delay_ms":1},"_meta":{"progressToken":"q"}}}"#,
    )
    .await;
    let b_ids = on_b.event_ids();
    assert!(!b_ids.is_empty(), "{}", on_b.body);
    assert!(
        b_ids.iter().all(|id| !ids.contains(id)),
        "{b_ids:?} {ids:?}"
    );

    // Ended through B: A notices on its next request.
    let deleted = send(
        b,
        "DELETE",
        &[("Mcp-Session-Id", &sid), ("MCP-Protocol-Version", VERSION)],
        None,
    )
    .await;
    assert_eq!(deleted.status, 200);
    let gone = post(a, &sid, r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#).await;
    assert_eq!(gone.status, 404, "{}", gone.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_gives_503_within_the_timeout_and_the_replica_recovers() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let timeout = Duration::from_millis(500);
    let a = replica(&redis.url(), timeout).await;
    let init = initialize(a).await;
    assert_eq!(init.status, 200);
    let sid = init.header("mcp-session-id").unwrap().to_owned();

    redis.kill();
    let started = Instant::now();
    let refused = post(a, &sid, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.header("retry-after"), Some("1"));
    let fresh = initialize(a).await;
    assert_eq!(fresh.status, 503, "{}", fresh.body);
    assert!(
        started.elapsed() < timeout * 4,
        "503s took {:?}",
        started.elapsed()
    );

    redis.restart();
    let back = Instant::now();
    loop {
        let init = initialize(a).await;
        if init.status == 200 {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_secs(2),
            "still {} 2 s after Redis came back",
            init.status
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The restarted Redis lost the old session: 404, as for any expired session.
    let lost = post(a, &sid, r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#).await;
    assert_eq!(lost.status, 404, "{}", lost.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_elicitation_is_answered_through_another_replica() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let a = replica(&redis.url(), Duration::from_secs(1)).await;
    let b = replica(&redis.url(), Duration::from_secs(1)).await;
    let sid = open_session(a, b, r#"{"elicitation":{}}"#).await;

    // The tool runs on A and asks; the answer is POSTed to B.
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMcp-Session-Id: {sid}\r\nMCP-Protocol-Version: {VERSION}\r\nContent-Length: {}\r\n\r\n{call}",
        a.port(),
        call.len()
    );
    let mut stream = TcpStream::connect(a).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "elicitation/create").await;
    let asked: serde_json::Value = seen
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .find(|m| m["method"] == "elicitation/create")
        .unwrap_or_else(|| panic!("no elicitation request in {seen}"));
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": asked["id"],
        "result": {"action": "accept", "content": {"name": "Ada"}},
    });
    let forwarded = post(b, &sid, &answer.to_string()).await;
    assert_eq!(forwarded.status, 202, "{}", forwarded.body);
    read_until(&mut stream, &mut seen, "Hello, Ada!").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_through_one_replica_reaches_a_listen_stream_on_another() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let a = replica(&redis.url(), Duration::from_secs(1)).await;
    let b = replica(&redis.url(), Duration::from_secs(1)).await;
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}"#;
    let listen = format!(
        r#"{{"jsonrpc":"2.0","id":"listen","method":"subscriptions/listen","params":{{"_meta":{meta},"notifications":{{"resourceSubscriptions":["example://readme"]}}}}}}"#
    );
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{listen}",
        b.port(),
        listen.len()
    );
    let mut stream = TcpStream::connect(b).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut seen = String::new();
    read_until(
        &mut stream,
        &mut seen,
        "notifications/subscriptions/acknowledged",
    )
    .await;
    assert!(seen.contains("example://readme"), "not honoured: {seen}");

    let call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"touch","arguments":{{}},"_meta":{meta}}}}}"#
    );
    // B subscribes to the change bus in the background as it starts: a change made before
    // that is not heard, so A touches again until B hears one (at most 10 s).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let touched = send(
            a,
            "POST",
            &[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "touch"),
            ],
            Some(&call),
        )
        .await;
        assert_eq!(touched.status, 200, "{}", touched.body);
        let needle = "notifications/resources/updated";
        if read_within(&mut stream, &mut seen, needle, Duration::from_millis(500)).await {
            break;
        }
        assert!(Instant::now() < deadline, "no update within 10 s: {seen}");
    }
}
