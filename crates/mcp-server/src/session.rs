//! One stateful session over a [`Connection`]: the `initialize` lifecycle as a
//! [`mcp_jsonrpc::Handler`] run by the request engine, the session's way of reaching its client
//! and the list-changed fan-out.
//!
//! The engine does the JSON-RPC work (ids, the pending map, cancellation both ways, timeouts,
//! bounded concurrency, batches, answers to bad input); this module only adds what a session
//! knows: the negotiated revision and the client, the logging level and the subscriptions.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use mcp_jsonrpc::{
    Connection, ErrorObject, Handler, Notification, NotificationContext, Peer, RawJson,
    RequestOptions, WhenWoken,
};
use mcp_types::{
    ClientCapabilities, Implementation, InitializeResult, InputResponse, ProtocolVersion,
    ResourceUpdatedNotificationParams,
};
use mcp_types::{methods, wire};
use serde_json::value::RawValue;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::context::{BoxFuture, ClientChannel, ClientScope, LogThreshold, Resume};
use crate::dispatch::{Origin, dispatch, empty, encode, encode_params};
use crate::error::{AskError, ServeError, not_initialized};
use crate::handler::{Endpoint, Next, Request};
use crate::input::Outgoing;
use crate::registry::ServerEvent;
use crate::server::Server;
use crate::stateless::mrtr::InputRequired;
use crate::stateless::serve;
use crate::stateless::shim::{self, SessionInputs};

/// The state of one session.
struct Session {
    server: Server,
    /// Set once by `initialize`; read without a lock by every later request.
    scope: OnceLock<Arc<ClientScope>>,
    subscriptions: Mutex<HashSet<String>>,
    /// The connection's own peer, for messages that outlive their request (a task's).
    peer: OnceLock<Peer>,
}

/// `initialize` params, read leniently: `capabilities` may be missing (some early clients omit
/// it), everything else as the schema says.
#[derive(serde::Deserialize)]
struct InitializeParams {
    #[serde(rename = "protocolVersion")]
    protocol_version: String,
    #[serde(default)]
    capabilities: Option<ClientCapabilities>,
    #[serde(rename = "clientInfo")]
    client_info: Implementation,
}

impl Session {
    fn initialize(&self, raw: Option<&RawValue>, peer: &Peer) -> Result<RawJson, ErrorObject> {
        let p: InitializeParams = serde_json::from_str(raw.map_or("{}", RawValue::get))
            .map_err(ErrorObject::invalid_params)?;
        // Answer with the client's revision when it is one of ours, else with our newest.
        let version = wire::negotiate_session(&p.protocol_version);
        let options = &self.server.inner.options;
        let scope = Arc::new(ClientScope {
            version,
            info: Some(p.client_info),
            capabilities: p.capabilities.unwrap_or_default(),
            log: LogThreshold::new(options.default_log_level),
        });
        if self.scope.set(scope).is_err() {
            return Err(ErrorObject::invalid_request(
                "the session is already initialized",
            ));
        }
        peer.set_batches_allowed(wire::batches_allowed(version));
        tracing::debug!(%version, "session initialized");
        let inner = &self.server.inner;
        let result = InitializeResult {
            meta: None,
            capabilities: inner.handler.capabilities(),
            instructions: inner.instructions.clone(),
            protocol_version: version.as_str().to_owned(),
            server_info: inner.info.clone(),
        };
        encode(result, version)
    }
}

/// The session's way of reaching its client: requests and notifications on the connection,
/// tagged with the inbound request they belong to (so HTTP puts them on that POST's stream).
struct SessionChannel {
    peer: Peer,
    /// Answers gathered for an [`InputRequired`](crate::InputRequired) handler; made on the
    /// first ask (most requests never ask).
    inputs: OnceLock<Arc<SessionInputs>>,
    max_input_rounds: u16,
    /// [`ServerOptions::force_input_replay`](crate::ServerOptions::force_input_replay).
    replay: bool,
    /// The connection's own peer (see `ClientChannel::detached`).
    #[cfg(feature = "tasks")]
    session_peer: Option<Peer>,
    /// The session's revision, for the spans of what the server sends.
    #[cfg(feature = "otel")]
    version: ProtocolVersion,
}

