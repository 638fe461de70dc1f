//! This project's client (`mcp-client` over the HTTP client transport) against this project's
//! HTTP server (`StreamableHttpService` serving the example server, `mcp-example`), for each
//! Streamable HTTP revision and for the 2024-11-05 HTTP+SSE transport.
//!
//! Each HTTP session runs `Server::serve` on the transport's connection: the server's requests
//! and notifications for a call reach the client on the POST's own stream.

use crate::client_support;

use std::time::Duration;

use client_support::{assert_sampling, call_with_progress};
use mcp_client::{
    CallError, Client, ClientSession, ConnectError, ElicitationAnswer, ElicitationRequest,
};
use mcp_tests::content::{model_reply, text_of};
use mcp_tests::http::Served;
use mcp_transport_http::client::{ClientMode, HttpClientHandle, StreamableHttpClient, Transport};
use mcp_transport_http::server::{
    HttpServerConfig, LegacySsePaths, ResponseMode, StreamableHttpService,
};
use mcp_types::{Implementation, ProtocolVersion};
use serde_json::json;

async fn start(config: HttpServerConfig) -> Served {
    let server = mcp_example::server().expect("the example server builds");
    Served::start(
        StreamableHttpService::builder(server.connection_handler())
            .config(config)
            .build(),
    )
    .await
}

fn client(version: ProtocolVersion) -> Client {
    Client::builder(Implementation::new("http-e2e", "1.0.0"))
        .protocol_version(version)
        .on_sample(|_req: mcp_types::CreateMessageRequestParams| async move {
            Ok(model_reply("test-model", "four"))
        })
        .on_elicit(|request: ElicitationRequest| async move {
            // The language only where the form offers it (2025-06-18 does not yet, see
            // `client_stdio.rs`).
            let offered = matches!(&request, ElicitationRequest::Form { schema, .. }
                if schema.fields().iter().any(|f| f.name == "language"));
            let answer = if offered {
                json!({"name": "Ada", "language": "german"})
            } else {
                json!({"name": "Ada"})
            };
            Ok(ElicitationAnswer::Accept(
                answer.as_object().unwrap().clone(),
            ))
        })
        .build()
}

async fn connect(
    url: String,
    mode: ClientMode,
    version: ProtocolVersion,
) -> Result<(ClientSession, HttpClientHandle), ConnectError> {
    let transport = StreamableHttpClient::builder(url)
        .mode(mode)
        .build()
        .unwrap();
    let (connection, handle) = transport.connect().await.unwrap();
    let session = client(version).connect(connection).await?;
    Ok((session, handle))
}

