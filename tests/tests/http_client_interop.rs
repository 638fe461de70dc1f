//! Interop: this project's client over the HTTP client transport against the reference
//! `@modelcontextprotocol/server-everything` (pinned in `tests/interop/package.json`) started in
//! Streamable HTTP mode. Requires `node` and `npm ci --prefix tests/interop` (done by
//! `scripts/test`); the test fails, never skips, when they are missing.

use crate::client_support;

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client_support::call_with_progress;
use mcp_client::{CallError, Client, ClientSession};
use mcp_tests::content::{model_reply, text_of};
use mcp_tests::interop;
use mcp_transport_http::client::{StreamableHttpClient, Transport};
use mcp_types::{Implementation, ProtocolVersion};
use serde_json::json;

/// Kills the server process this test started when the test ends, however it ends.
struct ServerProcess(Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn start_everything(port: u16) -> ServerProcess {
    let child = Command::new("node")
        .arg(interop::reference_server("server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .current_dir(interop::dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("`node` must be installed to run the interop test");
    ServerProcess(child)
}

async fn wait_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "server-everything did not start listening"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Calls a tool the server registers only once it has seen `notifications/initialized`.
async fn call_late_tool(
    session: &ClientSession,
    name: &str,
    args: serde_json::Value,
) -> mcp_types::CallToolResult {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match session.call_tool(name, args.clone()).await {
            Ok(r) if r.is_error != Some(true) || Instant::now() > deadline => return r,
            Err(CallError::Rpc(_)) if Instant::now() < deadline => {}
            Ok(_) => {}
            Err(e) => panic!("{name}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_talks_to_server_everything_over_streamable_http() {
    let port = free_port();
    let _server = start_everything(port);
    wait_listening(port).await;

    let sampled = Arc::new(Mutex::new(0));
    let count = sampled.clone();
    let client = Client::builder(Implementation::new("http-interop", "1.0.0"))
        .protocol_version(ProtocolVersion::V2025_11_25)
        .on_sample(move |_req: mcp_types::CreateMessageRequestParams| {
            let count = count.clone();
            async move {
                *count.lock().unwrap() += 1;
                Ok(model_reply("interop-model", "forty-two"))
            }
        })
        .build();
    let transport = StreamableHttpClient::builder(format!("http://127.0.0.1:{port}/mcp"))
        .build()
        .unwrap();
    let (connection, handle) = transport.connect().await.unwrap();
    let session = client.connect(connection).await.expect("initialize");
    assert_eq!(session.protocol_version(), ProtocolVersion::V2025_11_25);
    assert_eq!(handle.transport(), Transport::StreamableHttp);
    assert!(handle.session_id().is_some(), "the server assigns sessions");
    assert_eq!(handle.protocol_version().as_deref(), Some("2025-11-25"));

    let tools = session.list_all_tools().await.unwrap();
    for name in ["echo", "get-sum", "trigger-long-running-operation"] {
        assert!(tools.iter().any(|t| t.name == name), "no tool {name}");
    }
    let echo = session
        .call_tool("echo", json!({"message": "hello"}))
        .await
        .unwrap();
    assert_eq!(text_of(&echo.content), "Echo: hello");
    let sum = session
        .call_tool("get-sum", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert!(text_of(&sum.content).contains("42"), "{sum:?}");

    // Progress notifications arrive on the call's SSE stream, before the result.
    let (long, progress) = call_with_progress(
        &session,
        "trigger-long-running-operation",
        json!({"duration": 0.3, "steps": 3}),
    )
    .await;
    assert!(text_of(&long.content).contains("completed"), "{long:?}");
    assert_eq!(progress.len(), 3, "{progress:?}");

    // A server-to-client request on the call's stream, answered with a POST.
    let result = call_late_tool(
        &session,
        "trigger-sampling-request",
        json!({"prompt": "6*7?"}),
    )
    .await;
    assert!(text_of(&result.content).contains("forty-two"), "{result:?}");
    assert_eq!(*sampled.lock().unwrap(), 1);

    session.close().await;
    tokio::time::timeout(Duration::from_secs(10), handle.closed())
        .await
        .expect("the transport closes (DELETE sent)");
}