impl SessionChannel {
    fn inputs(&self) -> &Arc<SessionInputs> {
        self.inputs.get_or_init(Arc::default)
    }

    /// Replay mode: an ask is answered from an earlier round or recorded, never sent now.
    fn replayed(
        &self,
        key: &str,
        request: mcp_types::InputRequest,
    ) -> Result<Box<RawValue>, AskError> {
        if let Some(answer) = self.inputs().response(key) {
            return mcp_jsonrpc::to_raw(&answer)
                .map_err(|e| AskError::InvalidResponse(e.to_string()));
        }
        self.inputs().pend(key, request);
        Err(AskError::InputRequired)
    }
}

impl ClientChannel for SessionChannel {
    fn request(
        &self,
        key: &str,
        ask: Outgoing,
        cancel: &CancellationToken,
    ) -> BoxFuture<'static, Result<Box<RawValue>, AskError>> {
        if self.replay {
            let result = self.replayed(key, ask.request);
            return Box::pin(std::future::ready(result));
        }
        let Outgoing { method, params, .. } = ask;
        // The telemetry hook of what the server sends: a span, its context in `_meta`.
        #[cfg(feature = "otel")]
        let (params, operation) = match crate::otel::installed() {
            Some(telemetry) => {
                let operation = telemetry.start_sent(method, Some(self.version), params.as_deref());
                (operation.inject(params), Some(operation))
            }
            None => (params, None),
        };
        // The engine applies the timeout and the limit on pending requests; dropping the call
        // (the handler's request was cancelled) sends `notifications/cancelled`.
        let options = RequestOptions::new();
        #[cfg(feature = "otel")]
        let options = match &operation {
            Some(operation) => operation.options(options),
            None => options,
        };
        let call = self.peer.request(method, params, options);
        let cancel = cancel.clone();
        Box::pin(async move {
            let r = cancel
                .run_until_cancelled(call)
                .await
                .ok_or(AskError::Cancelled)?;
            #[cfg(feature = "otel")]
            if let Some(operation) = operation {
                operation.end_sent(&r);
            }
            r.map_err(AskError::from_rpc)
        })
    }

    fn notify(&self, method: &'static str, params: Box<RawValue>) -> BoxFuture<'static, ()> {
        #[cfg(feature = "otel")]
        let (params, operation) = match crate::otel::installed() {
            Some(telemetry) => {
                let operation = telemetry.start_sent(method, Some(self.version), Some(&params));
                let params = operation.inject(Some(params.clone())).unwrap_or(params);
                (params, Some(operation))
            }
            None => (params, None),
        };
        let peer = self.peer.clone();
        Box::pin(async move {
            let sent = peer.notify(method, Some(params)).await;
            if let Err(e) = &sent {
                tracing::debug!(%method, error = %e, "notification not sent");
            }
            #[cfg(feature = "otel")]
            if let Some(operation) = operation {
                operation.end_sent(&sent.map(|()| RawValue::NULL.to_owned()));
            }
        })
    }

    fn input_response(&self, key: &str) -> Option<InputResponse> {
        self.inputs.get()?.response(key)
    }

    fn input_state(&self) -> Option<serde_json::Value> {
        self.inputs.get()?.state()
    }

    fn input_required(
        &self,
        ask: InputRequired,
        scope: &Arc<ClientScope>,
        cancel: &CancellationToken,
    ) -> BoxFuture<'static, Result<Resume, ErrorObject>> {
        Box::pin(shim::fulfil(
            self.peer.clone(),
            Arc::clone(scope),
            Arc::clone(self.inputs()),
            ask,
            cancel.clone(),
            self.max_input_rounds,
        ))
    }

    fn take_pending(&self) -> Option<InputRequired> {
        if self.replay {
            self.inputs.get()?.take_pending()
        } else {
            None
        }
    }

    fn records_asks(&self) -> bool {
        self.replay
    }

    #[cfg(feature = "tasks")]
    fn detached(&self) -> Option<Arc<dyn ClientChannel>> {
        let peer = self.session_peer.clone()?;
        Some(Arc::new(SessionChannel {
            peer,
            inputs: OnceLock::new(),
            max_input_rounds: self.max_input_rounds,
            replay: self.replay,
            #[cfg(feature = "tasks")]
            session_peer: None,
            #[cfg(feature = "otel")]
            version: self.version,
        }))
    }
}