async fn exercise(version: ProtocolVersion, response_mode: ResponseMode) {
    let server = start(
        HttpServerConfig::default()
            .path("/mcp")
            .response_mode(response_mode),
    )
    .await;
    let url = server.url("/mcp");
    let (session, handle) = connect(url, ClientMode::StreamableHttp, version)
        .await
        .expect("connect");
    assert_eq!(session.protocol_version(), version);
    assert_eq!(handle.protocol_version().as_deref(), Some(version.as_str()));
    assert!(handle.session_id().is_some());
    assert_eq!(server.service().session_count(), 1);

    session.ping().await.unwrap();
    let echo = session
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(text_of(&echo.content), "hi");
    let (countdown, progress) =
        call_with_progress(&session, "countdown", json!({"steps": 3, "delay_ms": 50})).await;
    assert_eq!(text_of(&countdown.content), "liftoff after 3 steps");
    // Progress is related to the call: with SSE answers it travels on the POST's own stream,
    // before the result, so every update arrives. JSON answers cannot carry it; it goes to the
    // standalone GET stream and races the result (the client drops progress that arrives after
    // the result), so only a prefix is certain.
    let seen = progress;
    if response_mode == ResponseMode::Json {
        assert!(
            !seen.is_empty() && [1.0, 2.0, 3.0].starts_with(&seen),
            "{version}: {seen:?}"
        );
    } else {
        assert_eq!(seen, [1.0, 2.0, 3.0], "{version}");
    }
    // A server-to-client request during a call.
    assert_sampling(&session, version).await;
    if version >= ProtocolVersion::V2025_06_18 {
        let asked = session.call_tool("greet", json!({})).await.unwrap();
        let expected = if version >= ProtocolVersion::V2025_11_25 {
            "Hallo, Ada!"
        } else {
            "Hello, Ada!"
        };
        assert_eq!(text_of(&asked.content), expected, "{version}");
    }
    // Concurrent calls share the transport.
    let calls = (0..8).map(|i| session.call_tool("echo", json!({"text": format!("n{i}")})));
    for (i, r) in futures_util::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(text_of(&r.unwrap().content), format!("n{i}"));
    }

    // Closing sends DELETE: the server forgets the session.
    session.close().await;
    handle.closed().await;
    for _ in 0..100 {
        if server.service().session_count() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.service().session_count(), 0, "{version}: DELETE");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_2025_03_26() {
    exercise(ProtocolVersion::V2025_03_26, ResponseMode::Auto).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_2025_06_18_json_responses() {
    exercise(ProtocolVersion::V2025_06_18, ResponseMode::Json).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_2025_11_25_sse_responses() {
    exercise(ProtocolVersion::V2025_11_25, ResponseMode::Sse).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_sse_2024_11_05_by_fallback() {
    let server = start(
        HttpServerConfig::default()
            .path("/mcp")
            .legacy_sse(LegacySsePaths::default()),
    )
    .await;
    // The old transport's URL is the SSE endpoint: the POST there is refused, and the client
    // falls back.
    let url = server.url("/sse");
    let (session, handle) = connect(url, ClientMode::Auto, ProtocolVersion::V2024_11_05)
        .await
        .expect("connect");
    assert_eq!(handle.transport(), Transport::HttpSse);
    assert_eq!(session.protocol_version(), ProtocolVersion::V2024_11_05);
    let echo = session
        .call_tool("echo", json!({"text": "old"}))
        .await
        .unwrap();
    assert_eq!(text_of(&echo.content), "old");
    let sampled = session
        .call_tool("ask_model", json!({"question": "2+2?"}))
        .await
        .unwrap();
    assert_eq!(text_of(&sampled.content), "test-model answered: four");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_session_gives_404_then_reinitializes() {
    let server = start(HttpServerConfig::default().path("/mcp")).await;
    let url = server.url("/mcp");
    let (session, handle) = connect(
        url.clone(),
        ClientMode::StreamableHttp,
        ProtocolVersion::V2025_11_25,
    )
    .await
    .unwrap();
    let old_id = handle.session_id().unwrap();
    server.service().close_all();
    let failed = session.call_tool("echo", json!({"text": "x"})).await;
    assert!(
        matches!(
            failed,
            Err(CallError::Closed(_)) | Err(CallError::Transport(_))
        ),
        "{failed:?}"
    );
    let reason = tokio::time::timeout(Duration::from_secs(5), session.closed())
        .await
        .unwrap();
    assert!(reason.contains("session"), "{reason}");

    let (session, handle) = connect(
        url,
        ClientMode::StreamableHttp,
        ProtocolVersion::V2025_11_25,
    )
    .await
    .unwrap();
    assert_ne!(handle.session_id().unwrap(), old_id);
    let echo = session
        .call_tool("echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(text_of(&echo.content), "again");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_origin_is_rejected() {
    let server = start(HttpServerConfig::default().path("/mcp")).await;
    let transport = StreamableHttpClient::builder(server.url("/mcp"))
        .header(
            http::header::ORIGIN,
            http::HeaderValue::from_static("http://evil.example"),
        )
        .build()
        .unwrap();
    let (connection, _handle) = transport.connect().await.unwrap();
    let err = client(ProtocolVersion::V2025_11_25)
        .connect(connection)
        .await
        .unwrap_err();
    let text = format!("{err} {:?}", err);
    assert!(text.contains("403"), "{text}");
    assert_eq!(server.service().session_count(), 0);
}
