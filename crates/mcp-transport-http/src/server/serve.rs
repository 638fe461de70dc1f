//! Serving the service on a TCP listener: HTTP/1.1 and h2c, TCP_NODELAY, graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

use super::security::LocalAddr;
use super::service::{ConnectionCache, StreamableHttpService};
use super::tracker::Tracker;

impl StreamableHttpService {
    /// Binds `addr` and serves until the process ends (Ctrl-C starts a graceful shutdown).
    pub async fn serve(self, addr: SocketAddr) -> std::io::Result<()> {
        let listener = TcpListener::bind(addr).await?;
        tracing::info!(addr = %listener.local_addr()?, "MCP HTTP server listening");
        self.serve_with_listener(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
    }

    /// Serves connections from `listener` until `shutdown` completes, then shuts down
    /// gracefully: no new connections, new requests get 503, standalone streams close,
    /// requests in flight get up to [`shutdown_timeout`] to finish, then every session ends.
    ///
    /// [`shutdown_timeout`]: super::HttpServerConfig::shutdown_timeout
    pub async fn serve_with_listener(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        let local = listener.local_addr()?;
        let mut builder = auto::Builder::new(TokioExecutor::new());
        let header_limit = self.config().max_header_size;
        builder
            .http1()
            .max_buf_size(header_limit.max(8192) + 8192)
            .http2()
            .max_header_list_size(u32::try_from(header_limit).unwrap_or(u32::MAX));
        let connections = Tracker::default();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let (stream, peer) = match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            // Out of file descriptors and the like: back off, keep serving.
                            tracing::warn!(error = %e, "accept failed");
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    if let Err(e) = stream.set_nodelay(true) {
                        tracing::debug!(error = %e, "could not set TCP_NODELAY");
                    }
                    // Each request holds the connection's own state, not the service: the
                    // count of references it updates is this connection's, not one every
                    // connection shares.
                    let state = Arc::new((self.clone(), ConnectionCache::default()));
                    // Only a listener off loopback changes what `HostPolicy::Auto` allows: a
                    // loopback one needs nothing, and every request is spared a map of
                    // extensions (three allocations).
                    let report = !local.ip().is_loopback();
                    let svc = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
                        if report {
                            req.extensions_mut().insert(LocalAddr(local));
                        }
                        let state = Arc::clone(&state);
                        async move {
                            let (service, cache) = &*state;
                            Ok::<_, std::convert::Infallible>(service.handle_on(req, Some(cache)).await)
                        }
                    });
                    let conn = builder.serve_connection(TokioIo::new(stream), svc).into_owned();
                    let conn = connections.watch(conn);
                    tokio::spawn(async move {
                        if let Err(e) = conn.await {
                            tracing::debug!(%peer, error = %e, "connection ended with an error");
                        }
                    });
                }
                () = &mut shutdown => break,
            }
        }
        drop(listener);
        tracing::info!("shutting down: waiting for requests in flight");
        self.begin_shutdown();
        let deadline = self.config().shutdown_timeout;
        if tokio::time::timeout(deadline, connections.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("shutdown deadline passed: closing the remaining connections");
        }
        self.close_all();
        Ok(())
    }
}