/// The end of the middleware chain for a request of the stateless revision.
struct StatelessEndpoint<'a> {
    server: &'a Server,
    rpc: &'a mcp_jsonrpc::RequestContext,
}

impl Endpoint for StatelessEndpoint<'_> {
    fn call(&self, request: Request) -> BoxFuture<'_, Result<RawJson, ErrorObject>> {
        Box::pin(serve::serve(self.server, self.rpc, request))
    }
}

/// The end of the middleware chain for a request on a session.
struct SessionEndpoint<'a> {
    session: &'a Session,
    rpc: &'a mcp_jsonrpc::RequestContext,
}

/// Serves a request of the session with the request's own peer handle and cancellation token
/// (moved, not cloned, when no middleware borrows the request's context).
///
/// Not an `async fn`: the boxed future is all its callers hold, so the futures of the engine's
/// requests stay small enough for the allocator's per-thread cache.
fn serve_session(
    session: &Session,
    peer: Peer,
    cancel: mcp_jsonrpc::Cancellation,
    request: Request,
) -> BoxFuture<'_, Result<RawJson, ErrorObject>> {
    match route(session, peer, cancel, request) {
        Route::Answered(answer) => Box::pin(std::future::ready(answer)),
        // Boxed: held in place, dispatch's future would make every request's future too large
        // for the allocator's fast per-thread cache (one large allocation costs more than two
        // small ones).
        Route::Dispatch(origin, request) => Box::pin(dispatch(&session.server, origin, request)),
    }
}

/// [`serve_session`] for [`SessionHandler::serve`]: one box, holding the session the dispatch
/// borrows.
fn serve_session_owned(
    session: Arc<Session>,
    peer: Peer,
    cancel: mcp_jsonrpc::Cancellation,
    request: Request,
) -> BoxFuture<'static, Result<RawJson, ErrorObject>> {
    Box::pin(async move {
        match route(&session, peer, cancel, request) {
            Route::Answered(answer) => answer,
            Route::Dispatch(origin, request) => dispatch(&session.server, origin, request).await,
        }
    })
}

/// Where a session's request goes: answered by the session itself, or dispatched.
enum Route<'a> {
    Answered(Result<RawJson, ErrorObject>),
    Dispatch(Origin<'a>, Request),
}

fn route(
    session: &Session,
    peer: Peer,
    cancel: mcp_jsonrpc::Cancellation,
    request: Request,
) -> Route<'_> {
    match request.method.as_str() {
        "initialize" => {
            return Route::Answered(session.initialize(request.params.as_deref(), &peer));
        }
        "ping" => return Route::Answered(empty()),
        _ => {}
    }
    let Some(scope) = session.scope.get() else {
        return Route::Answered(Err(not_initialized(&request.method)));
    };
    let options = &session.server.inner.options;
    let origin = Origin {
        scope: Arc::clone(scope),
        channel: Arc::new(SessionChannel {
            peer,
            inputs: OnceLock::new(),
            max_input_rounds: options.max_input_rounds,
            replay: options.force_input_replay,
            #[cfg(feature = "tasks")]
            session_peer: session.peer.get().cloned(),
            #[cfg(feature = "otel")]
            version: scope.version,
        }),
        cancel,
        subscriptions: Some(&session.subscriptions),
    };
    Route::Dispatch(origin, request)
}

impl Endpoint for SessionEndpoint<'_> {
    fn call(&self, request: Request) -> BoxFuture<'_, Result<RawJson, ErrorObject>> {
        serve_session(
            self.session,
            self.rpc.peer().clone(),
            self.rpc.cancellation_handle().clone(),
            request,
        )
    }
}

/// [`with_context`] with the context's extensions moved out of it (no clone).
fn with_extensions(
    request: mcp_jsonrpc::Request,
    extensions: mcp_jsonrpc::Extensions,
    protocol_version: Option<ProtocolVersion>,
) -> Request {
    Request {
        id: request.id,
        method: request.method,
        params: request.params,
        protocol_version,
        extensions,
    }
}

