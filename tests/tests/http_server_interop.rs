//! Interop over HTTP: the TypeScript SDK's `StreamableHTTPClientTransport` (pinned in
//! `tests/interop/package.json`) against our Streamable HTTP server serving the `everything`
//! example: session id, tools/list, a JSON or SSE answer, progress, a server-to-client sampling
//! request, DELETE. Requires `node` and `npm ci --prefix tests/interop` (done by
//! `scripts/test`); the test fails, never skips, when they are missing.
//!
//! Until `mcp-server` serves an `mcp_jsonrpc::Connection` directly, each HTTP session is bridged
//! to `Server::serve_io` over an in-memory pipe. The bridge loses the `related` tag of outbound
//! frames, so the server's progress and requests travel on the standalone GET stream here
//! rather than on the POST's own stream (the raw transport tests cover that routing).

#[path = "../../crates/mcp-server/examples/support/everything_server.rs"]
mod everything_server;

use std::path::Path;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use mcp_jsonrpc::codec::{CodecConfig, Framing};
use mcp_jsonrpc::{Connection, Frame, Inbound, Outbound};
use mcp_server::Server;
use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

/// Serves one HTTP session with `Server::serve_io` through a newline-framed in-memory pipe.
async fn serve_bridged(server: Server, connection: Connection) {
    let (near, far) = tokio::io::duplex(1 << 16);
    let (near_read, near_write) = tokio::io::split(near);
    let pipe = Connection::framed(near_read, near_write, Framing::Line, CodecConfig::default());
    let (far_read, far_write) = tokio::io::split(far);
    let (mut http_in, mut http_out) = connection.into_parts();
    let (mut pipe_in, mut pipe_out) = pipe.into_parts();
    let up = async move {
        while let Some(Ok(incoming)) = http_in.next().await {
            let frame = match incoming.frame {
                Ok(Inbound::Single(m)) => Frame::Single(m),
                Ok(Inbound::Batch(items)) => Frame::Batch(items.into_iter().flatten().collect()),
                Err(_) => continue,
            };
            if pipe_out.send(Outbound::new(frame)).await.is_err() {
                break;
            }
        }
        let _ = pipe_out.close().await;
    };
    let down = async move {
        while let Some(Ok(incoming)) = pipe_in.next().await {
            let frame = match incoming.frame {
                Ok(Inbound::Single(m)) => Frame::Single(m),
                Ok(Inbound::Batch(items)) => Frame::Batch(items.into_iter().flatten().collect()),
                Err(_) => continue,
            };
            if http_out.send(Outbound::new(frame)).await.is_err() {
                break;
            }
        }
    };
    let serve = async move {
        if let Err(e) = server.serve_io(far_read, far_write).await {
            eprintln!("session ended with an error: {e}");
        }
    };
    tokio::join!(up, down, serve);
}

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
    let service = StreamableHttpService::builder(move |conn| serve_bridged(server.clone(), conn))
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
