//! `mcp serve` (the bundled example server) and `mcp proxy` (a server exposed on another
//! transport).

use std::net::SocketAddr;
use std::sync::Arc;

use mcp_cli::bridge::{BridgeEnd, bridge};
use mcp_jsonrpc::Connection;
use mcp_transport_http::server::{HttpServerConfig, LegacySsePaths, StreamableHttpService};
use tokio::net::TcpListener;

use crate::args::{HttpServeArgs, ProxyArgs, ServeArgs};
use crate::target::{self, Target};
use crate::{Exit, Fail, chain};

fn http_config(options: &HttpServeArgs) -> HttpServerConfig {
    let mut config = HttpServerConfig::default()
        .path(options.path.clone())
        .max_sessions(options.max_sessions.max(1));
    if options.legacy_sse {
        config = config.legacy_sse(LegacySsePaths::default());
    }
    config
}

/// Ends on Ctrl-C, or on SIGTERM on Unix.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

async fn listen(
    service: StreamableHttpService,
    addr: SocketAddr,
    options: &HttpServeArgs,
    what: &str,
) -> Result<Exit, Fail> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| Fail::other(format!("cannot listen on {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| Fail::other(format!("cannot listen on {addr}: {e}")))?;
    // One line on stderr with the address (port 0 picks one), for people and scripts.
    eprintln!("mcp: serving {what} at http://{local}{}", options.path);
    service
        .serve_with_listener(listener, shutdown_signal())
        .await
        .map_err(|e| Fail::other(format!("serving HTTP on {local}: {e}")))?;
    Ok(Exit::Ok)
}

pub async fn serve(args: ServeArgs) -> Result<Exit, Fail> {
    let mut builder = mcp_example::builder();
    if let Some(dir) = &args.skills {
        builder = builder.skills(crate::skills::load_dir(dir)?);
    }
    let shared = crate::replicas::connect(&args.replicas).await?;
    let server = crate::replicas::configure_server(&args.replicas, &shared, builder)?
        .build()
        .map_err(|e| Fail::other(format!("the example server: {}", chain(&e))))?;
    match args.http {
        None => {
            server
                .serve_stdio()
                .await
                .map_err(|e| Fail::connect(format!("serving on stdio: {}", chain(&e))))?;
            Ok(Exit::Ok)
        }
        Some(addr) => {
            let service = StreamableHttpService::builder(server.connection_handler())
                .config(http_config(&args.http_options));
            let service = crate::replicas::configure_service(&shared, service).build();
            listen(service, addr, &args.http_options, "the example server").await
        }
    }
}

pub async fn proxy(args: ProxyArgs, verbose: u8) -> Result<Exit, Fail> {
    let target = target::resolve(&args.upstream)?;
    match args.http {
        None => {
            let upstream = target::open(&target, verbose).await?;
            let end = bridge(mcp_transport_stdio::stdio(), upstream.connection).await;
            let tail = upstream.guard.stderr_tail();
            upstream.guard.close().await;
            match end {
                BridgeEnd::ServerClosed(reason) => {
                    let mut message = format!(
                        "{} closed the connection{}",
                        target.describe(),
                        reason.map(|r| format!(": {r}")).unwrap_or_default()
                    );
                    if let Some(tail) = tail {
                        message.push_str("\nthe server's last words on stderr:\n");
                        message.push_str(&tail);
                    }
                    Err(Fail::connect(message))
                }
                _ => Ok(Exit::Ok),
            }
        }
        Some(addr) => {
            let what = format!("a proxy of {}", target.describe());
            let target = Arc::new(target);
            let service = StreamableHttpService::builder(move |connection: Connection| {
                let target = Arc::clone(&target);
                async move { serve_upstream(&target, connection, verbose).await }
            })
            .config(http_config(&args.http_options))
            .build();
            listen(service, addr, &args.http_options, &what).await
        }
    }
}

/// One HTTP session (or the shared stateless connection): its own upstream connection.
async fn serve_upstream(target: &Target, connection: Connection, verbose: u8) {
    match target::open(target, verbose).await {
        Ok(upstream) => {
            let end = bridge(connection, upstream.connection).await;
            tracing::debug!(?end, "proxied session ended");
            upstream.guard.close().await;
        }
        Err(fail) => {
            tracing::warn!(reason = %fail.message, "cannot open the upstream server; dropping the session");
        }
    }
}