/// The request middleware and handlers see: the wire request, the revision it is served
/// under and what the transport attached.
fn with_context(
    request: mcp_jsonrpc::Request,
    cx: &mcp_jsonrpc::RequestContext,
    protocol_version: Option<ProtocolVersion>,
) -> Request {
    with_extensions(request, cx.extensions().clone(), protocol_version)
}

/// The session as the engine's handler.
#[derive(Clone)]
struct SessionHandler(Arc<Session>);

impl std::borrow::Borrow<Server> for SessionHandler {
    fn borrow(&self) -> &Server {
        &self.0.server
    }
}

impl SessionHandler {
    /// The telemetry hook's start for a request: the one place every request of every
    /// transport and era passes ([`Handler::handle_request`], whichever way the engine was
    /// handed the request), with its method, id, params (the target and the trace context in
    /// `_meta`), the transport's extensions (the HTTP session, the request's headers) and the
    /// revision it is served under.
    #[cfg(feature = "otel")]
    fn observe(
        &self,
        telemetry: &'static crate::otel::Telemetry,
        request: &mcp_jsonrpc::Request,
        extensions: &mcp_jsonrpc::Extensions,
    ) -> crate::otel::Operation {
        let params = request.params.as_deref();
        let version = match serve::classify(&request.method, params) {
            Some(version) => version,
            None => self.0.scope.get().map(|s| s.version),
        };
        telemetry.start(crate::otel::Inbound {
            method: &request.method,
            id: Some(&request.id),
            params,
            extensions,
            version,
        })
    }

    /// Serves a request. Without middleware, a session's request without `_meta` is dispatched
    /// without an attempt to classify it, and a stateless request's params are read once
    /// instead of once to classify it and again to serve it; anything else takes the general
    /// path ([`serve_request`](Self::serve_request)).
    ///
    /// Not an `async fn`: each path is boxed on its own, so each allocates and moves a future
    /// of its own size, not one as large as the general path's (measured: the stateless rows
    /// of `docs/performance.md` lose about 15% with one future sized for every path).
    fn serve(
        self,
        request: mcp_jsonrpc::Request,
        cx: mcp_jsonrpc::RequestContext,
    ) -> BoxFuture<'static, Result<RawJson, ErrorObject>> {
        if self.0.server.inner.middleware.is_empty() {
            if !serve::may_be_stateless(&request.method, request.params.as_deref()) {
                let version = self.0.scope.get().map(|s| s.version);
                let parts = cx.into_parts();
                let request = with_extensions(request, parts.extensions, version);
                return serve_session_owned(self.0, parts.peer, parts.cancellation, request);
            }
            // Params that lift are those of a stateless request: `_meta` names a supported
            // revision.
            if let Ok(lifted) = serve::lift(&request.method, request.params.as_deref()) {
                let request = with_context(request, &cx, Some(lifted.version()));
                return Box::pin(serve::serve_lifted(self, cx, request, lifted));
            }
        }
        Box::pin(async move { self.serve_request(request, cx).await })
    }

    /// The general path of [`serve`](Self::serve): middleware, classification.
    async fn serve_request(
        &self,
        request: mcp_jsonrpc::Request,
        cx: mcp_jsonrpc::RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let session = &*self.0;
        let chain = &session.server.inner.middleware;
        // A request carrying the stateless revision's `_meta` is served on its own, whatever
        // the connection did before; anything else belongs to the session.
        let stateless = serve::classify(&request.method, request.params.as_deref());
        let version = match stateless {
            Some(version) => version,
            None => session.scope.get().map(|s| s.version),
        };
        // Without middleware a session's request is served in place, with the context's
        // pieces moved: the chain's boxed future (one allocation per request) is only for
        // servers that have one.
        if stateless.is_none() && chain.is_empty() {
            let parts = cx.into_parts();
            let request = with_extensions(request, parts.extensions, version);
            return serve_session(session, parts.peer, parts.cancellation, request).await;
        }
        let request = with_context(request, &cx, version);
        if stateless.is_some() {
            // Always through the (boxing) endpoint: the stateless future is large, and held in
            // place it would size every request's future on this connection.
            let endpoint = StatelessEndpoint {
                server: &session.server,
                rpc: &cx,
            };
            return Next {
                chain,
                endpoint: &endpoint,
            }
            .run(request)
            .await;
        }
        let endpoint = SessionEndpoint { session, rpc: &cx };
        Next {
            chain,
            endpoint: &endpoint,
        }
        .run(request)
        .await
    }
}

