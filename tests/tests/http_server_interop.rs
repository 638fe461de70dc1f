//! Interop over HTTP: the TypeScript SDK's `StreamableHTTPClientTransport` (pinned in
//! `tests/interop/package.json`) against our Streamable HTTP server serving the `everything`
//! example: session id, tools/list, a JSON or SSE answer, progress, a server-to-client sampling
//! request, DELETE. Requires `node` and `npm ci --prefix tests/interop` (done by
//! `scripts/test`); the test fails, never skips, when they are missing.
//!
//! Each HTTP session runs `Server::serve` on the transport's connection, so the server's
//! progress and requests for a call travel on the POST's own SSE stream.

#[path = "../../crates/mcp-server/examples/support/everything_server.rs"]
mod everything_server;

use std::path::Path;
use std::time::Duration;

use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_streamable_http_client_talks_to_our_server() {
    let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("interop");
    assert!(
        interop
            .join("node_modules/@modelcontextprotocol/sdk")
            .is_dir(),
        "the TypeScript SDK is not installed: run `npm ci --prefix tests/interop` (scripts/test does)"
    );
    let server = everything_server::build();
    let service = StreamableHttpService::builder(server.connection_handler())
        .config(HttpServerConfig::default().path("/mcp"))
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(service.clone().serve_with_listener(listener, async {
        let _ = stopped.await;
    }));

    let script = interop.join("ts-http-client.mjs");
    let dir = interop.clone();
    let node_url = url.clone();
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || {
            std::process::Command::new("node")
                .arg(script)
                .arg(node_url)
                .current_dir(dir)
                .output()
        }),
    )
    .await
    .expect("the TypeScript client finished in time")
    .unwrap()
    .expect("`node` must be installed to run the interop test");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "TypeScript client failed ({}):\n{stderr}",
        output.status
    );
    assert!(stderr.contains("ok: DELETE ended the session"), "{stderr}");
    // The DELETE ended the session on our side too.
    assert_eq!(service.session_count(), 0);
    let _ = stop.send(());
    served.await.unwrap().unwrap();
}
