//! Serving the service on a TCP listener: HTTP/1.1 and h2c, TCP_NODELAY, graceful shutdown,
//! and the per-connection limits (header-read and idle timeouts, HTTP/2 keep-alive pings, a
//! cap on open connections).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

use super::reaper::{Activity, GuardedBody, REFUSAL, REFUSAL_LOG_INTERVAL, WatchedIo};
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
    /// Each connection is held to the configured [`header_read_timeout`], [`idle_timeout`]
    /// and HTTP/2 keep-alive pings, and at most [`max_connections`] are served at once.
    ///
    /// [`shutdown_timeout`]: super::HttpServerConfig::shutdown_timeout
    /// [`header_read_timeout`]: super::HttpServerConfig::header_read_timeout
    /// [`idle_timeout`]: super::HttpServerConfig::idle_timeout
    /// [`max_connections`]: super::HttpServerConfig::max_connections
    pub async fn serve_with_listener(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        let local = listener.local_addr()?;
        let mut builder = auto::Builder::new(TokioExecutor::new());
        let config = self.config();
        let header_limit = config.max_header_size;
        let (header_timeout, idle_timeout) = (config.header_read_timeout, config.idle_timeout);
        let max_connections = config.max_connections;
        builder
            .http1()
            .timer(TokioTimer::new())
            // hyper's own header timer also runs while a connection is idle between requests;
            // both limits are kept apart by the connection's watcher (see `reaper`).
            .header_read_timeout(None)
            .max_buf_size(header_limit.max(8192) + 8192)
            .http2()
            .timer(TokioTimer::new())
            .keep_alive_interval(config.http2_keep_alive_interval)
            .keep_alive_timeout(config.http2_keep_alive_timeout)
            .max_header_list_size(u32::try_from(header_limit).unwrap_or(u32::MAX));
        let connections = Tracker::default();
        // Connections refused since the last warning, and when that was.
        let mut refused = 0u64;
        let mut warned: Option<tokio::time::Instant> = None;
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
                    if connections.open() >= max_connections {
                        refused += 1;
                        if warned.is_none_or(|at| at.elapsed() >= REFUSAL_LOG_INTERVAL) {
                            tracing::warn!(
                                limit = max_connections,
                                refused,
                                "too many open connections: refusing new ones with 503"
                            );
                            warned = Some(tokio::time::Instant::now());
                            refused = 0;
                        }
                        // Best effort, without waiting: the socket's buffer takes it.
                        let _ = stream.try_write(REFUSAL);
                        drop(stream);
                        continue;
                    }
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
                    let activity = Arc::new(Activity::new());
                    let requests = Arc::clone(&activity);
                    let svc = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
                        if report {
                            req.extensions_mut().insert(LocalAddr(local));
                        }
                        let state = Arc::clone(&state);
                        let guard = requests.begin(req.version());
                        async move {
                            let (service, cache) = &*state;
                            let response = service.handle_on(req, Some(cache)).await;
                            Ok::<_, std::convert::Infallible>(
                                response.map(|body| GuardedBody::new(body, guard)),
                            )
                        }
                    });
                    let expiry = activity.expired(header_timeout, idle_timeout);
                    let io = TokioIo::new(WatchedIo::new(stream, activity));
                    let conn = builder.serve_connection(io, svc).into_owned();
                    let mut conn = connections.watch(conn);
                    tokio::spawn(async move {
                        tokio::select! {
                            // The connection first: the watcher only looks at what it did.
                            biased;
                            ended = &mut conn => {
                                if let Err(e) = ended {
                                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                                }
                            }
                            why = expiry => {
                                tracing::debug!(%peer, reason = why.as_str(), "closing the connection");
                            }
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