impl Handler for SessionHandler {
    fn handle_request(
        &self,
        request: mcp_jsonrpc::Request,
        cx: mcp_jsonrpc::RequestContext,
    ) -> impl Future<Output = Result<RawJson, ErrorObject>> + Send {
        // Off (no feature, or nothing installed) the request's future is `serve`'s own: the
        // hook adds a branch on a static, and nothing to the future.
        #[cfg(feature = "otel")]
        {
            use tokio_util::either::Either;
            if let Some(telemetry) = crate::otel::installed() {
                let operation = self.observe(telemetry, &request, cx.extensions());
                let served = self.clone().serve(request, cx);
                return Either::Left(crate::otel::traced(operation, served));
            }
            Either::Right(self.clone().serve(request, cx))
        }
        #[cfg(not(feature = "otel"))]
        self.clone().serve(request, cx)
    }

    async fn handle_notification(&self, notification: Notification, cx: NotificationContext) {
        #[cfg(feature = "otel")]
        let operation = crate::otel::installed().map(|telemetry| {
            telemetry.start(crate::otel::Inbound {
                method: &notification.method,
                id: None,
                params: notification.params.as_deref(),
                extensions: cx.extensions(),
                version: self.0.scope.get().map(|s| s.version),
            })
        });
        #[cfg(not(feature = "otel"))]
        let _ = cx;
        // Cancellation and progress are the engine's; nothing else needs an action.
        match notification.method.as_str() {
            "notifications/initialized" => tracing::debug!("client initialized"),
            "notifications/roots/list_changed" => tracing::debug!("client roots changed"),
            other => tracing::debug!(method = other, "notification ignored"),
        }
        #[cfg(feature = "otel")]
        if let Some(operation) = operation {
            operation.end(None);
        }
    }
}

