//! Interop over HTTP: the TypeScript SDK's `StreamableHTTPClientTransport` (pinned in
//! `tests/interop/package.json`) against our Streamable HTTP server serving the example server
//! (`mcp-example`): session id, tools/list, a JSON or SSE answer, progress, a server-to-client sampling
//! request, DELETE. Requires `node` and `npm ci --prefix tests/interop` (done by
//! `scripts/test`); the test fails, never skips, when they are missing.
//!
//! Each HTTP session runs `Server::serve` on the transport's connection, so the server's
//! progress and requests for a call travel on the POST's own SSE stream.

use std::time::Duration;

use mcp_tests::http::Served;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_streamable_http_client_talks_to_our_server() {
    mcp_tests::interop::package("sdk");
    let interop = mcp_tests::interop::dir();
    let served = Served::server(&mcp_example::server().expect("the example server builds")).await;
    let url = served.url("/mcp");

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
    assert_eq!(served.service().session_count(), 0);
    served.stop().await.unwrap();
}