/// Forwards registry events to the client: list changes to every initialized session, resource
/// updates to the sessions subscribed to the URI. Unrelated to any request (HTTP sends them on
/// the standalone stream).
async fn fan_out(
    session: Arc<Session>,
    peer: Peer,
    mut events: tokio::sync::broadcast::Receiver<ServerEvent>,
) {
    loop {
        let event = match events.recv().await {
            Ok(e) => e,
            Err(RecvError::Lagged(n)) => {
                tracing::debug!(missed = n, "list-change events lagged");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let Some(scope) = session.scope.get() else {
            continue;
        };
        let exists =
            |method: &str| methods::lookup(method).is_some_and(|m| m.available_in(scope.version));
        let version = scope.version;
        let sent = match &event {
            ServerEvent::ToolsChanged => {
                list_changed(&peer, "notifications/tools/list_changed", exists, version).await
            }
            ServerEvent::ResourcesChanged => {
                list_changed(
                    &peer,
                    "notifications/resources/list_changed",
                    exists,
                    version,
                )
                .await
            }
            ServerEvent::PromptsChanged => {
                list_changed(&peer, "notifications/prompts/list_changed", exists, version).await
            }
            ServerEvent::ResourceUpdated(uri) => {
                let subscribed = session
                    .subscriptions
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .contains(uri);
                if !subscribed || !exists("notifications/resources/updated") {
                    continue;
                }
                let params = ResourceUpdatedNotificationParams {
                    meta: None,
                    uri: uri.clone(),
                };
                match encode_params(params, scope.version) {
                    Ok(raw) => {
                        fanned(&peer, "notifications/resources/updated", Some(raw), version).await
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "resource update not sent");
                        true
                    }
                }
            }
        };
        if !sent {
            return;
        }
    }
}

async fn list_changed(
    peer: &Peer,
    method: &'static str,
    exists: impl Fn(&str) -> bool,
    version: ProtocolVersion,
) -> bool {
    if !exists(method) {
        return true;
    }
    fanned(peer, method, None, version).await
}

/// Sends one notification of the fan-out; whether the connection took it. With telemetry,
/// each is a span of its own (kind `CLIENT`, a root: it belongs to no request), its context
/// in the notification's `_meta`.
async fn fanned(
    peer: &Peer,
    method: &'static str,
    params: Option<Box<RawValue>>,
    version: ProtocolVersion,
) -> bool {
    #[cfg(feature = "otel")]
    if let Some(telemetry) = crate::otel::installed() {
        let operation = telemetry.start_sent(method, Some(version), params.as_deref());
        let params = operation.inject(params);
        let sent = peer
            .notify(method, params)
            .await
            .map(|()| RawValue::NULL.to_owned());
        operation.end_sent(&sent);
        return sent.is_ok();
    }
    #[cfg(not(feature = "otel"))]
    let _ = version;
    peer.notify(method, params).await.is_ok()
}

impl Server {
    /// Serves one session over a transport connection until it closes: reads requests and
    /// notifications, answers them, and sends what handlers and the registry produce.
    ///
    /// Any transport that yields an [`mcp_jsonrpc::Connection`] works: stdio
    /// ([`serve_stdio`](Self::serve_stdio)), a byte stream ([`serve_io`](Self::serve_io)), an
    /// in-memory pair, or each session the HTTP transport hands out (see
    /// [`connection_handler`](Self::connection_handler)). Messages a handler causes (progress,
    /// log messages, sampling, elicitation and roots requests) are tagged with the request they
    /// belong to, so the HTTP transport sends them on that request's stream.
    ///
    /// Returns `Ok(())` when the peer closes the connection (end of input), after in-flight
    /// requests were cancelled and queued messages flushed; an error when the transport fails.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use mcp_server::{Server, model::Implementation};
    ///
    /// let server = Server::builder(Implementation::new("demo", "1.0.0")).build().unwrap();
    /// let (client_side, server_side) = mcp_jsonrpc::memory_pair(16);
    /// let serving = tokio::spawn({
    ///     let server = server.clone();
    ///     async move { server.serve(server_side).await }
    /// });
    /// // ... run a client over `client_side`; dropping it ends the session:
    /// drop(client_side);
    /// serving.await.unwrap().unwrap();
    /// # }
    /// ```
    pub async fn serve(&self, connection: Connection) -> Result<(), ServeError> {
        self.start(connection).await
    }

    /// Starts serving `connection` now (its engine's inlet handed to the transport, if it asks
    /// for one) and gives the future that serves it to the end. Must be called inside a Tokio
    /// runtime.
    fn start(
        &self,
        connection: Connection,
    ) -> impl Future<Output = Result<(), ServeError>> + Send + 'static {
        let session = Arc::new(Session {
            server: self.clone(),
            scope: OnceLock::new(),
            subscriptions: Mutex::new(HashSet::new()),
            peer: OnceLock::new(),
        });
        // Subscribed now, not when the session is first polled: over stdio the reader thread
        // serves requests (a subscription, a tool announcing an update) before the runtime
        // polls the session, and an event sent before the subscription would be lost.
        let server_events = self.inner.registry.subscribe();
        let handler = SessionHandler(Arc::clone(&session));
        let (peer, mut driver) = self.inner.options.engine().start(connection, handler);
        let _ = session.peer.set(peer.clone());
        #[cfg(feature = "otel")]
        let started = std::time::Instant::now();
        async move {
            #[cfg(feature = "otel")]
            let scope = Arc::clone(&session);
            let mut forwarding = std::pin::pin!(fan_out(session, peer, server_events));
            let mut events = WhenWoken::new(forwarding.as_mut());
            // The driver first: the session's events end when it does.
            let ended = std::future::poll_fn(|cx| match std::pin::Pin::new(&mut driver).poll(cx) {
                std::task::Poll::Ready(r) => std::task::Poll::Ready(Some(r)),
                std::task::Poll::Pending => std::pin::Pin::new(&mut events).poll(cx).map(|()| None),
            })
            .await;
            let result = match ended {
                Some(r) => r,
                None => driver.await,
            };
            // A session is a connection that was initialized (HTTP's shared connection for
            // stateless requests never is).
            #[cfg(feature = "otel")]
            if let (Some(telemetry), Some(scope)) = (crate::otel::installed(), scope.scope.get()) {
                telemetry.session_ended(started, scope.version, result.is_err());
            }
            result.map_err(ServeError::from)
        }
    }

    /// A function serving one connection per call, for transports that hand out connections:
    /// the HTTP service calls it for every session (and once for its shared stateless
    /// connection). Transport errors are logged at `debug` level.
    ///
    /// ```no_run
    /// # async fn run(server: mcp_server::Server) -> std::io::Result<()> {
    /// use mcp_transport_http::server::{HttpServerConfig, StreamableHttpService};
    ///
    /// let service = StreamableHttpService::builder(server.connection_handler())
    ///     .config(HttpServerConfig::default().path("/mcp"))
    ///     .build();
    /// service.serve("127.0.0.1:8080".parse().unwrap()).await
    /// # }
    /// ```
    pub fn connection_handler(
        &self,
    ) -> impl Fn(Connection) -> BoxFuture<'static, ()> + Clone + Send + Sync + 'static {
        let server = self.clone();
        move |connection| {
            let server = server.clone();
            Box::pin(async move {
                if let Err(e) = server.serve(connection).await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            })
        }
    }

    /// Serves one session over a reader and a writer (a pipe, a socket, an in-memory duplex),
    /// with the framing detected from the client's first bytes: newline-delimited JSON or
    /// `Content-Length` headers, answered in the same framing. Messages longer than
    /// [`ServerOptions::max_message_bytes`](crate::ServerOptions::max_message_bytes) are refused
    /// with `-32600` and skipped. Returns when the reader reaches end of input.
    #[cfg(feature = "stdio")]
    pub async fn serve_io<R, W>(&self, reader: R, writer: W) -> Result<(), ServeError>
    where
        R: tokio::io::AsyncRead + Send + 'static,
        W: tokio::io::AsyncWrite + Send + 'static,
    {
        let options = self.stdio_options();
        self.serve(mcp_transport_stdio::io_with(reader, writer, options))
            .await
    }

    /// Serves one session on this process's stdin and stdout (framing as in
    /// [`serve_io`](Self::serve_io)). Log with `tracing` to stderr: stdout carries protocol
    /// messages only. End of input on stdin ends the session.
    ///
    /// On Unix, when stdout is a pipe or a socket (as when a client launches the server), stdin
    /// is read by a thread of its own, and requests are first run there, as with
    /// [`run_stdio`](Self::run_stdio). Otherwise reads and writes go through Tokio's blocking
    /// pool, or through the reactor with `mcp-transport-stdio`'s `reactor` feature.
    #[cfg(feature = "stdio")]
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        #[cfg(unix)]
        if let Some((connection, reader)) =
            mcp_transport_stdio::inline::stdio_inline(self.stdio_options())
        {
            let serving = self.start(connection);
            spawn_reader(reader, tokio::runtime::Handle::current())?;
            return serving.await;
        }
        self.serve(mcp_transport_stdio::stdio_with(self.stdio_options()))
            .await
    }

    /// Serves one session on stdin and stdout, like [`serve_stdio`](Self::serve_stdio), on a
    /// runtime of its own: all a stdio server's `main` needs, with no async `main` and no
    /// runtime to choose.
    ///
    /// A stdio server has one client, so the runtime is Tokio's current-thread one (I/O and
    /// timers enabled), and the process starts sooner than with a worker thread per core.
    ///
    /// On Unix, when stdout is a pipe or a socket (as when a client launches the server),
    /// stdin is read by a thread of its own with blocking reads, and each request is first run
    /// right there: a handler that answers at once (most do) is answered from that thread,
    /// with one read and one write per request and no hand-off to the runtime. A handler that
    /// waits continues on the runtime, where notifications, the client's responses and
    /// everything the server sends on its own are handled too (see
    /// [`mcp_transport_stdio::inline`]). Requests still run concurrently.
    ///
    /// Blocking or CPU-heavy work belongs on [`tokio::task::spawn_blocking`], as on any
    /// runtime. To serve on a runtime of your own, `.await` [`serve_stdio`](Self::serve_stdio)
    /// instead. Must not be called from within an async context (Tokio refuses to start a
    /// runtime inside another).
    ///
    /// ```no_run
    /// use mcp_server::{Server, Tool, ToolContext, model::Implementation};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Echo {
    ///     /// The text to send back
    ///     text: String,
    /// }
    ///
    /// async fn echo(_cx: ToolContext, args: Echo) -> String {
    ///     args.text
    /// }
    ///
    /// fn main() -> std::io::Result<()> {
    ///     let server = Server::builder(Implementation::new("echo-server", "1.0.0"))
    ///         .tool(Tool::new("echo").description("Echo the text back"), echo)
    ///         .build()
    ///         .map_err(std::io::Error::other)?;
    ///     server.run_stdio()?;
    ///     Ok(())
    /// }
    /// ```
    #[cfg(feature = "stdio")]
    pub fn run_stdio(&self) -> Result<(), ServeError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(mcp_jsonrpc::TransportError::from)?;
        #[cfg(unix)]
        {
            let inline = {
                let _entered = runtime.enter();
                mcp_transport_stdio::inline::stdio_inline(self.stdio_options())
                    .map(|(connection, reader)| (self.start(connection), reader))
            };
            if let Some((serving, reader)) = inline {
                let mut reader = reader;
                let handle = runtime.handle().clone();
                // The first request (`initialize`) is answered from here, before the reader's
                // thread starts.
                reader.serve_first(&handle);
                spawn_reader(reader, handle)?;
                return runtime.block_on(serving);
            }
        }
        runtime.block_on(self.serve_stdio())
    }

    #[cfg(feature = "stdio")]
    fn stdio_options(&self) -> mcp_transport_stdio::StdioOptions {
        let codec = mcp_transport_stdio::CodecConfig::default()
            .max_frame_size(self.inner.options.max_message_bytes);
        mcp_transport_stdio::StdioOptions::auto().codec(codec)
    }
}

/// Runs `reader` on a thread of its own. Handlers first run there log where those of the
/// runtime do, also when the subscriber is the calling thread's own (`set_default`). The reader
/// ends at the end of input; when the session ends first (closed by the server, or stdout
/// failed) it may still wait in a read, and is left there.
#[cfg(all(unix, feature = "stdio"))]
fn spawn_reader(
    reader: mcp_transport_stdio::inline::InlineReader,
    runtime: tokio::runtime::Handle,
) -> Result<(), ServeError> {
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    std::thread::Builder::new()
        .name("mcp-stdin".into())
        .spawn(move || {
            let _logging = tracing::dispatcher::set_default(&dispatch);
            if let Err(error) = reader.run(&runtime) {
                tracing::debug!(%error, "reading stdin failed");
            }
        })
        .map_err(mcp_jsonrpc::TransportError::from)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use mcp_jsonrpc::{Extensions, InletLink, Request, Served, memory_pair};
    use serde_json::json;

    use crate::Resource;

    use super::*;

    /// Over stdio the reader thread answers requests through the inlet before the runtime first
    /// polls the session: an update announced then still reaches a subscriber.
    #[tokio::test]
    async fn an_update_before_the_session_is_first_polled_reaches_the_subscriber() {
        let server = Server::builder(Implementation::new("updates", "1.0.0"))
            .resource(Resource::new("example://r", "r"), |_cx| async { "text" })
            .build()
            .unwrap();
        let link = InletLink::new(4);
        let (client, server_side) = memory_pair(8);
        let serving = server.start(server_side.with_extension(link.clone()));
        let inlet = link.get().expect("bound when serving starts").clone();
        let requests = [
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
            json!({"uri": "example://r"}),
        ];
        for (id, (method, params)) in ["initialize", "resources/subscribe"]
            .into_iter()
            .zip(requests)
            .enumerate()
        {
            let request = Request::with_params(id as i64, method, &params).unwrap();
            match inlet.serve(request, Extensions::default()) {
                Served::Answered(response) => assert!(response.result.is_ok(), "{method}"),
                other => panic!("{method} not answered at once: {other:?}"),
            }
        }
        server.notify_resource_updated("example://r");

        let serving = tokio::spawn(serving);
        let (mut inbound, outbound) = client.into_parts();
        let next = std::future::poll_fn(|cx| futures_core::Stream::poll_next(inbound.as_mut(), cx));
        let message = tokio::time::timeout(std::time::Duration::from_secs(5), next)
            .await
            .expect("the update within 5 s");
        let text = format!("{message:?}");
        assert!(text.contains("notifications/resources/updated"), "{text}");
        drop((inbound, outbound));
        serving.await.unwrap().unwrap();
    }
}
